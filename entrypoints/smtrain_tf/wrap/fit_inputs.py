"""Reading a `model.fit(...)` call: its arguments by name, what kind of data it got, and where it was made."""

from __future__ import annotations

import inspect
import math
import sys
from typing import Any, Callable, Dict, Optional, Sequence

import tensorflow as tf

from ..check.places import code_place
from . import notebook_lines

# Keras's own default for array inputs when batch_size is left out.
KERAS_DEFAULT_BATCH = 32

def bind(original: Callable[..., Any], model: Any, args: Sequence[Any], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    """The arguments the caller gave, by name (positional ones too); a wrong call raises Keras's TypeError."""
    bound = inspect.signature(original).bind(model, *args, **kwargs)
    given = dict(bound.arguments)
    given.pop(next(iter(inspect.signature(original).parameters)), None)  # self
    extra = given.pop("kwargs", None)
    if isinstance(extra, dict):
        given.update(extra)
    return given


def script_place(filename: str, line: int, script_dir: str) -> Optional[str]:
    """`train.py:31` for a line of the job's code, relative to the script's directory (a notebook's script:
    `train.ipynb, cell 3, line 2`); None for a file outside it, or smtrain_tf's own."""
    # A notebook's script: its cell and line (the script is the bundle's, never smtrain_tf's own).
    return notebook_lines.where(filename, line) or code_place(filename, line, script_dir)


def caller_location(depth: int, script_dir: str) -> str:
    """`file:line` of the frame `depth` levels above the caller (script_place's, else the file's own path)."""
    frame = sys._getframe(depth + 1)
    filename = frame.f_code.co_filename
    return script_place(filename, frame.f_lineno, script_dir) or f"{filename}:{frame.f_lineno}"


def batched_by_script(x: Any) -> Optional[str]:
    """What the data is, if it already comes in batches (a dataset, a Sequence, a generator), else None."""
    if isinstance(x, tf.data.Dataset):
        return "a tf.data.Dataset"
    if isinstance(x, tf.distribute.DistributedDataset):
        return "a distributed dataset"
    for cls in type(x).__mro__:
        if cls.__name__ in ("PyDataset", "Sequence") and "keras" in cls.__module__:
            return f"a keras.utils.{cls.__name__}"
    if inspect.isgenerator(x) or (hasattr(x, "__next__") and hasattr(x, "__iter__")):
        return "a generator"
    return None


def num_examples(x: Any) -> Optional[int]:
    """Rows of array data (the first array of a list or dict of them); None if it cannot tell."""
    try:
        first = tf.nest.flatten(x)[0]
        return int(first.shape[0])
    except (IndexError, AttributeError, TypeError, ValueError):
        try:
            return len(x)
        except TypeError:
            return None


def array_batches_per_epoch(given: Dict[str, Any]) -> Optional[int]:
    """The epoch's batches when fit batches array data itself (None for data the script batched)."""
    if batched_by_script(given.get("x")) is not None:
        return None
    rows = num_examples(given.get("x"))
    if rows is None:
        return None
    kept = int(math.floor(rows * (1.0 - float(given.get("validation_split") or 0.0))))  # Keras's split
    return max(math.ceil(kept / int(given.get("batch_size") or KERAS_DEFAULT_BATCH)), 1)
