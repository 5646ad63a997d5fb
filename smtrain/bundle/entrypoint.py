"""Where the bundled TensorFlow entrypoint is installed, and the metric definitions it publishes.

The distribution ships it as two top-level names, from the repository's entrypoints/ folder:
`smtrain_entry` (the program SageMaker runs) and `smtrain_tf` (its package). They are found by
import machinery without being imported (TensorFlow stays unloaded), so a wheel install and an
editable checkout bundle the same files.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any

ENTRY_MODULE = "smtrain_entry"
PACKAGE = "smtrain_tf"


def _located(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"the bundled entrypoint ({name}) is missing from this install of smtrain; "
                                "reinstall it (pip install --force-reinstall smtrain)")
    return Path(spec.origin).resolve()


@functools.lru_cache(maxsize=1)
def entrypoint_parts() -> tuple[Path, Path]:
    """The entry program (smtrain_entry.py) and its package directory (smtrain_tf/), as installed."""
    return _located(ENTRY_MODULE), _located(PACKAGE).parent


@functools.lru_cache(maxsize=1)
def metric_definitions() -> tuple[dict[str, Any], ...]:
    """SageMaker MetricDefinitions matching the metric lines the entrypoint prints."""
    path = entrypoint_parts()[1] / "metric_definitions.json"
    return tuple(json.loads(path.read_text(encoding="utf-8")))
