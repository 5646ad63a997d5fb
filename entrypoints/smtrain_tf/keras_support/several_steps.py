"""Several of Keras 3's own steps per tf.function call (steps_per_execution > 1), asking the data only what it must.

Keras's multi-step function (keras/src/backend/tensorflow/trainer.py `multi_step_on_iterator`) asks the
iterator for an optional before every step and wraps every step's logs in an optional inside a cond, so that
a call can end wherever the data does. Under several replicas it fails at its first call ("You must feed a
value for placeholder tensor", keras-team/keras#19246, seen with Keras 3.15 under MirroredStrategy on 2 CPU
replicas and MultiWorkerMirrored on 2 hosts). Here the steps run in one of two loops, chosen at each call:

- endless data (infinite cardinality: a `repeat()`ed dataset with steps_per_epoch, the bundled program's
  streams, arrays made endless by endless_arrays.py): `get_next()` before each step. An endless iterator
  always has a next element, so this is Keras's loop without its checks. On the loop bench's MLP
  (bench/loop_bench.py) those checks were about an eighth of each step on one device;
- other data under several replicas: the first step's `get_next()` (no data left: OutOfRangeError, which is
  Keras's end of the epoch), then an optional before each further step, ending when the data does, as
  Keras's does. Under one replica such a call is Keras's own.

Each step is Keras's own (`strategy.run` of the model's `train_step`/`test_step`, traced inline: a nested
tf.function brings the failure back), and only the last step's logs are reduced, as Keras reduces a step's
(under MultiWorkerMirrored each reduction is a collective across the workers, one per log, which cost as
much as the step itself on the loop bench). A model compiled with XLA (`jit_compile`: Keras's "auto" turns it
on for one GPU) keeps Keras's own function under one replica, where Keras compiles each step; under several
replicas Keras's "auto" is off. `train_on_batch`'s single batch is Keras's own path.
"""

from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

_INSTALLED = "_smtrain_several_steps"
_ENDLESS = "_smtrain_endless"


def endless(iterator: Any) -> bool:
    """Whether the iterator's data never ends (a distributed iterator's cardinality, else its dataset's)."""
    known = getattr(iterator, _ENDLESS, None)
    if known is not None:
        return bool(known)
    cardinality = getattr(iterator, "_cardinality", None)  # TensorFlow's distributed iterators keep the dataset's
    if cardinality is None:
        dataset = getattr(iterator, "_dataset", None)  # a tf.data iterator (the default strategy's)
        cardinality = int(dataset.cardinality()) if isinstance(dataset, tf.data.Dataset) else None
    found = cardinality == tf.data.INFINITE_CARDINALITY
    try:
        setattr(iterator, _ENDLESS, found)  # asked at every call of the epoch
    except AttributeError:
        pass
    return found


def several_steps(model: Any, step_function: Callable[..., Any], trainer: Any, endless_data: bool) -> Callable[..., Any]:
    """One tf.function running up to `steps_per_execution` of Keras's steps (see the module's docstring); the logs
    of the last one, reduced as Keras reduces a step's (the trainer module's reduce_per_replica, looked up as the
    function is traced: keras_repairs.py replaces it under MultiWorkerMirrored)."""
    steps = int(model.steps_per_execution)
    strategy = model.distribute_strategy
    convert = getattr(model, "_autoconvert_optionals", None)

    def one_step(data: Any) -> Any:
        return strategy.run(step_function, args=(data,))

    if convert is not None:
        one_step = convert(one_step)

    def several(iterator: Any) -> Any:
        outputs = one_step(iterator.get_next())  # no data left: OutOfRangeError, Keras's end of the epoch
        # The loop's steps after all of the first's: TensorFlow starts a loop's ops once their own inputs are
        # there, so without this a replica's second step could run its side effects (a tf.py_function, as the
        # check's recorder) before its first finished them (1 call in about 700 on 2 CPU replicas, measured).
        # Inside the loop each step waits for the one before, as in Keras's own multi-step loop.
        with tf.control_dependencies(tf.nest.flatten(outputs, expand_composites=True)):
            for _ in tf.range(steps - 1):
                if endless_data:
                    outputs = one_step(iterator.get_next())
                else:
                    following = iterator.get_next_as_optional()
                    if not following.has_value():
                        break
                    outputs = one_step(following.get_value())
        return trainer.reduce_per_replica(outputs, strategy, reduction="auto")

    return tf.function(several, reduce_retracing=True)


def install() -> bool:
    """Patch Keras 3's trainer (once per process); False where there is no Keras 3 trainer (Keras 2)."""
    try:
        from keras.src.backend.tensorflow import trainer
    except ImportError:
        return False
    cls = trainer.TensorFlowTrainer
    if getattr(cls, _INSTALLED, False):
        return True
    original = cls._make_function

    def _make_function(self: Any, step_function: Callable[..., Any]) -> Callable[..., Any]:
        keras_function = original(self, step_function)
        if self.run_eagerly or int(self.steps_per_execution) <= 1:
            return keras_function
        several = self.distribute_strategy.num_replicas_in_sync > 1
        if not several and self.jit_compile:
            return keras_function
        loops = {data_endless: several_steps(self, step_function, trainer, data_endless) for data_endless in (True, False)}

        def function(iterator: Any) -> Any:
            if not isinstance(iterator, (tf.data.Iterator, tf.distribute.DistributedIterator)):
                return keras_function(iterator)  # train_on_batch's one batch
            if endless(iterator):
                return loops[True](iterator)
            return loops[False](iterator) if several else keras_function(iterator)

        return function

    cls._make_function = _make_function
    setattr(cls, _INSTALLED, True)
    return True
