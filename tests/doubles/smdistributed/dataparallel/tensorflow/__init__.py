"""TEST DOUBLE of ``smdistributed.dataparallel.tensorflow`` -- NOT Amazon's SageMaker library.

SageMaker's distributed data parallel library (SMDDP) can only be installed inside SageMaker's own
TensorFlow images, and its TensorFlow client was discontinued after TF 2.11. smtrain's entrypoint
still supports it, so the tests need something with the same calling surface that really
communicates between processes. This module provides that surface on top of ``horovod.tensorflow``
(SMDDP's API was modelled on Horovod's), to run under ``mpirun`` like the real library does.

What matches the real library (as documented for SMDDP 1.x):
- ``init()`` must be called once; a second call raises.
- ``size/rank/local_size/local_rank``, ``allreduce(tensor, param_index, num_params, ...)``,
  ``oob_allreduce``, ``broadcast``, ``broadcast_variables``, ``broadcast_global_variables``,
  ``DistributedGradientTape``, ``DistributedOptimizer``, ``BroadcastGlobalVariablesHook``,
  ``overlap``, ``shutdown``, ``Compression.none/fp16``, ``ReduceOp.AVERAGE/SUM/MIN/MAX``.
- Arguments the real library rejects (``device_dense``, ``device_sparse``, ``sparse_as_dense``,
  an ``op`` other than AVERAGE for the tape/optimizer/oob_allreduce) raise here as well.

What does not: the transport is Horovod over MPI on CPU, not SMDDP's GPU/EFA AllReduce; there is
no fusion-buffer tuning (``bucket_cap_mb`` is accepted and ignored); ``barrier()`` is an extra.
"""

from __future__ import annotations

import horovod.tensorflow as _hvd
import tensorflow as _tf

__test_double__ = True
__all__ = [
    "BroadcastGlobalVariablesHook",
    "Compression",
    "DistributedGradientTape",
    "DistributedOptimizer",
    "ReduceOp",
    "allreduce",
    "barrier",
    "broadcast",
    "broadcast_global_variables",
    "broadcast_variables",
    "init",
    "is_initialized",
    "local_rank",
    "local_size",
    "oob_allreduce",
    "overlap",
    "rank",
    "shutdown",
    "size",
]


class ReduceOp:
    """Reduction operations, mapped onto Horovod's."""

    AVERAGE = _hvd.Average
    SUM = _hvd.Sum
    MIN = _hvd.Min
    MAX = _hvd.Max


class Compression:
    """Gradient compression for AllReduce: ``none`` or ``fp16`` (Horovod's implementations)."""

    none = _hvd.Compression.none
    fp16 = _hvd.Compression.fp16


_initialized = False


class NotSupportedError(ValueError):
    """An argument the real library refuses."""


def init() -> None:
    """Initialise the library; like the real one, a second call is an error."""
    global _initialized
    if _initialized:
        raise RuntimeError(
            "init() called more than once. smdistributed.dataparallel is already initialized."
        )
    _hvd.init()
    _initialized = True


def is_initialized() -> bool:
    return _initialized and _hvd.is_initialized()


def _require_init() -> None:
    if not _initialized:
        raise RuntimeError("smdistributed.dataparallel is not initialized: call init() first")


def size() -> int:
    """Number of processes in the job (one per GPU on SageMaker)."""
    _require_init()
    return _hvd.size()


def rank() -> int:
    """Global rank of this process, 0 .. size()-1."""
    _require_init()
    return _hvd.rank()


def local_size() -> int:
    """Number of processes on this host."""
    _require_init()
    return _hvd.local_size()


def local_rank() -> int:
    """Rank of this process among those on the same host (the GPU index to pin)."""
    _require_init()
    return _hvd.local_rank()


def shutdown() -> None:
    global _initialized
    _hvd.shutdown()
    _initialized = False


def _only_average(op, what: str) -> None:
    if op is not None and op != ReduceOp.AVERAGE:
        raise NotSupportedError(f"{what} supports only ReduceOp.AVERAGE")


def _unsupported(**kwargs) -> None:
    for name, value in kwargs.items():
        if value:
            raise NotSupportedError(f"{name} is not supported by smdistributed.dataparallel")


def allreduce(tensor, param_index, num_params, compression=Compression.none, op=ReduceOp.AVERAGE):
    """All-reduce ``tensor`` across processes (average by default).

    ``param_index``/``num_params`` are required, as in the real API (they order the real
    library's fusion buffer); here they are only checked.
    """
    _require_init()
    if not (0 <= int(param_index) < int(num_params)):
        raise ValueError(f"param_index {param_index} out of range for num_params {num_params}")
    return _hvd.allreduce(tensor, op=ReduceOp.AVERAGE if op is None else op, compression=compression)


def oob_allreduce(tensor, compression=Compression.none, op=ReduceOp.AVERAGE):
    """Out-of-band all-reduce (for metrics such as the loss); average only."""
    _require_init()
    _only_average(op, "oob_allreduce")
    return _hvd.allreduce(tensor, op=ReduceOp.AVERAGE, compression=compression)


def broadcast(tensor, root_rank):
    """The value of ``tensor`` on ``root_rank``, on every process."""
    _require_init()
    return _hvd.broadcast(tensor, root_rank)


def broadcast_variables(variables, root_rank) -> None:
    """Assign every variable the value it has on ``root_rank`` (TF2)."""
    _require_init()
    _hvd.broadcast_variables(list(variables), root_rank)


def broadcast_global_variables(root_rank):
    """TF1 graph-mode form of :func:`broadcast_variables`."""
    _require_init()
    return _hvd.broadcast_global_variables(root_rank)


def barrier() -> None:
    """Block until every process gets here. Not part of the documented SMDDP TF API."""
    _require_init()
    _hvd.allreduce(_tf.constant(0, _tf.int32), op=ReduceOp.SUM, name="smddp_double_barrier")


def overlap(tensor):
    """XLA communication-overlap marker; an identity here."""
    return _tf.identity(tensor)


def DistributedGradientTape(  # noqa: N802 (the real API's name)
    gradtape,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    sparse_as_dense=False,
    op=ReduceOp.AVERAGE,
):
    """Wrap a ``tf.GradientTape`` so that ``gradient()`` returns gradients averaged over processes."""
    _require_init()
    _unsupported(device_dense=device_dense, device_sparse=device_sparse, sparse_as_dense=sparse_as_dense)
    _only_average(op, "DistributedGradientTape")
    return _hvd.DistributedGradientTape(gradtape, compression=compression, op=ReduceOp.AVERAGE)


def DistributedOptimizer(  # noqa: N802 (the real API's name)
    optimizer,
    name=None,
    use_locking=False,
    device_dense="",
    device_sparse="",
    compression=Compression.none,
    sparse_as_dense=False,
    op=ReduceOp.AVERAGE,
    bucket_cap_mb=None,
):
    """Wrap a TF1-style optimizer so that gradients are averaged before they are applied."""
    _require_init()
    _unsupported(device_dense=device_dense, device_sparse=device_sparse, sparse_as_dense=sparse_as_dense)
    _only_average(op, "DistributedOptimizer")
    return _hvd.DistributedOptimizer(
        optimizer, name=name, use_locking=use_locking, compression=compression, op=ReduceOp.AVERAGE
    )


def BroadcastGlobalVariablesHook(root_rank, device=""):  # noqa: N802 (the real API's name)
    """``tf.estimator`` hook that broadcasts the global variables from ``root_rank`` at start."""
    return _hvd.BroadcastGlobalVariablesHook(root_rank, device=device)
