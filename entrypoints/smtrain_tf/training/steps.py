"""The per-replica training and evaluation steps, and the tf.functions that run several at once.

Every step returns three sums: loss over examples, correct predictions, examples. Sums (not
means) make metrics exact across replicas, workers and partial batches.
"""

from __future__ import annotations

from typing import Any, Callable, Tuple

import tensorflow as tf

from ..distribute.distribution import Distribution
from .keras_compat import keras, scale_loss, unscale_gradients

Stats = tf.Tensor  # float32 [loss_sum, correct, count]


def per_example_loss_fn(loss: Any, from_logits: bool) -> Callable[[tf.Tensor, tf.Tensor], tf.Tensor]:
    """A function giving one loss per example; a user loss that reduces is treated as the batch mean."""
    if loss is None:
        return lambda y, out: keras.losses.sparse_categorical_crossentropy(y, out, from_logits=from_logits)
    if isinstance(loss, str):
        function = keras.losses.get(loss)
        return lambda y, out: function(y, out)

    def call(y: tf.Tensor, out: tf.Tensor) -> tf.Tensor:
        values = tf.convert_to_tensor(loss(y, out))
        if values.shape.rank == 0:
            return tf.fill(tf.shape(y)[:1], values)
        return values

    return call


def _stats(y: tf.Tensor, outputs: tf.Tensor, per_example: tf.Tensor) -> Stats:
    outputs = tf.cast(outputs, tf.float32)
    labels = tf.cast(tf.reshape(y, [-1]), tf.int64)
    predicted = tf.argmax(tf.reshape(outputs, [tf.shape(labels)[0], -1]), axis=-1)
    correct = tf.reduce_sum(tf.cast(tf.equal(predicted, labels), tf.float32))
    count = tf.cast(tf.shape(labels)[0], tf.float32)
    return tf.stack([tf.reduce_sum(tf.cast(per_example, tf.float32)), correct, count])


class StepFunctions:
    def __init__(self, dist: Distribution, model: Any, optimizer: Any, loss: Any, from_logits: bool,
                 per_replica_batch: int, xla: bool) -> None:
        self.dist = dist
        self.model = model
        self.optimizer = optimizer
        self.loss_fn = per_example_loss_fn(loss, from_logits)
        self.loss_batch = dist.loss_batch_size(per_replica_batch)
        # XLA compiles the forward pass and its gradient; the all-reduce and the optimizer stay
        # outside the cluster, where every strategy (and Horovod's tape) can handle them.
        self._forward = tf.function(self._forward_impl, jit_compile=True) if xla else self._forward_impl
        self._train_chunk: Any = None
        self._eval_batch: Any = None
        self._local_eval_batch: Any = None

    def _forward_impl(self, x: tf.Tensor, y: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        outputs = self.model(x, training=True)
        per_example = self.loss_fn(y, outputs)
        loss = tf.nn.compute_average_loss(tf.cast(per_example, tf.float32), global_batch_size=self.loss_batch)
        if self.model.losses:
            loss += tf.nn.scale_regularization_loss(tf.add_n([tf.cast(term, tf.float32) for term in self.model.losses]))
        return outputs, per_example, loss

    def replica_train_step(self, x: tf.Tensor, y: tf.Tensor) -> Stats:
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs, per_example, loss = self._forward(x, y)
            scaled = scale_loss(self.optimizer, loss)
        gradients = self.dist.wrap_tape(tape).gradient(scaled, variables)
        gradients = unscale_gradients(self.optimizer, gradients)
        self.optimizer.apply_gradients(zip(gradients, variables))  # noqa: B905 - strict= needs Python 3.10
        return _stats(y, outputs, per_example)

    def replica_eval_step(self, x: tf.Tensor, y: tf.Tensor) -> Stats:
        outputs = self.model(x, training=False)
        return _stats(y, outputs, self.loss_fn(y, outputs))

    def train_chunk(self) -> Callable[[Any, tf.Tensor], Stats]:
        """A tf.function running `n` steps from a (distributed) iterator; returns summed stats."""
        if self._train_chunk is not None:
            return self._train_chunk
        strategy = self.dist.strategy

        @tf.function
        def run(iterator: Any, n: tf.Tensor) -> Stats:
            totals = tf.zeros([3], tf.float32)
            for _ in tf.range(n):
                x, y = next(iterator)
                per_replica = strategy.run(self.replica_train_step, args=(x, y))
                totals += strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)
            return totals

        self._train_chunk = run
        return run

    def eval_batch(self) -> Callable[[Any], Stats]:
        """A tf.function evaluating one (distributed) batch; the partial last batch traces once more."""
        if self._eval_batch is not None:
            return self._eval_batch
        strategy = self.dist.strategy

        @tf.function(reduce_retracing=True)
        def run(batch: Any) -> Stats:
            x, y = batch
            per_replica = strategy.run(self.replica_eval_step, args=(x, y))
            return strategy.reduce(tf.distribute.ReduceOp.SUM, per_replica, axis=None)

        self._eval_batch = run
        return run

    def local_eval_batch(self) -> Callable[[Any], Stats]:
        """Evaluation on the parameter-server coordinator itself (outside strategy.run)."""
        if self._local_eval_batch is not None:
            return self._local_eval_batch

        @tf.function(reduce_retracing=True)
        def run(batch: Any) -> Stats:
            x, y = batch
            return self.replica_eval_step(x, y)

        self._local_eval_batch = run
        return run
