"""tf.data pipelines over checked channels: interleave, shard, cache, shuffle, batch, prefetch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import tensorflow as tf

from ..check import settings as check_settings
from .formats import ChannelData, csv_reader, tfrecord_reader

AUTOTUNE = tf.data.AUTOTUNE


@dataclass(frozen=True)
class Sharding:
    """How this process's share of the data is picked.

    explicit: Horovod/smddp processes shard by rank themselves; otherwise tf.distribute's
    auto-sharding does it (policy FILE when every worker gets files, DATA otherwise).
    """

    num_shards: int = 1
    index: int = 0
    explicit: bool = False


def _should_cache(data: ChannelData, cache: str, cache_max_mb: float) -> bool:
    if data.in_memory:
        return False  # already in memory
    if cache == "auto":
        return data.size_bytes <= cache_max_mb * 2**20
    return cache == "on"


def _records(data: ChannelData, sharding: Sharding, shuffle_files: bool, seed: Optional[int],
             deterministic: bool) -> tf.data.Dataset:
    """(x, y) elements of this process's share, before caching and shuffling."""
    if data.in_memory:
        x, y = data.arrays  # type: ignore[misc]
        if sharding.explicit and sharding.num_shards > 1:
            x, y = x[sharding.index::sharding.num_shards], y[sharding.index::sharding.num_shards]
        return tf.data.Dataset.from_tensor_slices((x, y))
    files = tf.data.Dataset.from_tensor_slices(list(data.files))
    shard_records = False
    if sharding.explicit and sharding.num_shards > 1:
        if len(data.files) >= sharding.num_shards:
            files = files.shard(sharding.num_shards, sharding.index)
        else:
            shard_records = True
    if shuffle_files and len(data.files) > 1:
        files = files.shuffle(len(data.files), seed=seed, reshuffle_each_iteration=True)
    if data.format == "tfrecord":
        reader = tfrecord_reader(data.element_shape)
    else:
        reader = csv_reader(int(data.details["columns"]), dict(data.details["headers"]))  # type: ignore[arg-type]
    records = files.interleave(reader, cycle_length=min(len(data.files), 16), num_parallel_calls=AUTOTUNE,
                               deterministic=deterministic)
    if shard_records:
        records = records.shard(sharding.num_shards, sharding.index)
    return records


def _options(data: ChannelData, sharding: Sharding, num_workers: int) -> tf.data.Options:
    options = tf.data.Options()
    policy = tf.data.experimental.AutoShardPolicy
    if sharding.explicit or num_workers <= 1:
        options.experimental_distribute.auto_shard_policy = policy.OFF
    elif not data.in_memory and len(data.files) >= num_workers and check_settings.read() is None:
        # (A check compares each step with one device's: every worker's share must come from one order.)
        options.experimental_distribute.auto_shard_policy = policy.FILE
    else:
        options.experimental_distribute.auto_shard_policy = policy.DATA
    return options


def training(data: ChannelData, batch_size: int, *, seed: Optional[int], shuffle_buffer: int, cache: str,
             cache_max_mb: float, sharding: Sharding = Sharding(), num_workers: int = 1) -> tf.data.Dataset:
    """An endless stream of full batches; epochs are counted in steps by the training loop."""
    options = _options(data, sharding, num_workers)
    # DATA sharding keeps every k-th element, so all workers must see the same order.
    data_sharded = options.experimental_distribute.auto_shard_policy == tf.data.experimental.AutoShardPolicy.DATA
    checking = check_settings.read() is not None  # a check compares orders: they must not vary between runs
    records = _records(data, sharding, shuffle_files=True, seed=seed, deterministic=data_sharded or checking)
    if _should_cache(data, cache, cache_max_mb):
        records = records.cache()
    buffer = min(shuffle_buffer, data.num_examples)
    if buffer > 1:
        records = records.shuffle(buffer, seed=seed, reshuffle_each_iteration=True)
    batches = records.repeat().batch(batch_size, drop_remainder=True).prefetch(AUTOTUNE)
    return batches.with_options(options)


def evaluation(data: ChannelData, batch_size: int, *, cache: str, cache_max_mb: float,
               sharding: Sharding = Sharding(), num_workers: int = 1) -> tf.data.Dataset:
    """One pass, last batch partial; metrics are summed so the partial batch counts exactly."""
    options = _options(data, sharding, num_workers)
    records = _records(data, sharding, shuffle_files=False, seed=None, deterministic=True)
    if _should_cache(data, cache, cache_max_mb):
        records = records.cache()
    return records.batch(batch_size, drop_remainder=False).prefetch(AUTOTUNE).with_options(options)


def steps_per_epoch(num_examples: Optional[int], global_batch: int, cap: int) -> int:
    """Full batches in the data, at most `cap` (> 0); `cap` alone when the number of examples is unknown."""
    if num_examples is None:
        return cap
    steps = max(1, num_examples // global_batch)
    return min(steps, cap) if cap > 0 else steps

