"""The user's data for smtrain_tf.fit: (x, y) arrays or a tf.data dataset, made into the streams the loop reads.

Two forms, as Keras's fit takes them:
- unbatched (fit's batch_size_per_replica given): sharded (by rank under Horovod/smddp; tf.distribute
  shards the batches itself), shuffled, repeated, batched with the global batch (the process's
  share under Horovod/smddp), prefetched; arrays by their row numbers: the numbers are shuffled and
  batched, and each batch's rows gathered in parallel, rather than every example copied through a
  shuffle buffer (a full buffer of examples is also filled again at each epoch's start);
- already batched (no batch_size_per_replica): each batch is global under tf.distribute strategies,
  a process's own under Horovod/smddp (each rank takes every n-th batch); the stream is repeated.

The training stream never ends: epochs are counted in steps, so every process runs as many.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, List, Optional, Tuple

import tensorflow as tf

from ..check import settings as check_settings
from ..data import hook_data
from ..distribute.choice import PS
from ..distribute.distribution import Distribution

AUTOTUNE = tf.data.AUTOTUNE


@dataclass
class Source:
    """The user's data, and how to build it again on another task (a parameter-server worker).

    files: the files the dataset reads, which tf.data's FILE auto-sharding splits between
    MultiWorkerMirrored workers when there are enough; otherwise each worker keeps every n-th element (DATA).
    """

    dataset: tf.data.Dataset
    remake: Callable[[], tf.data.Dataset]
    files: int = 0
    arrays: Optional[Tuple[Any, ...]] = None  # (x, y[, weights]) given as arrays: the dataset's rows


def _from_graph(dataset: tf.data.Dataset) -> Callable[[], tf.data.Dataset]:
    # A dataset made here cannot be handed to a worker as it is (its handle lives in this process):
    # its serialized graph can, and rebuilds it there. Serialized on first use only (parameter server).
    graph: List[bytes] = []

    def remake() -> tf.data.Dataset:
        if not graph:
            with tf.init_scope():  # called while the worker's dataset function is traced
                graph.append(dataset._as_serialized_graph().numpy())  # noqa: SLF001 - the one way to ship it whole
        # Grappler would fold DatasetFromGraph(constant) into a dataset constant on the chief, which
        # cannot be sent to a worker; an empty string from a random (stateful) op keeps it an op there.
        unfoldable = tf.strings.substr(tf.strings.as_string(tf.random.uniform([])), 0, 0)
        variant = tf.raw_ops.DatasetFromGraph(graph_def=tf.strings.join([graph[0], unfoldable]))
        return tf.data.experimental.from_variant(variant, dataset.element_spec)

    return remake


def as_dataset(data: Any, what: str, batch_size_per_replica: Optional[int]) -> Source:
    """A tf.data.Dataset of (features, labels[, weights]) from a dataset or (x, y[, weights]) arrays."""
    if isinstance(data, tf.data.Dataset):
        return Source(data, _from_graph(data), hook_data.files_read(data))
    if isinstance(data, (tuple, list)) and len(data) in (2, 3):
        if batch_size_per_replica is None:
            raise ValueError(f"smtrain_tf.fit: {what} is a pair of arrays: pass batch_size_per_replica")
        arrays = tuple(data)
        return Source(tf.data.Dataset.from_tensor_slices(arrays), lambda: tf.data.Dataset.from_tensor_slices(arrays),
                      arrays=arrays)
    raise ValueError(f"smtrain_tf.fit: {what} must be a tf.data.Dataset of (features, labels) or an (x, y) tuple "
                     f"of arrays, not {type(data).__name__}")


def _known_length(dataset: tf.data.Dataset) -> Optional[int]:
    length = int(dataset.cardinality())
    return length if length >= 0 else None  # INFINITE (-1) and UNKNOWN (-2)


def _split_by_tf_distribute(dist: Distribution) -> bool:
    return dist.library is None and dist.num_workers > 1 and dist.kind != PS


def _options(dist: Distribution, source: Source) -> tf.data.Options:
    """tf.distribute shards across workers by file when each worker can have files of its own, else by
    element (FILE with fewer files than workers fails at the first step); Horovod ranks shard themselves."""
    options = tf.data.Options()
    policy = tf.data.experimental.AutoShardPolicy
    if not _split_by_tf_distribute(dist):
        options.experimental_distribute.auto_shard_policy = policy.OFF
    else:
        # A check compares each step with one device's: every worker's share must come from one order.
        by_file = source.files >= dist.num_workers and check_settings.read() is None
        options.experimental_distribute.auto_shard_policy = policy.FILE if by_file else policy.DATA
    return options


def warn_if_not_split_by_file(source: Source, dist: Distribution, what: str, say: Callable[[str], None]) -> None:
    """Under MultiWorkerMirrored a dataset not split by file is produced whole by every worker."""
    if not _split_by_tf_distribute(dist) or source.files >= dist.num_workers:
        return
    found = (f"reads {source.files} file(s), fewer than the {dist.num_workers} workers" if source.files
             else "reads no files that tf.data can split (a file reader over a list of file names)")
    say(f"warning: the {what} dataset {found}, so each worker produces all of it and keeps one element in "
        f"{dist.num_workers} (auto-shard by DATA); build it from at least {dist.num_workers} files "
        "(tf.data.Dataset.list_files or from_tensor_slices(files), then TFRecordDataset/TextLineDataset) so "
        "that each worker reads only its own")


def _rank_shard(dataset: tf.data.Dataset, dist: Distribution) -> tf.data.Dataset:
    if dist.library is not None and dist.num_workers > 1:
        return dataset.shard(dist.num_workers, dist.worker_index)
    return dataset


def _batch_size_of(dataset: tf.data.Dataset) -> int:
    """The size of a batched dataset's first batch (read from the data when the shape does not say)."""
    first = tf.nest.flatten(dataset.element_spec)[0].shape
    if first.rank and first[0] is not None:
        return int(first[0])
    element = next(iter(dataset.take(1)))
    return int(tf.shape(tf.nest.flatten(element)[0])[0])


@dataclass
class Training:
    """The training stream (or, under parameter server, the function that makes it on each worker)."""

    dataset: Optional[tf.data.Dataset]
    dataset_fn: Optional[Callable[[tf.distribute.InputContext], tf.data.Dataset]]
    steps_per_epoch: int
    micro_batch: Optional[int]  # examples per replica per micro-batch; None when the batches are the user's
    global_batch: int  # examples per optimizer step over the job; 0 when the batches are the user's


def training(source: Source, dist: Distribution, *, batch_size_per_replica: Optional[int],
             accumulation: int, steps_per_epoch: Optional[int], shuffle_buffer: int, seed: int) -> Training:
    if batch_size_per_replica is not None:
        return _unbatched(source, dist, batch_size_per_replica, accumulation, steps_per_epoch, shuffle_buffer, seed)
    return _batched(source, dist, accumulation, steps_per_epoch, shuffle_buffer, seed)


def _steps(given: Optional[int], length: Optional[int], per_step: int, what: str) -> int:
    if given is not None:
        if given < 1:
            raise ValueError(f"smtrain_tf.fit: steps_per_epoch must be at least 1, got {given}")
        return int(given)
    if length is None:
        raise ValueError(f"smtrain_tf.fit: the length of the training data is unknown or infinite ({what}): "
                         "pass steps_per_epoch")
    return max(1, length // per_step)


def _unbatched(source: Source, dist: Distribution, per_replica: int, accumulation: int,
               steps_per_epoch: Optional[int], shuffle_buffer: int, seed: int) -> Training:
    data = source.dataset
    if per_replica < 1:
        raise ValueError(f"smtrain_tf.fit: batch_size_per_replica must be at least 1, got {per_replica}")
    effective = per_replica * dist.num_replicas * accumulation
    steps = _steps(steps_per_epoch, _known_length(data), effective, "examples")

    def stream(dataset: tf.data.Dataset, batch: int, shuffle_seed: Optional[int]) -> tf.data.Dataset:
        if shuffle_buffer > 0:
            dataset = dataset.shuffle(shuffle_buffer, seed=shuffle_seed, reshuffle_each_iteration=True)
        return dataset.repeat().batch(batch, drop_remainder=True).prefetch(AUTOTUNE)

    if dist.kind == PS:
        def dataset_fn(context: tf.distribute.InputContext) -> tf.data.Dataset:
            # No seed: each worker should see its own order.
            return stream(source.remake(), context.get_per_replica_batch_size(effective), None)

        return Training(None, dataset_fn, steps, per_replica, effective)
    # Every worker shuffles with the same seed: tf.distribute's sharding by element needs one order.
    if source.arrays is not None:
        dataset = _gathered_rows(source.arrays, dist, dist.per_process_batch(effective), shuffle_buffer, seed)
    else:
        dataset = stream(_rank_shard(data, dist), dist.per_process_batch(effective), seed)
    return Training(dataset.with_options(_options(dist, source)), None, steps, per_replica, effective)


def _gathered_rows(arrays: Tuple[Any, ...], dist: Distribution, batch: int, shuffle_buffer: int,
                   seed: int) -> tf.data.Dataset:
    """Batches of the arrays' rows: row numbers sharded, shuffled, repeated and batched; rows gathered per batch."""
    # Tensors made once here are captured by the gather, not copied into each batch's graph.
    tensors = tf.nest.map_structure(tf.convert_to_tensor, arrays)  # a dict or list of inputs keeps its form
    rows = _rank_shard(tf.data.Dataset.range(int(tf.nest.flatten(tensors)[0].shape[0])), dist)
    if shuffle_buffer > 0:
        rows = rows.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)

    def gather(numbers: tf.Tensor) -> Any:
        return tf.nest.map_structure(lambda t: tf.gather(t, numbers), tensors)

    batches = rows.repeat().batch(batch, drop_remainder=True)
    return batches.map(gather, num_parallel_calls=AUTOTUNE, deterministic=True).prefetch(AUTOTUNE)


def _batched(source: Source, dist: Distribution, accumulation: int, steps_per_epoch: Optional[int],
             shuffle_buffer: int, seed: int) -> Training:
    data = source.dataset
    length = _known_length(data)
    if length is not None and dist.library is not None:
        length //= dist.num_workers  # each rank takes every n-th batch
    steps = _steps(steps_per_epoch, length, accumulation, "batches")
    batch = _batch_size_of(data) if accumulation > 1 else 0

    def stream(dataset: tf.data.Dataset, shuffle_seed: Optional[int]) -> tf.data.Dataset:
        dataset = _rank_shard(dataset, dist)
        if shuffle_buffer > 0:
            dataset = dataset.shuffle(shuffle_buffer, seed=shuffle_seed, reshuffle_each_iteration=True)
        if accumulation > 1:
            # One optimizer step takes `accumulation` of the user's batches, split again inside the step.
            dataset = dataset.unbatch().batch(batch * accumulation, drop_remainder=True)
        return dataset.repeat().prefetch(AUTOTUNE)

    if dist.kind == PS:
        return Training(None, lambda context: stream(source.remake(), None), steps, None, 0)
    dataset = stream(data, seed)
    if check_settings.read() is not None:
        # A check compares each step with one device's: split by element from one order (not by file).
        dataset = dataset.with_options(_options(dist, source))
    return Training(dataset, None, steps, None, 0)


def validation(source: Optional[Source], dist: Distribution,
               batch_size_per_replica: Optional[int]) -> Optional[tf.data.Dataset]:
    """One pass, the last batch partial; each process evaluates its share, the sums are added up."""
    if source is None:
        return None
    data = source.dataset
    if dist.kind == PS:
        # The coordinator evaluates the whole set itself.
        batch = (batch_size_per_replica or 0) * dist.num_replicas
        return (data.batch(batch) if batch else data).prefetch(AUTOTUNE)
    dataset = _rank_shard(data, dist)
    if batch_size_per_replica is not None:
        dataset = dataset.batch(dist.per_process_batch(batch_size_per_replica * dist.num_replicas))
    return dataset.prefetch(AUTOTUNE).with_options(_options(dist, source))


def sample_batch(data: tf.data.Dataset, batched: bool) -> Any:
    """A batch of one example's features, to build a model that has not been called yet."""
    element = next(iter(data.take(1) if batched else data.batch(1).take(1)))
    return element[0]
