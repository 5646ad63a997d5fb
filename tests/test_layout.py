"""The house's shape: imports run one way between the stages, with no cycle, read from the source (ast).

Order, top to bottom (smtrain/__init__.py explains it): cli -> local -> sagemaker -> bundle -> plan
-> spec -> the shared modules directly under smtrain/. A module may import its own package and the
stages below it, never one above. The bundled entrypoint (entrypoints/) never imports smtrain.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT

STAGES = ("shared", "spec", "plan", "bundle", "sagemaker", "local", "cli")
MAX_TOP_LEVEL_MODULES = 7  # besides __init__.py and __main__.py


def module_name(path: Path, package_root: Path) -> str:
    parts = list(path.relative_to(package_root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def stage_of(module: str) -> str:
    """`smtrain.plan.build` -> "plan"; `smtrain.jobs` -> "shared"; `smtrain.__main__` -> "cli"."""
    parts = module.split(".")
    if len(parts) == 1:
        return "shared"
    if parts[1] == "__main__":
        return "cli"
    return parts[1] if parts[1] in STAGES else "shared"


def imported_modules(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """Every smtrain module `path` imports, at any depth (function-level imports count too)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target
            for alias in node.names:  # `from smtrain.plan import launch` imports smtrain.plan.launch
                yield node.lineno, f"{target}.{alias.name}"


def import_graph(package_root: Path) -> dict[str, set[tuple[int, str]]]:
    """module -> {(line, imported module)} for the modules of the package at `package_root`."""
    files = {module_name(p, package_root): p for p in sorted(package_root.rglob("*.py"))}
    graph: dict[str, set[tuple[int, str]]] = {}
    for module, path in files.items():
        edges = set()
        for line, target in imported_modules(path, module):
            # Keep only real modules of the package (drop attribute names such as `...build.Plan`).
            while target and target not in files:
                target = target.rpartition(".")[0]
            if target and target != module and target.split(".")[0] == package_root.name:
                edges.add((line, target))
        graph[module] = edges
    return graph


def backwards_imports(package_root: Path) -> list[str]:
    """Every import that goes from a stage to a stage above it, as `file:line: a -> b`."""
    rank = {stage: i for i, stage in enumerate(STAGES)}
    found = []
    for module, edges in import_graph(package_root).items():
        for line, target in sorted(edges):
            if rank[stage_of(target)] > rank[stage_of(module)]:
                found.append(f"{module.replace('.', '/')}.py:{line}: {module} ({stage_of(module)}) imports "
                             f"{target} ({stage_of(target)})")
    return found


def cycles(package_root: Path) -> list[list[str]]:
    graph = {m: {t for _, t in edges} for m, edges in import_graph(package_root).items()}
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in graph and nxt not in (node.rpartition(".")[0],):  # a module may import its own package
                if state.get(nxt) == 1:
                    found.append(path[path.index(nxt):] + [nxt])
                elif nxt not in state:
                    visit(nxt)
        path.pop()
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node)
    return found


def test_imports_run_one_way_between_stages() -> None:
    assert backwards_imports(ROOT / "smtrain") == []


def test_no_import_cycle() -> None:
    assert cycles(ROOT / "smtrain") == []


def test_every_module_is_in_a_stage_or_shared_and_the_top_stays_small() -> None:
    top = sorted(p.name for p in (ROOT / "smtrain").glob("*.py") if p.name not in ("__init__.py", "__main__.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top
    packages = sorted(p.name for p in (ROOT / "smtrain").iterdir() if (p / "__init__.py").is_file())
    assert packages == sorted(STAGES[1:])


@pytest.mark.parametrize("package", STAGES[1:])
def test_every_package_has_a_map_naming_each_of_its_modules(package: str) -> None:
    init = ROOT / "smtrain" / package / "__init__.py"
    doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8"))) or ""
    modules = sorted(p.name for p in init.parent.glob("*.py") if p.name != "__init__.py")
    assert modules, package
    assert [m for m in modules if m not in doc] == [], f"smtrain/{package}/__init__.py's map misses modules"
    assert "May import" in doc


def test_the_entrypoint_never_imports_smtrain() -> None:
    offenders = [f"{path}:{line}: {target}"
                 for path in sorted((ROOT / "entrypoints").rglob("*.py"))
                 for line, target in imported_modules(path, "entry")
                 if target == "smtrain" or target.startswith("smtrain.")]
    assert offenders == []


# The modules of the bundled package that smtrain may read (plain Python: the batch and learning-rate
# maths, the hyperparameter table, the model names), so that the plan and the program cannot disagree.
TF_FREE_ENTRYPOINT_MODULES = {"smtrain_tf.scaling", "smtrain_tf.contract.hyperparameters", "smtrain_tf.models.names"}


def test_smtrain_takes_only_plain_python_tables_from_the_bundled_package() -> None:
    # Anything else of smtrain_tf may import TensorFlow, which validate and plan must never load.
    entry_modules = {module_name(p, ROOT / "entrypoints" / "smtrain_tf") for p in
                     (ROOT / "entrypoints" / "smtrain_tf").rglob("*.py")}
    modules = set()
    for path in sorted((ROOT / "smtrain").rglob("*.py")):
        for _, target in imported_modules(path, module_name(path, ROOT / "smtrain")):
            while target.startswith("smtrain_tf") and target not in entry_modules:
                target = target.rpartition(".")[0]  # `smtrain_tf.scaling.global_batch_size` -> its module
            if target:
                modules.add(target)
    modules = {m for m in modules if m.split(".")[0] == "smtrain_tf" and m != "smtrain_tf"}
    assert modules and modules <= TF_FREE_ENTRYPOINT_MODULES, modules


def _tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_the_check_catches_a_backwards_import_and_a_cycle(tmp_path: Path) -> None:
    # The checker itself, on a small tree: it must flag what the real tree must not contain.
    pkg = _tree(tmp_path, {
        "smtrain/__init__.py": "", "smtrain/jobs.py": "",
        "smtrain/spec/__init__.py": "", "smtrain/spec/model.py": "from smtrain.plan import build\n",
        "smtrain/plan/__init__.py": "", "smtrain/plan/build.py": "def f():\n    from smtrain.spec.model import x\n",
        "smtrain/cli/__init__.py": "", "smtrain/cli/commands.py": "from smtrain.plan.build import Plan\n",
    }) / "smtrain"
    assert backwards_imports(pkg) == [
        "smtrain/spec/model.py:1: smtrain.spec.model (spec) imports smtrain.plan (plan)",
        "smtrain/spec/model.py:1: smtrain.spec.model (spec) imports smtrain.plan.build (plan)"]
    assert cycles(pkg) == [["smtrain.plan.build", "smtrain.spec.model", "smtrain.plan.build"]]
