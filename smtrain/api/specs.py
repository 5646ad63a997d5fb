"""smtrain.load: a job spec from a YAML file or a Python mapping, with overrides, validated as the CLI does."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

if TYPE_CHECKING:
    from smtrain.spec.model import LoadedSpec

SpecSource = Union[str, "os.PathLike[str]", Mapping[str, Any], "LoadedSpec"]
Overrides = Mapping[str, Any] | Sequence[str] | None


def override_texts(overrides: Overrides) -> tuple[str | tuple[str, Any], ...]:
    """Overrides as the spec reader takes them: "FIELD=VALUE" strings as --set gives them (VALUE read as --set
    reads it), and a mapping's items as (field, value) pairs whose values are taken as they are."""
    if overrides is None:
        return ()
    if isinstance(overrides, Mapping):
        bad = [key for key in overrides if not isinstance(key, str) or not key]
        if bad:
            raise TypeError(f"an override's key is a field's dotted path, such as 'compute.nodes', not {bad[0]!r}")
        return tuple(overrides.items())
    if isinstance(overrides, str):
        return (overrides,)
    if not isinstance(overrides, (list, tuple)):
        raise TypeError(f"overrides take a mapping ({{'compute.nodes': 2}}) or a list of 'FIELD=VALUE' texts, not "
                        f"{type(overrides).__name__}")
    bad = [item for item in overrides if not isinstance(item, str) and not (
        isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str))]
    if bad:
        raise TypeError(f"an override in a list is a 'FIELD=VALUE' text (or a (field, value) pair), not {bad[0]!r}")
    return tuple(overrides)


def load(spec: SpecSource, overrides: Overrides = None, env: Mapping[str, str] | None = None, *,
         base_dir: str | os.PathLike[str] | None = None) -> LoadedSpec:
    """Read and validate a job spec: a YAML file's path, or the spec as a mapping.

    `overrides` are --set's: {"compute.nodes": 2} or ["compute.nodes=2"]. `env` stands in for os.environ in
    `${VAR}`. A mapping's relative paths are read from `base_dir` (default: the working directory).
    Raises SpecError whose `.problems` name each field: file:line:column for a file, the field path for a
    mapping. An already loaded spec is returned as it is (overrides then are refused: load it again).
    """
    from smtrain.spec.model import LoadedSpec, load_spec, load_spec_data

    texts = override_texts(overrides)
    if isinstance(spec, LoadedSpec):
        if texts or env is not None:
            raise TypeError("overrides and env apply while a spec is read: pass its file or mapping instead")
        return spec
    if isinstance(spec, Mapping):
        return load_spec_data(spec, Path(base_dir) if base_dir is not None else Path.cwd(), texts, env)
    if isinstance(spec, (str, os.PathLike)):
        return load_spec(spec, texts, env)
    raise TypeError(f"a spec is a YAML file's path or a mapping, not {type(spec).__name__}")
