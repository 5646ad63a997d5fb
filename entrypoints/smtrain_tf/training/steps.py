"""The per-replica training and evaluation steps, and the tf.functions that run several at once.

Every step returns the sums of keras_support/measures.py: loss over examples, examples, each metric's parts.
Sums (not means) make metrics exact across replicas, workers and partial batches. A training batch
may carry a third element, each example's weight (Keras's sample_weight, or class_weight looked up
per label): the loss sums weighted examples over the same divisor, as Keras's default reduction does.
"""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Tuple

import tensorflow as tf

from ..distribute.distribution import Distribution
from ..keras_support.keras_compat import scale_loss, unscale_gradients
from ..keras_support.measures import Measures

Stats = tf.Tensor  # float32 [loss sum, count, metric parts...] (keras_support/measures.py)


def _leading(structure: Any) -> tf.Tensor:
    """The batch size of a tensor or of a structure of tensors (several model inputs)."""
    return tf.shape(tf.nest.flatten(structure)[0])[0]


def _slice(structure: Any, start: tf.Tensor, end: tf.Tensor) -> Any:
    return tf.nest.map_structure(lambda t: t[start:end], structure)


class StepFunctions:
    """The training step of one replica, and the tf.functions that run it under the strategy.

    micro_batch: examples per replica in one micro-batch, or None when the batches are the user's
    and their size is only known when they arrive. accumulation_steps: micro-batches per optimizer
    step; a replica's batch holds them all (accumulation_steps x micro_batch examples) and runs
    them one after another, so memory is that of one micro-batch.
    """

    def __init__(self, dist: Distribution, model: Any, optimizer: Any, measures: Measures,
                 micro_batch: Optional[int], xla: bool, accumulation_steps: int = 1) -> None:
        self.dist = dist
        self.model = model
        self.optimizer = optimizer
        self.measures = measures
        self.accumulation_steps = max(1, int(accumulation_steps))
        # Each micro-batch's summed loss is divided by the examples of the whole optimizer step
        # (all replicas, all micro-batches): the gradients then add up to the step's mean.
        self.loss_batch: Optional[int] = (dist.loss_batch_size(micro_batch * self.accumulation_steps)
                                          if micro_batch else None)
        # XLA compiles the forward pass and its gradient; the all-reduce and the optimizer stay
        # outside the cluster, where every strategy (and Horovod's tape) can handle them.
        self._forward = tf.function(self._forward_impl, jit_compile=True) if xla else self._forward_impl
        self._train_chunk: Any = None
        self._eval_batch: Any = None
        self._local_eval_batch: Any = None

    def _divisor(self, x: Any) -> Any:
        """What a replica divides its summed loss by: fixed, or from the batch that arrived.

        tf.distribute sums the replicas' gradients, so a replica divides by its batch x replicas;
        under Horovod/smddp (the default strategy, one replica) the library averages them.
        """
        if self.loss_batch is not None:
            return self.loss_batch
        replicas = tf.distribute.get_strategy().num_replicas_in_sync
        return tf.cast(_leading(x), tf.float32) * float(replicas)

    def _forward_impl(self, x: Any, y: tf.Tensor, divisor: Any,
                      weights: Optional[tf.Tensor] = None) -> Tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
        outputs = self.model(x, training=True)
        per_example = tf.cast(self.measures.per_example_loss(y, outputs), tf.float32)
        if weights is not None:
            per_example *= tf.reshape(tf.cast(weights, tf.float32), tf.shape(per_example))
        loss = tf.math.divide_no_nan(tf.reduce_sum(per_example), tf.cast(divisor, tf.float32))
        if self.model.losses:
            regularization = tf.nn.scale_regularization_loss(
                tf.add_n([tf.cast(term, tf.float32) for term in self.model.losses]))
            # Added once per micro-batch: each carries its share.
            loss += regularization / float(self.accumulation_steps)
        return outputs, per_example, loss

    def replica_train_step(self, x: Any, y: tf.Tensor, weights: Optional[tf.Tensor] = None) -> Stats:
        if self.accumulation_steps > 1:
            return self._accumulated_train_step(x, y, weights)
        variables = self.model.trainable_variables
        with tf.GradientTape() as tape:
            outputs, per_example, loss = self._forward(x, y, self._divisor(x), weights)
            scaled = scale_loss(self.optimizer, loss)
        gradients = self.dist.wrap_tape(tape).gradient(scaled, variables)
        gradients = unscale_gradients(self.optimizer, gradients)
        self.optimizer.apply_gradients(zip(gradients, variables))  # noqa: B905 - strict= needs Python 3.10
        return self.measures.stats(y, outputs, per_example)

    def _accumulated_train_step(self, x: Any, y: tf.Tensor, weights: Optional[tf.Tensor] = None) -> Stats:
        """k micro-batches in a loop, their (scaled) gradients summed in tensors, one optimizer update."""
        variables = self.model.trainable_variables
        k = self.accumulation_steps
        size = _leading(x)
        divisor = self._divisor(x)

        def body(i: tf.Tensor, totals: Stats, sums: List[tf.Tensor]) -> Tuple[tf.Tensor, Stats, List[tf.Tensor]]:
            start, end = i * size // k, (i + 1) * size // k
            xs, ys = _slice(x, start, end), _slice(y, start, end)
            ws = None if weights is None else weights[start:end]
            with tf.GradientTape() as tape:
                outputs, per_example, loss = self._forward(xs, ys, divisor, ws)
                scaled = scale_loss(self.optimizer, loss)
            gradients = tape.gradient(scaled, variables)
            sums = [total if g is None else total + tf.cast(tf.convert_to_tensor(g), total.dtype)
                    for total, g in zip(sums, gradients)]  # noqa: B905 - strict= needs Python 3.10
            return i + 1, totals + self.measures.stats(ys, outputs, per_example), sums

        zeros = [tf.zeros(v.shape, v.dtype) for v in variables]
        _, totals, sums = tf.while_loop(lambda i, totals, sums: i < k, body,
                                        (tf.constant(0), tf.zeros([self.measures.size], tf.float32), zeros))
        if self.dist.library is not None:
            sums = self._library_average(sums, variables)
        gradients = unscale_gradients(self.optimizer, sums)
        self.optimizer.apply_gradients(zip(gradients, variables))  # noqa: B905 - strict= needs Python 3.10
        return totals

    def _library_average(self, sums: List[tf.Tensor], variables: List[Any]) -> List[tf.Tensor]:
        """Average gradients over processes once per step, through the library's own tape.

        The gradient of sum(v * g) with respect to v is g: the library's tape averages it over
        processes as it would a real gradient (fusion, compression and all).
        """
        with tf.GradientTape() as tape:
            proxy = tf.add_n([tf.reduce_sum(tf.cast(v, g.dtype) * tf.stop_gradient(g))
                              for v, g in zip(variables, sums)])  # noqa: B905 - strict= needs Python 3.10
        averaged = self.dist.wrap_tape(tape).gradient(proxy, variables)
        return [g if a is None else a for g, a in zip(sums, averaged)]  # noqa: B905 - strict= needs Python 3.10

    def replica_eval_step(self, x: Any, y: tf.Tensor) -> Stats:
        outputs = self.model(x, training=False)
        return self.measures.stats(y, outputs, self.measures.per_example_loss(y, outputs))

    def train_chunk(self) -> Callable[[Any, tf.Tensor], Stats]:
        """A tf.function running `n` steps from a (distributed) iterator; returns summed stats."""
        if self._train_chunk is not None:
            return self._train_chunk
        strategy = self.dist.strategy

        @tf.function
        def run(iterator: Any, n: tf.Tensor) -> Stats:
            totals = tf.zeros([self.measures.size], tf.float32)
            for _ in tf.range(n):
                batch = next(iterator)  # (x, y) or (x, y, weights)
                per_replica = strategy.run(self.replica_train_step, args=tuple(batch))
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
