"""A dataset the script batches itself, made in a check's one-device run into the planned run's global batches.

Both check runs read the script's first batch here (its size), so a shuffle that reshuffles at each
iteration gives both the same order afterwards. In the one-device run, `times` of the script's batches
become one: the epochs keep their composition (with the script's last batch partial, the last one here
is too; with a fixed batch shape, whose batches are all full, a remainder is dropped here as there).
"""

from __future__ import annotations

import math
from typing import Any

import tensorflow as tf


def first_batch_size(dataset: Any) -> int:
    first = next(iter(dataset.take(1)))
    return int(tf.shape(tf.nest.flatten(first)[0])[0])


def as_planned(dataset: Any, size: int, times: int) -> Any:
    """`dataset`'s batches of `size` taken `times` at a time (`times` > 1)."""
    batches = int(dataset.cardinality())
    fixed = tf.nest.flatten(dataset.element_spec)[0].shape[:1].is_fully_defined()
    rebatched = dataset.unbatch().batch(size * times, drop_remainder=fixed)
    if batches < 0:
        # Endless (repeat(), whose epochs run on into each other) or of a length TensorFlow does not know
        # (filter()): packed as it comes. With every batch full, as `shuffle().repeat().batch()` makes them,
        # that is the planned run's batches; a partial batch inside the stream (batch() before repeat())
        # shifts the packing after it, which the step records then show.
        return rebatched
    # All batches but the script's last are full: its examples make exactly this many batches here.
    count = batches // times if fixed else math.ceil(batches / times)
    return rebatched.apply(tf.data.experimental.assert_cardinality(count))
