"""smtrain's metric line from Keras's own fit (wrapped scripts and smtrain_tf.fit), which SageMaker's metric
definitions read.

    epoch=2 step=90 loss=0.2811 accuracy=0.9241 val_loss=0.2533 val_accuracy=0.9306 lr=0.001 ...

The line is training/metrics.py's epoch_line over every value of Keras's logs. With TensorBoard on
(SMTRAIN_TENSORBOARD_DIR), the same values go to event files: on the chief, each fit call in a directory of
its own (training/summaries.py), on every layout alike.
"""

from __future__ import annotations

import math
import time
from typing import Any, Callable, Mapping, Optional

import numpy as np

from ..contract import mlflow_run
from ..keras_support.optimization import current_learning_rate
from . import metrics
from .summaries import Summaries, numbered

# Keras's logs name the rate itself; the line has its own lr=.
_RATE_KEYS = ("learning_rate", "lr")


def line_from_logs(epoch: int, step: int, logs: Mapping[str, Any], learning_rate: Optional[float],
                   examples_per_sec: Optional[float], elapsed: float, fit_call: int = 1) -> str:
    """Every value Keras logged (the loss and each compiled metric, `val_` ones for validation)."""
    train, validation = _values(logs, False), _values(logs, True)
    line = metrics.epoch_line(epoch, step, train, validation or None, learning_rate, examples_per_sec or 0.0,
                              elapsed, fit_call)
    if examples_per_sec is None:
        line = " ".join(part for part in line.split() if not part.startswith("examples_per_sec="))
    return line


def _iterations(model: Any) -> Optional[int]:
    try:
        return int(np.asarray(model.optimizer.iterations))
    except (AttributeError, TypeError, ValueError):
        return None


_calls = [0]  # the process's fit calls (wrapped or smtrain_tf.fit): their TensorBoard directories, `fit=N` in lines


def _values(logs: Mapping[str, Any], validation: bool) -> dict:
    def number(value: Any) -> float:
        try:
            return float(value)
        except (TypeError, ValueError):
            return math.nan

    return {(k[len("val_"):] if validation else k): number(v) for k, v in logs.items()
            if k.startswith("val_") == validation and k not in _RATE_KEYS}


def make_callback(keras: Any, say: Callable[[str], None], tensorboard_dir: Optional[str], started_at: float,
                  examples_per_epoch: Optional[int]) -> Any:
    """A callback of `keras`'s own class (Keras 2 and 3 each check theirs) that prints the line (the chief's: the
    caller adds it there only); with `tensorboard_dir`, also TensorBoard scalars, this fit call's own directory."""
    _calls[0] += 1
    call = _calls[0]
    directory = tensorboard_dir
    summaries = Summaries(numbered(directory, call)) if directory else None

    class SmtrainEpochLines(keras.callbacks.Callback):
        def __init__(self) -> None:
            super().__init__()
            self._began = time.perf_counter()
            self.last: dict = {}  # the last line's fields (the bundled program's training summary)

        def on_train_begin(self, logs: Optional[Mapping[str, Any]] = None) -> None:
            # The rate as the script's optimizer holds it once the wrap scaled it (if a rule asked it to).
            mlflow_run.log_params({"learning_rate": current_learning_rate(self.model.optimizer)})

        def on_train_end(self, logs: Optional[Mapping[str, Any]] = None) -> None:
            if summaries is not None:
                summaries.close()

        def on_epoch_begin(self, epoch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
            self._began = time.perf_counter()

        def on_epoch_end(self, epoch: int, logs: Optional[Mapping[str, Any]] = None) -> None:
            seconds = max(time.perf_counter() - self._began, 1e-9)
            step = _iterations(self.model)
            if step is None:
                step = (epoch + 1) * int((self.params or {}).get("steps") or 0)
            rate = examples_per_epoch / seconds if examples_per_epoch else None
            learning_rate = current_learning_rate(self.model.optimizer)
            line = line_from_logs(epoch + 1, step, dict(logs or {}), learning_rate, rate,
                                  time.time() - started_at, call)
            say(line)
            self.last = metrics.fields(line)
            mlflow_run.epoch(self.last, call)
            if summaries is not None:
                validation = _values(dict(logs or {}), True)
                summaries.epoch(epoch, _values(dict(logs or {}), False), validation or None, learning_rate,
                                rate or 0.0)

    return SmtrainEpochLines()
