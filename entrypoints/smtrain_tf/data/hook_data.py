"""A data hook (`data=module:function`): the user's own tf.data datasets, called, checked and measured.

The hook is called with the keyword arguments its signature names, of:
- `channels`: {channel name: local directory} (SM_CHANNEL_*),
- `hyperparameters`: every hyperparameter of the job (this program's and the user's),
and returns unbatched datasets of `(features, labels)` elements, features and labels of any
structure (a tensor, a dict of inputs, a tuple of outputs): the training dataset alone, a
`(train, validation)` pair, or `{"train": ..., "validation": ...}`. The program shards, shuffles,
repeats, batches with the global batch, prefetches and distributes them (training/user_data.py).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Optional, Tuple

import tensorflow as tf

from ..contract.errors import ConfigurationError, DataError
from ..contract.user_hooks import call_hook, load_hook

# The source datasets tf.data's FILE auto-sharding can split between workers (auto_shard.cc's readers).
FILE_READERS = frozenset({
    "TFRecordDataset", "TFRecordDatasetV2", "FixedLengthRecordDataset", "FixedLengthRecordDatasetV2",
    "TextLineDataset", "ArrayRecordDataset", "RecordIODataset", "SSTableDataset",
})


@dataclass
class HookDatasets:
    name: str
    train: tf.data.Dataset
    validation: Optional[tf.data.Dataset]
    num_examples: Optional[int]  # None: unknown, not counted (max_steps_per_epoch sets the epoch)
    features_shape: Optional[Tuple[int, ...]]  # one example's features, when they are one tensor of known shape
    max_label: int  # the largest integer label seen (-1: not counted, or labels are not class ids)


def files_read(dataset: tf.data.Dataset) -> int:
    """How many files the dataset reads through a tf.data file reader, as FILE auto-sharding would split
    them between workers: the file names listed in its graph (from_tensor_slices(files), list_files).
    0 when it has no file reader, or the names are not in the graph."""
    try:
        graph = tf.compat.v1.GraphDef.FromString(dataset._as_serialized_graph().numpy())  # noqa: SLF001
    except Exception:  # noqa: BLE001 - a dataset that cannot be serialized cannot be split by file either
        return 0
    ops = {node.op for node in graph.node}
    for function in graph.library.function:
        ops.update(node.op for node in function.node_def)
    if not ops & FILE_READERS:
        return 0
    nodes = {node.name: node for node in graph.node}
    count = 0
    for node in graph.node:
        if node.op != "TensorSliceDataset":
            continue
        for name in node.input:
            source = nodes.get(name.lstrip("^").split(":")[0])
            tensor = source.attr["value"].tensor if source is not None and source.op == "Const" else None
            if tensor is not None and tensor.dtype == tf.string.as_datatype_enum:
                size = 1
                for dim in tensor.tensor_shape.dim:
                    size *= dim.size
                count += size
    return count


def _batched(dataset: tf.data.Dataset) -> bool:
    """Whether a batch transformation is the last to shape the elements (walking back past prefetch, options...)."""
    current: Any = dataset
    while current is not None:
        kind = type(current).__name__
        if "Unbatch" in kind or "Map" in kind:
            return False
        if "Batch" in kind:
            return True
        current = getattr(current, "_input_dataset", None)
    return False


def _split(name: str, result: Any) -> Tuple[Any, Any]:
    if isinstance(result, dict):
        unknown = sorted(set(result) - {"train", "validation"})
        if unknown or "train" not in result:
            raise ConfigurationError(f"data hook '{name}' returned a dict with keys {sorted(result)}: expected "
                                     "'train' and optionally 'validation'")
        return result["train"], result.get("validation")
    if isinstance(result, (tuple, list)) and len(result) == 2 and isinstance(result[0], tf.data.Dataset):
        return result[0], result[1]
    return result, None


def _check(name: str, what: str, dataset: Any) -> tf.data.Dataset:
    if not isinstance(dataset, tf.data.Dataset):
        raise ConfigurationError(f"data hook '{name}' must return a tf.data.Dataset for {what} (or a (train, "
                                 f"validation) pair, or a dict), got {type(dataset).__name__}")
    spec = dataset.element_spec
    if not isinstance(spec, tuple) or len(spec) != 2:
        raise DataError(f"data hook '{name}': the {what} dataset's elements must be (features, labels) pairs, "
                        f"got {spec}")
    if _batched(dataset):
        raise DataError(f"data hook '{name}': the {what} dataset is batched; return single examples (leave out "
                        ".batch): the program batches them with the job's global batch")
    return dataset


def _features_shape(spec: Any) -> Optional[Tuple[int, ...]]:
    if isinstance(spec, tf.TensorSpec) and spec.shape.is_fully_defined():
        return tuple(int(d) for d in spec.shape)
    return None


def _integer_labels(spec: Any) -> bool:
    return isinstance(spec, tf.TensorSpec) and spec.dtype.is_integer and (spec.shape.rank or 0) <= 1


def _measure(dataset: tf.data.Dataset, want_labels: bool) -> Tuple[int, int]:
    """(examples, largest label) in one pass."""
    def step(state: Tuple[tf.Tensor, tf.Tensor], element: Any) -> Tuple[tf.Tensor, tf.Tensor]:
        count, top = state
        if want_labels:
            top = tf.maximum(top, tf.reduce_max(tf.cast(element[1], tf.int64)))
        return count + 1, top

    count, top = dataset.reduce((tf.constant(0, tf.int64), tf.constant(-1, tf.int64)), step)
    return int(count), int(top)


def load(name: str, channels: Dict[str, str], hyperparameters: Dict[str, Any], *, need_labels: bool,
         may_skip_count: bool, say: Callable[[str], None]) -> HookDatasets:
    """Call the hook and check what it returns.

    need_labels: a built-in model needs the number of classes, so integer labels are scanned once.
    may_skip_count: a dataset of unknown length is not counted when max_steps_per_epoch sets the epoch.
    """
    result = call_hook(load_hook("data", name), {"channels": dict(channels),
                                                 "hyperparameters": dict(hyperparameters)})
    train, validation = _split(name, result)
    train = _check(name, "training", train)
    if validation is not None:
        validation = _check(name, "validation", validation)
    features, labels = train.element_spec
    want_labels = need_labels and _integer_labels(labels)
    if need_labels and not want_labels:
        raise DataError(f"data hook '{name}': a built-in model needs integer class ids as labels, got {labels}; "
                        "use a model hook for other labels")
    length = int(train.cardinality())
    if length == tf.data.INFINITE_CARDINALITY:
        raise DataError(f"data hook '{name}': the training dataset is infinite (leave out .repeat(): the program "
                        "repeats it and counts epochs in steps)")
    num_examples: Optional[int] = length if length >= 0 else None
    top = -1
    if want_labels or (num_examples is None and not may_skip_count):
        began = time.time()
        counted, top = _measure(train, want_labels)
        if num_examples is None:
            say(f"note: data hook {name}: counted {counted} training examples in {time.time() - began:.1f}s "
                "(its length is unknown; max_steps_per_epoch sets the epoch without counting)")
        num_examples = counted
    if num_examples == 0:
        raise DataError(f"data hook '{name}': the training dataset is empty")
    return HookDatasets(name=name, train=train, validation=validation, num_examples=num_examples,
                        features_shape=_features_shape(features), max_label=top)
