"""TensorFlow training image versions the SageMaker SDK knows, read from its table without importing it.

Importing `sagemaker` costs seconds; its image table is a JSON file in the package, found
through the import system's metadata alone.
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path


@functools.lru_cache(maxsize=1)
def _training_table() -> dict:
    spec = importlib.util.find_spec("sagemaker")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the sagemaker package (v2) is not installed")
    path = Path(list(spec.submodule_search_locations)[0]) / "image_uri_config" / "tensorflow.json"
    return json.loads(path.read_text(encoding="utf-8"))["training"]


def python_versions() -> dict[str, list[str]]:
    """Each version a spec may name ("2.19" and "2.19.0" alike) -> the image's Python tags, oldest first."""
    table = _training_table()
    versions = table["versions"]
    out = {full: sorted(v.get("py_versions", []), key=lambda p: int(p[2:])) for full, v in versions.items()}
    for alias, full in table.get("version_aliases", {}).items():
        if full in out:
            out[alias] = out[full]
    return out
