"""Horovod and smdistributed data parallel behind one face.

`smdistributed.dataparallel.tensorflow` copies Horovod's TF API (init, size, rank, local_rank,
DistributedGradientTape, broadcast_variables), so one adapter serves both; the module is imported
by name so that neither library is needed unless its strategy runs.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any, Iterable

import numpy as np

from ..contract.errors import ConfigurationError

MODULES = {
    "horovod": "horovod.tensorflow",
    "smddp": "smdistributed.dataparallel.tensorflow",
}


def import_library(kind: str) -> ModuleType:
    name = MODULES[kind]
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        raise ConfigurationError(f"strategy {kind} needs the Python module {name}, which cannot be imported "
                                 f"({exc}); use a container image that has it") from None


class CollectiveLibrary:
    """An initialised Horovod-like library."""

    def __init__(self, kind: str, module: ModuleType) -> None:
        self.kind = kind
        self.module = module
        module.init()
        self.size = int(module.size())
        self.rank = int(module.rank())
        self.local_rank = int(module.local_rank())

    def wrap_tape(self, tape: Any) -> Any:
        """Gradients averaged over all processes when tape.gradient() is called."""
        return self.module.DistributedGradientTape(tape)

    def broadcast(self, variables: Iterable[Any]) -> None:
        """Give every process rank 0's values."""
        variables = [v for v in variables]
        if variables:
            self.module.broadcast_variables(variables, root_rank=0)

    def sum(self, values: np.ndarray) -> np.ndarray:
        """Sum a small float vector over processes (metrics, agreement checks)."""
        import tensorflow as tf

        tensor = tf.constant(np.asarray(values, dtype=np.float64))
        # Both libraries average by default; smddp keeps metrics out of band of its gradient buffers.
        reduce = getattr(self.module, "oob_allreduce", None) or self.module.allreduce
        averaged = reduce(tensor)
        return np.asarray(averaged.numpy(), dtype=np.float64) * self.size


def start(kind: str) -> CollectiveLibrary:
    return CollectiveLibrary(kind, import_library(kind))
