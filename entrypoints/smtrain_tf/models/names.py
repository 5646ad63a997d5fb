"""Model names the `model` hyperparameter accepts, checked without importing TensorFlow."""

from __future__ import annotations

from ..contract.errors import ConfigurationError
from ..contract.hyperparameters import is_hook

BUILT_INS = ("mlp", "cnn", "resnet50")


def check_name(name: str) -> None:
    """A built-in or a well-formed `module:function` hook; anything else fails before training starts."""
    if name in BUILT_INS or is_hook(name):
        return
    raise ConfigurationError(f"unknown model '{name}': use one of {', '.join(BUILT_INS)} or module:function "
                             "(a function in your source directory that returns a Keras model)")
