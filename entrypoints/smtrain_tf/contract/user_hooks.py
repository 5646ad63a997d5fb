"""`module:function` hooks in the user's source directory (the model hook, the data hook): found and called."""

from __future__ import annotations

import importlib
import inspect
from typing import Any, Callable, Dict

from .errors import ConfigurationError


def load_hook(kind: str, name: str) -> Callable[..., Any]:
    """The function `name` names; `kind` ('model', 'data') is for the messages."""
    module_name, function_name = name.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"{kind} hook '{name}': cannot import module '{module_name}' ({exc}); put "
                                 f"{module_name.replace('.', '/')}.py in your source directory") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ConfigurationError(f"{kind} hook '{name}': module '{module_name}' has no function '{function_name}'")
    return function


def call_hook(function: Callable[..., Any], offered: Dict[str, Any]) -> Any:
    """Pass only the keyword arguments the hook's signature names (all of them if it takes **kwargs)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return function(**offered)
    if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        return function(**offered)
    return function(**{k: v for k, v in offered.items() if k in parameters})
