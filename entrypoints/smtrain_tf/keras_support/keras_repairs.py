"""Keras 3's own fit, evaluate and predict under a strategy of several replicas: five repairs, nothing else.

Keras 3's TensorFlow trainer (keras/src/backend/tensorflow/trainer.py) runs the model's own
`train_step`, `test_step` and `predict_step` inside `strategy.run` over a distributed iterator, with
its data adapters, callbacks and logs around them. It fails in five places under the strategies the
wrap sets; each is repaired here by the smallest change, and every other piece stays Keras's:

1. Before the first step Keras builds the model from the first batch, which it averages over the
   replicas in eager mode: under MultiWorkerMirrored TensorFlow refuses that ("Attempt to convert a
   value (PerReplica...) with an unsupported type", keras-team/keras#20585), and under MirroredStrategy
   a batch without labels (`fit(x)` of a model whose own train_step gives its compiled loss a y) fails
   with "None values not supported" (on one device Keras skips this build). Only the batch's shapes and
   dtypes count there, so a batch of zeros shaped by the data's element spec is used (one replica's
   share), with labels shaped like the model's output where the batch has none. Taking a real batch
   would iterate the data once more before the epoch: a shuffle (Keras's of arrays, or the script's
   `Dataset.shuffle`, reshuffled at each iteration) would then give the first epoch another order than
   one device's, which iterates it once. So under a strategy of one replica too (MultiWorkerMirrored of one
   worker: the bundled program on one host of such a plan), where Keras builds from a real batch and the
   epoch then starts from a fresh iterator.
2. MultiWorkerMirrored: each step's logs are reduced with `strategy.reduce("MEAN", v, axis=0)`, which
   fails on the scalar logs every model returns (same issue). They are averaged over the replicas of
   every worker (axis=None), as Keras averages them over local replicas under MirroredStrategy.
3. Several steps per call (steps_per_execution > 1) with several replicas: Keras's loop of optionals
   fails at its first call (keras-team/keras#19246). The steps run in several_steps.py's loop, which every
   layout uses where the data is endless.
4. A model with no call() of its own (keras.io's GAN: a train_step over its generator and discriminator)
   cannot be built symbolically, which Keras attempts under a strategy only ("Unable to automatically build
   the model"): as on one device, the model is not built before the first step; its optimizers are (the
   compiled one, and those it keeps as attributes, with the variables its train_step applies them to).
5. An optimizer's own gradient accumulation (`gradient_accumulation_steps=k`, Keras 3's) decides in an
   `ops.cond` whether a step updates the weights or only adds to its accumulators, and both branches hold
   merge_calls, which TensorFlow refuses inside a cond in a replica ("Cond.call()" RuntimeError,
   keras-team/keras#20582; on one device it trains). The step's gradients are summed over the replicas first
   (Keras's own all-reduce), then Keras's own apply (its cond, clipping, weight decay, update step and
   accumulators) runs once in cross-replica context on that sum, where its merge_calls are plain calls
   (TensorFlow's `maybe_merge_call` is made to call through there, where it would fail on a missing replica
   context). The accumulators then hold the replicas' sum each micro-step and the update divides by k, as
   one device does on the k-times batch (tests/entrypoint/test_epoch_iterators.py compares them); the cost
   is one all-reduce per micro-step instead of one per update (and the first replica's sum copied to the others).
The repairs are installed once (on Keras's trainer class; the fifth on Keras's TensorFlow optimizer class and
TensorFlow's `maybe_merge_call`, for the whole process), only where the wrap sets a strategy (several replicas,
or Mirrored / MultiWorkerMirrored asked for), and only for Keras 3 (Keras 2's fit runs under these strategies as it is).
"""

from __future__ import annotations

from typing import Any, Callable, Optional

import tensorflow as tf

from . import several_steps

_INSTALLED = "_smtrain_repaired"


def trainer_module() -> Optional[Any]:
    try:
        from keras.src.backend.tensorflow import trainer
    except ImportError:  # Keras 2 (TF <= 2.15, or tf_keras): nothing to repair
        return None
    needed = ("TensorFlowTrainer", "reduce_per_replica", "_collective_all_reduce_multi_worker")
    if not all(hasattr(trainer, name) for name in needed):
        return None
    return trainer


def _local_part(strategy: Any, value: Any) -> Any:
    if isinstance(value, tf.distribute.DistributedValues):
        return strategy.experimental_local_results(value)[0]
    return value


def zeros_like_batch(iterator: Any) -> Any:
    """A batch of zeros with the data's structure, dtypes and shapes (an unknown size is 1), read from the
    dataset Keras's epoch iterator distributes, without iterating it."""
    return zeros_like_spec(iterator.data_adapter.get_tf_dataset().element_spec)


def zeros_like_spec(spec: Any) -> Any:
    """Zeros for a dataset's element_spec (an unknown size is 1); TypeError for a ragged or sparse part."""
    from keras.src import tree

    def zeros(part: Any) -> Any:
        if not isinstance(part, tf.TensorSpec):
            raise TypeError(f"a batch of {type(part).__name__}")
        return tf.zeros([d if d is not None else 1 for d in part.shape.as_list()], part.dtype)

    return tree.map_structure(zeros, spec)


def with_labels(model: Any, strategy: Any, batch: Any) -> Any:
    """`batch` as Keras's build can take it: a batch without labels (`fit(x)`, whose own train_step gives the
    compiled loss its y) gets labels shaped like the model's output, as that y must be, for the build only."""
    from keras.src import backend, tree
    from keras.src.trainers.data_adapters import data_adapter_utils

    x, y, sample_weight = data_adapter_utils.unpack_x_y_sample_weight(batch)
    loss = getattr(model, "_compile_loss", None)
    if y is not None or loss is None or loss.built:
        return batch
    symbolic = tree.map_structure(
        lambda v: None if v is None else backend.KerasTensor(v.shape, backend.standardize_dtype(v.dtype)), x)
    with strategy.scope():
        output = backend.compute_output_spec(model, symbolic, training=False)
    rows = int(tree.flatten(x)[0].shape[0])
    labels = tree.map_structure(lambda s: tf.zeros([rows, *[d or 1 for d in s.shape[1:]]], s.dtype), output)
    return (x, labels) if sample_weight is None else (x, labels, sample_weight)


def _repair_symbolic_build(trainer: Any) -> None:
    cls = trainer.TensorFlowTrainer
    original = cls._maybe_symbolic_build

    def _maybe_symbolic_build(self: Any, iterator: Any = None, data_batch: Any = None) -> Any:
        strategy = self._distribute_strategy
        if iterator is None or strategy is None:
            return original(self, iterator=iterator, data_batch=data_batch)
        try:
            data_batch = zeros_like_batch(iterator)
        except (TypeError, ValueError):  # ragged or sparse parts, an unknown rank: the first batch, as Keras takes it
            from keras.src import tree

            for _, _, batches in iterator:
                data_batch = tree.map_structure(lambda v: _local_part(strategy, v), next(batches))
                break
        if not has_own_call(self):
            # A model in keras.io's GAN form: a train_step over sub-models and no call() of its own. One device
            # builds nothing here (its sub-models and optimizers build as its train_step first runs); so here: only
            # the compiled optimizer, as Keras's build ends.
            if self.optimizer is not None and not self.optimizer.built:
                self.optimizer.build(self.trainable_variables)
            _build_own_optimizers(self, strategy, data_batch)
            return None
        return original(self, iterator=None, data_batch=with_labels(self, strategy, data_batch))

    cls._maybe_symbolic_build = _maybe_symbolic_build


def _build_own_optimizers(model: Any, strategy: Any, data_batch: Any) -> None:
    """The optimizers the model keeps as its own attributes (a GAN's d_optimizer and g_optimizer), built before the
    first step with the variables its train_step applies them to. Built lazily inside the step, as on one device,
    they fail under a strategy ("You must feed a value for placeholder tensor ... cond"). Which variables each
    takes is read from a trace of the model's own train_step (never run) with their apply recording them."""
    from keras.src.optimizers.base_optimizer import BaseOptimizer

    found = [o for o in vars(model).values() if isinstance(o, BaseOptimizer) and not o.built]
    if not found:
        return
    taken: dict = {}

    def recording(optimizer: Any) -> None:
        def apply(grads: Any, trainable_variables: Any = None) -> None:
            taken[id(optimizer)] = list(trainable_variables or [])

        def apply_gradients(grads_and_vars: Any) -> None:
            taken[id(optimizer)] = [v for _, v in list(grads_and_vars)]

        optimizer.apply, optimizer.apply_gradients = apply, apply_gradients

    for optimizer in found:
        recording(optimizer)
    try:
        traced = tf.function(lambda batch: strategy.run(model.train_step, args=(batch,)))
        traced.get_concrete_function(data_batch)
    except Exception:  # noqa: BLE001 - the step's own failure shows when it really runs
        pass
    finally:
        for optimizer in found:
            del optimizer.apply, optimizer.apply_gradients  # the class's own again
    with strategy.scope():
        for optimizer in found:
            if taken.get(id(optimizer)):
                optimizer.build(taken[id(optimizer)])


def has_own_call(model: Any) -> bool:
    """Whether the model's class defines call() (a functional or Sequential model does), not Keras's base Model."""
    from keras.src.layers.layer import Layer
    from keras.src.models.model import Model

    return type(model).call not in (Model.call, Layer.call)


def _repair_reduction(trainer: Any) -> None:
    original = trainer.reduce_per_replica

    def reduce_per_replica(values: Any, strategy: Any, reduction: str) -> Any:
        if reduction not in ("auto", "mean") or not trainer._collective_all_reduce_multi_worker(strategy):
            return original(values, strategy, reduction)
        from keras.src import tree

        # A worker of one replica gets plain tensors from strategy.run: they are reduced across workers too.
        return tree.map_structure(lambda v: strategy.reduce("MEAN", v, axis=None), values)

    # Keras's step functions look the name up in their module when they are traced.
    trainer.reduce_per_replica = reduce_per_replica


def _call_through_across_replicas() -> None:
    """TensorFlow's `maybe_merge_call` (which Keras's optimizer uses for every update) calls `fn` directly in
    cross-replica context, where it would ask the missing replica context for a merge_call."""
    interim = tf.__internal__.distribute.interim
    original = interim.maybe_merge_call
    if getattr(original, _INSTALLED, False):
        return

    def maybe_merge_call(fn: Callable[..., Any], strategy: Any, *args: Any, **kwargs: Any) -> Any:
        if tf.distribute.in_cross_replica_context():
            return fn(strategy, *args, **kwargs)
        return original(fn, strategy, *args, **kwargs)

    setattr(maybe_merge_call, _INSTALLED, True)
    interim.maybe_merge_call = maybe_merge_call


def _repair_accumulation() -> None:
    try:
        from keras.src.backend.tensorflow.optimizer import TFOptimizer
    except ImportError:
        return
    _call_through_across_replicas()
    original = TFOptimizer._backend_apply_gradients

    def _backend_apply_gradients(self: Any, grads: Any, trainable_variables: Any) -> Any:
        context = tf.distribute.get_replica_context()
        # Where the strategy makes no merge_calls (none set; XLA on GPUs) Keras's own cond holds none: it trains.
        if (not self.gradient_accumulation_steps or context is None
                or tf.__internal__.distribute.strategy_supports_no_merge_call()):
            return original(self, grads, trainable_variables)
        pairs = self._all_reduce_sum_gradients(list(zip(grads, trainable_variables)))  # noqa: B905 - Keras's pairs
        present = [g for g, _ in pairs if g is not None]

        def across(distribution: Any, *reduced: Any) -> None:
            # Every replica's sum is the same: the first's stands for all (Keras's pieces update each copy with it).
            sums = iter([distribution.experimental_local_results(g)[0] for g in reduced])
            original(self, [next(sums) if g is not None else None for g, _ in pairs], trainable_variables)

        context.merge_call(across, args=tuple(present))

    TFOptimizer._backend_apply_gradients = _backend_apply_gradients


def install() -> bool:
    """Repair Keras 3's trainer (once per process); False where there is no Keras 3 trainer to repair."""
    trainer = trainer_module()
    if trainer is None:
        return False
    if getattr(trainer.TensorFlowTrainer, _INSTALLED, False):
        return True
    _repair_symbolic_build(trainer)
    _repair_reduction(trainer)
    several_steps.install()
    _repair_accumulation()
    setattr(trainer.TensorFlowTrainer, _INSTALLED, True)
    return True
