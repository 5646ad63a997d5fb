"""TensorBoard scalars from the chief, written with tf.summary alone.

SageMaker's TensorFlow 2.21 training image has no `tensorboard` package, and without it
`tf.summary.scalar` refuses to run; `tf.summary.write` does not need it. Each value is written as
the scalars plugin's own summaries are (plugin name `scalars`, data class scalar), so TensorBoard
shows them like Keras's. The layout is Keras's TensorBoard callback's: runs `train/` and
`validation/`, tags `epoch_<name>`, the step being the 0-based epoch, so both runs share one chart.
"""

from __future__ import annotations

import math
import os
from typing import Dict, Mapping, Optional

import tensorflow as tf
from tensorflow.core.framework import summary_pb2

TRAIN, VALIDATION = "train", "validation"


def _scalar_metadata() -> bytes:
    metadata = summary_pb2.SummaryMetadata()
    metadata.plugin_data.plugin_name = "scalars"
    metadata.data_class = summary_pb2.DATA_CLASS_SCALAR
    return metadata.SerializeToString()


def numbered(directory: str, call: int) -> str:
    """The n-th fit call's own directory (checkpoints, TensorBoard): the directory itself for the first."""
    return directory if call == 1 else os.path.join(directory, f"fit-{call}")


class Summaries:
    """Event files under `directory`; call from the chief only (another writer would clash with it)."""

    def __init__(self, directory: str) -> None:
        self.directory = directory
        self._writers: Dict[str, tf.summary.SummaryWriter] = {}
        self._metadata = _scalar_metadata()

    def _writer(self, run: str) -> tf.summary.SummaryWriter:
        if run not in self._writers:
            with tf.init_scope():  # a writer is a resource of this process, outside any tf.function
                os.makedirs(os.path.join(self.directory, run), exist_ok=True)
                self._writers[run] = tf.summary.create_file_writer(os.path.join(self.directory, run))
        return self._writers[run]

    def scalars(self, run: str, step: int, values: Mapping[str, float]) -> None:
        writer = self._writer(run)
        with writer.as_default():
            for name, value in values.items():
                if value is None or not math.isfinite(float(value)):
                    continue  # NaN is a failed epoch, already in the metric line; it would flatten the chart
                tf.summary.write(f"epoch_{name}", tf.constant(float(value), tf.float32), step=step,
                                 metadata=self._metadata)
        writer.flush()

    def epoch(self, epoch: int, train: Mapping[str, float], validation: Optional[Mapping[str, float]],
              learning_rate: Optional[float], examples_per_sec: float) -> None:
        """One epoch's values; `epoch` is 0-based, as in Keras's charts."""
        extra = {"examples_per_sec": examples_per_sec}
        if learning_rate is not None:
            extra["learning_rate"] = learning_rate
        self.scalars(TRAIN, epoch, {**train, **extra})
        if validation is not None:
            self.scalars(VALIDATION, epoch, validation)

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
