"""The warm-up schedule, the optimizer, and mixed-precision policy (the rate scaling is in ../scaling.py)."""

from __future__ import annotations

from typing import Any, Dict, Optional

import tensorflow as tf

from ..distribute import devices
from .keras_compat import keras, loss_scale_optimizer


# Registered: Keras 3 clones a compiled model (the export's copy) by deserializing its optimizer, schedule included.
@keras.utils.register_keras_serializable(package="smtrain_tf")
class WarmupSchedule(keras.optimizers.schedules.LearningRateSchedule):
    """Linear warm-up from rate/warmup_steps to the rate over warmup_steps, then constant.

    In TensorFlow, the values of scaling.warmup_learning_rate (the plain-Python statement of the rule).
    """

    def __init__(self, rate: float, warmup_steps: int) -> None:
        super().__init__()
        self.rate = float(rate)
        self.warmup_steps = int(warmup_steps)

    def __call__(self, step: Any) -> tf.Tensor:
        step = tf.cast(tf.convert_to_tensor(step), tf.float32)
        if self.warmup_steps <= 0:
            return tf.constant(self.rate, tf.float32)
        fraction = tf.minimum(1.0, (step + 1.0) / float(self.warmup_steps))
        return self.rate * fraction

    def get_config(self) -> Dict[str, Any]:
        return {"rate": self.rate, "warmup_steps": self.warmup_steps}


def make_optimizer(name: str, schedule: WarmupSchedule, momentum: float) -> Any:
    if name == "sgd":
        return keras.optimizers.SGD(learning_rate=schedule, momentum=momentum)
    return keras.optimizers.Adam(learning_rate=schedule)


def current_learning_rate(optimizer: Any) -> Optional[float]:
    """For the metric line; None if the optimizer's rate cannot be read as a number."""
    try:
        rate = optimizer.learning_rate
        if callable(rate) and not isinstance(rate, (tf.Variable, tf.Tensor)):
            rate = rate(optimizer.iterations)
        return float(tf.convert_to_tensor(rate))
    except (TypeError, ValueError, AttributeError):
        return None


def mixed_precision_wanted(setting: str) -> bool:
    if setting == "on":
        return True
    if setting == "off":
        return False
    return devices.supports_fast_float16()


def set_policy(mixed: bool) -> None:
    keras.mixed_precision.set_global_policy("mixed_float16" if mixed else "float32")


def with_loss_scaling(optimizer: Any, mixed: bool) -> Any:
    """float16 gradients underflow without loss scaling; wrap unless the user already did."""
    if not mixed or isinstance(optimizer, keras.mixed_precision.LossScaleOptimizer):
        return optimizer
    return loss_scale_optimizer(optimizer)
