"""During `smtrain check`, the wrapped script runs to its end in both runs, each fit call cut short.

Each fit call runs Keras's own fit, as the paid job runs it, for the check's steps (one epoch of them, or
the epochs that reach them; so the script gets a real History), and evaluate and predict run at most that
many batches; the model's steps are recorded inside it (check/keras_steps.py). What follows training
(evaluate's values unpacked, a save, an export) then fails the check's run at its line where it would fail
the job after its training was paid for.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable, Dict, Optional

import tensorflow as tf

from ..check import settings as check_settings
from . import fit_inputs


def epoch_batches(given: Dict[str, Any]) -> Optional[int]:
    """The batches of one epoch of this call, where they are known: its steps_per_epoch, the arrays' batches (at
    the global batch), or a dataset's known cardinality."""
    if given.get("steps_per_epoch"):
        return int(given["steps_per_epoch"])
    x = given.get("x")
    if isinstance(x, tf.data.Dataset):
        count = int(x.cardinality())
        return count if count > 0 else None
    return fit_inputs.array_batches_per_epoch(given)


def cut(given: Dict[str, Any], steps: int) -> Dict[str, Any]:
    """A fit call's arguments for at most `steps` steps (and as many validation steps): one epoch of them, or, when
    an epoch is shorter, as many epochs as reach them (the recorder keeps the first `steps`)."""
    given = dict(given)
    first = int(given.get("initial_epoch") or 0)
    known = epoch_batches(given)
    if known is not None and known < steps:
        given["epochs"] = first + math.ceil(steps / known)
    else:
        given["epochs"] = first + 1
        given["steps_per_epoch"] = min(known or steps, steps)
    if given.get("validation_data") is not None or given.get("validation_split"):
        given["validation_steps"] = min(int(given.get("validation_steps") or steps), steps)
    return given


def patch(model_class: Any) -> None:
    """evaluate and predict run at most the check's steps (their values are not compared)."""
    settings = check_settings.read()
    if settings is None:
        return
    # Where `steps` stands among each method's positional arguments (Keras 2 and 3 alike).
    for name, at in (("evaluate", 5), ("predict", 3)):
        original = getattr(model_class, name)

        def shortened(self: Any, *args: Any, __original: Callable[..., Any] = original, __at: int = at,
                      **kwargs: Any) -> Any:
            if len(args) <= __at and kwargs.get("steps") is None:
                kwargs["steps"] = settings.steps
            return __original(self, *args, **kwargs)

        setattr(model_class, name, functools.wraps(original)(shortened))
