"""The house's shape: imports run one way between the stages, with no cycle, read from the source (ast).

Order, top to bottom (smtrain/__init__.py explains it): cli -> api -> (sagemaker | local) -> render -> bundle ->
preflight -> plan -> spec -> the shared modules directly under smtrain/. A module may import its own package
and the stages below it, never one above, and never a sibling: the two backends (sagemaker, local) both take
the rendered request and know nothing of each other. The bundled entrypoint (entrypoints/) never imports
smtrain, and its package smtrain_tf has layers of its own, which run one way too (ENTRY_LAYERS below,
explained in entrypoints/smtrain_tf/__init__.py).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import ROOT

STAGES = ("shared", "spec", "plan", "preflight", "bundle", "render", "sagemaker", "local", "api", "cli")
# Stages of one rank are siblings: neither may import the other.
RANK = {"shared": 0, "spec": 1, "plan": 2, "preflight": 3, "bundle": 4, "render": 5, "sagemaker": 6, "local": 6,
        "api": 7, "cli": 8}
MAX_TOP_LEVEL_MODULES = 6  # besides __init__.py and __main__.py (the house's rule)
# Shared modules grouped by what they share (stage "shared", below every stage): secret masking and its index.
SHARED_PACKAGES = ("redact",)


def module_name(path: Path, package_root: Path) -> str:
    parts = list(path.relative_to(package_root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def stage_of(module: str) -> str:
    """`smtrain.plan.build` -> "plan"; `smtrain.jobs` -> "shared"; `smtrain.__main__` -> "cli"; `smtrain` itself
    -> "api" (its names are the library's, imported lazily from smtrain.api)."""
    parts = module.split(".")
    if len(parts) == 1:
        return "api"
    if parts[1] == "__main__":
        return "cli"
    return parts[1] if parts[1] in STAGES else "shared"


def import_statements(path: Path, module: str) -> Iterator[tuple[int, str, list[str]]]:
    """(line, module named, names taken from it) for every import in `path` (module `module`), at any depth
    (function-level imports count too); relative imports resolved. `import a.b` takes no names."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against this module's package
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            yield node.lineno, target, [alias.name for alias in node.names]


def imported_modules(path: Path, module: str) -> Iterator[tuple[int, str]]:
    """Every module `path` may import: each one named, and each name taken from one as a submodule."""
    for line, target, names in import_statements(path, module):
        yield line, target
        for name in names:  # `from smtrain.plan import launch` imports smtrain.plan.launch
            yield line, f"{target}.{name}"


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
            # `from smtrain import jobs` names the package only to reach smtrain.jobs (kept above): the bare
            # package is no edge, or every stage would seem to import the library's face.
            if target and target not in (module, package_root.name) and target.split(".")[0] == package_root.name:
                edges.add((line, target))
        graph[module] = edges
    return graph


def backwards_imports(package_root: Path) -> list[str]:
    """Every import that goes from a stage to one above it or to a sibling, as `file:line: a -> b`."""
    found = []
    for module, edges in import_graph(package_root).items():
        for line, target in sorted(edges):
            source_stage, target_stage = stage_of(module), stage_of(target)
            if RANK[target_stage] > RANK[source_stage] or (
                    RANK[target_stage] == RANK[source_stage] and target_stage != source_stage):
                found.append(f"{module.replace('.', '/')}.py:{line}: {module} ({stage_of(module)}) imports "
                             f"{target} ({stage_of(target)})")
    return found


def cycles(package_root: Path) -> list[list[str]]:
    # A module may import its own package.
    return find_cycles({m: {t for _, t in edges if t != m.rpartition(".")[0]}
                        for m, edges in import_graph(package_root).items()})


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Each cycle of `graph` (node -> the nodes it imports) found by a depth-first walk, as a closed path."""
    found: list[list[str]] = []
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt in graph:
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
    assert packages == sorted(STAGES[1:] + SHARED_PACKAGES)


@pytest.mark.parametrize("package", STAGES[1:] + SHARED_PACKAGES)
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


def test_only_the_entry_imports_the_cli() -> None:
    # The command line is the top of the house: a stage that reached into it would pull click and the
    # commands into library code (and the backwards-import check counts smtrain.__main__ as cli).
    offenders = [f"{module}:{line}: {target}" for module, edges in import_graph(ROOT / "smtrain").items()
                 if stage_of(module) != "cli" or module == "smtrain.__main__"
                 for line, target in sorted(edges) if stage_of(target) == "cli"
                 and (module, target) != ("smtrain.__main__", "smtrain.cli.commands")]
    assert offenders == []


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


# The bundled package's layers, top to bottom (entrypoints/smtrain_tf/__init__.py explains them). A unit is a
# subpackage or a module directly under smtrain_tf ("__init__": the package itself, the public face); the units
# of one row are siblings, neither of which may import the other.
ENTRY_ROOT = ROOT / "entrypoints" / "smtrain_tf"
ENTRY_LAYERS = (("__init__",), ("wrap",), ("_main", "_api"), ("training",), ("data", "models", "export"), ("check",),
                ("keras_support",), ("distribute",), ("contract",), ("scaling",))
ENTRY_RANK = {unit: len(ENTRY_LAYERS) - row for row, units in enumerate(ENTRY_LAYERS) for unit in units}


def test_the_entrypoint_never_imports_smtrain() -> None:
    # Only entrypoints/ is shipped in the job's source bundle: smtrain is not there.
    offenders = [f"{path.relative_to(ROOT)}:{line}: imports {target}"
                 for path in sorted((ROOT / "entrypoints").rglob("*.py"))
                 for line, target in imported_modules(path, module_name(path, ENTRY_ROOT) if ENTRY_ROOT in path.parents
                                                      else path.stem)
                 if target == "smtrain" or target.startswith("smtrain.")]
    assert not offenders, "\n".join(offenders)


def entry_unit(module: str) -> str:
    """`smtrain_tf.training.loop` -> "training"; `smtrain_tf._api` -> "_api"; `smtrain_tf` -> "__init__"."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def entry_imports(package_root: Path) -> list[tuple[str, int, str, str]]:
    """(file, line, module, module of the package it imports) for every import between two modules of the package.

    A name taken from a module that is not a submodule is an import of that module, so `from .. import fit`
    (the face's lazy fit) counts as an import of the package's __init__."""
    files = {module_name(p, package_root): p for p in sorted(package_root.rglob("*.py"))}
    found = set()
    for module, path in files.items():
        shown = path.relative_to(package_root.parent).as_posix()
        for line, target, names in import_statements(path, module):
            for wanted in [f"{target}.{name}" for name in names] or [target]:
                while wanted and wanted not in files:
                    wanted = wanted.rpartition(".")[0]
                if wanted and wanted != module:
                    found.add((shown, line, module, wanted))
    return sorted(found)


def entry_backwards_imports(package_root: Path) -> list[str]:
    """Every import from a unit to one above it or to a sibling, as `file:line: a (unit) imports b (unit)`."""
    return [f"{shown}:{line}: {module} ({entry_unit(module)}) imports {target} ({entry_unit(target)})"
            for shown, line, module, target in entry_imports(package_root)
            if entry_unit(module) != entry_unit(target)
            and ENTRY_RANK.get(entry_unit(target), 0) >= ENTRY_RANK.get(entry_unit(module), 0)]


def entry_unit_cycles(package_root: Path) -> list[list[str]]:
    graph: dict[str, set[str]] = {}
    for _, _, module, target in entry_imports(package_root):
        graph.setdefault(entry_unit(module), set())
        if entry_unit(target) != entry_unit(module):
            graph[entry_unit(module)].add(entry_unit(target))
    return find_cycles(graph)


def _entry_subpackages() -> list[str]:
    return sorted(p.name for p in ENTRY_ROOT.iterdir() if (p / "__init__.py").is_file())


def test_the_bundled_package_imports_run_one_way_between_its_layers() -> None:
    found = entry_backwards_imports(ENTRY_ROOT)
    assert not found, "imports against the layer order (ENTRY_LAYERS):\n" + "\n".join(found)


def test_the_bundled_package_has_no_import_cycle() -> None:
    for found in (entry_unit_cycles(ENTRY_ROOT), cycles(ENTRY_ROOT)):  # between its subpackages, its modules
        assert not found, "import cycles:\n" + "\n".join(" -> ".join(cycle) for cycle in found)


def test_every_part_of_the_bundled_package_has_a_layer() -> None:
    # A new subpackage or top-level module must be placed in ENTRY_LAYERS (and in the package's map).
    units = {p.stem for p in ENTRY_ROOT.glob("*.py")} | set(_entry_subpackages())
    assert units == set(ENTRY_RANK)


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
    rows = [" | ".join(units) for units in ENTRY_LAYERS[1:]]
    listed = [line.strip() for line in doc.partition("Layers, top to bottom")[2].splitlines()]
    assert [line for line in listed if line in rows] == rows
    # entrypoints/README.md gives the same order, as `__init__.py` -> `wrap/` -> `_main.py` | `_api.py` -> ...
    chain = " -> ".join(" | ".join(f"`{u}/`" if (ENTRY_ROOT / u).is_dir() else f"`{u}.py`" for u in units)
                        for units in ENTRY_LAYERS)
    assert chain in " ".join((ROOT / "entrypoints" / "README.md").read_text(encoding="utf-8").split())


# The modules of the bundled package that smtrain may read (plain Python: the batch and learning-rate
# maths, the hyperparameter table, the model names), so that the plan and the program cannot disagree.
TF_FREE_ENTRYPOINT_MODULES = {"smtrain_tf.scaling", "smtrain_tf.contract.hyperparameters", "smtrain_tf.models.names",
                              "smtrain_tf.check.settings"}


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


def test_the_check_catches_a_backend_importing_its_sibling(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {
        "smtrain/__init__.py": "", "smtrain/local/__init__.py": "", "smtrain/sagemaker/__init__.py": "",
        "smtrain/local/request.py": "def f():\n    from smtrain.sagemaker import submit\n",
        "smtrain/sagemaker/submit.py": "",
    }) / "smtrain"
    assert backwards_imports(pkg) == [
        "smtrain/local/request.py:2: smtrain.local.request (local) imports smtrain.sagemaker (sagemaker)",
        "smtrain/local/request.py:2: smtrain.local.request (local) imports smtrain.sagemaker.submit (sagemaker)"]


def test_the_bundled_package_check_catches_upward_sibling_and_face_imports_and_a_cycle(tmp_path: Path) -> None:
    # The checker itself, on a small tree: function-level, relative and absolute imports all count.
    pkg = _tree(tmp_path, {
        "smtrain_tf/__init__.py": "", "smtrain_tf/_api.py": "def fit():\n    pass\n",
        "smtrain_tf/models/__init__.py": "", "smtrain_tf/models/builders.py": "from ..training.steps import step\n",
        "smtrain_tf/data/__init__.py": "",
        "smtrain_tf/data/pipeline.py": "def f():\n    from smtrain_tf.models import builders\n",
        "smtrain_tf/training/__init__.py": "", "smtrain_tf/training/steps.py": "from ..models.builders import build\n",
        "smtrain_tf/wrap/__init__.py": "", "smtrain_tf/wrap/check_rest.py": "def f():\n    from .. import fit\n",
    }) / "smtrain_tf"
    assert entry_backwards_imports(pkg) == [
        "smtrain_tf/data/pipeline.py:2: smtrain_tf.data.pipeline (data) imports smtrain_tf.models.builders (models)",
        "smtrain_tf/models/builders.py:1: smtrain_tf.models.builders (models) imports smtrain_tf.training.steps "
        "(training)",
        "smtrain_tf/wrap/check_rest.py:2: smtrain_tf.wrap.check_rest (wrap) imports smtrain_tf (__init__)"]
    assert entry_unit_cycles(pkg) == [["models", "training", "models"]]
