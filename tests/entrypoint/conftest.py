"""Shared fixtures: scikit-learn's digits written as channels (NPZ, TFRecord, CSV), and host cleanup."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from .sagemaker_env import REPO_ROOT, Host

# The entrypoint package is not installed; unit tests import it from its directory.
ENTRYPOINTS = str(REPO_ROOT / "entrypoints")
if ENTRYPOINTS not in sys.path:
    sys.path.insert(0, ENTRYPOINTS)

HELD_OUT = 360  # digits examples kept for the validation channel


def digits_split() -> dict[str, np.ndarray]:
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)  # 8x8 images scaled to [0, 1]
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(0).permutation(len(y))
    x, y = x[order], y[order]
    return {"x_train": x[HELD_OUT:], "y_train": y[HELD_OUT:], "x_val": x[:HELD_OUT], "y_val": y[:HELD_OUT]}


def write_npz(directory: Path, x: np.ndarray, y: np.ndarray, parts: int = 1) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for i, (xs, ys) in enumerate(zip(np.array_split(x, parts), np.array_split(y, parts), strict=True)):
        np.savez(directory / f"part-{i}.npz", x=xs, y=ys)
    return directory


def write_tfrecord(directory: Path, x: np.ndarray, y: np.ndarray, parts: int = 1, gzip: bool = False,
                   with_shape: bool = True) -> Path:
    """tf.train.Example records: float `x` flattened, int64 `y`, and (optionally) x's `shape`."""
    import tensorflow as tf

    directory.mkdir(parents=True, exist_ok=True)
    options = tf.io.TFRecordOptions(compression_type="GZIP") if gzip else None
    suffix = ".tfrecord.gz" if gzip else ".tfrecord"
    for i, (xs, ys) in enumerate(zip(np.array_split(x, parts), np.array_split(y, parts), strict=True)):
        with tf.io.TFRecordWriter(str(directory / f"part-{i}{suffix}"), options=options) as writer:
            for example_x, example_y in zip(xs, ys, strict=True):
                feature = {
                    "x": tf.train.Feature(float_list=tf.train.FloatList(value=example_x.reshape(-1))),
                    "y": tf.train.Feature(int64_list=tf.train.Int64List(value=[int(example_y)])),
                }
                if with_shape:
                    feature["shape"] = tf.train.Feature(int64_list=tf.train.Int64List(value=list(example_x.shape)))
                writer.write(tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString())
    return directory


def write_csv(directory: Path, x: np.ndarray, y: np.ndarray, header: bool = True) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    flat = x.reshape(len(x), -1)
    with open(directory / "data.csv", "w") as handle:
        if header:
            handle.write(",".join([f"p{i}" for i in range(flat.shape[1])] + ["label"]) + "\n")
        for row, label in zip(flat, y, strict=True):
            handle.write(",".join(f"{v:.6g}" for v in row) + f",{int(label)}\n")
    return directory


@pytest.fixture(scope="session")
def digits() -> dict[str, np.ndarray]:
    return digits_split()


@pytest.fixture(scope="session")
def digits_npz(tmp_path_factory: pytest.TempPathFactory, digits: dict[str, np.ndarray]) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("digits_npz")
    return {"train": write_npz(root / "train", digits["x_train"], digits["y_train"]),
            "validation": write_npz(root / "validation", digits["x_val"], digits["y_val"])}


@pytest.fixture
def hosts() -> Iterator[list[Host]]:
    """Hosts a test starts; any still running at the end are killed (SIGKILL)."""
    started: list[Host] = []
    yield started
    for host in started:
        host.kill()
