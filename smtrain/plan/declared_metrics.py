"""The metrics a job's model reports beyond loss and accuracy, for its MetricDefinitions.

The metric line carries every metric the model is compiled with (`mae=0.41 val_mae=0.44`), and
SageMaker reads only the names its MetricDefinitions list, fixed when the job is created. So the
names are found before: the spec's `metrics:`, plus those the code states literally, read with ast
(never run) from the file that compiles the model (a model hook's module for the bundled entrypoint,
the entry point for an own script):

- `.compile(..., metrics=[...])` and a hook's returned `{"metrics": [...]}`;
- a string is the name as written (`"mae"`); a Keras metric class call is its `name=` or Keras's
  default name for the class (`RootMeanSquaredError()` -> root_mean_squared_error); a function
  passed by name is that name;
- `{"output": [...]}` (a model with several outputs) names them `<output>_<metric>`.

Metrics built at run time (a variable, a comprehension) cannot be seen here: `metrics:` names them.

Those definitions read smtrain's metric line only: a hand-written script that neither trains through
smtrain_tf nor prints `name=value` itself reports none of them (prints_metric_lines), and the plan says so.
"""

from __future__ import annotations

import ast
import functools
import importlib.resources
import json
import re
from collections.abc import Sequence
from pathlib import Path

from smtrain_tf.models.names import is_hook

from smtrain.plan import program
from smtrain.spec.model import Spec
from smtrain.spec.notebook import read_code
from smtrain.spec.python_file import parse_python, walk

# Always in the definitions (smtrain_tf/metric_definitions.json), so never added twice.
BUILT_IN = ("loss", "accuracy")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def keras_default_name(class_name: str) -> str:
    """Keras's name for a metric object created without `name=` (its snake_case of the class name)."""
    words = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", class_name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", words).lower()


def _metric_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Call):
        for keyword in node.keywords:
            if keyword.arg == "name" and isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str):
                return keyword.value.value
        function = node.func
        class_name = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", None)
        return keras_default_name(class_name) if class_name else None
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _names_in(value: ast.expr) -> list[str]:
    """The metric names of a `metrics=` value: a list or tuple, or a dict by output."""
    if isinstance(value, (ast.List, ast.Tuple)):
        return [n for n in (_metric_name(e) for e in value.elts) if n]
    if isinstance(value, ast.Dict):
        found = []
        for key, item in zip(value.keys, value.values):  # noqa: B905 - same length by construction
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                items = item.elts if isinstance(item, (ast.List, ast.Tuple)) else [item]
                found += [f"{key.value}_{n}" for n in (_metric_name(e) for e in items) if n]
        return found
    name = _metric_name(value)
    return [name] if name and isinstance(value, (ast.Constant, ast.Call)) else []


def names_in_source(text: str) -> list[str]:
    """Every metric name the code states literally, in order of appearance, each once."""
    tree = parse_python(text.encode("utf-8", "surrogateescape"), "<code>").tree
    return _names_in_tree(tree) if tree is not None else []  # validate and the preflight scan report it


def _names_in_tree(tree: ast.Module) -> list[str]:
    found: list[str] = []
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "compile":
            for keyword in node.keywords:
                if keyword.arg == "metrics":
                    found += _names_in(keyword.value)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):  # noqa: B905 - same length by construction
                if isinstance(key, ast.Constant) and key.value == "metrics":
                    found += _names_in(value)
    return list(dict.fromkeys(n for n in found if _NAME.fullmatch(n)))


def _compiling_file(spec: Spec, base_dir: Path) -> Path | None:
    """The file that compiles the model: the model hook's module, or the own script."""
    if spec.code.source_dir is None:
        return None
    root = base_dir / spec.code.source_dir
    if program.kind(spec) != program.BUNDLED:
        return root / (spec.code.entry_point or "")
    if not is_hook(spec.training.model):
        return None
    module = spec.training.model.split(":")[0]
    base = root.joinpath(*module.split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _tree(path: Path) -> ast.Module | None:
    """The file's tree; None where it cannot be read (too large, too deep, not Python: the preflight scan
    and the hook check say so)."""
    try:
        return read_code(path).tree  # a notebook: the script made from it
    except OSError:
        return None


# A metric line as the MetricDefinitions read it: ` loss=0.23` (smtrain_tf's epoch line), never Keras's
# progress bar (`loss: 0.2300`).
_METRIC_TEXT = re.compile(r"(?:^|\s)(?:val_)?(?:loss|accuracy)=")


def prints_metric_lines(spec: Spec, base_dir: Path) -> bool:
    """Whether the job's output has lines the MetricDefinitions read (`epoch=1 step=50 loss=0.23 ...`):
    the bundled entrypoint's and the wrap's always; a hand-written script's only through smtrain_tf.fit, or
    where its own code prints `name=value` metric text. A script read as unknown counts as printing them."""
    if program.kind(spec) != program.OWN:
        return True
    path = _compiling_file(spec, base_dir)
    if path is None or not path.is_file():
        return True
    tree = _tree(path)
    if tree is None:
        return True  # validate and the preflight scan report it
    for node in walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            modules = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            if any(m.split(".")[0] == "smtrain_tf" for m in modules):
                return True
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _METRIC_TEXT.search(node.value):
            return True
    return False


def declared(spec: Spec, base_dir: Path) -> tuple[str, ...]:
    """The spec's `metrics:` and the code's literal ones, without loss and accuracy, each once."""
    found = list(spec.metrics)
    path = _compiling_file(spec, base_dir)
    tree = _tree(path) if path is not None and path.is_file() else None
    if tree is not None:
        found += _names_in_tree(tree)
    return tuple(dict.fromkeys(n for n in found if n not in BUILT_IN))


@functools.lru_cache(maxsize=1)
def _shipped_definitions() -> tuple[dict[str, str], ...]:
    text = importlib.resources.files("smtrain_tf").joinpath("metric_definitions.json").read_text(encoding="utf-8")
    return tuple(json.loads(text))


def metric_definitions(declared: Sequence[str] = ()) -> tuple[dict[str, str], ...]:
    """The MetricDefinitions of a job: those of every job (smtrain_tf ships them as JSON), then a train and
    a validation definition for each metric the model declares.

    The bundled entrypoint, smtrain_tf.fit and a wrapped script's fit print the lines they read; a
    script that prints none of them costs nothing, as its job simply has no metrics. Each name is
    matched after a space, so ` mae=` never matches inside `val_mae=`.
    """
    extra = []
    for name in declared:
        extra += [{"Name": f"train:{name}", "Regex": f" {name}=([0-9.eE+-]+)"},
                  {"Name": f"validation:{name}", "Regex": f" val_{name}=([0-9.eE+-]+)"}]
    return _shipped_definitions() + tuple(extra)
