"""`model.evaluate` under MultiWorkerMirrored with Keras 3, which fails there as fit does (keras-team/keras#20585).

Each worker evaluates a copy of the model outside the strategy: the same weights (identical on
every worker after training), compiled from the model's own compile configuration, on all the
data it is given. Every worker gets the same answer, as Keras's evaluate would give; Keras 2's
evaluate works under the strategy and is left alone.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import tensorflow as tf

from ..distribute.choice import MWMS
from ..training.keras_compat import IS_KERAS3
from . import fit_inputs
from .context import Unsupported, WrapContext


def _copy(keras: Any, model: Any, location: str) -> Any:
    try:
        copy = keras.models.clone_model(model)
    except Exception as exc:  # noqa: BLE001 - subclassed models cannot always be cloned
        raise Unsupported(f"{location}: model.evaluate under MultiWorkerMirrored needs a copy of the model outside "
                          f"the strategy (Keras 3's evaluate fails there, keras-team/keras#20585), and this model "
                          f"cannot be cloned ({type(exc).__name__}: {exc}); use validation_data in fit") from None
    copy.set_weights(model.get_weights())
    config = model.get_compile_config()
    if config:
        copy.compile_from_config(config)
    return copy


def patch(keras: Any, model_class: Any, ctx: WrapContext) -> None:
    if ctx.kind != MWMS or not IS_KERAS3 or not hasattr(model_class, "get_compile_config"):
        return
    original: Callable[..., Any] = model_class.evaluate

    @functools.wraps(original)
    def evaluate(self: Any, *args: Any, **kwargs: Any) -> Any:
        location = fit_inputs.caller_location(1, ctx.settings.script_dir)
        ctx.say_once(f"wrap: note: {location}: model.evaluate runs on each worker alone, on a copy of the model "
                     "outside the strategy (Keras 3's evaluate fails under MultiWorkerMirrored)")
        tf.distribute.experimental_set_strategy(None)
        try:
            return original(_copy(keras, self, location), *args, **kwargs)
        finally:
            tf.distribute.experimental_set_strategy(ctx.dist.strategy)

    model_class.evaluate = evaluate
