"""One Keras handle for TF 2.11-2.21: `tf.keras` is Keras 2 up to TF 2.15 and Keras 3 after.

Only the differences this program meets are bridged here (loss scaling, optimizer variables).
"""

from __future__ import annotations

import os
from typing import Any, Callable, List

# Keras 3 can run on other backends; this program needs TensorFlow's.
os.environ["KERAS_BACKEND"] = "tensorflow"

import tensorflow as tf  # noqa: E402

keras = tf.keras


def keras_version() -> str:
    version = getattr(keras, "__version__", None)
    if version is None and hasattr(keras, "version"):
        version = keras.version()
    return str(version or "2")


IS_KERAS3 = keras_version().startswith("3")


def keras_file_kwargs() -> dict:
    """Keras 2.11 and 2.12 write the `.keras` format only when asked for it by name."""
    if IS_KERAS3:
        return {}
    try:
        major, minor = (int(p) for p in keras_version().split(".")[:2])
    except ValueError:
        return {}
    return {"save_format": "keras_v3"} if (major, minor) < (2, 13) else {}


def optimizer_variables(optimizer: Any) -> List[Any]:
    """Keras 3 and Keras 2.11+ expose a property; older Keras 2 optimizers a method."""
    variables = optimizer.variables
    return list(variables() if callable(variables) else variables)


def build_optimizer(optimizer: Any, variables: List[Any]) -> None:
    """Create slot variables now, under the strategy scope, instead of inside a replica step."""
    build = getattr(optimizer, "build", None)
    if build is None or getattr(optimizer, "built", False) is True:
        return  # a user's optimizer may have trained already: its variables exist
    try:
        build(variables)
    except (TypeError, ValueError, AttributeError):
        # Keras 2's LossScaleOptimizer builds through its inner optimizer.
        inner = getattr(optimizer, "inner_optimizer", None)
        if inner is None or not hasattr(inner, "build"):
            raise
        inner.build(variables)


def loss_scale_optimizer(optimizer: Any) -> Any:
    """Dynamic loss scaling for mixed_float16 (Keras 2 and 3 share the class path)."""
    return keras.mixed_precision.LossScaleOptimizer(optimizer)


def scale_loss(optimizer: Any, loss: tf.Tensor) -> tf.Tensor:
    """Keras 2 spells it get_scaled_loss; Keras 3 scale_loss (identity without loss scaling)."""
    if hasattr(optimizer, "get_scaled_loss"):
        return optimizer.get_scaled_loss(loss)
    if hasattr(optimizer, "scale_loss"):
        return optimizer.scale_loss(loss)
    return loss


def unscale_gradients(optimizer: Any, gradients: List[Any]) -> List[Any]:
    """Keras 2 wants unscaled gradients in apply_gradients; Keras 3's LossScaleOptimizer unscales itself."""
    if hasattr(optimizer, "get_unscaled_gradients"):
        return optimizer.get_unscaled_gradients(gradients)
    return gradients


def patch_epoch_iterator(marker: str, apply: Callable[[type], None]) -> bool:
    """Run `apply` on Keras 3's TensorFlow epoch iterator class once per process (`marker`, an attribute set on the
    class, says it ran); False where there is none (Keras 2 and tf_keras)."""
    try:
        from keras.src.backend.tensorflow.trainer import TFEpochIterator
    except ImportError:
        return False
    if not getattr(TFEpochIterator, marker, False):
        apply(TFEpochIterator)
        setattr(TFEpochIterator, marker, True)
    return True
