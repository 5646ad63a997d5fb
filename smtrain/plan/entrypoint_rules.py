"""What the bundled entrypoint needs from a spec, checked before anything is sent.

A job with the bundled entrypoint (no `code.entry_point`) that passes `validate` must not fail in
its first minute on SageMaker for a reason the spec already shows: a TensorFlow or Python the
program does not run on, no `train` channel, a model it does not know or cannot find, an input
mode it does not read. The entrypoint's own tables (hyperparameter and model names) are read from
smtrain_tf (plain Python), so the two cannot disagree.
"""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

from smtrain_tf.contract.hyperparameters import BY_NAME as ENTRYPOINT_HYPERPARAMETERS
from smtrain_tf.models.names import BUILT_INS, is_hook

from smtrain.plan.distribution import version_tuple
from smtrain.spec.model import LoadedSpec
from smtrain.spec.problems import Problem, brief
from smtrain.spec.python_file import read_python

# entrypoints/README.md: the program runs on TensorFlow 2.11-2.21 and Python 3.9 or newer.
MIN_TF, MAX_TF = (2, 11), (2, 21)
MIN_PYTHON = (3, 9)
TRAIN_CHANNEL = "train"


def _nearest(word: str, choices: list[str]) -> str:
    close = difflib.get_close_matches(word, choices, n=1, cutoff=0.6) or \
        difflib.get_close_matches(word.lower(), choices, n=1, cutoff=0.6)
    return f" (did you mean '{close[0]}'?)" if close else ""


def _tensorflow(loaded: LoadedSpec, version: str | None, python: str | None) -> list[Problem]:
    found = []
    tf = version_tuple(version) if version else None
    if tf is not None and not MIN_TF <= tf[:2] <= MAX_TF:
        found.append(loaded.problem(("tensorflow", "version"),
                                    f"the bundled entrypoint runs on TensorFlow 2.11 to 2.21, not {version}: "
                                    "choose one of those, or bring your own code.entry_point"))
    if python and python.startswith("py3") and (3, int(python[3:] or 0)) < MIN_PYTHON:
        found.append(loaded.problem(("tensorflow", "python"),
                                    f"the bundled entrypoint needs Python 3.9 or newer, not {python}"))
    return found


def _channels(loaded: LoadedSpec) -> list[Problem]:
    spec, found = loaded.spec, []
    if spec.training.data == "channels" and TRAIN_CHANNEL not in spec.inputs:
        hint = ""
        if "training" in spec.inputs:
            hint = ": rename inputs.training to inputs.train"
        elif spec.inputs:
            hint = f": rename one of {', '.join(sorted(spec.inputs))} to train"
        found.append(loaded.problem(("inputs",), "the bundled entrypoint reads its training data from a channel "
                                    f"named train (and optionally validation){hint}"))
    for name, channel in spec.inputs.items():
        if channel.mode == "Pipe":
            found.append(loaded.problem(("inputs", name, "mode"),
                                        "the bundled entrypoint reads files, not Pipe mode (and the TensorFlow "
                                        "2.16+ images have no Pipe-mode reader): use File or FastFile"))
    return found


def _defines(tree: ast.Module, name: str) -> bool:
    """Whether a module's top level binds `name` (a def, a class, an assignment or an import)."""
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
            return True
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                return True
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if any((a.asname or a.name.split(".")[0]) == name for a in node.names):
                return True
    return False


def _hook_file(loaded: LoadedSpec, hook: str) -> Path | None:
    """The module file of a `module:function` hook in code.source_dir, or None."""
    source_dir = loaded.spec.code.source_dir
    if not source_dir:
        return None
    base = loaded.path(source_dir).joinpath(*hook.split(":")[0].split("."))
    return next((p for p in (base.with_suffix(".py"), base / "__init__.py") if p.is_file()), None)


def _hook(loaded: LoadedSpec, hook: str, kind: str = "model") -> list[Problem]:
    """A `module:function` hook (training.model or training.data) must name a function that exists in
    code.source_dir (read, not run)."""
    where = ("training", kind)
    source_dir = loaded.spec.code.source_dir
    if not source_dir:
        return []  # the spec itself asks for code.source_dir with a hook
    module, function = hook.split(":")
    path = _hook_file(loaded, hook)
    if path is None:
        code = "the code.git checkout" if loaded.spec.code.git else "code.source_dir"  # (its cache directory)
        return [loaded.problem(where, f"{kind} hook {hook}: no {Path(*module.split('.')).with_suffix('.py')} "
                                      f"in {code} ({source_dir})")]
    try:
        read = read_python(path)
    except OSError as exc:
        return [loaded.problem(where, f"{kind} hook {hook}: cannot read {path.name}: {exc.strerror or exc}")]
    if read.syntax_error is not None:
        exc = read.syntax_error
        return [loaded.problem(where, f"{kind} hook {hook}: {path.name} line {exc.lineno or 1}: {exc.msg}")]
    tree = read.tree
    if tree is None:
        return []  # too large or deep to read: _unread_hooks() says so; the job's import decides
    if not _defines(tree, function):
        names = [n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        return [loaded.problem(where, f"{kind} hook {hook}: {path.name} defines no {function}"
                                      f"{_nearest(function, names)}")]
    return []


def _model(loaded: LoadedSpec) -> list[Problem]:
    model = loaded.spec.training.model
    if model in BUILT_INS:
        return []
    if is_hook(model):
        return _hook(loaded, model)
    return [loaded.problem(("training", "model"), f"unknown model {model!r}{_nearest(model, list(BUILT_INS))}: "
                                                  f"use {', '.join(BUILT_INS)}, or module:function (a function in "
                                                  "code.source_dir that returns a Keras model)")]


def _data(loaded: LoadedSpec) -> list[Problem]:
    data = loaded.spec.training.data
    return _hook(loaded, data, "data") if is_hook(data) else []


def _unknown_hyperparameters(loaded: LoadedSpec) -> list[Problem]:
    """Names the entrypoint does not know: a typo to flag, unless a model or data hook may read them."""
    if is_hook(loaded.spec.training.model) or is_hook(loaded.spec.training.data):
        return []
    known = sorted(ENTRYPOINT_HYPERPARAMETERS)
    return [loaded.problem(("hyperparameters", name), f"the bundled entrypoint has no hyperparameter {brief(name, 80)}"
                                                      f"{_nearest(name, known)}; it will be ignored")
            for name in loaded.spec.hyperparameters
            if name not in ENTRYPOINT_HYPERPARAMETERS]


def _unread_hooks(loaded: LoadedSpec) -> list[Problem]:
    """A hook module too large or too deeply nested to read: its function is not checked (advice only)."""
    found = []
    for kind, hook in (("model", loaded.spec.training.model), ("data", loaded.spec.training.data)):
        path = _hook_file(loaded, hook) if is_hook(hook) else None
        if path is None:
            continue
        try:
            skipped = read_python(path).skipped
        except OSError:
            continue  # _hook reports it
        if skipped:
            found.append(loaded.problem(("training", kind), f"{kind} hook {hook}: {path.name}: {skipped}; "
                                                            f"whether it defines {hook.split(':')[1]} was not checked"))
    return found


def check(loaded: LoadedSpec, tf_version: str | None, py_version: str | None) -> tuple[list[Problem], list[Problem]]:
    """(errors, warnings) for a job that runs the bundled entrypoint."""
    errors = _tensorflow(loaded, tf_version, py_version) + _channels(loaded) + _model(loaded) + _data(loaded)
    return errors, _unknown_hyperparameters(loaded) + _unread_hooks(loaded)
