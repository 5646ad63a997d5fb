"""Metric lines on stdout, in the one format the job's MetricDefinitions read (one line):

    epoch=3 step=1200 loss=0.1234 accuracy=0.9700 val_loss=0.0800 val_accuracy=0.9812 lr=0.002
    examples_per_sec=51234 elapsed=12.3

The loss, then the model's metrics (accuracy by default, `mae=` or any other it declares), each
again with `val_` for the validation set. Each name is preceded by a space or starts the line, so
` loss=` never matches inside `val_loss=`.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

import numpy as np


def _number(value: float, digits: int = 4) -> str:
    if value is None:
        return "nan"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def _named(values: Mapping[str, float], prefix: str = "") -> List[str]:
    return [f"{prefix}{name}={_number(value)}" for name, value in values.items()]


def epoch_line(epoch: int, step: int, train: Mapping[str, float], validation: Optional[Mapping[str, float]],
               learning_rate: Optional[float], examples_per_sec: float, elapsed: float, fit_call: int = 1) -> str:
    """`train` and `validation`: {'loss': ..., metric: ...} (measures.Measures.values). From a process's second
    fit call on, `fit=N` after the step: each call's epochs are rows of their own in `smtrain metrics`."""
    parts = [f"epoch={epoch}", f"step={step}", *([f"fit={fit_call}"] if fit_call > 1 else []), *_named(train)]
    if validation is not None:
        parts += _named(validation, "val_")
    if learning_rate is not None:
        parts.append(f"lr={learning_rate:.6g}")
    parts += [f"examples_per_sec={examples_per_sec:.0f}", f"elapsed={elapsed:.1f}"]
    return " ".join(parts)


def progress_line(epoch: int, step: int, train: Mapping[str, float], examples_per_sec: float, elapsed: float) -> str:
    """Within an epoch: the running train metrics (epoch is the 1-based epoch in progress)."""
    return " ".join([f"progress epoch={epoch}", f"step={step}", *_named(train),
                     f"examples_per_sec={examples_per_sec:.0f}", f"elapsed={elapsed:.1f}"])


def fields(line: str) -> Dict[str, str]:
    """name=value pairs of a metric line."""
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def weights_digest(weights: Iterable[Any]) -> str:
    """sha256 over every weight's dtype, shape and bytes: equal digests mean identical models."""
    digest = hashlib.sha256()
    for array in weights:
        array = np.ascontiguousarray(np.asarray(array))
        digest.update(f"{array.dtype}{array.shape}".encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def weights_list(model: Any) -> List[np.ndarray]:
    return [np.asarray(w) for w in model.get_weights()]


def say_weights(model: Any, say: Any) -> Tuple[List[np.ndarray], str]:
    """Say `weights_sha256=<hex>`; every process must call it (variables synchronised on read need all)."""
    weights = weights_list(model)
    digest = weights_digest(weights)
    say(f"weights_sha256={digest}")
    return weights, digest
