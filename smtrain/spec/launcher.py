"""An SDK v2 launcher read without running it: the `TensorFlow(...)` (or `Estimator(...)`) call, the values it is
given and its `.fit(...)`, for `smtrain import`.

A value is known when the launcher writes it: a literal, a name bound once before the call to something known,
an f-string or `+` of known parts, a dict or list of them, `TrainingInput(...)`, an argparse option's literal
default (`args.instance_type`). Anything else (`sess.default_bucket()`, `get_execution_role()`, `os.environ[...]`)
is an Unknown that says what it is, so the import names it with its line instead of guessing.
"""

from __future__ import annotations

import ast
import operator
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smtrain.spec.notebook import NotebookError, code_cells, is_notebook
from smtrain.spec.python_file import parents_of, parse_python, read_python, walk
from smtrain.spec.script_args import MISSING, script_args

__all__ = ["ESTIMATORS", "Arg", "Launcher", "LauncherError", "SdkObject", "Templated", "Unknown", "read_launcher"]

ESTIMATORS = ("TensorFlow", "Estimator")
# SDK classes whose arguments the import reads as it reads the estimator's, with their parameters in order (SDK
# v2's sagemaker/inputs.py and sagemaker/debugger/debugger.py), for arguments given by position.
SDK_OBJECTS = {
    "TrainingInput": ("s3_data", "distribution", "compression", "content_type", "record_wrapping", "s3_data_type",
                      "instance_groups", "input_mode", "attribute_names", "target_attribute_name", "shuffle_config"),
    "FileSystemInput": ("file_system_id", "file_system_type", "directory_path", "file_system_access_mode",
                        "content_type"),
    "TensorBoardOutputConfig": ("s3_output_path", "container_local_output_path"),
    "InstanceGroup": ("instance_group_name", "instance_type", "instance_count"),
}
_MAX_DEPTH = 20  # names that lead to names: a chain this long is a loop or generated code
_BINARY: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv, ast.Pow: operator.pow}
# Values the SDK looks up when the launcher runs: why, and the environment variable the spec reads instead.
_RUN_TIME = {
    "get_execution_role": ("the notebook's or instance's role, looked up when the launcher runs", "SMTRAIN_ROLE"),
    "default_bucket": ("the session's default bucket (sagemaker-REGION-ACCOUNT), looked up when the launcher runs",
                       "SMTRAIN_BUCKET"),
    "boto_region_name": ("the session's region, looked up when the launcher runs", None),
}


class LauncherError(ValueError):
    """The launcher cannot be read, or has no estimator to import (the message names the file)."""


@dataclass(frozen=True)
class Unknown:
    """A value the launcher computes when it runs: its text as written and why it is not known here."""

    text: str
    why: str
    variable: str | None = None  # the environment variable the spec reads in its place, if it has one

    def __str__(self) -> str:
        return f"{self.text}: {self.why}"


class Templated(str):
    """Text with ${VAR} where the launcher has a run-time value that has a variable (the default bucket, the role)."""

    variables: tuple[str, ...] = ()
    uploads: str | None = None  # sess.upload_data(PATH): the local path the launcher uploads here when it runs

    def __new__(cls, text: str, variables: tuple[str, ...], uploads: str | None = None) -> Templated:
        made = super().__new__(cls, text)
        made.variables = variables
        made.uploads = uploads
        return made


def _text_of(value: Any) -> tuple[str, tuple[str, ...]] | None:
    """A part of a text as written in the spec, and the variables it reads; None when it has no text."""
    if isinstance(value, Unknown):
        return (f"${{{value.variable}}}", (value.variable,)) if value.variable else None
    if isinstance(value, Templated):
        return str(value), value.variables
    return str(value), ()


@dataclass(frozen=True)
class SdkObject:
    """`TrainingInput(...)` and its kind: the keyword arguments it is given, resolved."""

    kind: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Arg:
    """One argument: its value (or an Unknown) and where it is written (a script line)."""

    value: Any
    line: int
    source: str = ""  # how the value was found when not written in place ("--epochs's default")


@dataclass(frozen=True)
class Launcher:
    kind: str  # "TensorFlow" or "Estimator"
    line: int
    arguments: dict[str, Arg]
    inputs: Arg | None  # fit()'s first argument (or inputs=)
    job_name: Arg | None  # fit(job_name=...)
    where: Callable[[int], str]  # "launch.py:12", or "launch.ipynb, cell 3, line 2"
    notes: tuple[tuple[int, str], ...] = field(default=())  # (line, what was seen and not imported)


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _shown(node: ast.AST, limit: int = 60) -> str:
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _is_main_check(node: ast.If) -> bool:
    """`if __name__ == "__main__":`, which a launcher run as a script always enters."""
    test = node.test
    return (isinstance(test, ast.Compare) and isinstance(test.left, ast.Name) and test.left.id == "__name__"
            and len(test.comparators) == 1 and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value == "__main__")


# Blocks whose statements may or may not run, or run more than once: a name bound there has no one value.
_CONDITIONAL = (ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.match_case)


def _condition(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> str | None:
    """Why a statement may not run as written (an if, a loop, an except), up to its function or module."""
    child, parent = node, parents.get(node)
    while parent is not None and not isinstance(parent, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef)):
        if isinstance(parent, ast.If) and not _is_main_check(parent) and child is not parent.test:
            return f"set under the if at line {parent.lineno}: which value it has depends on the run"
        if isinstance(parent, _CONDITIONAL):
            return f"set inside the block at line {parent.lineno} (a loop or a handler): code that runs decides it"
        child, parent = parent, parents.get(parent)
    return None


class _Values:
    """Resolves expressions to values from the names the file binds before them."""

    def __init__(self, tree: ast.Module, base: Path | None = None) -> None:
        self.base = base  # the launcher's directory: where the paths it names are
        # name -> [(line, the value's expression, or None with why it has no one value)]
        self.bound: dict[str, list[tuple[int, ast.expr | None, str]]] = {}
        parents = parents_of(tree)

        def bind(name: str, at: ast.stmt | ast.expr, value: ast.expr | None, why: str) -> None:
            condition = _condition(at, parents) if value is not None else None
            self.bound.setdefault(name, []).append((at.lineno, None if condition else value, condition or why))

        computed = "by code that runs (a loop, an unpacking, a parameter, a with)"
        for node in walk(tree):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        # Several targets or unpacking (`a, b = ...`) bind computed parts: unknown.
                        bind(target.id, node, node.value if len(node.targets) == 1 else None, computed)
                    else:
                        for inner in walk(target):
                            if isinstance(inner, ast.Name):
                                bind(inner.id, node, None, computed)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.value is not None:
                bind(node.target.id, node, node.value, computed)
            elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
                for inner in walk(node.target):
                    if isinstance(inner, ast.Name) and isinstance(inner.ctx, ast.Store):
                        bind(inner.id, node, None, computed)
            elif isinstance(node, (ast.With, ast.AsyncWith)):
                for item in node.items:
                    for inner in walk(item.optional_vars) if item.optional_vars is not None else ():
                        if isinstance(inner, ast.Name):
                            bind(inner.id, node, None, computed)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for arg in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
                    bind(arg.arg, node, None, computed)
        for entries in self.bound.values():
            entries.sort(key=lambda e: e[0])
        self.args = script_args(tree)

    def _binding(self, name: str, line: int) -> tuple[int, ast.expr | None, str] | None:
        before = [e for e in self.bound.get(name, []) if e[0] < line]
        return before[-1] if before else None

    def value(self, node: ast.AST, line: int, depth: int = 0) -> tuple[Any, str]:
        """(value or Unknown, where it came from when not written in place)."""
        if depth > _MAX_DEPTH:
            return Unknown(_shown(node), "a chain of names too long to follow"), ""
        if isinstance(node, ast.Constant):
            return node.value, ""
        if isinstance(node, ast.Name):
            binding = self._binding(node.id, line)
            if binding is None:
                return Unknown(node.id, "a name the launcher does not bind before this line"), ""
            at, expr, why = binding
            if expr is None:
                return Unknown(node.id, f"set at line {at} {why}" if why.startswith("by ") else why), ""
            value, source = self.value(expr, at, depth + 1)
            return value, source or (f"{node.id}, line {at}" if not isinstance(value, Unknown) else "")
        if isinstance(node, ast.JoinedStr):
            parts: list[str] = []
            variables: tuple[str, ...] = ()
            for part in node.values:
                if isinstance(part, ast.FormattedValue):
                    value, _ = self.value(part.value, line, depth + 1)
                    text = _text_of(value) if part.format_spec is None and part.conversion in (-1, 115) else None
                    if text is None:
                        shown = value.text if isinstance(value, Unknown) else _shown(part.value)
                        return Unknown(_shown(node), f"a formatted value ({shown}) the launcher computes when it "
                                       "runs"), ""
                    parts.append(text[0])
                    variables += text[1]
                else:
                    parts.append(str(part.value) if isinstance(part, ast.Constant) else "")
            return (Templated("".join(parts), variables) if variables else "".join(parts)), ""
        if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
            left, _ = self.value(node.left, line, depth + 1)
            right, _ = self.value(node.right, line, depth + 1)
            if isinstance(node.op, ast.Add) and any(isinstance(v, (Templated, Unknown)) for v in (left, right)) \
                    and all(isinstance(v, (str, Unknown)) for v in (left, right)):
                texts = [_text_of(left), _text_of(right)]
                if texts[0] is not None and texts[1] is not None:
                    return Templated(texts[0][0] + texts[1][0], texts[0][1] + texts[1][1]), ""
            if not isinstance(left, Unknown) and not isinstance(right, Unknown):
                try:
                    return _BINARY[type(node.op)](left, right), ""
                except Exception:  # noqa: BLE001 - a mixed or huge expression: not ours to compute
                    pass
            return self._unknown(node), ""
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            operand, _ = self.value(node.operand, line, depth + 1)
            if isinstance(operand, (int, float)) and not isinstance(operand, bool):
                return -operand, ""
            return self._unknown(node), ""
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.value(e, line, depth + 1)[0] for e in node.elts]
            if any(isinstance(e, ast.Starred) for e in node.elts):
                return self._unknown(node), ""
            return items, ""
        if isinstance(node, ast.Dict):
            if any(k is None for k in node.keys):  # {**other}
                return self._unknown(node), ""
            out: dict[Any, Any] = {}
            for key, item in zip(node.keys, node.values, strict=True):
                k, _ = self.value(key, line, depth + 1)  # type: ignore[arg-type]
                if isinstance(k, Unknown) or not isinstance(k, (str, int, float, bool)):
                    return Unknown(_shown(node), f"a key ({_shown(key)}) computed when the launcher runs"), ""  # type: ignore[arg-type]
                out[k] = self.value(item, line, depth + 1)[0]
            return out, ""
        if isinstance(node, ast.Call):
            return self._call(node, line, depth), ""
        if isinstance(node, ast.Attribute):
            return self._attribute(node, line, depth)
        return self._unknown(node), ""

    def _unknown(self, node: ast.AST) -> Unknown:
        for inner in walk(node):
            name = _name(inner.func) if isinstance(inner, ast.Call) else (
                inner.attr if isinstance(inner, ast.Attribute) else None)
            if name in _RUN_TIME:
                why, variable = _RUN_TIME[name]
                # Only the lookup itself stands for its variable: `role + "x"` is computed from it.
                whole = inner is node or isinstance(node, ast.Call) and inner is node.func
                return Unknown(_shown(node), why, variable if whole else None)
        return Unknown(_shown(node), "computed when the launcher runs")

    def _call(self, node: ast.Call, line: int, depth: int) -> Any:
        name = _name(node.func)
        if name in SDK_OBJECTS or name == "dict" and isinstance(node.func, ast.Name):
            order = SDK_OBJECTS.get(name, ())  # type: ignore[arg-type]
            if any(k.arg is None for k in node.keywords) or len(node.args) > len(order) \
                    or any(isinstance(a, ast.Starred) for a in node.args):
                return self._unknown(node)
            arguments = {param: self.value(a, line, depth + 1)[0] for param, a in zip(order, node.args, strict=False)}
            arguments.update({k.arg: self.value(k.value, line, depth + 1)[0] for k in node.keywords if k.arg})
            return arguments if name == "dict" else SdkObject(name, arguments)  # type: ignore[arg-type]
        if name == "upload_data" and isinstance(node.func, ast.Attribute):
            return self._upload_data(node, line, depth)
        if name in ("str", "int", "float", "bool") and isinstance(node.func, ast.Name) and len(node.args) == 1:
            value, _ = self.value(node.args[0], line, depth + 1)
            if not isinstance(value, Unknown):
                try:
                    return {"str": str, "int": int, "float": float, "bool": bool}[name](value)
                except (TypeError, ValueError):
                    pass
        return self._unknown(node)

    def _upload_data(self, node: ast.Call, line: int, depth: int) -> Any:
        """sess.upload_data(path, bucket=None, key_prefix="data"): the SDK uploads `path` when the launcher runs
        and returns s3://BUCKET/KEY_PREFIX (a directory's; the session's default bucket unless given)."""
        given = {k.arg: k.value for k in node.keywords if k.arg}
        for name, arg in zip(("path", "bucket", "key_prefix"), node.args, strict=False):
            given.setdefault(name, arg)
        values = {k: self.value(v, line, depth + 1)[0] for k, v in given.items() if k in ("path", "bucket", "key_prefix")}
        path, bucket, prefix = values.get("path"), values.get("bucket"), values.get("key_prefix", "data")
        if not isinstance(path, str) or not isinstance(prefix, str) or not isinstance(bucket, (str, type(None))):
            return self._unknown(node)
        text = _text_of(Unknown("", "", "SMTRAIN_BUCKET") if bucket is None else bucket)
        assert text is not None
        uri = f"s3://{text[0]}/{prefix.strip('/')}"
        if self.base is not None and (self.base / path).is_file():  # a file lands under the prefix by its name
            uri += f"/{os.path.basename(path)}"
        return Templated(uri, text[1], uploads=path)

    def _attribute(self, node: ast.Attribute, line: int, depth: int) -> tuple[Any, str]:
        # args.instance_type, where args = parser.parse_args(): the option's literal default.
        if isinstance(node.value, ast.Name):
            binding = self._binding(node.value.id, line)
            expr = binding[1] if binding else None
            if isinstance(expr, ast.Subscript):  # parse_known_args()[0]
                expr = expr.value
            if isinstance(expr, ast.Call) and _name(expr.func) in ("parse_args", "parse_known_args"):
                for option in self.args.options:
                    if option.dest == node.attr:
                        shown = option.long_flags[0] if option.long_flags else option.dest
                        if option.has_default and option.default is not MISSING:
                            return option.default, f"{shown}'s default, line {option.line}"
                        return Unknown(_shown(node), f"{shown} (line {option.line}) has no literal default: "
                                       "it is given on the command line"), ""
        logging_levels = {"DEBUG": 10, "INFO": 20, "WARNING": 30, "ERROR": 40, "CRITICAL": 50}
        if isinstance(node.value, ast.Name) and node.value.id == "logging" and node.attr in logging_levels:
            return logging_levels[node.attr], ""
        return self._unknown(node), ""


def _estimator_calls(tree: ast.Module) -> list[ast.Call]:
    return [n for n in walk(tree) if isinstance(n, ast.Call) and _name(n.func) in ESTIMATORS]


def _fit_of(tree: ast.Module, call: ast.Call, values: _Values) -> ast.Call | None:
    """The `.fit(...)` called on this estimator: on the call itself, or on the name it is bound to."""
    bound_to = {t.id for n in walk(tree) if isinstance(n, ast.Assign) and n.value is call
                for t in n.targets if isinstance(t, ast.Name)}
    for node in walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fit":
            owner = node.func.value
            if owner is call or isinstance(owner, ast.Name) and owner.id in bound_to:
                return node
    return None


_PYTHON_CELL_MAGICS = ("%%time", "%%timeit", "%%capture")  # the rest of the cell is Python
_SHELL_ASSIGNMENT = re.compile(r"^(\s*[\w.]+\s*=\s*)[!%].*$")  # files = !ls


def _notebook_text(path: Path) -> tuple[str, list[tuple[int, int]]]:
    """A launcher notebook's code cells as one script, line for line: magics and shell lines are `pass` (a
    launcher's `%ls` or `!pip install` decides nothing the import reads); (script line, cell) where each starts."""
    lines: list[str] = []
    starts: list[tuple[int, int]] = []
    for number, cell in code_cells(path):
        starts.append((len(lines) + 1, number))
        first = cell[0].split()[0] if cell and cell[0].startswith("%%") else None
        for i, line in enumerate(cell):
            body = line.lstrip()
            indent = line[: len(line) - len(body)]
            if first is not None and (i == 0 or first not in _PYTHON_CELL_MAGICS) or body.startswith(("%", "!")):
                lines.append(f"{indent}pass")
            else:
                lines.append(_SHELL_ASSIGNMENT.sub(r"\1None", line))
    return "\n".join(lines) + "\n", starts


def read_launcher(path: Path, shown: str | None = None) -> Launcher:
    """The estimator the launcher at `path` (.py or .ipynb) builds and fits; LauncherError when there is none."""
    shown = shown or path.name
    where: Callable[[int], str]
    if is_notebook(path.name):
        try:
            text, starts = _notebook_text(path)
        except NotebookError as exc:
            raise LauncherError("; ".join(exc.messages()) or f"{shown}: not a notebook") from None
        parsed = parse_python(text.encode("utf-8"), shown)

        def where(line: int) -> str:
            start, cell = max(((s, c) for s, c in starts if s <= line), default=(1, 0))
            return f"{shown}, cell {cell}, line {line - start + 1}"
    else:
        try:
            parsed = read_python(path)
        except OSError as exc:
            raise LauncherError(f"{shown}: cannot be read: {exc.strerror or exc}") from None

        def where(line: int) -> str:
            return f"{shown}:{line}"
    if parsed.syntax_error is not None:
        err = parsed.syntax_error
        at = where(err.lineno) if err.lineno else shown
        raise LauncherError(f"{at}: not valid Python ({err.msg}): smtrain import reads the launcher as it is written")
    if parsed.tree is None:
        raise LauncherError(f"{shown}: {parsed.skipped}")
    tree = parsed.tree
    values = _Values(tree, path.parent)
    calls = _estimator_calls(tree)
    if not calls:
        raise LauncherError(f"{shown}: no TensorFlow(...) or Estimator(...) call of the SageMaker SDK: nothing to "
                            "import (smtrain import reads the launcher that builds the estimator and calls fit)")
    fitted = [(c, f) for c in calls if (f := _fit_of(tree, c, values)) is not None]
    call, fit = fitted[0] if fitted else (calls[0], None)
    notes = [(c.lineno, f"another {_name(c.func)}(...) estimator: the import takes the one at {where(call.lineno)}"
                        + (" (the one fit() is called on)" if fitted else ""))
             for c in calls if c is not call]
    arguments: dict[str, Arg] = {}
    if call.args:
        notes.append((call.lineno, "positional arguments: SDK v2 takes keyword arguments only (entry_point= ...)"))
    for keyword in call.keywords:
        if keyword.arg is None:  # TensorFlow(**kwargs): a literal dict's items, else unknown
            spread, _ = values.value(keyword.value, call.lineno)
            if isinstance(spread, dict):
                arguments.update({str(k): Arg(v, keyword.value.lineno, f"**{_shown(keyword.value)}")
                                  for k, v in spread.items()})
            else:
                notes.append((keyword.value.lineno, f"**{_shown(keyword.value)}: its arguments are computed when the "
                                                    "launcher runs and are not imported"))
            continue
        value, source = values.value(keyword.value, keyword.value.lineno)
        arguments[keyword.arg] = Arg(value, keyword.value.lineno, source)
    inputs = job_name = None
    if fit is None:
        notes.append((call.lineno, "no fit() of this estimator: no input channels imported"))
    else:
        given = fit.args[0] if fit.args else next((k.value for k in fit.keywords if k.arg == "inputs"), None)
        if given is not None:
            inputs = Arg(*values.value(given, given.lineno)[:1], given.lineno)
        named = next((k.value for k in fit.keywords if k.arg == "job_name"), None)
        if named is not None:
            job_name = Arg(values.value(named, named.lineno)[0], named.lineno)
        experiment = next((k.value for k in fit.keywords if k.arg == "experiment_config"), None)
        if experiment is not None:  # SageMaker Experiments: fit()'s, read with the estimator's arguments
            value, source = values.value(experiment, experiment.lineno)
            arguments["experiment_config"] = Arg(value, experiment.lineno, source)
    return Launcher(_name(call.func) or "TensorFlow", call.lineno, arguments, inputs, job_name, where, tuple(notes))
