"""smtrain's metric line from Keras's own fit, so SageMaker's metric definitions read wrapped runs too.

    epoch=2 step=90 loss=0.2811 accuracy=0.9241 val_loss=0.2533 val_accuracy=0.9306 lr=0.001 ...

The line is training/metrics.py's epoch_line; a value Keras's logs do not hold is left out.
"""

from __future__ import annotations

import math
import time
from typing import Any, Mapping, Optional

import numpy as np

from ..training import metrics
from ..training.optimization import current_learning_rate
from .context import WrapContext

_ALWAYS = ("epoch", "step", "elapsed")
_FROM_LOGS = ("loss", "accuracy", "val_loss", "val_accuracy")


def line_from_logs(epoch: int, step: int, logs: Mapping[str, Any], learning_rate: Optional[float],
                   examples_per_sec: Optional[float], elapsed: float) -> str:
    def value(name: str) -> float:
        return float(logs[name]) if name in logs else math.nan

    # epoch_line takes summed [loss, correct, count]; a count of one makes the sums the averages.
    train = np.array([value("loss"), value("accuracy"), 1.0])
    validation = None
    if "val_loss" in logs or "val_accuracy" in logs:
        validation = np.array([value("val_loss"), value("val_accuracy"), 1.0])
    line = metrics.epoch_line(epoch, step, train, validation, learning_rate, examples_per_sec or 0.0, elapsed)
    shown = set(_ALWAYS) | {name for name in _FROM_LOGS if name in logs}
    if learning_rate is not None:
        shown.add("lr")
    if examples_per_sec is not None:
        shown.add("examples_per_sec")
    return " ".join(part for part in line.split() if part.split("=", 1)[0] in shown)


def _iterations(model: Any) -> Optional[int]:
    try:
        return int(np.asarray(model.optimizer.iterations))
    except (AttributeError, TypeError, ValueError):
        return None


def make_callback(keras: Any, ctx: WrapContext, examples_per_epoch: Optional[int]) -> Any:
    """A callback of `keras`'s own class (Keras 2 and 3 each check theirs) that prints the line."""

    class SmtrainEpochLines(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self._began = time.perf_counter()

        def on_epoch_begin(self, epoch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
            self._began = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
            seconds = max(time.perf_counter() - self._began, 1e-9)
            step = _iterations(self.model)
            if step is None:
                step = (epoch + 1) * int((self.params or {}).get("steps") or 0)
            rate = examples_per_epoch / seconds if examples_per_epoch else None
            ctx.say(line_from_logs(epoch + 1, step, dict(logs or {}), current_learning_rate(self.model.optimizer),
                                   rate, time.time() - ctx.started_at))

    return SmtrainEpochLines()
