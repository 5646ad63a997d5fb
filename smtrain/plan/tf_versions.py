"""The TensorFlow training images of the SageMaker SDK v2's table (smtrain's copy, data/tf_registries.yaml): the
versions, their Python versions and regions, and each image's URI as the SDK's image_uris.retrieve renders it.
"""

from __future__ import annotations

import functools

from smtrain.plan.tf_registries import instance_family, load_registries, processor


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) if part.isdigit() else -1 for part in version.split("."))


def _py_key(py_version: str) -> tuple[int, ...]:
    # "py3" < "py36" < "py39" < "py310": compare (major, minor), not the strings.
    digits = py_version[2:]
    return (int(digits[0]), int(digits[1:]) if digits[1:] else -1) if digits.isdigit() else (-1,)


@functools.lru_cache(maxsize=1)
def _tf_py_versions_cached() -> dict[str, tuple[str, ...]]:
    data = load_registries()
    full = {v: tuple(per_py) for v, per_py in data.versions.items()}
    result = dict(full)
    # Short forms ("2.19") are what users write; the SDK resolves them through its version_aliases.
    for alias, target in data.aliases.items():
        if target in full:
            result[alias] = full[target]
    return {v: result[v] for v in sorted(result, key=_version_key)}


def tf_py_versions() -> dict[str, list[str]]:
    """TensorFlow training versions SDK v2's table has images for -> their Python versions.

    Both the short ("2.19") and the full ("2.19.0") spellings are keys, sorted by version.
    """
    return {v: list(py) for v, py in _tf_py_versions_cached().items()}


def known_tf_versions() -> list[str]:
    """TensorFlow versions SDK v2's table has a training image for."""
    return list(_tf_py_versions_cached())


def default_py_version(framework_version: str) -> str | None:
    """The newest Python version the table has for `framework_version`, or None if unknown."""
    pys = _tf_py_versions_cached().get(framework_version)
    return max(pys, key=_py_key) if pys else None


def image_regions(framework_version: str, py_version: str | None = None) -> list[str]:
    """The regions with a `framework_version` training image for `py_version` (default: the newest Python)."""
    if framework_version not in _tf_py_versions_cached():
        return []
    entry = load_registries().entry(framework_version, py_version or default_py_version(framework_version))
    return sorted(entry.regions) if entry else []


def image_uri(framework_version: str, py_version: str, region: str, instance_type: str,
              smdistributed: bool = False) -> str | None:
    """The training image URI SDK v2 renders for these (image_uris.retrieve through the TensorFlow estimator);
    None where its table has none (version, Python, region, or an instance type it has no image for).

    The tag is the version as written ("2.19" and "2.19.0" are both tags), the processor and the Python; a few
    old GPU images get a CUDA/OS suffix on ml.p4d* or with smdistributed (the SDK's own table of them)."""
    if framework_version not in _tf_py_versions_cached():
        return None
    data = load_registries()
    entry, kind = data.entry(framework_version, py_version), processor(instance_type)
    if entry is None or kind is None:
        return None
    tag = f"{framework_version}-{kind}-{py_version}"
    if instance_family(instance_type) == "p4d" or smdistributed:
        tag = "-".join(filter(None, (tag, data.gpu_tag_suffixes.get(tag))))
    return data.uri(entry, region, tag)
