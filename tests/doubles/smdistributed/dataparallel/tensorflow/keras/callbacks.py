"""TEST DOUBLE of ``smdistributed.dataparallel.tensorflow.keras.callbacks`` (Horovod underneath)."""

from horovod.tensorflow.keras.callbacks import (  # noqa: F401
    BroadcastGlobalVariablesCallback,
    MetricAverageCallback,
)

__test_double__ = True
