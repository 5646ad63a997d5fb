"""TEST DOUBLE of ``smdistributed.dataparallel.tensorflow.keras`` -- NOT Amazon's SageMaker library.

The Keras flavour of the SMDDP client, mapped onto ``horovod.tensorflow.keras`` (Keras 2, as in
the TensorFlow 2.13 test env). It shares its initialisation state with the parent module, so
calling ``init()`` here and in ``smdistributed.dataparallel.tensorflow`` counts as two calls.
"""

from __future__ import annotations

import horovod.tensorflow.keras as _hvd_keras

from .. import (  # noqa: F401  (re-exported: the real module offers these too)
    Compression,
    ReduceOp,
    _only_average,
    _require_init,
    broadcast_variables,
    init,
    is_initialized,
    local_rank,
    local_size,
    rank,
    shutdown,
    size,
)
from . import callbacks  # noqa: F401

__test_double__ = True


def DistributedOptimizer(  # noqa: N802 (the real API's name)
    optimizer, name=None, compression=Compression.none, op=ReduceOp.AVERAGE, **unused
):
    """Wrap a Keras optimizer so that gradients are averaged over processes before being applied."""
    _require_init()
    _only_average(op, "DistributedOptimizer")
    return _hvd_keras.DistributedOptimizer(optimizer, name=name, compression=compression)
