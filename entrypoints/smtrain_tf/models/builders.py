"""Built-in models (mlp, cnn, resnet50) and user hooks `module:function`.

Built-ins output float32 logits (the last layer stays float32 under mixed precision);
the serving signature turns them into probabilities.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

from ..contract.errors import ConfigurationError
from ..contract.user_hooks import call_hook, load_hook
from ..keras_support import measures
from ..keras_support.keras_compat import keras
from .names import check_name

# Shapes used with data=synthetic when synthetic_shape is not given.
SYNTHETIC_SHAPES = {"mlp": (28, 28), "cnn": (28, 28, 1), "resnet50": (224, 224, 3)}


@dataclass
class ModelBundle:
    model: Any
    loss: Optional[Callable[..., Any]] = None
    optimizer: Optional[Any] = None
    from_logits: bool = True
    metrics: Any = None  # as compile takes them; None: the default (accuracy for a classification loss)
    loss_weights: Any = None
    built_in: bool = True  # exported with the classification signature (probabilities, classes)


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


def _last_layer_is_softmax(model: Any) -> bool:
    try:
        activation = getattr(model.layers[-1], "activation", None)
    except (AttributeError, IndexError):
        return False
    return getattr(activation, "__name__", "") == "softmax"


def _bundle_from_hook(name: str, result: Any) -> ModelBundle:
    """What a model hook returned: a model (compiled or not), or a dict/tuple (model, loss, optimizer).

    A compiled model brings its loss, optimizer, metrics and loss weights; what the dict or tuple
    gives wins over them.
    """
    loss = optimizer = metrics = None
    if isinstance(result, dict):
        model, loss, optimizer, metrics = (result.get("model"), result.get("loss"), result.get("optimizer"),
                                           result.get("metrics"))
    elif isinstance(result, (tuple, list)):
        items = list(result) + [None, None]
        model, loss, optimizer = items[0], items[1], items[2]
    else:
        model = result
    if not isinstance(model, keras.Model):
        raise ConfigurationError(f"model hook '{name}' must return a Keras model, or a dict/tuple with one "
                                 f"(got {type(model).__name__})")
    compiled = measures.compiled(model)
    return ModelBundle(model=model, loss=loss if loss is not None else compiled.get("loss"),
                       optimizer=optimizer if optimizer is not None else compiled.get("optimizer"),
                       from_logits=not _last_layer_is_softmax(model),
                       metrics=metrics if metrics is not None else compiled.get("metrics"),
                       loss_weights=compiled.get("loss_weights"), built_in=False)


def build(name: str, input_shape: Optional[Sequence[int]], num_classes: int, hidden_units: str,
          hyperparameters: Dict[str, Any], element_spec: Any = None) -> ModelBundle:
    """Call inside the strategy's scope so that the variables are distributed.

    input_shape: one example's features (None when they are not one tensor: a data hook's dict);
    element_spec: the (features, labels) spec of a data hook's dataset, offered to model hooks.
    """
    if name in ("mlp", "cnn", "resnet50") and input_shape is None:
        raise ConfigurationError(f"model {name} takes one input tensor; the data's features are "
                                 f"{element_spec[0] if element_spec else 'not one tensor'}: use a model hook")
    if name == "mlp":
        return ModelBundle(mlp(input_shape, num_classes, parse_units(hidden_units)))
    if name == "cnn":
        return ModelBundle(cnn(input_shape, num_classes))
    if name == "resnet50":
        return ModelBundle(resnet50(input_shape, num_classes))
    check_name(name)
    function = load_hook("model", name)
    result = call_hook(function, {"input_shape": tuple(input_shape) if input_shape is not None else None,
                                  "num_classes": num_classes, "hyperparameters": dict(hyperparameters),
                                  "element_spec": element_spec})
    return _bundle_from_hook(name, result)
