"""A model's loss and metrics as sums, which every replica, worker and partial batch adds up exactly.

A step returns one float32 vector: [loss sum, examples, then each metric's parts]. The loop adds
the vectors of steps, replicas and processes, and `values` turns the total into the epoch's logs.

Where the loss and the metrics come from:
- the loss: the one given (fit's `loss=`, a model hook's), else the compiled one, else (built-in
  models) sparse categorical cross-entropy on logits. A model with several outputs takes a loss per
  output (a list, or a dict by output name; one loss is used for every output), weighted by
  `loss_weights`, and reports each output's loss as `<output>_loss` too;
- the metrics: those the model was compiled with (a name, a Keras metric object or function, per
  output as a list of lists or a dict); when none are declared, a classification loss brings
  `accuracy` (the default of the built-in models), any other loss none.

Metrics that are means over examples (Keras's mean-metric wrappers: MAE, MSE, accuracies,
cross-entropies, ...) are summed per example; any other Keras 3 metric (AUC, Precision,
RootMeanSquaredError, ...) sends its state variables' change, through its stateless API.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from .keras_compat import IS_KERAS3, keras

LOSS, COUNT = 0, 1  # positions in the stats vector; the metrics' parts follow
# Names the metric line uses for itself: a metric may not take one.
RESERVED = ("epoch", "step", "loss", "lr", "examples_per_sec", "elapsed")
_CLASSIFICATION_LOSSES = {
    "sparse_categorical_crossentropy", "categorical_crossentropy", "binary_crossentropy",
    "binary_focal_crossentropy", "categorical_focal_crossentropy", "hinge", "squared_hinge", "categorical_hinge",
}


def _snake(name: str) -> str:
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", name).lower()


def loss_name(loss: Any) -> str:
    """The Keras name of a loss given as a string, function or Loss object ('' when unknown)."""
    if loss is None:
        return "sparse_categorical_crossentropy"
    if isinstance(loss, str):
        return {"bce": "binary_crossentropy"}.get(loss, loss)
    if isinstance(loss, keras.losses.Loss):
        function = getattr(loss, "fn", None) or getattr(loss, "_fn", None)
        return getattr(function, "__name__", "") or _snake(type(loss).__name__)
    return getattr(loss, "__name__", "")


def is_classification_loss(loss: Any) -> bool:
    return loss_name(loss) in _CLASSIFICATION_LOSSES


def reads_logits(loss: Any, default: bool) -> bool:
    """Whether the loss reads logits (its `from_logits`); `default` for a loss that does not say."""
    get_config = getattr(loss, "get_config", None)
    if callable(get_config):
        try:
            return bool(get_config().get("from_logits", default))
        except Exception:  # noqa: BLE001 - a custom loss without a config says nothing
            return default
    return default


def per_example_loss_fn(loss: Any, from_logits: bool) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """A function giving one loss per example.

    None: sparse categorical cross-entropy. A name is resolved as Keras does. A Keras Loss object
    gives its unreduced values (its `call`); any other callable that reduces is taken as the batch
    mean. Values with more than one axis are averaged over all but the first, as Keras does.
    """
    if loss is None:
        return lambda y, out: keras.losses.sparse_categorical_crossentropy(y, out, from_logits=from_logits)
    if isinstance(loss, str):
        loss = keras.losses.get(loss)
    function = loss.call if isinstance(loss, keras.losses.Loss) else loss

    def call(y: tf.Tensor, out: tf.Tensor) -> tf.Tensor:
        values = tf.convert_to_tensor(function(_match_labels(y, out), out))
        return _per_example(values, out)

    return call


def _per_example(values: tf.Tensor, out: tf.Tensor) -> tf.Tensor:
    if values.shape.rank == 0:
        return tf.fill(tf.shape(out)[:1], tf.cast(values, tf.float32))
    if values.shape.rank is not None and values.shape.rank > 1:
        values = tf.reduce_mean(values, axis=list(range(1, values.shape.rank)))
    return tf.cast(values, tf.float32)


def _match_labels(y: tf.Tensor, out: tf.Tensor) -> tf.Tensor:
    """A label vector (batch,) beside outputs (batch, 1) as (batch, 1), as Keras's losses expect it."""
    if y.shape.rank == 1 and out.shape.rank == 2 and out.shape[-1] == 1:
        return tf.expand_dims(y, -1)
    return y


# --- metric parts ----------------------------------------------------------------------------------


class _Part:
    """One metric: its parts of the stats vector and how they make its value."""

    name = ""
    size = 1

    def contribution(self, y: tf.Tensor, out: tf.Tensor, per_example_loss: tf.Tensor) -> tf.Tensor:
        raise NotImplementedError

    def value(self, parts: np.ndarray, count: float) -> float:
        return float(parts[0]) / count if count > 0 else float("nan")


class _Accuracy(_Part):
    """Correct predictions, for integer labels, one-hot labels, or one binary output."""

    def __init__(self, name: str, from_logits: bool) -> None:
        self.name = name
        self.from_logits = from_logits

    def contribution(self, y: tf.Tensor, out: tf.Tensor, per_example_loss: tf.Tensor) -> tf.Tensor:
        out = tf.cast(out, tf.float32)
        count = tf.shape(out)[0]
        if out.shape.rank is not None and out.shape.rank >= 2 and out.shape[-1] == 1:
            # One output per example: a binary classifier (a logit, or a probability after a sigmoid).
            predicted = tf.cast(tf.reshape(out, [-1]) > (0.0 if self.from_logits else 0.5), tf.int64)
            labels = tf.cast(tf.reshape(y, [-1]) > 0.5, tf.int64)
        else:
            if y.shape.rank is not None and y.shape.rank == out.shape.rank and y.shape.rank >= 2 \
                    and y.shape[-1] == out.shape[-1] and out.shape[-1] != 1:
                labels = tf.argmax(tf.reshape(y, [count, -1]), axis=-1)  # one-hot (or soft) labels
            else:
                labels = tf.cast(tf.reshape(y, [-1]), tf.int64)
            predicted = tf.argmax(tf.reshape(out, [tf.shape(labels)[0], -1]), axis=-1)
        return tf.reshape(tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32)), [1])


class _MeanOf(_Part):
    """A metric that is a mean over examples: the per-example values, summed."""

    def __init__(self, name: str, function: Callable[..., Any], kwargs: Optional[Dict[str, Any]] = None) -> None:
        self.name = name
        self.function = function
        self.kwargs = dict(kwargs or {})

    def contribution(self, y: tf.Tensor, out: tf.Tensor, per_example_loss: tf.Tensor) -> tf.Tensor:
        values = self.function(_match_labels(y, out), out, **self.kwargs)
        return tf.reshape(tf.reduce_sum(_per_example(tf.convert_to_tensor(values), out)), [1])


class _OutputLoss(_Part):
    """One output's loss in a model with several (`<output>_loss`)."""

    def __init__(self, name: str, function: Callable[[tf.Tensor, tf.Tensor], tf.Tensor]) -> None:
        self.name = name
        self.function = function

    def contribution(self, y: tf.Tensor, out: tf.Tensor, per_example_loss: tf.Tensor) -> tf.Tensor:
        return tf.reshape(tf.reduce_sum(self.function(y, out)), [1])


class _Stateful(_Part):
    """A Keras 3 metric with its own state (AUC, Precision, ...): the change of its variables, summed.

    Every such state Keras ships is a set of counts or sums, so changes add up across batches.
    """

    def __init__(self, name: str, metric: Any) -> None:
        self.name = name
        self.metric = metric
        self.initial = [np.asarray(v.numpy() if hasattr(v, "numpy") else v, dtype=np.float32)
                        for v in metric.variables]
        self.size = int(sum(a.size for a in self.initial))

    def contribution(self, y: tf.Tensor, out: tf.Tensor, per_example_loss: tf.Tensor) -> tf.Tensor:
        start = [tf.constant(a) for a in self.initial]
        updated = self.metric.stateless_update_state(start, y, out)
        return tf.concat([tf.reshape(tf.cast(new, tf.float32) - old, [-1])
                          for new, old in zip(updated, start)], axis=0)  # noqa: B905 - strict= needs Python 3.10

    def value(self, parts: np.ndarray, count: float) -> float:
        state, offset = [], 0
        for initial in self.initial:
            state.append(initial + parts[offset:offset + initial.size].reshape(initial.shape).astype(np.float32))
            offset += initial.size
        return float(np.asarray(self.metric.stateless_result(state)))


def _metric_part(metric: Any, name: Optional[str], from_logits: bool) -> _Part:
    """A part for one declared metric: a name, a Keras metric function or object, or a callable."""
    if isinstance(metric, str):
        if metric in ("accuracy", "acc"):
            return _Accuracy(name or metric, from_logits)
        label = name or metric
        metric = keras.metrics.get(metric)
        if not isinstance(metric, keras.metrics.Metric):
            return _MeanOf(label, metric)
        name = label
    if isinstance(metric, keras.metrics.Metric):
        label = name or metric.name
        function = getattr(metric, "_fn", None)
        if callable(function):  # a mean-metric wrapper: exact per-example sums on every Keras
            return _MeanOf(label, function, getattr(metric, "_fn_kwargs", None))
        if IS_KERAS3 and hasattr(metric, "stateless_update_state"):
            return _Stateful(label, metric)
        raise ValueError(f"metric {label} ({type(metric).__name__}) is not a mean over examples; smtrain's loop "
                         "computes such metrics on Keras 3 (TensorFlow 2.16 or newer) only")
    if callable(metric):
        return _MeanOf(name or getattr(metric, "__name__", "metric"), metric)
    raise ValueError(f"metric {metric!r} is neither a name, a Keras metric nor a function")


# --- the model's heads -----------------------------------------------------------------------------


def _pick(structure: Any, index: int, name: Optional[str], count: int) -> tf.Tensor:
    """One output's tensor (or labels) from a tensor, a list or a dict."""
    return tf.convert_to_tensor(_select(structure, index, name, count))


def _select(structure: Any, index: int, name: Optional[str], count: int) -> Any:
    if count == 1 and not isinstance(structure, (dict, list, tuple)):
        return structure
    if isinstance(structure, dict):
        if name in structure:
            return structure[name]
        if count == 1 and len(structure) == 1:
            return next(iter(structure.values()))
        raise ValueError(f"no labels or outputs named '{name}' (found {sorted(structure)})")
    if isinstance(structure, (list, tuple)):
        if count == 1 and len(structure) == 1:
            return structure[0]
        return structure[index]
    return structure


def _per_output(value: Any, names: Sequence[str], index: int) -> Any:
    """A loss or loss weight for output `index`: one value for all, a list by position, a dict by name."""
    if isinstance(value, dict):
        return value.get(names[index])
    if isinstance(value, (list, tuple)):
        return value[index]
    return value


def _metrics_for(metrics: Any, names: Sequence[str], index: int) -> List[Any]:
    """An output's metrics: a dict by name, a list of lists by position, else the same list for every output."""
    if isinstance(metrics, dict):
        return _as_list(metrics.get(names[index]))
    if isinstance(metrics, (list, tuple)) and metrics and all(isinstance(m, (list, tuple)) for m in metrics):
        return _as_list(metrics[index]) if index < len(metrics) else []
    return _as_list(metrics)


def output_names(model: Any) -> List[str]:
    """The model's output names ([] for one output without a name)."""
    names = list(getattr(model, "output_names", None) or [])
    outputs = getattr(model, "outputs", None)
    if isinstance(outputs, dict):
        return list(outputs)
    return names if len(names) > 1 else []


class Measures:
    """What a step computes beside the gradient: the per-example loss and the stats vector."""

    def __init__(self, model: Any, loss: Any, metrics: Any, loss_weights: Any, from_logits: bool) -> None:
        names = output_names(model)
        self.outputs = names or [""]
        self.several = len(self.outputs) > 1
        if self.several and isinstance(loss, (list, tuple)) and len(loss) != len(self.outputs):
            raise ValueError(f"{len(loss)} losses for {len(self.outputs)} outputs ({', '.join(self.outputs)})")
        if not self.several and isinstance(loss, (list, tuple)):
            if len(loss) != 1:
                raise ValueError(f"{len(loss)} losses for a model with one output")
            loss = loss[0]
        self.losses: List[Callable[[tf.Tensor, tf.Tensor], tf.Tensor]] = []
        self.weights: List[float] = []
        self.groups: List[List[_Part]] = []  # each output's parts, in order
        declared = bool(metrics)
        for i, output in enumerate(self.outputs):
            head_loss = _per_output(loss, self.outputs, i) if self.several else loss
            if self.several and head_loss is None:
                raise ValueError(f"no loss for output '{output}'")
            logits = reads_logits(head_loss, False if self.several else from_logits)
            function = per_example_loss_fn(head_loss, logits)
            self.losses.append(function)
            weight = _per_output(loss_weights, self.outputs, i) if loss_weights is not None else None
            self.weights.append(1.0 if weight is None else float(weight))
            prefix = f"{output}_" if self.several else ""
            group: List[_Part] = [_OutputLoss(f"{output}_loss", function)] if self.several else []
            if declared:
                for metric in _metrics_for(metrics, self.outputs, i):
                    part = _metric_part(metric, None, logits)
                    part.name = prefix + part.name
                    group.append(part)
            elif is_classification_loss(head_loss):
                group.append(_Accuracy(prefix + "accuracy", logits))
            self.groups.append(group)
        self.parts = [part for group in self.groups for part in group]
        self._check_names()
        self.size = 2 + sum(p.size for p in self.parts)

    def _check_names(self) -> None:
        seen = set()
        for part in self.parts:
            part.name = re.sub(r"[^A-Za-z0-9_]", "_", part.name)
            if part.name in RESERVED or part.name.startswith("val_") or part.name in seen:
                raise ValueError(f"metric name '{part.name}' clashes with a name of the metric line or another "
                                 f"metric: give the metric another name (name=...)")
            seen.add(part.name)

    @property
    def names(self) -> List[str]:
        """The metrics' names in the order of the line (the loss first is implied)."""
        return [p.name for p in self.parts]

    def per_example_loss(self, y: Any, outputs: Any) -> tf.Tensor:
        count = len(self.outputs)
        total = None
        for i, function in enumerate(self.losses):
            name = self.outputs[i] or None
            values = function(_pick(y, i, name, count), _pick(outputs, i, name, count)) * self.weights[i]
            total = values if total is None else total + values
        return total

    def stats(self, y: Any, outputs: Any, per_example_loss: tf.Tensor) -> tf.Tensor:
        count = len(self.outputs)
        pieces = [tf.reshape(tf.reduce_sum(tf.cast(per_example_loss, tf.float32)), [1]),
                  tf.cast(tf.reshape(tf.shape(per_example_loss)[0], [1]), tf.float32)]
        for i, group in enumerate(self.groups):
            name = self.outputs[i] or None
            labels, out = _pick(y, i, name, count), tf.cast(_pick(outputs, i, name, count), tf.float32)
            pieces += [part.contribution(labels, out, per_example_loss) for part in group]
        return tf.concat(pieces, axis=0)

    def values(self, totals: np.ndarray) -> Dict[str, float]:
        """{'loss': mean loss, metric: value, ...} from summed stats."""
        count = float(totals[COUNT])
        result = {"loss": float(totals[LOSS]) / count if count > 0 else float("nan")}
        offset = 2
        for part in self.parts:
            result[part.name] = part.value(totals[offset:offset + part.size], count)
            offset += part.size
        return result


def _as_list(value: Any) -> List[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, (list, tuple)) else [value]


def compiled(model: Any) -> Dict[str, Any]:
    """What the model was compiled with: optimizer, loss, metrics, loss_weights (empty when not compiled)."""
    config = getattr(getattr(model, "_compile_config", None), "config", None)
    if not isinstance(config, dict):
        return {}
    found = {key: config.get(key) for key in ("loss", "metrics", "loss_weights")}
    found["optimizer"] = getattr(model, "optimizer", None)
    return found
