"""TensorFlow training image versions the SageMaker SDK knows, read from its table without importing it.

Importing `sagemaker` costs seconds; its image table is a JSON file in the package, found through the
import system's metadata alone (`find_spec` locates the package without running its __init__).
"""

from __future__ import annotations

import functools
import importlib.util
import json
from pathlib import Path
from typing import Any


@functools.lru_cache(maxsize=1)
def _tf_training_table() -> dict[str, Any]:
    """The "training" section of the SDK's ``image_uri_config/tensorflow.json``.

    ``find_spec`` only locates the package; it does not run ``sagemaker/__init__.py``.
    """
    spec = importlib.util.find_spec("sagemaker")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the SageMaker Python SDK (sagemaker>=2.257,<3) is not installed")
    for location in spec.submodule_search_locations:
        path = Path(location) / "image_uri_config" / "tensorflow.json"
        if path.is_file():
            return json.loads(path.read_text(encoding="utf-8"))["training"]
    raise RuntimeError("the installed SageMaker SDK has no image_uri_config/tensorflow.json")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def _py_key(py_version: str) -> tuple[int, ...]:
    # "py3" < "py36" < "py39" < "py310": compare (major, minor), not the strings.
    digits = py_version[2:]
    return (int(digits[0]), int(digits[1:]) if digits[1:] else -1) if digits.isdigit() else (-1,)


@functools.lru_cache(maxsize=1)
def _tf_py_versions_cached() -> dict[str, tuple[str, ...]]:
    table = _tf_training_table()
    full = {v: tuple(cfg.get("py_versions") or ()) for v, cfg in table["versions"].items()}
    result = dict(full)
    # Short forms ("2.19") are what users write; the SDK resolves them through version_aliases.
    for alias, target in table.get("version_aliases", {}).items():
        if target in full:
            result[alias] = full[target]
    return {v: result[v] for v in sorted(result, key=_version_key)}


def tf_py_versions() -> dict[str, list[str]]:
    """TensorFlow training versions the installed SDK has images for -> their Python versions.

    Both the short ("2.19") and the full ("2.19.0") spellings are keys, sorted by version.
    """
    return {v: list(py) for v, py in _tf_py_versions_cached().items()}


def known_tf_versions() -> list[str]:
    """TensorFlow versions the SDK can find a training image for without ``image_uri``."""
    return list(_tf_py_versions_cached())


def default_py_version(framework_version: str) -> str | None:
    """The newest Python version the SDK ships for `framework_version`, or None if unknown."""
    pys = _tf_py_versions_cached().get(framework_version)
    return max(pys, key=_py_key) if pys else None


def newest_registries() -> dict[str, str]:
    """Region -> registry account of the newest TensorFlow training image the SDK knows: where AWS keeps the
    images the SDK does not know yet (smtrain.plan.tf_images renders their URIs from it)."""
    versions = _tf_training_table()["versions"]
    newest = max((v for v in versions if versions[v].get("registries")), key=_version_key)
    return dict(versions[newest]["registries"])


def image_regions(framework_version: str) -> list[str]:
    """The regions the SDK has a TensorFlow `framework_version` training image in (it refuses any other)."""
    table = _tf_training_table()
    full = table.get("version_aliases", {}).get(framework_version, framework_version)
    return sorted(table["versions"].get(full, {}).get("registries", {}))
