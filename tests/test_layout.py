"""The house's shape beyond its import rules.

The import rules (the stages, top to bottom, cli -> api -> (sagemaker | local) -> render -> bundle -> preflight ->
plan -> spec -> the shared modules; the bundled package smtrain_tf's layers; no cycle; the entrypoint never
importing smtrain; smtrain reading only smtrain_tf's plain tables) are import-linter's contracts in
pyproject.toml, which `make lint` runs; the tests here run them too and prove that they break when an import
runs against them. What import-linter cannot say stays here: at most 6 top-level modules, every package's map,
one CLI module per command group, no module handing itself to another, and the two programs beside smtrain_tf
(modules, which import-linter takes as no root).
"""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT

STAGES = ("spec", "plan", "preflight", "bundle", "render", "sagemaker", "local", "api", "cli")
MAX_TOP_LEVEL_MODULES = 6  # besides __init__.py and __main__.py (the house's rule)
# Shared modules grouped by what they share (below every stage): secret masking and its index.
SHARED_PACKAGES = ("redact",)
ENTRY_ROOT = ROOT / "entrypoints" / "smtrain_tf"


def _contracts() -> dict[str, dict]:
    from importlinter.api import read_configuration

    return {contract["id"]: contract for contract in read_configuration(str(ROOT / "pyproject.toml"))["contracts_options"]}


def lint_imports(smtrain: Path, smtrain_tf: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's run of pyproject.toml's contracts over these two package trees (copies, in a test)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sorted({str(smtrain.parent), str(smtrain_tf.parent)}))}
    script = ("import sys; sys.path[:0] = sys.argv[2].split(__import__('os').pathsep); "
              "from importlinter.cli import lint_imports_command; "
              "sys.argv = ['lint-imports', '--no-cache', '--no-logo', sys.argv[1]]; lint_imports_command()")
    return subprocess.run([sys.executable, "-c", script, str(ROOT / "pyproject.toml"), env["PYTHONPATH"]],
                          env=env, cwd=smtrain.parent, capture_output=True, text=True, timeout=120)


def _copy_packages(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "smtrain", tmp_path / "smtrain", ignore=shutil.ignore_patterns("__pycache__", "examples"))
    shutil.copytree(ENTRY_ROOT, tmp_path / "smtrain_tf", ignore=shutil.ignore_patterns("__pycache__"))


def test_the_import_contracts_hold() -> None:
    said = lint_imports(ROOT / "smtrain", ENTRY_ROOT)
    assert said.returncode == 0, said.stdout + said.stderr
    assert f"Contracts: {len(_contracts())} kept, 0 broken." in said.stdout


@pytest.mark.parametrize(("where", "line", "broken"), [
    # a stage importing one above it
    ("smtrain/spec/problems.py", "def _up():\n    from smtrain.plan import build\n", "smtrain's stages"),
    # a backend importing its sibling
    ("smtrain/local/request.py", "def _across():\n    from smtrain.sagemaker import submit\n", "smtrain's stages"),
    # a stage reaching the api through the library's face
    ("smtrain/plan/program.py", "def _face():\n    import smtrain\n", "the package smtrain itself"),
    # the bundled package importing smtrain, which the job's bundle does not carry
    ("smtrain_tf/scaling.py", "def _home():\n    import smtrain.errors\n", "never imports smtrain"),
    # smtrain taking a module of smtrain_tf that may import TensorFlow
    ("smtrain/plan/program.py", "def _tf():\n    from smtrain_tf.training import loop\n", "plain Python tables"),
    # an upward import between smtrain_tf's layers, and one into its face
    ("smtrain_tf/keras_support/several_steps.py", "def _up():\n    from ..wrap import patches\n", "smtrain_tf's layers"),
    ("smtrain_tf/training/loop.py", "def _face():\n    from .. import fit\n", "face"),
], ids=["stage-up", "backend-sibling", "smtrain-face", "entry-smtrain", "tf-module", "entry-layer-up", "entry-face"])
def test_an_import_against_the_contracts_breaks_one(tmp_path: Path, where: str, line: str, broken: str) -> None:
    _copy_packages(tmp_path)
    with open(tmp_path / where, "a", encoding="utf-8") as handle:
        handle.write("\n\n" + line)
    said = lint_imports(tmp_path / "smtrain", tmp_path / "smtrain_tf")
    assert said.returncode == 1, said.stdout + said.stderr
    broken_names = [name for name in (c["name"] for c in _contracts().values()) if f"{name} BROKEN" in
                    " ".join(said.stdout.split())]
    # An upward import within smtrain also closes a cycle (the stage above imports the one below): both break.
    assert [name for name in broken_names if broken in name] and len(broken_names) <= 2, said.stdout


def test_a_cycle_breaks_the_acyclic_contract(tmp_path: Path) -> None:
    _copy_packages(tmp_path)
    # Two modules of one stage importing each other: no layer is crossed, only the cycle is wrong.
    for where, other in (("smtrain/spec/problems.py", "notebook"), ("smtrain/spec/notebook.py", "problems")):
        with open(tmp_path / where, "a", encoding="utf-8") as handle:
            handle.write(f"\n\ndef _round():\n    from smtrain.spec import {other}\n")
    said = lint_imports(tmp_path / "smtrain", tmp_path / "smtrain_tf")
    assert said.returncode == 1, said.stdout
    assert "no import cycle between smtrain's modules, nor between smtrain_tf's BROKEN" in said.stdout
    assert said.stdout.count(" BROKEN") == 1, said.stdout


def test_every_module_is_in_a_stage_or_shared_and_the_top_stays_small() -> None:
    top = sorted(p.name for p in (ROOT / "smtrain").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
    packages = sorted(p.name for p in (ROOT / "smtrain").iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(STAGES + SHARED_PACKAGES)


@pytest.mark.parametrize("package", STAGES + SHARED_PACKAGES)
def test_every_package_has_a_map_naming_each_of_its_modules(package: str) -> None:
    init = ROOT / "smtrain" / package / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    modules = sorted(p.name for p in init.parent.glob("*.py") if p.name != "__init__.py")
    assert modules, package
    assert [m for m in modules if m not in doc] == [], f"smtrain/{package}/__init__.py's map misses modules"
    assert "May import" in doc


def _click_commands(path: Path) -> list[str]:
    """The functions of `path` that a click decorator (`@click.command`, `@click.group`, `@main.command`) makes
    a command."""
    def is_command(decorator: ast.expr) -> bool:
        target = decorator.func if isinstance(decorator, ast.Call) else decorator
        return isinstance(target, ast.Attribute) and target.attr in ("command", "group")

    return [node.name for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(node, ast.FunctionDef) and any(is_command(d) for d in node.decorator_list)]


def test_the_cli_has_one_module_per_command_group() -> None:
    # commands.py is the group itself (and `completion`, which prints the group's script); every other command
    # lives in a module named for its group, so a reader finds `submit` in submit_command.py.
    found = {path.name: _click_commands(path) for path in sorted((ROOT / "smtrain" / "cli").glob("*.py"))}
    assert found.pop("commands.py") == ["main", "completion"]
    misplaced = {name: commands for name, commands in found.items()
                 if commands and not name.endswith(("_command.py", "_commands.py"))}
    assert misplaced == {}
    assert sum(len(commands) for commands in found.values()) >= 15  # every command is somewhere


def _sets_own_class(node: ast.Subscript, path: Path) -> bool:
    """`sys.modules[__name__].__class__ = ...` (smtrain/__init__.py's module type) hands the module to no one."""
    return any(isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "__class__"
                                                  and t.lineno == node.lineno
                                                  and ast.unparse(t.value) == "sys.modules[__name__]" for t in n.targets)
               for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))))


def test_no_module_hands_itself_to_another() -> None:
    # `f(sys.modules[__name__])` lets f's module call this one's functions with no import the checks above
    # can see (how `tune` once reached the commands module's private steps).
    offenders = [f"{path.relative_to(ROOT)}:{node.lineno}" for path in sorted((ROOT / "smtrain").rglob("*.py"))
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 if isinstance(node, ast.Subscript) and ast.unparse(node) == "sys.modules[__name__]"
                 and not _sets_own_class(node, path)]
    assert offenders == []


def test_the_two_programs_beside_the_bundled_package_never_import_smtrain() -> None:
    # smtrain_entry.py and smtrain_wrap.py ship in the job's bundle with smtrain_tf (whose contract says the same
    # of it); smtrain is not there. Every import at any depth, as ast reads it.
    offenders = [f"entrypoints/{path.name}:{node.lineno}" for path in sorted((ROOT / "entrypoints").glob("*.py"))
                 for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                 for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else
                              [node.module or ""] if isinstance(node, ast.ImportFrom) and not node.level else [])
                 if name.split(".")[0] == "smtrain"]
    assert sorted(p.name for p in (ROOT / "entrypoints").glob("*.py")) == ["smtrain_entry.py", "smtrain_wrap.py"]
    assert offenders == []


def _entry_subpackages() -> list[str]:
    return sorted(p.name for p in ENTRY_ROOT.iterdir() if (p / "__init__.py").is_file())


def _docstring(init: Path) -> str:
    return ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""


@pytest.mark.parametrize("package", _entry_subpackages())
def test_every_subpackage_of_the_bundled_package_has_a_map_naming_each_of_its_modules(package: str) -> None:
    init = ENTRY_ROOT / package / "__init__.py"
    modules = sorted(p.name for p in init.parent.glob("*.py") if p.name != "__init__.py")
    assert modules, package
    missing = [m for m in modules if m not in _docstring(init)]
    assert missing == [], f"entrypoints/smtrain_tf/{package}/__init__.py's docstring misses {missing}"


def test_the_bundled_package_map_names_every_part_and_the_layer_order() -> None:
    doc = _docstring(ENTRY_ROOT / "__init__.py")
    parts = [f"{p}/" for p in _entry_subpackages()] + [p.name for p in ENTRY_ROOT.glob("*.py") if p.stem != "__init__"]
    assert [p for p in parts if p not in doc] == [], "entrypoints/smtrain_tf/__init__.py's map misses these"
    layers = tuple(tuple(row.split(" | ")) for row in _contracts()["smtrain-tf-layers"]["layers"])
    rows = [" | ".join(units) for units in layers]
    listed = [line.strip() for line in doc.partition("Layers, top to bottom")[2].splitlines()]
    assert [line for line in listed if line in rows] == rows
    # entrypoints/README.md gives the same order, as `__init__.py` -> `wrap/` -> `_main.py` | `_api.py` -> ...
    chain = " -> ".join(" | ".join(f"`{u}/`" if (ENTRY_ROOT / u).is_dir() else f"`{u}.py`" for u in units)
                        for units in (("__init__",), *layers))
    assert chain in " ".join((ROOT / "entrypoints" / "README.md").read_text(encoding="utf-8").split())
