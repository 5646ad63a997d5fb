"""The throughput benchmark's data (bench/throughput_bench.py): the same for a seed, and learnable from the
training split alone (the held-out digits are other originals)."""

from __future__ import annotations

import importlib.util

import numpy as np

from tests.support import ROOT


def _bench():
    spec = importlib.util.spec_from_file_location("throughput_bench", ROOT / "bench" / "throughput_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_data_is_deterministic_shaped_and_bounded() -> None:
    bench = _bench()
    first = bench.make_data(seed=3, train=500, held_out=200)
    second = bench.make_data(seed=3, train=500, held_out=200)
    other = bench.make_data(seed=4, train=500, held_out=200)
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], other[0])
    x, y, xv, yv = first
    assert x.shape == (500, 28, 28) and xv.shape == (200, 28, 28)
    assert x.dtype == np.float32 and y.dtype == np.int64
    assert 0.0 <= x.min() and x.max() <= 1.0
    assert set(np.unique(y)) == set(range(10))


def test_data_is_learnable_on_held_out_digits() -> None:
    from sklearn.linear_model import LogisticRegression

    x, y, xv, yv = _bench().make_data(seed=0, train=1500, held_out=500)
    model = LogisticRegression(max_iter=300).fit(x.reshape(len(x), -1), y)
    accuracy = model.score(xv.reshape(len(xv), -1), yv)
    # Chance is 0.1; a linear model on 1,500 examples already gets most held-out digits right.
    assert accuracy > 0.8, accuracy
