"""Keras callbacks for smtrain_tf.fit, driven through keras.callbacks.CallbackList as Keras's own fit drives them.

Every callback is taken: Keras's own (EarlyStopping, ReduceLROnPlateau, LearningRateScheduler,
ModelCheckpoint, CSVLogger, TensorBoard...) and the script's subclasses. Train and epoch events
come with the logs Keras passes (`loss`, each metric, their `val_` values). The loop runs many
steps per tf.function call, which batch hooks cannot see; so when a callback implements one
(its class overrides a train-batch hook, or sets one as LambdaCallback does), the loop runs one step
per call and calls
`on_train_batch_begin/end` with the epoch's running values, as Keras does. Every process drives
them with the same logs (metrics are reduced over the job), so EarlyStopping or ReduceLROnPlateau
decides the same on every worker. `model.stop_training` stops at the end of the batch or epoch.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Dict, List, Optional, Sequence

from ..keras_support.keras_compat import keras
from .loop import EpochHooks


def check(callbacks: Optional[Sequence[Any]]) -> List[Any]:
    """The callbacks as a list; ValueError for what is no Keras callback, or cannot run here."""
    given = list(callbacks or [])
    strangers = sorted({type(c).__name__ for c in given if not isinstance(c, keras.callbacks.Callback)})
    if strangers:
        raise ValueError(f"smtrain_tf.fit: callbacks must be Keras callbacks (keras.callbacks.Callback), not "
                         f"{', '.join(strangers)}")
    if any(isinstance(c, keras.callbacks.TensorBoard) for c in given) and not _has_tensorboard():
        # tf.summary needs it to write anything; find out now rather than after the first epoch.
        raise ValueError("smtrain_tf.fit: the TensorBoard callback needs the tensorboard package, which is not "
                         "installed (SageMaker's TensorFlow 2.21 image has none): add tensorboard to your "
                         "requirements.txt")
    return given


_BATCH_HOOKS = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin", "on_batch_end")


def _epoch_only(callback: Any) -> bool:
    """Keras callbacks whose batch hooks do nothing at their settings: one that saves or logs per epoch."""
    if isinstance(callback, keras.callbacks.ModelCheckpoint):
        return getattr(callback, "save_freq", "epoch") == "epoch"
    if isinstance(callback, keras.callbacks.TensorBoard):
        profiled = getattr(callback, "_profile_batch", None) or getattr(callback, "_start_batch", 0)
        # write_steps_per_second logs a value at every batch, whatever update_freq says.
        return (getattr(callback, "update_freq", "epoch") == "epoch" and not profiled
                and not getattr(callback, "write_steps_per_second", False))
    return False


def wants_batches(callbacks: Sequence[Any]) -> bool:
    """Whether a callback has train-batch hooks that do something (a ModelCheckpoint saving every n
    batches has; one saving each epoch has not)."""
    base = keras.callbacks.Callback
    for callback in callbacks:
        if _epoch_only(callback):
            continue
        if any(name in vars(callback) or getattr(type(callback), name, None) is not getattr(base, name, None)
               for name in _BATCH_HOOKS):
            return True
    return False


def _has_tensorboard() -> bool:
    try:
        return importlib.util.find_spec("tensorboard") is not None
    except (ImportError, ValueError):
        return False


class CallbackHooks(EpochHooks):
    """The loop's hooks, forwarded to a CallbackList with a History."""

    def __init__(self, callbacks: List[Any], model: Any, epochs: int, steps: int) -> None:
        self.model = model
        self.batches = wants_batches(callbacks)
        self.list = keras.callbacks.CallbackList(callbacks, add_history=True, model=model, epochs=epochs,
                                                 steps=steps, verbose=0)
        self.last_logs: Dict[str, float] = {}

    @property
    def history(self) -> Any:
        return next(c for c in self.list.callbacks if isinstance(c, keras.callbacks.History))

    def train_begin(self) -> None:
        self.model.stop_training = False
        self.list.on_train_begin()

    def epoch_begin(self, epoch: int) -> None:
        self.list.on_epoch_begin(epoch)

    def batch_begin(self, step: int) -> None:
        self.list.on_train_batch_begin(step)

    def batch_end(self, step: int, logs: Dict[str, float]) -> None:
        self.list.on_train_batch_end(step, dict(logs))

    def stopped(self) -> bool:
        return bool(getattr(self.model, "stop_training", False))

    def epoch_end(self, epoch: int, logs: Dict[str, float]) -> bool:
        self.last_logs = dict(logs)
        self.list.on_epoch_end(epoch, dict(logs))
        return self.stopped()

    def train_end(self) -> None:
        self.list.on_train_end(dict(self.last_logs))
