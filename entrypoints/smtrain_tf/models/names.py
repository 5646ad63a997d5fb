"""Model names the `model` hyperparameter accepts, checked without importing TensorFlow."""

from __future__ import annotations

import re

from ..contract.errors import ConfigurationError

BUILT_INS = ("mlp", "cnn", "resnet50")
_HOOK = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def is_hook(name: str) -> bool:
    return bool(_HOOK.match(name))


def check_name(name: str) -> None:
    """A built-in or a well-formed `module:function` hook; anything else fails before training starts."""
    if name in BUILT_INS or is_hook(name):
        return
    raise ConfigurationError(f"unknown model '{name}': use one of {', '.join(BUILT_INS)} or module:function "
                             "(a function in your source directory that returns a Keras model)")
