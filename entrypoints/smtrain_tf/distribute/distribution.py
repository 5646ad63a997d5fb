"""Builds the chosen strategy and hides how each one shares gradients, metrics and start-up state."""

from __future__ import annotations

import contextlib
import json
import os
from typing import Any, List, Optional

import numpy as np
import tensorflow as tf

from ..contract.container import Contract
from . import devices
from .choice import COLLECTIVE_LIBS, DEFAULT, MIRRORED, MWMS, PS, Choice, decide, local_device_count
from .collective_libs import CollectiveLibrary
from .collective_libs import start as start_library


class Distribution:
    """One training process's view of the job, whatever the strategy."""

    def __init__(self, kind: str, strategy: tf.distribute.Strategy, *, num_replicas: int, num_workers: int,
                 worker_index: int, is_chief: bool, library: Optional[CollectiveLibrary] = None,
                 coordinator: Any = None) -> None:
        self.kind = kind
        self.strategy = strategy
        self.num_replicas = num_replicas
        self.num_workers = num_workers
        self.worker_index = worker_index
        self.is_chief = is_chief
        self.library = library
        self.coordinator = coordinator

    @property
    def multi_process(self) -> bool:
        return self.kind in (MWMS, PS) or self.library is not None

    def scope(self) -> Any:
        return self.strategy.scope() if self.library is None else contextlib.nullcontext()

    def wrap_tape(self, tape: tf.GradientTape) -> Any:
        return tape if self.library is None else self.library.wrap_tape(tape)

    def loss_batch_size(self, per_replica_batch: int) -> int:
        """What a replica divides its summed loss by.

        tf.distribute sums replica gradients, so each replica divides by the global batch;
        Horovod/smddp average gradients, so each process divides by its own batch.
        """
        if self.library is not None:
            return per_replica_batch
        return per_replica_batch * self.strategy.num_replicas_in_sync

    def per_process_batch(self, global_batch: int) -> int:
        """The batch a process's dataset yields before tf.distribute splits it over local replicas."""
        return global_batch // self.num_replicas if self.library is not None else global_batch

    def sum_over_processes(self, values: np.ndarray) -> np.ndarray:
        """Metrics already reduced by tf.distribute stay; Horovod-style processes add theirs up."""
        return values if self.library is None else self.library.sum(values)

    def sync_from_chief(self, variables: List[Any]) -> None:
        """Make every process hold the chief's values (after a restore that only some could do)."""
        if self.library is not None:
            self.library.broadcast(variables)
        elif self.kind == MWMS:
            _mwms_copy_from_first_replica(self.strategy, variables)


def _mwms_copy_from_first_replica(strategy: tf.distribute.Strategy, variables: List[Any]) -> None:
    # tf.distribute has no broadcast: all-reduce a sum to which only replica 0 (the chief's first
    # device) contributes, then assign the result everywhere.
    variables = list(variables)
    if not variables:
        return

    def replica_fn() -> List[tf.Tensor]:
        context = tf.distribute.get_replica_context()
        is_source = tf.equal(context.replica_id_in_sync_group, 0)
        outputs = []
        for variable in variables:
            value = tf.convert_to_tensor(variable)
            masked = tf.where(is_source, value, tf.zeros_like(value))
            outputs.append(context.all_reduce(tf.distribute.ReduceOp.SUM, masked))
        return outputs

    @tf.function
    def copy() -> None:
        results = strategy.run(replica_fn)
        for variable, result in zip(variables, results):  # noqa: B905 - strict= needs Python 3.10
            variable.assign(strategy.experimental_local_results(result)[0])

    copy()


def _set_tf_config(choice: Choice) -> None:
    # TensorFlow's resolver reads TF_CONFIG; give it the normalised form (master -> chief).
    assert choice.role is not None
    config = choice.role.as_tf_config()
    config["environment"] = "cloud"
    os.environ["TF_CONFIG"] = json.dumps(config)


def choose(contract: Contract) -> Choice:
    """The strategy the contract asks for, given this host's devices (its GPUs, else `cpu_replicas`)."""
    return decide(contract, local_device_count(len(devices.physical_gpus()), contract.hp("cpu_replicas")))


def start_library_if_needed(choice: Choice) -> Optional[CollectiveLibrary]:
    """Horovod/smddp must be initialised before devices are configured (the GPU follows the local rank)."""
    return start_library(choice.kind) if choice.kind in COLLECTIVE_LIBS else None


def configure_devices(contract: Contract, library: Optional[CollectiveLibrary]) -> None:
    """Before TensorFlow's first op: pin the local rank's GPU (Horovod/smddp), or split the CPU."""
    devices.configure(contract.hp("cpu_replicas"), pin_gpu=library.local_rank if library is not None else None)


def build(choice: Choice, library: Optional[CollectiveLibrary]) -> Distribution:
    kind = choice.kind
    if library is not None:
        return Distribution(kind, tf.distribute.get_strategy(), num_replicas=library.size, num_workers=library.size,
                            worker_index=library.rank, is_chief=library.rank == 0, library=library)
    if kind == DEFAULT:
        return Distribution(kind, tf.distribute.get_strategy(), num_replicas=1, num_workers=1, worker_index=0,
                            is_chief=True)
    if kind == MIRRORED:
        strategy = tf.distribute.MirroredStrategy(devices=devices.training_devices())
        return Distribution(kind, strategy, num_replicas=strategy.num_replicas_in_sync, num_workers=1,
                            worker_index=0, is_chief=True)
    role = choice.role
    assert role is not None
    _set_tf_config(choice)
    resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
    if kind == MWMS:
        # No per-collective timeout (CommunicationOptions.timeout_seconds): TensorFlow holds a thread for each
        # collective op for the whole timeout, so a run of a few thousand steps (Keras's fit does about ten
        # collectives a step) reached 16,000 threads and aborted ("std::system_error: Resource temporarily
        # unavailable"). A dead peer is found by the coordination service's heartbeats, a stuck one by the
        # watchdog after `collective_timeout` (+ a margin) without progress, and a local run's supervisor ends
        # every host when one fails.
        strategy = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
        index = role.task_index + (1 if role.task_type == "worker" and "chief" in role.cluster else 0)
        return Distribution(kind, strategy, num_replicas=strategy.num_replicas_in_sync,
                            num_workers=role.num_trainers, worker_index=index, is_chief=role.is_chief)
    if kind == PS:
        strategy = tf.distribute.experimental.ParameterServerStrategy(resolver)
        coordinator = tf.distribute.experimental.coordinator.ClusterCoordinator(strategy)
        return Distribution(kind, strategy, num_replicas=strategy.num_replicas_in_sync,
                            num_workers=role.num_workers, worker_index=0, is_chief=True, coordinator=coordinator)
    raise ValueError(f"unknown strategy kind {kind}")


def describe(dist: Distribution) -> str:
    return f"strategy={dist.kind} replicas={dist.num_replicas} workers={dist.num_workers}"

