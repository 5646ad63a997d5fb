"""Where the bundled TensorFlow entrypoint lives, and the metric definitions it publishes."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any


def entrypoint_dir() -> Path:
    """The `entrypoints/` directory shipped beside the smtrain package."""
    here = Path(__file__).resolve().parent
    for candidate in (here.parent.parent / "entrypoints", here / "_entrypoints"):
        if (candidate / "smtrain_entry.py").is_file():
            return candidate
    raise FileNotFoundError("the bundled entrypoint (entrypoints/smtrain_entry.py) is missing from this install")


@functools.lru_cache(maxsize=1)
def metric_definitions() -> tuple[dict[str, Any], ...]:
    """SageMaker MetricDefinitions matching the metric lines the entrypoint prints."""
    path = entrypoint_dir() / "smtrain_tf" / "metric_definitions.json"
    return tuple(json.loads(path.read_text(encoding="utf-8")))
