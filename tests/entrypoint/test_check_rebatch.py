"""check/rebatch.py: a dataset the script batches, made the planned run's global batches in the one-device run."""

from __future__ import annotations

import numpy as np


def _batches(dataset, count: int) -> list[list[int]]:
    return [b.numpy().tolist() for b in dataset.take(count)]


def test_an_endless_shuffle_repeat_batch_stream_is_packed_as_the_planned_run_takes_it() -> None:
    """`shuffle().repeat().batch(n)` (TensorFlow's multi-worker tutorial's form) has no partial batch: two of the
    script's batches of 4 are exactly the planned run's batch of 8, across the epochs' seams."""
    import tensorflow as tf
    from smtrain_tf.check.rebatch import as_planned

    def stream(batch: int):
        return tf.data.Dataset.range(10).shuffle(10, seed=3).repeat().batch(batch)

    packed = _batches(as_planned(stream(4), 4, 2), 6)
    assert packed == _batches(stream(8), 6)
    assert all(len(b) == 8 for b in packed)


def test_a_finite_dataset_keeps_its_epochs_composition() -> None:
    import tensorflow as tf
    from smtrain_tf.check.rebatch import as_planned

    finite = as_planned(tf.data.Dataset.range(10).batch(3), 3, 2)
    assert int(finite.cardinality()) == 2 and _batches(finite, 5) == [[0, 1, 2, 3, 4, 5], [6, 7, 8, 9]]
    unknown = tf.data.Dataset.range(10).filter(lambda v: v % 2 == 0).batch(2)  # a length TensorFlow cannot tell
    assert np.concatenate(_batches(as_planned(unknown, 2, 2), 5)).tolist() == [0, 2, 4, 6, 8]
