"""The batch and learning-rate maths, in one place: the entrypoint trains with it, smtrain's plan shows it.

Plain Python with no imports from TensorFlow or from the rest of smtrain_tf, so smtrain can import
this module (`smtrain_tf.scaling`) at plan time without slowing its start-up; it can even be
loaded on its own, by file path. Python 3.9 or newer.
"""

from __future__ import annotations

import math
from typing import Tuple

# How the learning rate grows with the number of replicas, relative to the rate for one replica.
LR_SCALING_RULES: Tuple[str, ...] = ("none", "linear", "sqrt")


def _check_replicas(replicas: int) -> None:
    if replicas < 1:
        raise ValueError(f"replicas must be at least 1, got {replicas}")


def global_batch_size(per_replica: int, replicas: int) -> int:
    """Examples per training step over the whole job: the per-replica batch times the replicas."""
    _check_replicas(replicas)
    if per_replica < 1:
        raise ValueError(f"the per-replica batch must be at least 1, got {per_replica}")
    return per_replica * replicas


def scaled_learning_rate(base: float, rule: str, replicas: int) -> float:
    """The learning rate for `replicas` replicas, given `base`, the rate that suits one replica.

    rule: `none` (base), `linear` (base x replicas) or `sqrt` (base x sqrt(replicas)).
    """
    _check_replicas(replicas)
    if rule == "linear":
        return base * replicas
    if rule == "sqrt":
        return base * math.sqrt(replicas)
    if rule == "none":
        return base
    raise ValueError(f"unknown learning-rate scaling rule {rule!r}: expected one of {', '.join(LR_SCALING_RULES)}")


def warmup_steps(warmup_epochs: float, steps_per_epoch: int) -> int:
    """Steps of linear warm-up: warmup_epochs (may be fractional) in steps, rounded to the nearest."""
    return int(round(warmup_epochs * steps_per_epoch))


def warmup_learning_rate(rate: float, step: int, warmup_steps: int) -> float:
    """The rate at 0-based `step`: rate x (step + 1) / warmup_steps during warm-up, then `rate`.

    The first step thus trains at rate / warmup_steps; without warm-up (warmup_steps <= 0) every
    step trains at `rate`. The training program's Keras schedule computes the same values in
    TensorFlow (float32).
    """
    if warmup_steps <= 0:
        return float(rate)
    return float(rate) * min(1.0, (step + 1.0) / float(warmup_steps))
