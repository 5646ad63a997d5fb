"""A strategy's `num_replicas_in_sync` that records the batches a script makes with it.

A script that builds its own strategy often writes its global batch itself, as
`64 * strategy.num_replicas_in_sync`. A marked strategy answers `num_replicas_in_sync` with an int
that records the products made with it (plain ints, which the script may print, save or serialise),
so fit (wrap/batch_size.py, smtrain_tf.fit during a check) and Dataset.batch know a batch of that value
is already global. A product made another way (`np.int64(64) * n`, `sum([n] * 64)`) is not recorded:
the batch is then taken as one replica's, as for any other number, and the log says so.

The wrap marks its strategy (wrap/own_strategy.py); smtrain_tf's strategy() marks it during a check (_api.py).
"""

from __future__ import annotations

from typing import Any, Set

import tensorflow as tf


class ReplicaCount(int):
    """`num_replicas_in_sync` as a marked strategy gives it: the products made with it are recorded."""

    def __mul__(self, other: Any) -> Any:
        product = int.__mul__(self, other)
        if isinstance(other, int) and product is not NotImplemented:
            _State.scaled.add(int(product))
            return int(product)
        return product

    __rmul__ = __mul__

    def __reduce__(self) -> Any:  # pickled (or copied) as the plain int it is
        return (int, (int(self),))


class _State:
    scaled: Set[int] = set()  # values the script made by multiplying with the replica count
    scaled_dataset_batch = False  # a Dataset.batch(...) the script scaled itself


def scaled_by_script(value: Any) -> bool:
    """Whether `value` is a product the script made with num_replicas_in_sync (its global batch)."""
    try:
        return isinstance(value, int) and not isinstance(value, bool) and int(value) in _State.scaled
    except (TypeError, ValueError):
        return False


def dataset_batch_scaled() -> bool:
    return _State.scaled_dataset_batch


def _mark_replica_count(strategy: Any) -> None:
    cls = type(strategy)
    prop = getattr(cls, "num_replicas_in_sync", None)
    if not isinstance(prop, property) or getattr(prop.fget, "_smtrain_marked", False):
        return

    def num_replicas_in_sync(self: Any) -> Any:
        value = prop.fget(self)
        return ReplicaCount(value) if self is strategy else value

    num_replicas_in_sync._smtrain_marked = True  # type: ignore[attr-defined]
    cls.num_replicas_in_sync = property(num_replicas_in_sync, doc=prop.__doc__)


def _mark_dataset_batch() -> None:
    original = tf.data.Dataset.batch
    if getattr(original, "_smtrain_marked", False):
        return

    def batch(self: Any, batch_size: Any, *args: Any, **kwargs: Any) -> Any:
        if scaled_by_script(batch_size):
            _State.scaled_dataset_batch = True
        return original(self, batch_size, *args, **kwargs)

    batch.__doc__ = original.__doc__
    batch._smtrain_marked = True  # type: ignore[attr-defined]
    tf.data.Dataset.batch = batch  # type: ignore[method-assign]


def mark_replica_count(strategy: Any) -> None:
    """`strategy.num_replicas_in_sync` records the products made with it, and Dataset.batch a batch made so
    (the wrap's strategy, wrap/own_strategy.py; smtrain_tf's strategy() during a check, outside the wrap)."""
    _mark_replica_count(strategy)
    _mark_dataset_batch()
