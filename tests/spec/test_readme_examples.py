"""Every YAML spec example in README.md, entrypoints/README.md and the docs site passes `smtrain validate`.

A fenced ```yaml block with top-level `name:` and `role:` keys is a spec; any other yaml block is a
fragment, merged into a base spec. The code an example names (code.source_dir and the files in it)
is made in a scratch directory, as a user of the example would have it.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.spec.inprocess import run
from tests.support import ROOT
from tests.support.docs import PAGES
from tests.support.specfiles import BASE, merged

_FENCE = re.compile(r"^```ya?ml[^\n]*\n(.*?)^```", re.MULTILINE | re.DOTALL)


def yaml_blocks() -> list[tuple[str, str]]:
    """(doc:line, the block's text) for every fenced yaml block of the docs."""
    blocks = []
    for page in PAGES:
        doc = page.relative_to(ROOT).as_posix()
        text = page.read_text(encoding="utf-8")
        for m in _FENCE.finditer(text):
            blocks.append((f"{doc}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1)))
    return blocks


def as_spec(block: str) -> str:
    data = yaml.safe_load(block)
    if isinstance(data, dict) and "name" in data and "role" in data:
        return block
    assert isinstance(data, dict), "a yaml block in the docs is neither a spec nor a mapping to merge into one"
    return yaml.safe_dump(merged(BASE, data), sort_keys=False)


def _make_code(directory: Path, spec: dict[str, Any]) -> None:
    code = spec.get("code") or {}
    if code.get("source_dir"):
        source = directory / code["source_dir"]
        source.mkdir(parents=True, exist_ok=True)
        for name in (code.get("entry_point"), code.get("requirements")):
            if name:
                (source / name).write_text("")
        # The model and data hooks it names, as functions of their modules.
        for hook in ((spec.get("training") or {}).get(field, "") for field in ("model", "data")):
            if re.fullmatch(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*", hook):
                module, function = hook.split(":")
                path = source.joinpath(*module.split(".")).with_suffix(".py")
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("a", encoding="utf-8") as handle:
                    handle.write(f"def {function}(**kwargs):\n    pass\n")


def test_the_docs_have_spec_examples():
    specs = [where for where, block in yaml_blocks() if {"name", "role"} <= set(yaml.safe_load(block) or {})]
    assert any(where.startswith("docs/") for where in specs)


@pytest.mark.parametrize("where, block", yaml_blocks(), ids=[where for where, _ in yaml_blocks()])
def test_doc_example_validates(tmp_path, where, block):
    text = as_spec(block)
    _make_code(tmp_path, yaml.safe_load(text))
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8")
    result = run("validate", str(path), home=tmp_path)
    assert result.exception is None and result.code == 0, (where, result.output)
