"""A data hook's datasets (data/hook_data.py) and the TensorBoard scalars (training/summaries.py), in this process."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from .conftest import ENTRYPOINTS


@pytest.fixture(scope="module")
def tf():
    import tensorflow

    return tensorflow


def _hook(tmp_path: Path, body: str, name: str = "user_data_hook") -> str:
    (tmp_path / f"{name}.py").write_text("import numpy as np\nimport tensorflow as tf\n\n" + textwrap.dedent(body))
    if str(tmp_path) not in sys.path:
        sys.path.insert(0, str(tmp_path))
    sys.modules.pop(name, None)
    return name


def _load(name: str, **options):
    from smtrain_tf.data import hook_data

    lines = []
    found = hook_data.load(name, {"train": "/data/train"}, {"epochs": 3},
                           need_labels=options.get("need_labels", False),
                           may_skip_count=options.get("may_skip_count", False), say=lines.append)
    return found, lines


def test_a_hook_gets_only_the_arguments_it_names_and_may_return_a_pair_or_a_dict(tmp_path: Path, tf) -> None:
    module = _hook(tmp_path, '''
        def pair(channels):
            x = np.arange(20, dtype="float32").reshape(10, 2)
            return tf.data.Dataset.from_tensor_slices((x, np.arange(10) % 3)), None

        def named(hyperparameters, channels):
            assert channels == {"train": "/data/train"} and hyperparameters["epochs"] == 3
            data = tf.data.Dataset.from_tensor_slices(({"a": np.zeros((6, 2), "float32")}, np.zeros(6)))
            return {"train": data, "validation": data.take(2)}
    ''')
    found, _ = _load(f"{module}:pair", need_labels=True)
    assert (found.num_examples, found.features_shape, found.max_label, found.validation) == (10, (2,), 2, None)
    found, _ = _load(f"{module}:named")
    assert found.num_examples == 6 and found.features_shape is None  # a dict of inputs: no single shape
    assert found.validation is not None and int(found.validation.cardinality()) == 2


def test_a_dataset_of_unknown_length_is_counted_once_unless_the_epoch_is_capped(tmp_path: Path, tf) -> None:
    module = _hook(tmp_path, '''
        def filtered():
            data = tf.data.Dataset.from_tensor_slices((np.zeros((12, 2), "float32"), np.arange(12)))
            return data.filter(lambda x, y: y % 2 == 0)
    ''', name="filtered_hook")
    found, lines = _load(f"{module}:filtered")
    assert found.num_examples == 6 and "counted 6 training examples" in lines[0]
    found, lines = _load(f"{module}:filtered", may_skip_count=True)
    assert found.num_examples is None and lines == []


@pytest.mark.parametrize("body, message", [
    ("return tf.data.Dataset.from_tensor_slices((np.zeros((8, 2)), np.zeros(8))).batch(4)", "is batched"),
    ("return tf.data.Dataset.from_tensor_slices((np.zeros((8, 2)), np.zeros(8))).repeat()", "is infinite"),
    ("return tf.data.Dataset.from_tensor_slices(np.zeros((8, 2)))", r"must be \(features, labels\) pairs"),
    ("return np.zeros(3)", "must return a tf.data.Dataset"),
    ("return {'training': None}", "expected 'train' and optionally 'validation'"),
])
def test_what_a_hook_returns_is_checked_with_a_reason(tmp_path: Path, tf, body: str, message: str) -> None:
    from smtrain_tf.contract.errors import TrainingFailure

    module = _hook(tmp_path, f"def load():\n    {body}\n", name="bad_hook")
    with pytest.raises(TrainingFailure, match=message):
        _load(f"{module}:load")


def test_file_sharding_needs_as_many_files_as_workers(tmp_path: Path, tf) -> None:
    from smtrain_tf.data.hook_data import files_read

    paths = []
    for i in range(3):
        paths.append(str(tmp_path / f"part-{i}.txt"))
        Path(paths[-1]).write_text("1\n2\n")
    by_list = tf.data.Dataset.from_tensor_slices(paths).interleave(tf.data.TextLineDataset).map(lambda s: (s, s))
    by_pattern = tf.data.Dataset.list_files(str(tmp_path / "*.txt"), shuffle=False).flat_map(tf.data.TextLineDataset)
    in_memory = tf.data.Dataset.from_tensor_slices((np.zeros(4), np.zeros(4)))
    assert (files_read(by_list), files_read(by_pattern), files_read(in_memory)) == (3, 3, 0)


WRITE_WITHOUT_TENSORBOARD = '''
import sys
sys.modules["tensorboard"] = None  # as on the TensorFlow 2.21 training image, which has no tensorboard
sys.path.insert(0, sys.argv[1])
import tensorflow as tf
try:
    tf.summary.scalar("x", 1.0, step=0)
except Exception as exc:
    print("tf.summary.scalar:", type(exc).__name__)
from smtrain_tf.training.summaries import Summaries
summaries = Summaries(sys.argv[2])
for epoch in range(3):
    summaries.epoch(epoch, {"loss": 1.0 / (epoch + 1), "mae": 0.5 - epoch / 10}, {"loss": 2.0 / (epoch + 1)},
                    0.01, 1000.0 + epoch)
summaries.close()
'''


def test_scalars_are_written_with_tf_summary_alone_in_kerass_layout(tmp_path: Path, tf) -> None:
    out = subprocess.run([sys.executable, "-c", WRITE_WITHOUT_TENSORBOARD, ENTRYPOINTS, str(tmp_path / "tb")],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "tf.summary.scalar:" in out.stdout  # the usual API refuses to work there; ours does not need it
    found: dict[str, dict[str, list]] = {}
    for run in ("train", "validation"):
        (events,) = (tmp_path / "tb" / run).glob("events.out.tfevents.*")
        for event in tf.compat.v1.train.summary_iterator(str(events)):
            for value in event.summary.value:
                assert value.metadata.plugin_data.plugin_name == "scalars"
                found.setdefault(run, {}).setdefault(value.tag, []).append(
                    (event.step, round(float(tf.make_ndarray(value.tensor)), 4)))
    assert found["train"]["epoch_loss"] == [(0, 1.0), (1, 0.5), (2, 0.3333)]
    assert found["train"]["epoch_mae"] == [(0, 0.5), (1, 0.4), (2, 0.3)]
    assert set(found["train"]) == {"epoch_loss", "epoch_mae", "epoch_learning_rate", "epoch_examples_per_sec"}
    assert found["validation"] == {"epoch_loss": [(0, 2.0), (1, 1.0), (2, 0.6667)]}
