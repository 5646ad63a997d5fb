"""smtrain_tf.fit's training stream of arrays (training/user_data.py): row numbers shuffled and batched, each
batch's rows gathered, in exactly the order examples shuffled through tf.data's buffer had (same seed, same
buffer), for one process and for each Horovod rank, with dict inputs and sample weights."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pytest


@pytest.fixture(scope="module")
def tf():
    import tensorflow

    return tensorflow


def _dist(tf: Any, workers: int = 1, index: int = 0) -> Any:
    from smtrain_tf.distribute.distribution import Distribution

    library = object() if workers > 1 else None  # stands for Horovod: each rank shards by itself
    return Distribution("horovod" if library else "default", tf.distribute.get_strategy(), num_replicas=workers,
                        num_workers=workers, worker_index=index, is_chief=index == 0, library=library)


def _examples_shuffled(tf: Any, arrays: Any, dist: Any, batch: int, buffer: int, seed: int) -> Any:
    """What the stream was before the row numbers: the examples themselves through the shuffle buffer."""
    data = tf.data.Dataset.from_tensor_slices(arrays)
    if dist.library is not None:
        data = data.shard(dist.num_workers, dist.worker_index)
    if buffer:
        data = data.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    return data.repeat().batch(batch, drop_remainder=True)


def _take(tf: Any, dataset: Any, count: int) -> list:
    return [tf.nest.map_structure(lambda t: t.numpy(), element) for element in itertools.islice(dataset, count)]


@pytest.mark.parametrize(("workers", "buffer"), [(1, 64), (1, 0), (2, 50)], ids=["shuffled", "in-order", "2-ranks"])
def test_gathered_rows_come_in_the_order_shuffled_examples_came(tf, workers: int, buffer: int) -> None:
    from smtrain_tf.training import user_data

    rng = np.random.default_rng(0)
    arrays = ({"pixels": rng.random((203, 3), np.float32), "id": np.arange(203)}, np.arange(203) % 7,
              rng.random(203).astype(np.float32))  # dict features, labels, each example's weight
    for index in range(workers):
        dist = _dist(tf, workers, index)
        source = user_data.as_dataset(arrays, "train", 8)
        stream = user_data.training(source, dist, batch_size_per_replica=8, accumulation=1, steps_per_epoch=None,
                                    shuffle_buffer=buffer, seed=5)
        batch = dist.per_process_batch(8 * workers)
        got = _take(tf, stream.dataset, 60)  # past the end of an epoch: the reshuffled second pass too
        expected = _take(tf, _examples_shuffled(tf, arrays, dist, batch, buffer, 5), 60)
        for mine, theirs in zip(got, expected, strict=True):
            tf.nest.assert_same_structure(mine, theirs)
            for a, b in zip(tf.nest.flatten(mine), tf.nest.flatten(theirs), strict=True):
                np.testing.assert_array_equal(a, b)
        ids = np.concatenate([features["id"] for features, _, _ in got[:203 // (batch * workers)]])
        assert len(set(ids)) == len(ids)  # within an epoch no row twice
        assert all(i % workers == index for i in ids)  # a rank's own rows only
