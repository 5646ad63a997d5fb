"""`model.fit` during `smtrain check`, through smtrain's own loop (smtrain_tf.fit), which records the first steps.

Outside a check the wrap runs Keras's own fit under every strategy (keras_fit.py, keras_repairs.py).
A check compares its first steps in the planned layout with one device's, step by step, so it turns
the call's arguments into smtrain_tf.fit's. Array data is batched per replica (see batch_size) and
shuffled with the job's seed: every worker then holds the same order before tf.distribute gives each
its share. Every Keras callback is driven as Keras's fit drives it (smtrain_tf's
training/callbacks.py); `sample_weight` and `class_weight` become each example's weight in the loss,
as in Keras; `initial_epoch` starts there. Arguments smtrain's loop cannot honour are refused by name.
The loop runs the job's steps_per_execution steps per call (the script's compiled count when it set
one; one with code.wrap_tuning: false, or while a callback acts on every batch) and gathers array rows
per batch.
"""

from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple

import numpy as np
import tensorflow as tf

from . import fit_inputs
from .batch_size import as_planned_batches, batched_data_warning, per_replica_batch
from .context import Unsupported, WrapContext

# Arguments about how Keras reports or paces validation: the loop validates every epoch, in full.
_IGNORED_ARGUMENTS = ("validation_steps", "validation_batch_size", "validation_freq")

_WHY = ("during `smtrain check` the wrap trains through smtrain's own loop, which records the steps it compares")


def _refuse(location: str, what: str, change: str) -> Unsupported:
    return Unsupported(f"{location}: fit({what}): {_WHY}, and that loop {change}")


def _check_callbacks(keras: Any, callbacks: Any, location: str) -> list:
    if callbacks is None:
        return []
    if not isinstance(callbacks, (list, tuple)):
        raise _refuse(location, f"callbacks={type(callbacks).__name__}", "takes a list of Keras callbacks")
    for callback in callbacks:
        if not isinstance(callback, keras.callbacks.Callback):
            raise Unsupported(f"{location}: fit(callbacks=[{type(callback).__name__}(...)]): not a Keras callback "
                              "(keras.callbacks.Callback)")
    return list(callbacks)


def _labels(y: Any) -> np.ndarray:
    """Class indices of labels given as indices (n,) / (n, 1) or one-hot (n, k), as Keras reads them for
    class_weight (rounded, so float labels such as 1.0 are class 1)."""
    labels = np.asarray(y)
    if labels.ndim == 2 and labels.shape[1] > 1:
        return labels.argmax(axis=1)
    return np.round(labels.reshape(len(labels))).astype(np.int64)


def _weight_table(class_weight: Dict[Any, float], classes: int) -> np.ndarray:
    """Weight by class index; a class the dict leaves out weighs 1.0, as in Keras."""
    table = np.ones(max([classes, *(int(k) + 1 for k in class_weight)]), np.float32)
    for key, value in class_weight.items():
        table[int(key)] = float(value)
    return table


def _class_weights(class_weight: Dict[Any, float], labels: np.ndarray) -> np.ndarray:
    return _weight_table(class_weight, int(labels.max()) + 1 if labels.size else 0)[labels]


def _weights(given: Dict[str, Any], y: Any) -> Optional[np.ndarray]:
    """Each training example's weight: sample_weight times its class's weight (Keras multiplies them)."""
    weights = None
    if given.get("sample_weight") is not None:
        weights = np.asarray(given["sample_weight"], np.float32).reshape(-1)
    if given.get("class_weight"):
        by_class = _class_weights(dict(given["class_weight"]), _labels(y))
        weights = by_class if weights is None else weights * by_class
    return weights


def _weighted_dataset(data: Any, class_weight: Dict[Any, float]) -> Any:
    """A batched (x, y) dataset with each example's class weight as a third element."""
    table = tf.constant(_weight_table(class_weight, 0), tf.float32)
    size = int(table.shape[0])

    def add(x: Any, y: Any) -> Any:
        if y.shape.rank == 2 and y.shape[-1] not in (None, 1):
            labels = tf.cast(tf.argmax(y, axis=-1), tf.int32)
        else:
            labels = tf.cast(tf.round(tf.cast(tf.reshape(y, [-1]), tf.float32)), tf.int32)
        # A class past the dict's largest weighs 1.0, as in Keras.
        known = labels < size
        return x, y, tf.where(known, tf.gather(table, tf.minimum(labels, size - 1)), tf.ones_like(labels, tf.float32))

    return data.map(add)


def _split(x: Any, y: Any, fraction: float, location: str) -> Tuple[Tuple[Any, Any], Tuple[Any, Any]]:
    """Keras's validation_split: the last `fraction` of the rows, taken before any shuffling."""
    rows = fit_inputs.num_examples(x)
    if rows is None:
        raise _refuse(location, f"validation_split={fraction}", "splits arrays only; give validation_data")
    at = int(math.ceil(rows * (1.0 - fraction)))
    if at <= 0 or at >= rows:
        raise Unsupported(f"{location}: fit(validation_split={fraction}) leaves no rows to train on or to validate "
                          f"with ({rows} rows)")

    def head(a: Any) -> Any:
        return a[:at]

    def tail(a: Any) -> Any:
        return a[at:]

    return ((tf.nest.map_structure(head, x), tf.nest.map_structure(head, y)),
            (tf.nest.map_structure(tail, x), tf.nest.map_structure(tail, y)))


def _validation(given: Dict[str, Any], location: str, batched: bool) -> Optional[Any]:
    """validation_data in the form of the training data: batched by the script, or not (fit batches it then)."""
    data = given.get("validation_data")
    if data is None:
        return None
    if isinstance(data, (list, tuple)) and len(data) == 3:
        raise _refuse(location, "validation_data=(x, y, sample_weight)", "takes no sample weights; give (x, y)")
    if isinstance(data, (list, tuple)) and len(data) == 2:
        if not batched:
            return tuple(data)
        # As Keras does beside batched training data: validation_batch_size, else its default 32.
        size = int(given.get("validation_batch_size") or fit_inputs.KERAS_DEFAULT_BATCH)
        return tf.data.Dataset.from_tensor_slices(tuple(data)).batch(size)
    if isinstance(data, tf.data.Dataset):
        if isinstance(data.element_spec, tuple) and len(data.element_spec) == 3:
            raise _refuse(location, "validation_data=a dataset of (x, y, sample_weight)",
                          "validates without sample weights; give (x, y) elements")
        return data if batched else data.unbatch()  # fit batches it like the training arrays
    raise _refuse(location, f"validation_data={type(data).__name__}", "takes (x, y) arrays or a tf.data.Dataset")


def _note_ignored(ctx: WrapContext, given: Dict[str, Any], location: str, batched: bool) -> None:
    for name in _IGNORED_ARGUMENTS:
        used = name == "validation_batch_size" and batched and isinstance(given.get("validation_data"), (list, tuple))
        if given.get(name) not in (None, 1) and not used:
            ctx.say_once(f"wrap: note: {location}: fit({name}={given[name]!r}) is not used: {_WHY}, which "
                         "validates on all the validation data after every epoch")


def fit(keras: Any, ctx: WrapContext, model: Any, given: Dict[str, Any], location: str) -> Any:
    callbacks = _check_callbacks(keras, given.get("callbacks"), location)
    x, y = given.get("x"), given.get("y")
    what = fit_inputs.batched_by_script(x)
    batched = isinstance(x, tf.data.Dataset)
    if what is not None and not batched:
        raise _refuse(location, f"x={what}", "takes arrays or a tf.data.Dataset")
    _note_ignored(ctx, given, location, batched)
    validation = _validation(given, location, batched)
    options: Dict[str, Any] = {}
    if batched:
        if given.get("validation_split"):
            raise _refuse(location, f"validation_split={given['validation_split']}",
                          "splits arrays only, as Keras does; give validation_data")
        batched_data_warning(ctx, location, str(what))
        if given.get("sample_weight") is not None:
            raise Unsupported(f"{location}: fit(sample_weight=...) with a tf.data.Dataset: give each batch's weights "
                              "as the dataset's third element, as Keras asks")
        x = as_planned_batches(ctx, x)
        train: Any = _weighted_dataset(x, dict(given["class_weight"])) if given.get("class_weight") else x
    else:
        if y is None:
            raise _refuse(location, "x=arrays without y", "trains on (x, y) pairs")
        fraction = float(given.get("validation_split") or 0.0)
        weights = _weights(given, y)
        train = (x, y)
        if fraction > 0.0 and validation is None:
            train, validation = _split(x, y, fraction, location)
        if weights is not None:
            train = (*train, weights[:fit_inputs.num_examples(train[0])])
        rows = fit_inputs.num_examples(train[0]) or 0
        shuffle = bool(given.get("shuffle", True))
        # The same seed on every worker (SMTRAIN_SEED, else 42): the same order before tf.distribute
        # shares the rows out.
        options.update(batch_size_per_replica=per_replica_batch(ctx, given), shuffle_buffer=rows if shuffle else 0,
                       seed=ctx.contract.hp("seed"))
    from .._api import fit as smtrain_fit  # smtrain_tf.fit

    compiled = getattr(model, "steps_per_execution", None)
    if isinstance(compiled, int) and compiled > 1:
        options["steps_per_execution"] = compiled  # the script's own count, as Keras would run it
    elif not ctx.settings.tuning:
        options["steps_per_execution"] = 1  # code.wrap_tuning: false: one step per call, as Keras's default
    return smtrain_fit(model, train, validation, epochs=int(given.get("epochs") or 1),
                       steps_per_epoch=given.get("steps_per_epoch"), callbacks=callbacks, checkpoint=False,
                       initial_epoch=int(given.get("initial_epoch") or 0), **options)
