"""What a script imports and reads that decides the job it needs, read with ast (never run): Horovod (an
MPI job, not wrapped), TF_CONFIG (which only a multi-worker job's container sets), and the Keras 2 calls
that Keras 3 refuses (a job for Keras 2, tensorflow.keras: 2).

`smtrain init` writes a spec to match; the preflight scan refuses a spec that does not match.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass

from smtrain.spec.python_file import parents_of, walk

# The environment reads as scripts write them: os.environ.get("X"), os.getenv("X"), environ.get("X").
_ENV_GETS = frozenset({"get", "getenv"})


@dataclass(frozen=True)
class ScriptReads:
    horovod_line: int | None = None  # the first import of horovod
    tf_config_line: int | None = None  # the first read of TF_CONFIG that fails when it is not set
    keras2: tuple[int, str] | None = None  # the first call only Keras 2 takes: (line, what it is)


# Calls Keras 3 refuses and Keras 2 took, in a form that names Keras 2 for certain (the preflight's keras
# rules, smtrain.preflight.keras_rules, say more, with the job's TensorFlow version): `init` proposes
# tensorflow.keras: 2 for them.
_REMOVED = frozenset({"fit_generator", "evaluate_generator", "predict_generator"})
_OPTIMIZERS = frozenset({"Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Ftrl"})
_METRIC_LIKE = re.compile(r"(?i)metric|loss|acc|auc|precision|recall|mean")


def _keras2_call(node: ast.AST) -> str | None:
    if isinstance(node, ast.Attribute) and node.attr == "legacy" and isinstance(node.value, ast.Attribute) and (
            node.value.attr == "optimizers"):
        return "keras.optimizers.legacy"
    if not (isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name))):
        return None
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else func.id
    if name in _REMOVED and isinstance(func, ast.Attribute):
        return f"model.{name}()"
    if name == "reset_states" and isinstance(func, ast.Attribute) and _METRIC_LIKE.search(ast.unparse(func.value)):
        return f"{ast.unparse(func.value)}.reset_states()"
    if name in _OPTIMIZERS and any(k.arg == "lr" for k in node.keywords):
        return f"{name}(lr=...)"
    return None


def _is_environ(node: ast.AST) -> bool:
    """`os.environ` or `environ` (from os import environ)."""
    return (isinstance(node, ast.Attribute) and node.attr == "environ") or (
        isinstance(node, ast.Name) and node.id == "environ")


def _names_tf_config(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value == "TF_CONFIG"


def _env_get_without_default(node: ast.AST) -> bool:
    """os.environ.get("TF_CONFIG") / os.getenv("TF_CONFIG"): None when the variable is not set."""
    if not (isinstance(node, ast.Call) and node.args and _names_tf_config(node.args[0])):
        return False
    if len(node.args) > 1 or node.keywords:
        return False  # a default: the script runs without TF_CONFIG
    func = node.func
    if isinstance(func, ast.Attribute) and func.attr == "get":
        return _is_environ(func.value)
    return isinstance(func, (ast.Name, ast.Attribute)) and (
        func.id if isinstance(func, ast.Name) else func.attr) == "getenv"


def _required_tf_config(node: ast.AST) -> bool:
    """A read of TF_CONFIG that raises when it is not set: os.environ["TF_CONFIG"] (KeyError), or
    json.loads(os.environ.get("TF_CONFIG")) (TypeError on None)."""
    if isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load) and _is_environ(node.value):
        return _names_tf_config(node.slice)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "loads" and node.args:
        return _env_get_without_default(node.args[0])
    return False


def _main_guard(node: ast.AST) -> bool:
    """`if __name__ == "__main__":`: the script's own run always takes it."""
    test = getattr(node, "test", None)
    return (isinstance(node, ast.If) and isinstance(test, ast.Compare) and isinstance(test.left, ast.Name)
            and test.left.id == "__name__" and len(test.comparators) == 1
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == "__main__")


def _calls_of(name: str, parent_of: dict[ast.AST, ast.AST]) -> list[ast.Call]:
    return [node for node in parent_of if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == name]


# Calls followed from a function to its callers: a chain of thousands of small functions is generated code,
# and following it all would exhaust Python's stack.
_MAX_CALL_DEPTH = 20


def conditional(node: ast.AST, parent_of: dict[ast.AST, ast.AST], _seen: frozenset[ast.AST] = frozenset()) -> bool:
    """Whether the script may not reach `node`, or goes on when it fails: under an if (but the
    `if __name__ == "__main__":` guard), a loop, a conditional expression, a match case, in the body of a
    try that handles errors (`try: TPUStrategy(...) except ValueError: MirroredStrategy()`), in a lambda,
    or in a function that the file never calls where it surely runs (a function is followed to its calls,
    20 deep: `def main(): ...` called under the main guard runs)."""
    child, parent = node, parent_of.get(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test and not _main_guard(parent):
            return True
        if isinstance(parent, (ast.For, ast.AsyncFor, ast.match_case, ast.Lambda)):
            return True
        if isinstance(parent, ast.Try) and parent.handlers and child in parent.body:
            return True
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if parent in _seen or len(_seen) >= _MAX_CALL_DEPTH:
                return True  # recursion (decided by the other calls), or too far to follow: may not run
            calls = _calls_of(parent.name, parent_of)
            return not any(not conditional(call, parent_of, _seen | {parent}) for call in calls)
        child, parent = parent, parent_of.get(parent)
    return False


def script_reads(tree: ast.AST) -> ScriptReads:
    """What the script surely does: an import or a read under a condition or a handled try is left out."""
    horovod, tf_config, keras2 = [], [], []
    parent_of = parents_of(tree)
    for node in walk(tree):
        keras2_form = _keras2_call(node)
        if keras2_form:
            keras2.append((getattr(node, "lineno", 1), keras2_form))
            continue
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "horovod" for a in node.names):
            found = horovod
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and (
                node.module.split(".")[0] == "horovod"):
            found = horovod
        elif _required_tf_config(node):
            found = tf_config
        else:
            continue
        if not conditional(node, parent_of):
            found.append(getattr(node, "lineno", 1))
    return ScriptReads(min(horovod, default=None), min(tf_config, default=None), min(keras2, default=None))
