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

from ..contract.errors import ConfigurationError


def first_batch_size(dataset: Any) -> int:
    first = next(iter(dataset.take(1)))
    return int(tf.shape(tf.nest.flatten(first)[0])[0])


def as_planned(dataset: Any, size: int, times: int) -> Any:
    """`dataset`'s batches of `size` taken `times` at a time (`times` > 1)."""
    batches = int(dataset.cardinality())
    if batches < 0:
        # An endless stream (repeat after batch) would pack batches across its epochs here, not there.
        raise ConfigurationError("smtrain check: the script's dataset is batched before an endless repeat(), so its "
                                 "batches cannot be made the planned global ones on one device: repeat() before "
                                 "batch(), or let smtrain batch it (batch_size_per_replica)")
    fixed = tf.nest.flatten(dataset.element_spec)[0].shape[:1].is_fully_defined()
    rebatched = dataset.unbatch().batch(size * times, drop_remainder=fixed)
    # All batches but the script's last are full: its examples make exactly this many batches here.
    count = batches // times if fixed else math.ceil(batches / times)
    return rebatched.apply(tf.data.experimental.assert_cardinality(count))
