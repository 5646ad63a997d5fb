"""The documentation site (docs/, mkdocs.yml) and README.md as its front door: the site builds with --strict, its
reference pages are generated from the code and name every spec field, command and public function, each with
its description, and README's links lead into the docs."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest
import yaml

from tests.support import ROOT

MKDOCS = [sys.executable, "-m", "mkdocs"]


def _reference() -> ModuleType:
    """scripts/docs_reference.py, the MkDocs hook, as a module (it lives outside the packages, as hooks do)."""
    spec = importlib.util.spec_from_file_location("docs_reference", ROOT / "scripts" / "docs_reference.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reference = _reference()


def _build(config_dir: Path, site: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MKDOCS, "build", "--strict", "-f", str(config_dir / "mkdocs.yml"), "-d", str(site)],
                          cwd=config_dir, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})


def test_every_spec_field_command_option_and_public_function_has_a_description() -> None:
    assert reference.missing_descriptions() == []


def test_what_lacks_a_description_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    from smtrain.api.job import Job
    from smtrain.cli.commands import main

    schema = reference._schema()
    del schema["$defs"]["ComputeSpec"]["properties"]["nodes"]["description"]
    monkeypatch.setattr(reference, "_schema", lambda: schema)

    def to_dict(self):  # noqa: ANN001, ANN202 - a public method without its docstring
        return {}

    monkeypatch.setattr(Job, "to_dict", to_dict)
    bare = click.Command("bare", params=[click.Option(["--plain"])], callback=lambda plain: None)
    main.add_command(bare)
    try:
        missing = reference.missing_descriptions()
    finally:
        main.commands.pop("bare")
    assert missing == ["spec field compute.nodes", "command `smtrain bare`", "option --plain of `smtrain bare`",
                       "API smtrain.Job.to_dict"]


def test_the_reference_pages_name_every_field_command_and_function() -> None:
    import smtrain_tf

    import smtrain
    from smtrain.cli.commands import main
    from smtrain.spec.model import json_schema

    spec_page, cli_page, api_page = reference.spec_page(), reference.cli_page(), reference.api_page()
    compute = json_schema()["$defs"]["ComputeSpec"]["properties"]
    assert [f for f in compute if f"| `compute.{f}` |" not in spec_page] == []
    # a row as the schema gives it: type, default, limits and description (written here, not read from the code)
    assert ("| `compute.nodes` | integer | `1` | number of instances (limits: >= 1; <= 100) |" in spec_page)
    assert "| `inputs.NAME.mode` | `File` \\| `FastFile` \\| `Pipe` |" in spec_page
    ctx = click.Context(main)
    assert [c for c in main.list_commands(ctx) if f"## `smtrain {c}`" not in cli_page] == []
    assert "| `--dry-run` |" in cli_page.split("## `smtrain submit`", 1)[1].split("\n## ", 1)[0]
    assert [n for n in smtrain.__all__ if f"`smtrain.{n}`" not in api_page] == []
    assert [n for n in smtrain_tf.__all__ if f"`smtrain_tf.{n}`" not in api_page] == []
    assert "submit(spec" in api_page  # the signature, read from the function
    assert " at 0x" not in api_page  # no object's address: the page is the same at every build


@pytest.mark.slow
def test_the_site_builds_strict_with_the_generated_reference(tmp_path: Path) -> None:
    built = _build(ROOT, tmp_path / "site")
    assert built.returncode == 0, built.stderr[-3000:]
    spec_html = (tmp_path / "site" / "reference" / "spec" / "index.html").read_text(encoding="utf-8")
    assert "compute.gpus_per_node" in spec_html and "training.batch_size_per_replica" in spec_html
    assert "smtrain submit" in (tmp_path / "site" / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "smtrain_tf.fit" in (tmp_path / "site" / "reference" / "api" / "index.html").read_text(encoding="utf-8")
    # the training program's page is entrypoints/README.md itself, included whole
    assert "Using smtrain_tf from your own script" in (
        tmp_path / "site" / "reference" / "entrypoint" / "index.html").read_text(encoding="utf-8")


@pytest.mark.slow
@pytest.mark.parametrize("breakage", ["a link to a page that is not there", "a page left out of the nav"])
def test_the_strict_build_fails_on(tmp_path: Path, breakage: str) -> None:
    copy = tmp_path / "repo"
    for part in ("docs", "scripts", "entrypoints/README.md", "mkdocs.yml"):
        source, target = ROOT / part, copy / part
        target.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if source.is_dir() else shutil.copy)(source, target)
    if breakage.startswith("a link"):
        with (copy / "docs" / "guides" / "ci.md").open("a", encoding="utf-8") as handle:
            handle.write("\nSee [the old page](no-such-page.md).\n")
        named = "no-such-page.md"
    else:
        (copy / "docs" / "guides" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
        named = "orphan.md"
    built = _build(copy, tmp_path / "site")
    assert built.returncode != 0
    assert named in built.stderr


def _nav_pages(nav: object) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def test_every_page_is_in_the_nav_and_every_nav_page_exists_or_is_generated() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))
    nav = _nav_pages(config["nav"])
    files = sorted(p.relative_to(ROOT / "docs").as_posix() for p in (ROOT / "docs").rglob("*.md"))
    assert sorted(set(nav) - set(reference.PAGES)) == files
    assert set(reference.PAGES) <= set(nav)


def test_the_readme_is_a_front_door_whose_links_lead_into_the_docs() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 150
    links = re.findall(r"\]\(([^)]+)\)", text)
    assert len(links) >= 10
    outside = [link for link in links if not link.startswith("docs/") or not (ROOT / link.split("#")[0]).is_file()]
    assert outside == []
    # the two commands, and what each installs
    assert "make demo" in text and "make test" in text and "apt-get install openmpi-bin" in text
    assert "Horovod" in text and '-m "not slow"' in text


def _variables_in(paths: list[Path]) -> set[str]:
    names = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.fullmatch(r"SMTRAIN_[A-Z0-9_]+", node.value):
                    names.add(node.value)
    return names


def test_the_environment_page_names_every_variable_smtrain_reads_or_sets() -> None:
    code = [*(ROOT / "smtrain").rglob("*.py"), *(ROOT / "entrypoints").glob("*.py"),
            *(ROOT / "entrypoints" / "smtrain_tf").rglob("*.py")]
    names = _variables_in(code)
    assert {"SMTRAIN_HOME", "SMTRAIN_API_TIMEOUT", "SMTRAIN_WRAP_SCRIPT"} <= names  # the scan finds them
    page = (ROOT / "docs" / "reference" / "environment.md").read_text(encoding="utf-8")
    assert sorted(n for n in names if f"`{n}`" not in page) == []


def test_the_hook_warns_for_each_missing_description_so_strict_fails(monkeypatch: pytest.MonkeyPatch,
                                                                        caplog: pytest.LogCaptureFixture) -> None:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

    monkeypatch.setattr(reference, "missing_descriptions", lambda: ["spec field compute.nodes"])
    config = MkDocsConfig()
    config.load_dict({"site_name": "t", "docs_dir": str(ROOT / "docs")})
    config.validate()
    config.plugins._current_plugin = "docs_reference"  # as MkDocs sets it while it runs a hook's event
    with caplog.at_level("WARNING", logger="mkdocs"):
        files = reference.on_files(Files([]), config)
    # a warning on MkDocs' own logger is what `--strict` counts (and `--quiet` would silence: make docs has none)
    assert [(r.name, r.levelname, r.getMessage()) for r in caplog.records] == [
        ("mkdocs.hooks.docs_reference", "WARNING", "no description: spec field compute.nodes")]
    assert sorted(f.src_uri for f in files) == sorted(reference.PAGES)
