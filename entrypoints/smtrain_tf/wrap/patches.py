"""Installs the wrap's patches: on every Keras the script may use (tf.keras and `import keras`), and on TensorFlow.

They are one Keras with TensorFlow 2.16+ (Keras 3) and up to 2.15 (Keras 2); with tf_keras
(TF_USE_LEGACY_KERAS=1) they are two, and each gets its own patches.
"""

from __future__ import annotations

from typing import Any, List

from ..check import settings as check_settings
from ..distribute.choice import DEFAULT
from ..keras_support import endless_arrays, iterator_release, keras_repairs, several_steps
from ..keras_support.keras_compat import keras as tf_keras
from . import check_rest, devices_guard, keras_fit, learning_rate, own_strategy, saving
from .context import WrapContext


def keras_handles() -> List[Any]:
    handles = [tf_keras]
    try:
        import keras
    except ImportError:
        return handles
    if keras.Model is not tf_keras.Model:
        handles.append(keras)
    return handles


def install(ctx: WrapContext) -> None:
    if ctx.replicas > 1 or ctx.kind != DEFAULT:
        keras_repairs.install()
    # Every layout: one device's epochs pay for the deletions and the data's checks too.
    iterator_release.install()
    endless_arrays.install()
    several_steps.install()
    redirect = saving.new_redirect()
    patched: List[Any] = []
    for keras in keras_handles():
        model_class = keras.Model
        if model_class not in patched:
            patched.append(model_class)
            keras_fit.patch(keras, model_class, ctx)
            learning_rate.patch(keras, model_class, ctx)
            check_rest.patch(model_class)
            saving.patch_model(model_class, ctx, redirect)
        saving.patch_functions(keras, ctx, redirect)
    saving.patch_saved_model(ctx, redirect)
    devices_guard.patch(ctx)
    # A check's one-device run trains in smtrain's loop under the wrap's strategy: the script's own must be it.
    if ctx.kind != DEFAULT or check_settings.read() is not None:
        own_strategy.patch(ctx)
