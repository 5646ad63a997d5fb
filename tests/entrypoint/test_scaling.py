"""smtrain_tf.scaling: the batch and learning-rate maths shared by the entrypoint and smtrain's plan."""

from __future__ import annotations

import importlib.util
import math
from pathlib import Path

import pytest
from smtrain_tf import scaling  # noqa: E402
from smtrain_tf.contract import hyperparameters  # noqa: E402

from . import conftest  # noqa: F401 - puts entrypoints/ on sys.path

SQRT = {1: 1.0, 2: 1.4142135623730951, 8: 2.8284271247461903, 16: 4.0}

# (rule, replicas, base rate, expected rate)
LEARNING_RATES = [
    *[("none", r, 0.001, 0.001) for r in (1, 2, 8, 16)],
    ("linear", 1, 0.001, 0.001),
    ("linear", 2, 0.001, 0.002),
    ("linear", 8, 0.001, 0.008),
    ("linear", 16, 0.001, 0.016),
    ("sqrt", 1, 0.001, 0.001),
    ("sqrt", 2, 0.001, 0.001 * SQRT[2]),
    ("sqrt", 8, 0.001, 0.001 * SQRT[8]),
    ("sqrt", 16, 0.001, 0.004),
    ("linear", 8, 0.1, 0.8),
    ("sqrt", 16, 0.1, 0.4),
]


@pytest.mark.parametrize("rule,replicas,base,expected", LEARNING_RATES)
def test_learning_rate_scaling_rules(rule: str, replicas: int, base: float, expected: float) -> None:
    assert scaling.scaled_learning_rate(base, rule, replicas) == pytest.approx(expected, rel=1e-12)


@pytest.mark.parametrize("replicas", [1, 2, 8, 16])
def test_rules_agree_at_one_replica_and_keep_their_order(replicas: int) -> None:
    none, linear, sqrt = (scaling.scaled_learning_rate(0.01, rule, replicas) for rule in ("none", "linear", "sqrt"))
    assert none <= sqrt <= linear
    assert (none == sqrt == linear) is (replicas == 1)
    assert sqrt == pytest.approx(math.sqrt(none * linear))


@pytest.mark.parametrize("per_replica,replicas,expected", [
    (64, 1, 64), (64, 2, 128), (64, 8, 512), (64, 16, 1024), (1, 16, 16), (33, 8, 264),
])
def test_global_batch_is_per_replica_batch_times_replicas(per_replica: int, replicas: int, expected: int) -> None:
    assert scaling.global_batch_size(per_replica, replicas) == expected


@pytest.mark.parametrize("call,message", [
    (lambda: scaling.scaled_learning_rate(0.001, "cubic", 2), "unknown learning-rate scaling rule 'cubic'"),
    (lambda: scaling.scaled_learning_rate(0.001, "linear", 0), "replicas must be at least 1"),
    (lambda: scaling.global_batch_size(64, 0), "replicas must be at least 1"),
    (lambda: scaling.global_batch_size(0, 8), "per-replica batch must be at least 1"),
])
def test_impossible_inputs_are_refused(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize("warmup_epochs,steps_per_epoch,expected", [
    (0, 100, 0), (1, 100, 100), (0.5, 10, 5), (2.5, 4, 10), (0.04, 10, 0), (0.06, 10, 1),
])
def test_warmup_epochs_in_steps(warmup_epochs: float, steps_per_epoch: int, expected: int) -> None:
    assert scaling.warmup_steps(warmup_epochs, steps_per_epoch) == expected


@pytest.mark.parametrize("rate,warmup_steps,rates", [
    (0.004, 4, [0.001, 0.002, 0.003, 0.004, 0.004, 0.004]),
    (0.01, 0, [0.01] * 6),
    (0.3, 1, [0.3] * 6),
])
def test_warmup_schedule_values(rate: float, warmup_steps: int, rates: list[float]) -> None:
    assert [scaling.warmup_learning_rate(rate, step, warmup_steps) for step in range(6)] == pytest.approx(rates)


def test_the_hyperparameter_accepts_exactly_the_rules() -> None:
    assert scaling.LR_SCALING_RULES == ("none", "linear", "sqrt")
    for rule in scaling.LR_SCALING_RULES:
        assert hyperparameters.parse(["--lr_scaling", rule])["lr_scaling"] == rule


def test_the_module_stands_alone() -> None:
    """smtrain may load it by path: it must import nothing from the package (nor TensorFlow)."""
    source = Path(scaling.__file__)
    assert "import tensorflow" not in source.read_text()
    spec = importlib.util.spec_from_file_location("standalone_scaling", source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.scaled_learning_rate(0.001, "sqrt", 16) == pytest.approx(0.004)
    assert module.global_batch_size(64, 8) == 512
