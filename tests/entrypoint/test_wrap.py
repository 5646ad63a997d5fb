"""The wrap end to end: a plain Keras script, unchanged, run by smtrain_wrap.py as SageMaker's container runs it.

Each run gets a code directory laid out like the job's bundle (smtrain_wrap.py, smtrain_tf/, the
user's train.py) and the container's environment (sagemaker_env.make_host); the arguments are the
toolkit's: the spec's hyperparameters as `--name value`, plus `--model_dir s3://...`.
"""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import textwrap
from pathlib import Path

import numpy as np
import pytest

from .conftest import ENTRYPOINTS
from .sagemaker_env import Host, free_ports, make_host, metric_lines, mwms_tf_config, parse_metrics, ps_tf_config

slow = pytest.mark.slow  # starts processes that train for real

TIMEOUT = 300

# Written the way users write it: argparse with parse_args(), arrays from the channel, Sequential,
# compile with adam, fit with a batch size, save into SM_MODEL_DIR. `FIT` is the fit call's tail.
SCRIPT = """
import argparse
import os

import numpy as np
import tensorflow as tf


def load(channel):
    data = np.load(os.path.join(os.environ["SM_CHANNEL_" + channel.upper()], "part-0.npz"))
    return data["x"].reshape(len(data["x"]), -1), data["y"]


parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=1)
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--model_dir")  # SageMaker passes it to every TensorFlow script
args = parser.parse_args()

tf.keras.utils.set_random_seed(7)
x, y = load("train")
x_val, y_val = load("validation")
model = tf.keras.Sequential([
    tf.keras.Input(shape=(64,)),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(10, activation="softmax"),
])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
model.fit(x, y, epochs=args.epochs, batch_size=args.batch_size, verbose=2, FIT)
model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
"""
WITH_VALIDATION_DATA = "validation_data=(x_val, y_val)"
WITH_VALIDATION_SPLIT = "validation_split=0.2"
HYPERPARAMETERS = {"epochs": 3, "batch-size": 32}


def _code_dir(root: Path, script: str) -> Path:
    """The bundle as SageMaker unpacks it: the wrap, smtrain_tf beside it, and the user's script."""
    code = root / "code"
    code.mkdir(parents=True)
    shutil.copy(Path(ENTRYPOINTS) / "smtrain_wrap.py", code / "smtrain_wrap.py")
    (code / "smtrain_tf").symlink_to(Path(ENTRYPOINTS) / "smtrain_tf", target_is_directory=True)
    (code / "train.py").write_text(textwrap.dedent(script).lstrip())
    return code


def _wrapped(root: Path, channels: dict[str, Path], script: str, env: dict[str, str] | None = None,
             hyperparameters: dict | None = None, **host_options) -> tuple[Host, Path]:
    code = _code_dir(root, script)
    host = make_host(root, "algo-1", ["algo-1"], channels=channels,
                     hyperparameters=HYPERPARAMETERS if hyperparameters is None else hyperparameters, **host_options)
    host.env.update({"SMTRAIN_WRAP_SCRIPT": "train.py", **(env or {})})
    return host, code / "smtrain_wrap.py"


def _mwms_pair(root: Path, code: Path, channels: dict[str, Path], hyperparameters: dict,
               hosts: list[Host], env: dict[str, str] | None = None) -> list[Host]:
    """Two MultiWorkerMirrored hosts running the wrap on `code`, started; a non-chief's saves stay in its base."""
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    names = ["algo-1", "algo-2"]
    members = []
    for index, name in enumerate(names):
        host = make_host(root, name, names, channels=channels, hyperparameters=hyperparameters,
                         tf_config=mwms_tf_config(addresses, index),
                         framework_params={"sagemaker_multi_worker_mirrored_strategy_enabled": True})
        host.env.update({"SMTRAIN_WRAP_SCRIPT": "train.py", "TMPDIR": str(host.base), **(env or {})})
        members.append(host)
    hosts.extend(member.start(script=code / "smtrain_wrap.py") for member in members)
    return members


def _assert_ok(host: Host, code: int) -> None:
    assert code == 0, f"{host.name} exited {code}\nstdout:\n{host.stdout()[-3000:]}\nstderr:\n{host.stderr()[-3000:]}"
    assert not host.failure_file.exists(), host.failure_file.read_text()


def _digests(host: Host) -> list[str]:
    return re.findall(r"^weights_sha256=([0-9a-f]{64})$", host.stdout(), re.M)


def _saved_model_digest(path: Path) -> str:
    import tensorflow as tf
    from smtrain_tf.training.metrics import weights_digest

    return weights_digest(tf.keras.models.load_model(str(path)).get_weights())


def _accuracy(path: Path, digits) -> float:
    import tensorflow as tf

    model = tf.keras.models.load_model(str(path))
    predicted = model.predict(digits["x_val"].reshape(-1, 64), verbose=0).argmax(axis=1)
    return float(np.mean(predicted == digits["y_val"]))


# --- the three strategies ------------------------------------------------------------------------

@slow
def test_one_process_default_strategy(tmp_path: Path, digits_npz, digits, hosts: list[Host]) -> None:
    host, wrap = _wrapped(tmp_path, digits_npz, SCRIPT.replace("FIT", WITH_VALIDATION_DATA))
    hosts.append(host.start(script=wrap))
    _assert_ok(host, host.wait(TIMEOUT))
    out = host.stdout()
    assert out.splitlines()[0].startswith("gpus: none seen by TensorFlow")
    assert "wrap: strategy=default replicas=1 workers=1 chief=yes script=train.py" in out
    assert "wrap: batch_size 32 per replica -> global 32 (1 replica)" in out
    # --epochs 3 reached the script (its own default is 1); one metric line per epoch, from Keras's logs.
    lines = [parse_metrics(line) for line in metric_lines(out)]
    assert [line["epoch"] for line in lines] == ["1", "2", "3"]
    steps = -(-len(digits["y_train"]) // 32)
    assert [int(line["step"]) for line in lines] == [steps, 2 * steps, 3 * steps]
    assert set(lines[-1]) >= {"loss", "accuracy", "val_loss", "val_accuracy", "lr", "examples_per_sec", "elapsed"}
    assert lines[-1]["lr"] == "0.001"  # no learning-rate scaling unless asked
    assert sorted(p.name for p in host.model_dir.iterdir()) == ["model.keras"]
    assert _digests(host) == [_saved_model_digest(host.model_dir / "model.keras")]
    assert _accuracy(host.model_dir / "model.keras", digits) > 0.8


@slow
def test_mirrored_over_two_cpu_replicas_makes_the_batch_per_replica(tmp_path: Path, digits_npz, digits,
                                                                    hosts: list[Host]) -> None:
    host, wrap = _wrapped(tmp_path, digits_npz, SCRIPT.replace("FIT", WITH_VALIDATION_SPLIT),
                          env={"SMTRAIN_CPU_REPLICAS": "2"})
    hosts.append(host.start(script=wrap))
    _assert_ok(host, host.wait(TIMEOUT))
    out = host.stdout()
    assert "wrap: strategy=mirrored replicas=2 workers=1 chief=yes script=train.py" in out
    assert "wrap: batch_size 32 per replica -> global 64 (2 replicas)" in out
    lines = [parse_metrics(line) for line in metric_lines(out)]
    # Keras trained on 80% of the rows in steps of 64 (the global batch), and validated on the rest.
    rows = int(np.ceil(len(digits["y_train"]) * 0.8))
    steps = -(-rows // 64)
    assert [int(line["step"]) for line in lines] == [steps, 2 * steps, 3 * steps]
    assert "val_accuracy" in lines[-1] and lines[-1]["lr"] == "0.001"
    assert sorted(p.name for p in host.model_dir.iterdir()) == ["model.keras"]
    assert _digests(host) == [_saved_model_digest(host.model_dir / "model.keras")]
    assert _accuracy(host.model_dir / "model.keras", digits) > 0.7


@slow
def test_multi_worker_mirrored_two_processes(tmp_path: Path, digits_npz, digits, hosts: list[Host]) -> None:
    code = _code_dir(tmp_path, SCRIPT.replace("FIT", WITH_VALIDATION_DATA))
    chief, worker = _mwms_pair(tmp_path, code, digits_npz, HYPERPARAMETERS, hosts)
    _assert_ok(chief, chief.wait(TIMEOUT))
    _assert_ok(worker, worker.wait(TIMEOUT))
    assert "wrap: strategy=multi_worker_mirrored replicas=2 workers=2 chief=yes" in chief.stdout()
    assert "wrap: strategy=multi_worker_mirrored replicas=2 workers=2 chief=no" in worker.stdout()
    assert "wrap: batch_size 32 per replica -> global 64 (2 replicas)" in chief.stdout()
    assert [parse_metrics(line)["epoch"] for line in metric_lines(chief.stdout())] == ["1", "2", "3"]
    # Identical weights everywhere; one model, the chief's; the worker's save went to a temporary directory.
    # (smtrain's loop logs the digest when training ends, the wrap after each save)
    assert len(set(_digests(chief))) == 1 and _digests(chief) == _digests(worker)
    assert sorted(p.name for p in chief.model_dir.iterdir()) == ["model.keras"]
    assert list(worker.model_dir.iterdir()) == []
    assert re.search(rf"^wrap: worker 1 is not the chief: model.save writes {re.escape(str(worker.base))}/"
                     r"smtrain-worker-saves-\w+/1/model.keras instead of "
                     + re.escape(str(worker.model_dir / "model.keras")) + "$", worker.stdout(), re.M)
    assert _digests(chief)[-1] == _saved_model_digest(chief.model_dir / "model.keras")
    assert _accuracy(chief.model_dir / "model.keras", digits) > 0.7


def test_smtrain_tf_save_in_a_wrapped_multi_worker_script_writes_one_model(tmp_path: Path, digits_npz,
                                                                            hosts: list[Host]) -> None:
    # The wrap sets MultiWorkerMirrored as the default strategy; the chief's export copy must not wait
    # for workers that are not exporting.
    script = SCRIPT.replace("FIT", WITH_VALIDATION_DATA).replace(
        'model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))',
        "import smtrain_tf\nsmtrain_tf.save(model)")
    code = _code_dir(tmp_path, script)
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    names = ["algo-1", "algo-2"]
    members = []
    for index, name in enumerate(names):
        host = make_host(tmp_path, name, names, channels=digits_npz, hyperparameters={"epochs": 1},
                         tf_config=mwms_tf_config(addresses, index),
                         framework_params={"sagemaker_multi_worker_mirrored_strategy_enabled": True})
        host.env.update({"SMTRAIN_WRAP_SCRIPT": "train.py", "TMPDIR": str(host.base),
                         "SMTRAIN_COLLECTIVE_TIMEOUT": "60"})
        members.append(host)
    hosts.extend(member.start(script=code / "smtrain_wrap.py") for member in members)
    chief, worker = members
    _assert_ok(chief, chief.wait(TIMEOUT))
    _assert_ok(worker, worker.wait(TIMEOUT))
    assert sorted(p.name for p in chief.model_dir.iterdir()) == ["1", "model.keras"]
    assert list(worker.model_dir.iterdir()) == []


MWMS_ARGUMENTS_SCRIPT = """
import os

import numpy as np
import tensorflow as tf

data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "part-0.npz"))
x, y = data["x"].reshape(len(data["x"]), -1), data["y"]
model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])


class Counter(tf.keras.callbacks.Callback):  # a script's own callback, with batch hooks
    def __init__(self):
        super().__init__()
        self.batches, self.epochs, self.keys = 0, [], set()

    def on_train_batch_end(self, batch, logs=None):
        self.batches += 1
        self.keys |= set(logs)

    def on_epoch_end(self, epoch, logs=None):
        self.epochs.append(epoch)


counter = Counter()
stop = tf.keras.callbacks.EarlyStopping(patience=5)
schedule = tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: 0.01 if epoch < 2 else 0.002)
history = model.fit(x, y, epochs=3, initial_epoch=1, validation_split=0.25, callbacks=[stop, counter, schedule],
                    class_weight={label: 1.0 + (label == 3) for label in range(10)}, verbose=0)
print("history", sorted(history.history), len(history.history["val_loss"]))
print("counter", counter.batches, counter.epochs, sorted(counter.keys))
print("evaluate", model.evaluate(x[:300], y[:300], verbose=0))
p = model.predict(x[:300], verbose=0)
print("by hand", [float(np.mean(-np.log(p[np.arange(300), y[:300]]))), float(np.mean(p.argmax(1) == y[:300]))])
"""


@slow
def test_multi_worker_mirrored_takes_keras_fit_arguments_and_callbacks_and_evaluates(
        tmp_path: Path, digits_npz, digits, hosts: list[Host]) -> None:
    code = _code_dir(tmp_path, MWMS_ARGUMENTS_SCRIPT)
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    names = ["algo-1", "algo-2"]
    members = []
    for index, name in enumerate(names):
        host = make_host(tmp_path, name, names, channels=digits_npz, hyperparameters={},
                         tf_config=mwms_tf_config(addresses, index),
                         framework_params={"sagemaker_multi_worker_mirrored_strategy_enabled": True})
        # A non-chief's saves go to a temporary directory: keep it in the test's.
        host.env.update({"SMTRAIN_WRAP_SCRIPT": "train.py", "TMPDIR": str(host.base)})
        members.append(host)
    hosts.extend(member.start(script=code / "smtrain_wrap.py") for member in members)
    for member in members:
        _assert_ok(member, member.wait(TIMEOUT))
        out = member.stdout()
        # Keras's default batch (32) per replica; validation_split held out the last quarter of the rows (Keras's
        # own split: the first floor(75%) rows train).
        assert "wrap: batch_size 32 per replica -> global 64 (2 replicas)" in out
        rows = int(np.floor(len(digits["y_train"]) * 0.75))
        # Epochs 1 and 2 of 3 (initial_epoch=1), every batch seen by the script's own callback, with Keras's logs.
        assert "history ['accuracy', 'learning_rate', 'loss', 'val_accuracy', 'val_loss'] 2" in out
        assert f"counter {2 * -(-rows // 64)} [1, 2] ['accuracy', 'loss']" in out, out[-3000:]
        assert "Traceback" not in member.stderr()
    # LearningRateScheduler set each epoch's rate, which the metric lines show.
    chief_lines = [parse_metrics(text) for text in metric_lines(members[0].stdout())]
    assert [(m["epoch"], m["lr"]) for m in chief_lines] == [("2", "0.01"), ("3", "0.002")]
    assert not metric_lines(members[1].stdout())
    # Keras's own evaluate and predict, distributed over both workers: one answer on each, the sums by hand.
    evaluated = [re.findall(r"^evaluate \[(\S+), (\S+)\]$", member.stdout(), re.M) for member in members]
    assert len(evaluated[0]) == 1 and evaluated[0] == evaluated[1]
    by_hand = re.findall(r"^by hand \[(\S+), (\S+)\]$", members[0].stdout(), re.M)[0]
    assert [float(v) for v in evaluated[0][0]] == pytest.approx([float(v) for v in by_hand], rel=1e-4)


@slow
def test_keras_2_mirrored_with_linear_learning_rate_scaling(tmp_path: Path, digits_npz, digits, hosts: list[Host],
                                                            monkeypatch) -> None:
    """TensorFlow 2.13 with Keras 2 (the Horovod test environment), two CPU replicas."""
    from tests.support.horovod_env import required_horovod_python

    from . import sagemaker_env

    python = required_horovod_python()
    monkeypatch.setattr(sagemaker_env, "PYTHON", str(python))
    host, wrap = _wrapped(tmp_path, digits_npz, SCRIPT.replace("FIT", WITH_VALIDATION_DATA),
                          env={"SMTRAIN_CPU_REPLICAS": "2", "SMTRAIN_LR_SCALING": "linear"})
    hosts.append(host.start(script=wrap))
    _assert_ok(host, host.wait(TIMEOUT))
    out = host.stdout()
    assert "gpus: none seen by TensorFlow 2.13" in out
    assert "wrap: strategy=mirrored replicas=2 workers=1 chief=yes script=train.py" in out
    assert "wrap: learning rate 0.001 -> 0.002 (linear, 2 replicas)" in out
    assert "wrap: batch_size 32 per replica -> global 64 (2 replicas)" in out
    lines = [parse_metrics(line) for line in metric_lines(out)]
    steps = -(-len(digits["y_train"]) // 64)
    assert [(line["step"], line["lr"]) for line in lines] == [(str(steps * n), "0.002") for n in (1, 2, 3)]
    assert sorted(p.name for p in host.model_dir.iterdir()) == ["model.keras"]
    assert len(_digests(host)) == 1


@slow
def test_a_lone_multi_worker_mirrored_worker_gives_up_after_the_startup_timeout(tmp_path: Path,
                                                                                hosts: list[Host]) -> None:
    addresses = [f"127.0.0.1:{port}" for port in free_ports(2)]
    host, wrap = _wrapped(tmp_path, {}, "print('never')\n", env={"SMTRAIN_STARTUP_TIMEOUT": "3"},
                          tf_config=mwms_tf_config(addresses, 0),
                          framework_params={"sagemaker_multi_worker_mirrored_strategy_enabled": True})
    hosts.append(host.start(script=wrap))  # its peer never starts
    assert host.wait(TIMEOUT) != 0  # killed by the guard: TensorFlow holds the GIL while it waits
    assert host.failure_file.read_text() == (
        "no progress in 3s while waiting for the other workers to join (MultiWorkerMirrored): a peer process is "
        "probably dead or unreachable (SMTRAIN_STARTUP_TIMEOUT sets the limit)\n")
    assert "never" not in host.stdout()


# --- learning rate, batched data -------------------------------------------------------------------

DATASET_SCRIPT = """
import os

import numpy as np
import tensorflow as tf

data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "part-0.npz"))
x, y = data["x"].reshape(len(data["x"]), -1), data["y"]
dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(50)
model = tf.keras.Sequential([tf.keras.Input(shape=(64,)), tf.keras.layers.Dense(10, activation="softmax")])
model.compile(optimizer=tf.keras.optimizers.Adam(0.001), loss="sparse_categorical_crossentropy")
model.fit(dataset, epochs=1, verbose=0)
"""


@slow
def test_linear_learning_rate_scaling_and_a_dataset_batched_by_the_script(tmp_path: Path, digits_npz, digits,
                                                                          hosts: list[Host]) -> None:
    host, wrap = _wrapped(tmp_path, digits_npz, DATASET_SCRIPT, hyperparameters={},
                          env={"SMTRAIN_CPU_REPLICAS": "2", "SMTRAIN_LR_SCALING": "linear"})
    hosts.append(host.start(script=wrap))
    _assert_ok(host, host.wait(TIMEOUT))
    out = host.stdout()
    assert "wrap: learning rate 0.001 -> 0.002 (linear, 2 replicas)" in out
    fit_line = DATASET_SCRIPT.lstrip().splitlines().index("model.fit(dataset, epochs=1, verbose=0)") + 1
    assert f"wrap: train.py:{fit_line}: fit gets a tf.data.Dataset, which the script batches itself" in out
    assert "batch_size" not in out  # the dataset's batches are left as they are
    line = parse_metrics(metric_lines(out)[0])
    # No accuracy metric compiled: the line leaves it out; the steps are the dataset's batches.
    assert "accuracy" not in line and "val_loss" not in line and "examples_per_sec" not in line
    assert (line["lr"], int(line["step"])) == ("0.002", -(-len(digits["y_train"]) // 50))


# --- arguments, failures ---------------------------------------------------------------------------

@slow
def test_the_script_gets_exactly_the_process_arguments(tmp_path: Path, digits_npz, hosts: list[Host]) -> None:
    # argparse rejects what it does not declare: an extra argument must reach it, and fail it.
    host, wrap = _wrapped(tmp_path, digits_npz, SCRIPT.replace("FIT", WITH_VALIDATION_DATA))
    hosts.append(host.start(["--unexpected", "1"], script=wrap))
    code = host.wait(TIMEOUT)
    assert code == 2, host.stderr()[-2000:]
    assert "train.py: error: unrecognized arguments: --unexpected 1" in host.stderr()
    assert host.failure_file.read_text() == "the script exited with status 2\n"


RAISING_SCRIPT = """
import sys


def check(rows):
    if rows < 10:
        raise ValueError(f"only {rows} rows in the training data\\n(need 10)")


print("argv", sys.argv[1:])
check(3)
"""


@slow
def test_an_exception_in_the_script_is_its_traceback_and_one_failure_line(tmp_path: Path,
                                                                           hosts: list[Host]) -> None:
    host, wrap = _wrapped(tmp_path, {}, RAISING_SCRIPT, hyperparameters={"rows": 3})
    hosts.append(host.start(script=wrap))
    assert host.wait(TIMEOUT) == 1
    assert "argv ['--rows', '3', '--model_dir', 's3://example-bucket/job/algo-1/model']" in host.stdout()
    lines = RAISING_SCRIPT.lstrip().splitlines()
    call = lines.index("check(3)") + 1
    raised = next(n for n, text in enumerate(lines, 1) if "raise ValueError" in text)
    # The reason names the script's line where the exception left it (its deepest frame there).
    assert host.failure_file.read_text() == (f"ValueError: only 3 rows in the training data (need 10) "
                                             f"(at train.py:{raised})\n")
    stderr = host.stderr()
    # The user's traceback, from the script's own frame on.
    assert 'Traceback (most recent call last):\n  File "' in stderr
    traceback = stderr[stderr.index("Traceback"):]
    assert re.search(rf'File "\S+/train.py", line {call}, in <module>\n', traceback), traceback
    assert "runpy" not in traceback and "launcher.py" not in traceback


@slow
def test_a_missing_script_fails_at_once(tmp_path: Path, hosts: list[Host]) -> None:
    host, wrap = _wrapped(tmp_path, {}, "print('never')\n", env={"SMTRAIN_WRAP_SCRIPT": "trian.py"})
    hosts.append(host.start(script=wrap))
    assert host.wait(TIMEOUT) == 1
    reason = host.failure_file.read_text()
    assert reason.startswith("SMTRAIN_WRAP_SCRIPT=trian.py: no such file ") and reason.count("\n") == 1
    assert "gpus:" not in host.stdout()  # before TensorFlow


@slow
@pytest.mark.parametrize("strategy", ["horovod", "parameter_server"])
def test_strategies_that_need_script_changes_are_refused(tmp_path: Path, strategy: str,
                                                         hosts: list[Host]) -> None:
    if strategy == "horovod":
        options = {"framework_params": {"sagemaker_mpi_enabled": True}}
    else:
        master, worker, ps = (f"127.0.0.1:{port}" for port in free_ports(3))
        options = {"framework_params": {"sagemaker_parameter_server_enabled": True},
                   "tf_config": ps_tf_config(master, [worker], [ps], "master", 0)}
    host, wrap = _wrapped(tmp_path, {}, "print('never')\n", **options)
    hosts.append(host.start(script=wrap))
    assert host.wait(TIMEOUT) != 0
    reason = host.failure_file.read_text()
    assert reason.startswith(f"a wrapped script cannot run under strategy {strategy} ("), reason
    assert "needs changes to the script" in reason and "never" not in host.stdout()


@slow
def test_a_job_that_asked_for_a_gpu_and_sees_none_fails_with_the_likely_cause(tmp_path: Path,
                                                                              hosts: list[Host]) -> None:
    host, wrap = _wrapped(tmp_path, {}, "print('ran on the CPU')\n")
    host.env["SM_NUM_GPUS"] = "1"
    hosts.append(host.start(script=wrap))
    assert host.wait(TIMEOUT) != 0
    reason = host.failure_file.read_text()
    assert reason.startswith("SM_NUM_GPUS=1 but TensorFlow ") and "sees no GPU" in reason
    assert "CPU-only build" in reason and "allow_cpu" in reason  # this machine's TensorFlow is tensorflow-cpu
    assert "ran on the CPU" not in host.stdout()

    host.env["SMTRAIN_ALLOW_CPU"] = "true"
    host.failure_file.unlink()
    hosts.append(host.start(script=wrap, tag="-allow-cpu"))
    _assert_ok(host, host.wait(TIMEOUT))
    assert "ran on the CPU" in host.stdout()


# --- pieces, in this process ---------------------------------------------------------------------

def test_the_metric_line_from_keras_logs_carries_every_logged_metric_and_nothing_else() -> None:
    from smtrain_tf.training.epoch_lines import line_from_logs

    full = line_from_logs(3, 135, {"loss": 0.25, "accuracy": 0.9, "val_loss": 0.3, "val_accuracy": 0.875}, 0.002,
                          1234.4, 9.87)
    assert full == ("epoch=3 step=135 loss=0.2500 accuracy=0.9000 val_loss=0.3000 val_accuracy=0.8750 lr=0.002 "
                    "examples_per_sec=1234 elapsed=9.9")
    bare = line_from_logs(1, 10, {"loss": 1.5, "mae": 0.2, "val_mae": 0.25, "learning_rate": 0.1}, None, None, 1.0)
    assert bare == "epoch=1 step=10 loss=1.5000 mae=0.2000 val_mae=0.2500 elapsed=1.0"
    # SageMaker's metric definitions read the values that are there and find nothing else.
    definitions = json.loads((Path(ENTRYPOINTS) / "smtrain_tf" / "metric_definitions.json").read_text())
    found = {d["Name"]: re.search(d["Regex"], bare) for d in definitions}
    assert {name for name, match in found.items() if match} == {"train:loss", "train:epoch"}
    assert float(found["train:loss"].group(1)) == 1.5


def test_the_settings_name_the_script_and_refuse_unknown_rules(tmp_path: Path) -> None:
    from smtrain_tf.contract.errors import ConfigurationError
    from smtrain_tf.wrap import settings

    (tmp_path / "train.py").write_text("")
    read = settings.read({"SMTRAIN_WRAP_SCRIPT": "train.py"}, str(tmp_path))
    assert (read.script, read.batch, read.lr_scaling) == (str(tmp_path / "train.py"), "per_replica", "none")
    assert settings.read({"SMTRAIN_WRAP_SCRIPT": "train.py", "SMTRAIN_WRAP_BATCH": "Global",
                          "SMTRAIN_LR_SCALING": "sqrt"}, str(tmp_path)).batch == "global"
    with pytest.raises(settings.ScriptMissing, match="SMTRAIN_WRAP_SCRIPT is not set"):
        settings.read({}, str(tmp_path))
    with pytest.raises(ConfigurationError, match="SMTRAIN_WRAP_BATCH='per_gpu': expected one of per_replica, global"):
        settings.read({"SMTRAIN_WRAP_SCRIPT": "train.py", "SMTRAIN_WRAP_BATCH": "per_gpu"}, str(tmp_path))


def test_the_wrap_package_map_names_each_of_its_modules() -> None:
    package = Path(ENTRYPOINTS) / "smtrain_tf" / "wrap"
    doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
    assert [p.name for p in sorted(package.glob("*.py")) if p.name != "__init__.py" and p.name not in doc] == []


def _context(batch_rule: str, said: list[str]):
    from types import SimpleNamespace

    from smtrain_tf.wrap.context import WrapContext
    from smtrain_tf.wrap.settings import WrapSettings

    return WrapContext(contract=None, settings=WrapSettings("/code/train.py", batch_rule, "none"),  # type: ignore[arg-type]
                       dist=SimpleNamespace(kind="mirrored", num_replicas=2, is_chief=True), started_at=0.0,
                       say=said.append)


def test_batch_sizes_for_arrays_become_global_unless_the_spec_says_they_are() -> None:
    import tensorflow as tf
    from smtrain_tf.wrap.batch_size import scale_batches

    x, y = np.zeros((100, 4), np.float32), np.zeros(100, np.int64)
    said: list[str] = []
    ctx = _context("per_replica", said)
    given, examples = scale_batches(ctx, {"x": x, "y": y, "batch_size": 16, "validation_batch_size": 8,
                                          "validation_split": 0.2}, "train.py:9")
    assert (given["batch_size"], given["validation_batch_size"], examples) == (32, 16, 80)
    given, examples = scale_batches(ctx, {"x": x, "y": y, "steps_per_epoch": 3}, "train.py:9")  # Keras's 32
    assert (given["batch_size"], examples) == (64, 3 * 64)
    assert said == ["wrap: batch_size 16 per replica -> global 32 (2 replicas)",
                    "wrap: validation_batch_size 8 per replica -> global 16 (2 replicas)",
                    "wrap: batch_size 32 per replica -> global 64 (2 replicas)"]

    said.clear()
    given, _ = scale_batches(_context("global", said), {"x": x, "y": y, "batch_size": 64}, "train.py:9")
    assert given["batch_size"] == 64
    assert said == ["wrap: batch_size 64 is global (SMTRAIN_WRAP_BATCH=global): 32 per replica (2 replicas)"]

    said.clear()
    dataset = tf.data.Dataset.from_tensor_slices((x, y)).batch(10)
    given, examples = scale_batches(_context("per_replica", said), {"x": dataset, "batch_size": None}, "train.py:9")
    assert given["x"] is dataset and given["batch_size"] is None and examples is None
    assert len(said) == 1 and said[0].startswith("wrap: train.py:9: fit gets a tf.data.Dataset")


def test_a_script_turning_on_memory_growth_too_late_is_let_through_other_device_set_up_is_refused() -> None:
    from smtrain_tf.wrap import devices_guard
    from smtrain_tf.wrap.context import Unsupported

    def started(*args, **kwargs):
        raise RuntimeError("Physical devices cannot be modified after being initialized")

    said: list[str] = []
    ctx = _context("per_replica", said)
    devices_guard._memory_growth(ctx, started)("GPU:0", True)
    assert len(said) == 1 and "memory growth is already on for every GPU" in said[0]
    with pytest.raises(RuntimeError):
        devices_guard._memory_growth(ctx, started)("GPU:0", False)
    started.__name__ = "set_visible_devices"
    with pytest.raises(Unsupported, match=r"tf.config.set_visible_devices cannot run under the wrap \(Physical "
                                          r"devices cannot be modified after being initialized\): .* mirrored"):
        devices_guard._too_late(ctx, started)([], "GPU")


def test_a_script_with_a_strategy_of_its_own_is_told_to_leave_it_to_the_wrap(tmp_path: Path, monkeypatch,
                                                                              capsys) -> None:
    from smtrain_tf.wrap import launcher

    monkeypatch.setenv("SM_OUTPUT_DIR", str(tmp_path))
    error = RuntimeError("Mixing different tf.distribute.Strategy objects: <A> is not <B>")
    assert launcher._script_failed(error, _context("per_replica", [])) == 1
    assert (tmp_path / "failure").read_text() == (
        "RuntimeError: Mixing different tf.distribute.Strategy objects: <A> is not <B> (the script builds a strategy "
        "of its own, but the wrap already runs it under mirrored: leave the strategy to the wrap, or turn code.wrap "
        "off)\n")
    assert "RuntimeError: Mixing" in capsys.readouterr().err


def test_only_a_save_into_the_jobs_shared_places_is_a_shared_place(tmp_path: Path) -> None:
    """A non-chief's save is moved only where one writer is needed: each host's working directory is its own."""
    from types import SimpleNamespace

    from smtrain_tf.wrap.saving import shared_place

    model, data, checkpoints = (tmp_path / name for name in ("model", "output-data", "checkpoints"))
    for place in (model, data, checkpoints):
        place.mkdir()
    (tmp_path / "linked").symlink_to(model, target_is_directory=True)
    ctx = SimpleNamespace(contract=SimpleNamespace(model_dir=str(model), output_data_dir=str(data),
                                                   checkpoint_dir=str(checkpoints)))
    for shared in (model / "model.keras", str(data / "x.npz"), checkpoints / "ckpt-1.keras", "s3://bucket/model",
                   os.fsencode(model / "1"), tmp_path / "linked" / "m.keras", model):
        assert shared_place(ctx, shared), shared
    for own in ("./ckpt/ckpt-1.keras", tmp_path / "model-copy" / "m.keras", str(tmp_path / "modelx"), 7):
        assert not shared_place(ctx, own), own


def test_a_check_cuts_each_fit_to_its_steps_in_one_epoch_or_the_epochs_that_reach_them() -> None:
    import tensorflow as tf
    from smtrain_tf.wrap.check_rest import cut

    x = np.zeros((100, 2), np.float32)
    # 100 rows at batch 10: 10 batches an epoch. Fewer steps than that: one epoch of them.
    assert cut({"x": x, "batch_size": 10, "epochs": 5}, 4) == {"x": x, "batch_size": 10, "epochs": 1,
                                                               "steps_per_epoch": 4}
    # Exactly an epoch's batches: one epoch of them.
    assert cut({"x": x, "batch_size": 10, "epochs": 5}, 10)["epochs"] == 1
    # More: the epochs that reach them, each the script's whole epoch (the recorder keeps the first steps).
    past = cut({"x": x, "batch_size": 10, "epochs": 5, "initial_epoch": 2}, 11)
    assert past["epochs"] == 4 and "steps_per_epoch" not in past
    assert cut({"x": x, "batch_size": 10, "steps_per_epoch": 3}, 7) == {"x": x, "batch_size": 10,
                                                                       "steps_per_epoch": 3, "epochs": 3}
    # A dataset's known cardinality counts; an endless one is one epoch of the steps.
    data = tf.data.Dataset.from_tensor_slices(x).batch(25)
    assert cut({"x": data}, 9)["epochs"] == 3
    endless = cut({"x": data.repeat()}, 9)
    assert endless["epochs"] == 1 and endless["steps_per_epoch"] == 9
    assert cut({"x": x, "validation_data": (x, x), "validation_steps": 50}, 6)["validation_steps"] == 6


def test_the_wrap_seeds_every_worker_alike_where_there_are_several_and_in_a_check() -> None:
    import random

    import tensorflow as tf
    from smtrain_tf.distribute.seeding import seed_the_workers

    said: list[str] = []
    random.seed(123)
    assert not seed_the_workers(7, 1, False, said.append) and said == []  # one worker: the script's as it is
    assert random.random() == random.Random(123).random()
    for workers, checking in ((2, False), (1, True)):
        assert seed_the_workers(7, workers, checking, said.append)
        drawn = (random.random(), float(np.random.rand()), float(tf.random.uniform([])))
        seed_the_workers(7, workers, checking, said.append)
        assert (random.random(), float(np.random.rand()), float(tf.random.uniform([]))) == drawn
    assert said[-1].startswith("wrap: every worker's random generators (Python's random, NumPy's, TensorFlow's) "
                               "start from seed 7")


def test_text_files_listed_without_a_seed_come_in_one_order_on_every_seeded_worker(tmp_path: Path) -> None:
    """keras.utils.text_dataset_from_directory without a seed (keras.io's text classification) draws one from NumPy's
    global generator for its file order and its shuffle: each worker the wrap seeds alike reads the files alike."""
    import keras
    from smtrain_tf.distribute.seeding import seed_the_workers

    for label in ("neg", "pos"):
        (tmp_path / label).mkdir()
        for i in range(12):
            (tmp_path / label / f"{i}.txt").write_text(f"{label} review {i}")

    def read() -> list[bytes]:
        dataset = keras.utils.text_dataset_from_directory(str(tmp_path), batch_size=8, verbose=False)
        return [text for texts, _ in dataset for text in texts.numpy().tolist()]

    orders = []
    for _ in range(2):  # two workers, each seeded by the wrap's rule before the script runs
        seed_the_workers(42, 2, False, lambda line: None)
        orders.append(read())
    assert orders[0] == orders[1] and len(orders[0]) == 24
    assert read() != orders[0]  # unseeded (NumPy's generator where it was left): another order, as on another host
