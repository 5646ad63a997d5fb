"""The patched `Model.compile`: the compiled optimizer's rate rescaled for the replicas, when the spec asks.

Off unless SMTRAIN_LR_SCALING is linear or sqrt (smtrain sets it from training.lr_scaling): a
script's rate was chosen for its own batch, and the wrap does not second-guess it by default.
Each optimizer is rescaled once, however often it is compiled. A schedule cannot be rescaled in
place (Keras refuses to replace it after construction): it is left, and the log says so.
"""

from __future__ import annotations

import functools
import weakref
from typing import Any, Callable

import tensorflow as tf

from .. import scaling
from .context import WrapContext, plural


def _inner(optimizer: Any) -> Any:
    """A LossScaleOptimizer (mixed precision) holds the real one."""
    return getattr(optimizer, "inner_optimizer", None) or optimizer


def _held_rate(optimizer: Any) -> Any:
    """What the optimizer holds: a variable or number, or a schedule (Keras 2 and 3 keep it here)."""
    held = getattr(optimizer, "_learning_rate", None)
    if held is None:
        held = getattr(optimizer, "_hyper", {}).get("learning_rate")  # Keras 2's legacy optimizers
    return held


def rescale(keras: Any, ctx: WrapContext, optimizer: Any) -> None:
    rule = ctx.settings.lr_scaling
    inner = _inner(optimizer)
    held = _held_rate(inner)
    if isinstance(held, keras.optimizers.schedules.LearningRateSchedule) or \
            (callable(held) and not hasattr(held, "assign")):
        ctx.say_once(f"wrap: learning rate {type(held).__name__} left as it is: SMTRAIN_LR_SCALING={rule} rescales "
                     "a fixed rate only (scale the schedule's rates in the script)")
        return
    try:
        old = float(tf.convert_to_tensor(inner.learning_rate))
    except (AttributeError, TypeError, ValueError):
        ctx.say_once(f"wrap: the learning rate of {type(inner).__name__} cannot be read; left as it is")
        return
    new = scaling.scaled_learning_rate(old, rule, ctx.planned_replicas)
    inner.learning_rate = new
    ctx.say(f"wrap: learning rate {old:g} -> {new:g} ({rule}, {plural(ctx.planned_replicas, 'replica')})")


def patch(keras: Any, model_class: Any, ctx: WrapContext) -> None:
    if ctx.settings.lr_scaling == "none":
        return  # nothing to do: leave compile untouched
    original: Callable[..., Any] = model_class.compile
    done: "weakref.WeakSet[Any]" = weakref.WeakSet()

    @functools.wraps(original)
    def compile(self: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(self, *args, **kwargs)
        optimizer = getattr(self, "optimizer", None)
        if optimizer is not None and optimizer not in done:
            done.add(optimizer)
            rescale(keras, ctx, optimizer)
        return result

    model_class.compile = compile
