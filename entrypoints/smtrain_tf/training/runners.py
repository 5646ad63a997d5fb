"""Run chunks of training steps: in this process (tf.distribute, Horovod), or on parameter-server workers."""

from __future__ import annotations

import collections
from typing import Any, Callable, Deque

import numpy as np
import tensorflow as tf

from ..distribute.distribution import Distribution
from ..keras_support.keras_compat import optimizer_variables
from .steps import StepFunctions


class InProcessRunner:
    """Default, Mirrored, MultiWorkerMirrored, Horovod and smddp: every call returns its own stats."""

    def __init__(self, dist: Distribution, steps: StepFunctions, dataset: tf.data.Dataset) -> None:
        self.dist = dist
        self.steps = steps
        if dist.library is None:
            self.iterator = iter(dist.strategy.experimental_distribute_dataset(dataset))
        else:
            self.iterator = iter(dataset)
        self.chunk = steps.train_chunk()
        self._broadcast_done = False

    def run(self, n: int) -> np.ndarray:
        totals = self.chunk(self.iterator, tf.constant(n, tf.int32)).numpy().astype(np.float64)
        if self.dist.library is not None and not self._broadcast_done:
            # Horovod's recipe: after the first step every variable exists; give all ranks rank 0's.
            self.dist.sync_from_chief(list(self.steps.model.variables) + optimizer_variables(self.steps.optimizer))
            self._broadcast_done = True
        return self.dist.sum_over_processes(totals)

    def drain(self) -> np.ndarray:
        return np.zeros(self.steps.measures.size)


class CoordinatorRunner:
    """ParameterServerStrategy: the chief schedules chunks on workers and fetches results as they finish."""

    def __init__(self, dist: Distribution, steps: StepFunctions,
                 dataset_fn: Callable[[tf.distribute.InputContext], tf.data.Dataset]) -> None:
        self.dist = dist
        self.size = steps.measures.size
        strategy = dist.strategy

        def per_worker_dataset() -> Any:
            return strategy.distribute_datasets_from_function(dataset_fn)

        self.iterator = iter(dist.coordinator.create_per_worker_dataset(per_worker_dataset))
        self.chunk = steps.train_chunk()
        self.pending: Deque[Any] = collections.deque()
        # Enough queued work to keep every worker busy, few enough to notice a NaN soon.
        self.window = max(4, 2 * dist.num_workers)

    def run(self, n: int) -> np.ndarray:
        self.pending.append(self.dist.coordinator.schedule(self.chunk, args=(self.iterator, tf.constant(n, tf.int32))))
        done = np.zeros(self.size)
        while len(self.pending) > self.window:
            done += _fetch(self.pending.popleft())
        return done

    def drain(self) -> np.ndarray:
        """Wait for all scheduled steps (before checkpoints, evaluation and epoch ends)."""
        self.dist.coordinator.join()
        done = np.zeros(self.size)
        while self.pending:
            done += _fetch(self.pending.popleft())
        return done


def _fetch(remote: Any) -> np.ndarray:
    return np.asarray(remote.fetch(), dtype=np.float64)


def evaluate(dist: Distribution, steps: StepFunctions, dataset: tf.data.Dataset) -> np.ndarray:
    """Summed stats (keras_support/measures.py) over the whole validation set, identical on every process."""
    totals = np.zeros(steps.measures.size)
    if dist.coordinator is not None:
        run = steps.local_eval_batch()
        for batch in dataset:
            totals += run(batch).numpy()
        return totals
    run = steps.eval_batch()
    batches: Any = dataset if dist.library is not None else dist.strategy.experimental_distribute_dataset(dataset)
    for batch in batches:
        totals += run(batch).numpy()
    return dist.sum_over_processes(totals)

