"""Built-in models (mlp, cnn, resnet50) and user hooks `module:function`.

Built-ins output float32 logits (the last layer stays float32 under mixed precision);
the serving signature turns them into probabilities.
"""

from __future__ import annotations

import importlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from ..contract.errors import ConfigurationError
from ..training.keras_compat import keras
from .names import check_name

# Shapes used with data=synthetic when synthetic_shape is not given.
SYNTHETIC_SHAPES = {"mlp": (28, 28), "cnn": (28, 28, 1), "resnet50": (224, 224, 3)}


@dataclass
class ModelBundle:
    model: Any
    loss: Optional[Callable[..., Any]] = None
    optimizer: Optional[Any] = None
    from_logits: bool = True


def parse_units(text: str) -> Tuple[int, ...]:
    try:
        units = tuple(int(u) for u in text.replace(" ", "").split(",") if u)
    except ValueError:
        raise ConfigurationError(f"hidden_units={text!r}: expected comma-separated layer sizes") from None
    if not units or min(units) < 1:
        raise ConfigurationError(f"hidden_units={text!r}: expected positive layer sizes such as 256,128")
    return units


def _logits(x: Any, num_classes: int) -> Any:
    return keras.layers.Dense(num_classes, dtype="float32", name="logits")(x)


def mlp(input_shape: Sequence[int], num_classes: int, hidden: Sequence[int]) -> Any:
    inputs = keras.Input(shape=tuple(input_shape), name="x")
    x = keras.layers.Flatten()(inputs) if len(input_shape) > 1 else inputs
    for i, width in enumerate(hidden):
        x = keras.layers.Dense(width, activation="relu", name=f"dense_{i}")(x)
    return keras.Model(inputs, _logits(x, num_classes), name="mlp")


def _image_input(input_shape: Sequence[int], model: str) -> Tuple[Any, Any]:
    shape = tuple(input_shape)
    if len(shape) not in (2, 3):
        raise ConfigurationError(f"model {model} needs image examples (height, width[, channels]), "
                                 f"the data has shape {list(shape)}")
    inputs = keras.Input(shape=shape, name="x")
    x = keras.layers.Reshape((*shape, 1))(inputs) if len(shape) == 2 else inputs
    return inputs, x


def cnn(input_shape: Sequence[int], num_classes: int) -> Any:
    inputs, x = _image_input(input_shape, "cnn")
    x = keras.layers.Conv2D(32, 3, padding="same", activation="relu")(x)
    x = keras.layers.Conv2D(64, 3, padding="same", activation="relu")(x)
    x = keras.layers.MaxPooling2D(2, padding="same")(x)
    x = keras.layers.Dropout(0.25)(x)
    x = keras.layers.Flatten()(x)
    x = keras.layers.Dense(128, activation="relu")(x)
    return keras.Model(inputs, _logits(x, num_classes), name="cnn")


def resnet50(input_shape: Sequence[int], num_classes: int) -> Any:
    inputs, x = _image_input(input_shape, "resnet50")
    if min(int(d) for d in x.shape[1:3]) < 32:
        raise ConfigurationError(f"model resnet50 needs images of at least 32x32, the data has {list(input_shape)}")
    backbone = keras.applications.ResNet50(weights=None, include_top=True, input_shape=tuple(x.shape[1:]),
                                           classes=num_classes, classifier_activation=None)
    # Keep the logits float32 under mixed precision.
    outputs = keras.layers.Activation("linear", dtype="float32", name="logits")(backbone(x))
    return keras.Model(inputs, outputs, name="resnet50")


def _load_hook(name: str) -> Callable[..., Any]:
    module_name, function_name = name.split(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"model hook '{name}': cannot import module '{module_name}' ({exc}); put "
                                 f"{module_name.replace('.', '/')}.py in your source directory") from None
    function = getattr(module, function_name, None)
    if not callable(function):
        raise ConfigurationError(f"model hook '{name}': module '{module_name}' has no function '{function_name}'")
    return function


def _call_hook(function: Callable[..., Any], offered: Dict[str, Any]) -> Any:
    """Pass only the keyword arguments the hook's signature names (all of them if it takes **kwargs)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):
        return function(**offered)
    if any(p.kind == p.VAR_KEYWORD for p in parameters.values()):
        return function(**offered)
    return function(**{k: v for k, v in offered.items() if k in parameters})


def _last_layer_is_softmax(model: Any) -> bool:
    try:
        activation = getattr(model.layers[-1], "activation", None)
    except (AttributeError, IndexError):
        return False
    return getattr(activation, "__name__", "") == "softmax"


def _bundle_from_hook(name: str, result: Any) -> ModelBundle:
    loss = optimizer = None
    if isinstance(result, dict):
        model, loss, optimizer = result.get("model"), result.get("loss"), result.get("optimizer")
    elif isinstance(result, (tuple, list)):
        items = list(result) + [None, None]
        model, loss, optimizer = items[0], items[1], items[2]
    else:
        model = result
    if not isinstance(model, keras.Model):
        raise ConfigurationError(f"model hook '{name}' must return a Keras model, or a dict/tuple with one "
                                 f"(got {type(model).__name__})")
    return ModelBundle(model=model, loss=loss, optimizer=optimizer, from_logits=not _last_layer_is_softmax(model))


def build(name: str, input_shape: Sequence[int], num_classes: int, hidden_units: str,
          hyperparameters: Dict[str, Any]) -> ModelBundle:
    """Call inside the strategy's scope so that the variables are distributed."""
    if name == "mlp":
        return ModelBundle(mlp(input_shape, num_classes, parse_units(hidden_units)))
    if name == "cnn":
        return ModelBundle(cnn(input_shape, num_classes))
    if name == "resnet50":
        return ModelBundle(resnet50(input_shape, num_classes))
    check_name(name)
    function = _load_hook(name)
    result = _call_hook(function, {"input_shape": tuple(input_shape), "num_classes": num_classes,
                                   "hyperparameters": dict(hyperparameters)})
    return _bundle_from_hook(name, result)
