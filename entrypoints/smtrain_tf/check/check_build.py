"""During `smtrain check`, the one-device run builds the model before its first step, as Keras builds it under
the planned run's strategy (its symbolic build at fit, with keras_repairs.py's batch of zeros shaped by the
data's spec): so both runs have the model's weights when Keras makes its train function, and start from the
same ones (check/keras_steps.py). Without a strategy Keras builds a subclassed model only as its step is
first traced, inside the train function, where no start weights can be set. The paid job is not touched: on
one device it builds as Keras does; on several, under the strategy, it is built this way already.
"""

from __future__ import annotations

from typing import Any

import tensorflow as tf

from ..keras_support import keras_repairs

_INSTALLED = "_smtrain_check_build"


def install(model: Any) -> None:
    """On the model instance: Keras's `_maybe_symbolic_build` builds an unbuilt model with no strategy set too."""
    if getattr(model, _INSTALLED, False) or keras_repairs.trainer_module() is None:
        return
    original = model._maybe_symbolic_build

    def _maybe_symbolic_build(iterator: Any = None, data_batch: Any = None) -> Any:
        unbuilt = not all(layer.built for layer in model._flatten_layers())
        if model._distribute_strategy is not None or iterator is None or not unbuilt \
                or not keras_repairs.has_own_call(model):  # a GAN's sub-models build in its step, on every layout
            return original(iterator=iterator, data_batch=data_batch)
        try:
            batch = keras_repairs.zeros_like_batch(iterator)
        except (TypeError, ValueError):  # ragged or sparse data: built in the step, as Keras builds it
            return original(iterator=iterator, data_batch=data_batch)
        return model._symbolic_build(data_batch=keras_repairs.with_labels(model, tf.distribute.get_strategy(), batch))

    model._maybe_symbolic_build = _maybe_symbolic_build
    object.__setattr__(model, _INSTALLED, True)
