"""The model's weights written as a check needs them: the reference's start (which the planned run loads,
so that both begin alike, as every replica of a real run begins from the chief's), each run's end,
and the planned run's end set against the reference's."""

from __future__ import annotations

import os
from typing import Any, Dict, List

import numpy as np

from .settings import END_WEIGHTS, START_WEIGHTS, CheckSettings


class DifferentModels(Exception):
    """The two runs built models of different shapes: nothing to compare."""


def _arrays(model: Any) -> List[np.ndarray]:
    return [np.asarray(v.numpy()) for v in model.weights]


def save(model: Any, path: str) -> None:
    np.savez(path, *_arrays(model))


def _load(path: str) -> List[np.ndarray]:
    with np.load(path) as found:
        return [found[f"arr_{i}"] for i in range(len(found.files))]


def start_alike(settings: CheckSettings, model: Any, name: str = START_WEIGHTS) -> None:
    """Reference: write the weights it starts from. Planned run: start from them. `name`: the file, one per model
    where a script trains several (a distiller's teacher, then its student)."""
    if settings.is_reference:
        save(model, os.path.join(settings.directory, name))
        return
    assert settings.reference is not None
    start = _load(os.path.join(settings.reference, name))
    variables = list(model.weights)
    _same_shapes(variables, start)
    for variable, value in zip(variables, start):  # noqa: B905 - strict= needs Python 3.10
        variable.assign(value)


def _same_shapes(variables: List[Any], arrays: List[np.ndarray]) -> None:
    shapes = [tuple(v.shape) for v in variables]
    theirs = [tuple(a.shape) for a in arrays]
    if shapes != theirs:
        raise DifferentModels(f"the planned run built a model of {len(shapes)} weights {shapes[:4]}..., the one-device "
                              f"run {len(theirs)} {theirs[:4]}...: the script builds a different model on "
                              "several replicas")


def compare_end(settings: CheckSettings, model: Any) -> List[Dict[str, Any]]:
    """Each weight's difference from the reference's after the last step (the norm of the difference), and the
    reference's norm."""
    assert settings.reference is not None
    theirs = _load(os.path.join(settings.reference, END_WEIGHTS))
    variables = list(model.weights)
    _same_shapes(variables, theirs)
    rows = []
    for variable, mine, reference in zip(variables, _arrays(model), theirs):  # noqa: B905 - strict= needs 3.10
        mine64, ref64 = mine.astype(np.float64), reference.astype(np.float64)
        difference = float(np.linalg.norm(mine64 - ref64))
        scale = float(np.linalg.norm(ref64))
        rows.append({"name": getattr(variable, "path", None) or variable.name, "difference": difference,
                     "norm": scale, "relative": difference / scale if scale > 0 else difference,
                     "largest": float(np.max(np.abs(mine64 - ref64))) if mine.size else 0.0})
    return rows


def save_end(settings: CheckSettings, model: Any) -> None:
    save(model, os.path.join(settings.directory, END_WEIGHTS))
