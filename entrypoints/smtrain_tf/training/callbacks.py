"""Keras callbacks for smtrain_tf.fit, driven at epoch boundaries through keras.callbacks.CallbackList.

The loop runs many steps per tf.function call, so batch-level hooks never run: only callbacks
that work from train and epoch events are accepted (Keras's own classes, not subclasses, whose
behaviour is known). Every process drives them with the same logs (metrics are reduced over the
job), so EarlyStopping stops every worker at the same epoch.
"""

from __future__ import annotations

import importlib.util
from typing import Any, Dict, List, Optional, Sequence

from .keras_compat import keras
from .loop import EpochHooks

ACCEPTED = ("History", "EarlyStopping", "ModelCheckpoint", "CSVLogger", "TensorBoard")


def check(callbacks: Optional[Sequence[Any]]) -> List[Any]:
    """The callbacks as a list; ValueError naming every one fit cannot drive."""
    given = list(callbacks or [])
    accepted = tuple(getattr(keras.callbacks, name) for name in ACCEPTED)
    refused = sorted({type(c).__name__ for c in given if type(c) not in accepted})
    if refused:
        raise ValueError(f"smtrain_tf.fit cannot drive the callback(s) {', '.join(refused)}: its loop runs many "
                         f"steps per call and calls epoch hooks only; it accepts Keras's own "
                         f"{', '.join(ACCEPTED)}")
    if any(isinstance(c, keras.callbacks.TensorBoard) for c in given) and not _has_tensorboard():
        # tf.summary needs it to write anything; find out now rather than after the first epoch.
        raise ValueError("smtrain_tf.fit: the TensorBoard callback needs the tensorboard package, which is not "
                         "installed (SageMaker's TensorFlow 2.21 image has none): add tensorboard to your "
                         "requirements.txt")
    for callback in given:
        frequency = getattr(callback, "save_freq", "epoch")
        if isinstance(callback, keras.callbacks.ModelCheckpoint) and frequency != "epoch":
            raise ValueError(f"smtrain_tf.fit: ModelCheckpoint(save_freq={frequency!r}) saves on batch ends, which "
                             "this loop does not report; use save_freq='epoch' (smtrain_tf.fit also checkpoints "
                             "every `checkpoint_every_steps` steps, SMTRAIN_CHECKPOINT_EVERY_STEPS)")
    return given


def _has_tensorboard() -> bool:
    try:
        return importlib.util.find_spec("tensorboard") is not None
    except (ImportError, ValueError):
        return False


class CallbackHooks(EpochHooks):
    """The loop's epoch hooks, forwarded to a CallbackList with a History."""

    def __init__(self, callbacks: List[Any], model: Any, epochs: int, steps: int) -> None:
        self.model = model
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

    def epoch_end(self, epoch: int, logs: Dict[str, float]) -> bool:
        self.last_logs = dict(logs)
        self.list.on_epoch_end(epoch, dict(logs))
        return bool(getattr(self.model, "stop_training", False))

    def train_end(self) -> None:
        self.list.on_train_end(dict(self.last_logs))
