"""Pieces of the entrypoint in this process with real TensorFlow: readers, pipelines, schedule, checkpoints."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from . import conftest
from .conftest import write_csv, write_npz, write_tfrecord
from .sagemaker_env import base_environment

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def tf_modules():
    from smtrain_tf.data import formats, pipeline
    from smtrain_tf.training import checkpoints

    return formats, pipeline, checkpoints


@pytest.mark.parametrize("fmt", ["npz", "tfrecord", "tfrecord.gz", "csv"])
def test_every_format_reads_the_same_digits(tmp_path: Path, digits: dict[str, np.ndarray], tf_modules, fmt: str):
    data_formats, input_pipeline, _ = tf_modules
    x, y = digits["x_val"], digits["y_val"]
    if fmt == "npz":
        write_npz(tmp_path, x, y, parts=2)
    elif fmt == "csv":
        write_csv(tmp_path, x, y)
    else:
        write_tfrecord(tmp_path, x, y, parts=3, gzip=fmt.endswith(".gz"))
    data = data_formats.load_channel("validation", str(tmp_path), "auto")
    assert data.num_examples == len(y)
    assert data.max_label == 9
    assert data.element_shape == ((64,) if fmt == "csv" else (8, 8))
    batches = list(input_pipeline.evaluation(data, 100, cache="auto", cache_max_mb=64))
    got_x = np.concatenate([b[0].numpy() for b in batches])
    got_y = np.concatenate([b[1].numpy() for b in batches])
    order = np.lexsort(got_x.reshape(len(got_x), -1).T)
    expected_order = np.lexsort(x.reshape(len(x), -1).T)
    np.testing.assert_allclose(got_x.reshape(len(got_x), -1)[order], x.reshape(len(x), -1)[expected_order],
                               atol=1e-5)
    assert sorted(got_y.tolist()) == sorted(y.tolist())


def test_training_pipeline_batches_forever(tmp_path: Path, digits: dict[str, np.ndarray], tf_modules):
    data_formats, input_pipeline, _ = tf_modules
    write_tfrecord(tmp_path, digits["x_val"], digits["y_val"], parts=2)
    data = data_formats.load_channel("train", str(tmp_path), "tfrecord")
    dataset = input_pipeline.training(data, 64, seed=1, shuffle_buffer=1000, cache="on", cache_max_mb=1)
    shapes = [tuple(x.shape) for x, _ in dataset.take(12)]  # 360 examples: more than one pass
    assert shapes == [(64, 8, 8)] * 12
    sharded = input_pipeline.training(data, 32, seed=1, shuffle_buffer=0, cache="off", cache_max_mb=1,
                                      sharding=input_pipeline.Sharding(2, 1, explicit=True))
    assert next(iter(sharded))[0].shape == (32, 8, 8)


def _expect(tmp_path: Path, tf_modules, message: str, data_format: str = "auto") -> None:
    data_formats = tf_modules[0]
    from smtrain_tf.contract.errors import DataError

    with pytest.raises(DataError, match=message):
        data_formats.load_channel("train", str(tmp_path), data_format)


def test_malformed_files_are_named(tmp_path: Path, digits: dict[str, np.ndarray], tf_modules):
    x, y = digits["x_val"], digits["y_val"]
    empty = tmp_path / "empty"
    empty.mkdir()
    _expect(empty, tf_modules, "is empty")
    npz = tmp_path / "npz"
    npz.mkdir()
    np.savez(npz / "bad.npz", features=x, labels=y)
    _expect(npz, tf_modules, r"bad\.npz: NPZ needs arrays 'x' and 'y'")
    garbage = tmp_path / "garbage"
    garbage.mkdir()
    (garbage / "broken.tfrecord").write_bytes(b"this is not a tfrecord file at all")
    _expect(garbage, tf_modules, r"broken\.tfrecord")
    csv = tmp_path / "csv"
    write_csv(csv, x[:10], y[:10])
    with open(csv / "data.csv", "a") as handle:
        handle.write("1,2,three\n")
    _expect(csv, tf_modules, r"data\.csv: malformed train data")
    mixed = tmp_path / "mixed"
    write_npz(mixed, x[:5], y[:5])
    write_csv(mixed, x[:5], y[:5])
    _expect(mixed, tf_modules, "mixes formats")
    negative = tmp_path / "negative"
    negative.mkdir()
    np.savez(negative / "neg.npz", x=x[:4], y=np.array([0, 1, -1, 2]))
    _expect(negative, tf_modules, r"neg\.npz: 'y' has a negative class id")


def test_restore_falls_back_when_the_newest_checkpoint_is_damaged(tmp_path: Path, tf_modules):
    import tensorflow as tf

    checkpoints = tf_modules[2]
    model = tf.keras.Sequential([tf.keras.Input((3,)), tf.keras.layers.Dense(2)])
    optimizer = tf.keras.optimizers.Adam()
    optimizer.build(model.trainable_variables)
    saver = checkpoints.Checkpointer(str(tmp_path), 3, kind="default", is_chief=True, worker_index=0,
                                     model=model, optimizer=optimizer)
    first = saver.save(checkpoints.Progress(1, 0, 10))
    model.layers[-1].kernel.assign(tf.ones((3, 2)))
    newest = saver.save(checkpoints.Progress(2, 0, 20))
    # A kill during the newest save: its data file is cut short.
    data_file = next(Path(tmp_path).glob(Path(newest).name + ".data-*"))
    data_file.write_bytes(data_file.read_bytes()[:10])
    model.layers[-1].kernel.assign(tf.zeros((3, 2)))
    restorer = checkpoints.Checkpointer(str(tmp_path), 3, kind="default", is_chief=True, worker_index=0,
                                        model=model, optimizer=optimizer)
    assert restorer.restore() == first
    assert restorer.current() == checkpoints.Progress(1, 0, 10)
    assert conftest is not None


def test_learning_rate_scaling_and_warmup(tf_modules) -> None:
    from smtrain_tf import scaling
    from smtrain_tf.keras_support import optimization

    assert scaling.scaled_learning_rate(0.001, "linear", 8) == pytest.approx(0.008)
    assert scaling.scaled_learning_rate(0.001, "sqrt", 4) == pytest.approx(0.002)
    assert scaling.scaled_learning_rate(0.001, "none", 8) == pytest.approx(0.001)
    schedule = optimization.WarmupSchedule(0.004, warmup_steps=4)
    assert [round(float(schedule(step)), 6) for step in range(6)] == [0.001, 0.002, 0.003, 0.004, 0.004, 0.004]
    assert float(optimization.WarmupSchedule(0.01, 0)(100)) == pytest.approx(0.01)
    # The Keras schedule computes scaling.warmup_learning_rate in TensorFlow.
    for rate, steps in ((0.004, 4), (0.3, 7), (0.01, 0)):
        schedule = optimization.WarmupSchedule(rate, steps)
        assert [float(schedule(step)) for step in range(10)] == \
            pytest.approx([scaling.warmup_learning_rate(rate, step, steps) for step in range(10)], rel=1e-6)


def test_synthetic_data_is_learnable_and_bounded(tf_modules) -> None:
    data_formats = tf_modules[0]
    data = data_formats.synthetic((16, 16, 3), num_examples=5000, num_classes=10, seed=3, max_bytes=1 << 20)
    x, y = data.arrays
    assert data.num_examples == 5000 and x.nbytes <= 1 << 20  # a pool, cycled by the pipeline
    assert set(np.unique(y)) <= set(range(10)) and len(np.unique(y)) > 5


def test_tensorflow_errors_of_a_lost_peer_read_as_one_line(tf_modules) -> None:
    import tensorflow as tf
    from smtrain_tf.contract.errors import PeerFailure, TrainingFailure
    from smtrain_tf.contract.known_failures import recognise

    message = ("Graph execution error:\n\nDetected at node CollectiveReduceV2\n"
               "The following tasks are unhealthy (stopped sending heartbeats):\n/job:worker/replica:0/task:1\n")
    failure = recognise(tf.errors.UnavailableError(None, None, message))
    assert isinstance(failure, PeerFailure)
    assert "unhealthy (stopped sending heartbeats): /job:worker/replica:0/task:1" in failure.reason
    memory = recognise(tf.errors.ResourceExhaustedError(None, None, "OOM when allocating tensor"))
    assert isinstance(memory, TrainingFailure) and "lower batch_size_per_replica" in memory.reason
    # A checkpoint or export the disk refused (ENOSPC; EFBIG under a file-size limit), from TensorFlow or Python.
    full = recognise(tf.errors.OutOfRangeError(None, None, "{{function_node __wrapped__SaveV2}} /ckpt/ckpt-44_temp/"
                                               "part-0; File too large [Op:SaveV2]"))
    assert isinstance(full, TrainingFailure) and full.reason.startswith("a write failed: the disk is full (/ckpt/")
    import errno

    assert "No space left on device: /model/1" in recognise(OSError(errno.ENOSPC, "No space left on device",
                                                                     "/model/1")).reason
    assert recognise(OSError(errno.ENOENT, "No such file")) is None
    assert recognise(tf.errors.InvalidArgumentError(None, None, "shapes differ")) is None
    assert recognise(ValueError("not TensorFlow's")) is None


FULL_DISK_SAVE = '''
import os, resource, sys
import tensorflow as tf
from smtrain_tf.distribute.choice import DEFAULT
from smtrain_tf.contract.known_failures import recognise
from smtrain_tf.training.checkpoints import Checkpointer, Progress

directory = sys.argv[1]
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(2)])
checkpointer = Checkpointer(directory, 3, kind=DEFAULT, is_chief=True, worker_index=0, model=model,
                            optimizer=tf.keras.optimizers.Adam())
print("first", os.path.basename(checkpointer.save(Progress(1, 0, 4))))
big = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(100_000)])
checkpointer = Checkpointer(directory, 3, kind=DEFAULT, is_chief=True, worker_index=0, model=big,
                            optimizer=tf.keras.optimizers.Adam())
resource.setrlimit(resource.RLIMIT_FSIZE, (64 * 1024, resource.RLIM_INFINITY))  # Python ignores SIGXFSZ
try:
    checkpointer.save(Progress(2, 0, 8))
except Exception as exc:
    print("reason", recognise(exc).reason)
print("left", sorted(os.listdir(directory)))
'''


def test_a_checkpoint_the_full_disk_refuses_fails_with_its_cause_and_leaves_no_partial(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", FULL_DISK_SAVE, str(tmp_path / "ckpt")], capture_output=True,
                          text=True, timeout=300, env={**base_environment(), "PYTHONPATH": conftest.ENTRYPOINTS})
    assert done.returncode == 0, done.stderr[-3000:]
    assert "first ckpt-4" in done.stdout
    assert "reason a write failed: the disk is full (" in done.stdout and "File too large" in done.stdout
    # TensorFlow's ckpt-8_temp went with the failure; the earlier checkpoint and its state file stay.
    left = done.stdout.split("left ", 1)[1]
    assert "ckpt-8" not in left and "'ckpt-4.index'" in left and "'checkpoint'" in left
