"""Metric lines on stdout, in the one format metric_definitions.json reads (one line):

    epoch=3 step=1200 loss=0.1234 accuracy=0.9700 val_loss=0.0800 val_accuracy=0.9812 lr=0.002
    examples_per_sec=51234 elapsed=12.3

Each name is preceded by a space or starts the line, so ` loss=` never matches inside `val_loss=`.
"""

from __future__ import annotations

import hashlib
import math
from typing import Any, Dict, Iterable, List, Optional, Tuple

import numpy as np


def _number(value: float, digits: int = 4) -> str:
    if value is None:
        return "nan"
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.{digits}f}"


def averages(totals: np.ndarray) -> tuple:
    """(mean loss, accuracy) from summed [loss, correct, count]."""
    count = float(totals[2])
    if count <= 0:
        return float("nan"), float("nan")
    return float(totals[0]) / count, float(totals[1]) / count


def epoch_line(epoch: int, step: int, train: np.ndarray, validation: Optional[np.ndarray],
               learning_rate: Optional[float], examples_per_sec: float, elapsed: float) -> str:
    loss, accuracy = averages(train)
    parts = [f"epoch={epoch}", f"step={step}", f"loss={_number(loss)}", f"accuracy={_number(accuracy)}"]
    if validation is not None:
        val_loss, val_accuracy = averages(validation)
        parts += [f"val_loss={_number(val_loss)}", f"val_accuracy={_number(val_accuracy)}"]
    if learning_rate is not None:
        parts.append(f"lr={learning_rate:.6g}")
    parts += [f"examples_per_sec={examples_per_sec:.0f}", f"elapsed={elapsed:.1f}"]
    return " ".join(parts)


def progress_line(epoch: int, step: int, train: np.ndarray, examples_per_sec: float, elapsed: float) -> str:
    """Within an epoch: the running train metrics (epoch is the 1-based epoch in progress)."""
    loss, accuracy = averages(train)
    return (f"progress epoch={epoch} step={step} loss={_number(loss)} accuracy={_number(accuracy)} "
            f"examples_per_sec={examples_per_sec:.0f} elapsed={elapsed:.1f}")


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
