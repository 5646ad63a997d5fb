"""The preflight rules on what Keras 3 (TensorFlow 2.16 and later, without TF_USE_LEGACY_KERAS) refuses at
run time, after the job has paid for its start-up: an optimizer given `lr=`, and `model.save(path)` to a
path without the `.keras` / `.h5` extension. Both raise ValueError for certain, so both are errors.
`save_format=` raises only beside another path: a warning where the path's end is not in the code.
Keras 2 took them (with a deprecation warning): no finding there.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from smtrain.preflight.io_rules import may_be_a_model
from smtrain.preflight.names import Names, leaf, parents
from smtrain.preflight.rules import ERROR, WARNING, Hit, JobContext, legacy_keras
from smtrain.spec.python_file import walk
from smtrain.spec.script_reads import conditional

# keras.optimizers' classes (Keras 2 and 3, legacy included): `lr` was Keras 2's alias of learning_rate.
OPTIMIZERS = frozenset({"Adam", "AdamW", "SGD", "RMSprop", "Adagrad", "Adadelta", "Adamax", "Nadam", "Ftrl",
                        "Lion", "Adafactor", "LossScaleOptimizer", "Lamb", "Muon"})
_MODEL_FILE_EXTENSIONS = (".keras", ".h5", ".hdf5")
_SAVE_FUNCTIONS = ("keras.models.save_model", "keras.saving.save_model")
_MODEL_NAME = re.compile(r"(?i)model|net$|^net|classifier|regressor|autoencoder|encoder|decoder")


def applies(tree: ast.AST, names: Names, job: JobContext) -> bool:
    return bool(job.keras3) and names.uses("tensorflow", "keras") and not legacy_keras(tree, names)


def _optimizer(call: ast.Call, names: Names) -> str | None:
    name = names.qualified(call.func) or ""
    if name.startswith("keras.optimizers.") and name.rsplit(".", 1)[-1] in OPTIMIZERS:
        return name.rsplit(".", 1)[-1]
    return None


def lr_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    if not applies(tree, names, job):
        return
    parent_of = parents(tree)
    for node in walk(tree):
        if isinstance(node, ast.Call) and any(k.arg == "lr" for k in node.keywords):
            optimizer = _optimizer(node, names)
            if optimizer:
                yield _hit(node, parent_of, "keras3-lr",
                           f"Keras 3 (TensorFlow {job.framework_version}) refuses {optimizer}(lr=...): "
                           "\"Argument(s) not recognized\" (lr was Keras 2's old name)",
                           f"write {optimizer}(learning_rate=...)")


def _hit(node: ast.AST, parent_of: dict[ast.AST, ast.AST], rule: str, message: str, fix: str) -> Hit:
    """An error; a warning where the script may not reach the line (a branch for Keras 2, a handled try)."""
    if conditional(node, parent_of):
        return Hit(node.lineno, rule, f"if this line runs: {message}", fix, WARNING)
    return Hit(node.lineno, rule, message, fix, ERROR)


class _Tails:
    """The last literal piece of a path expression (`os.path.join(d, "model")` -> "model"), through
    variables assigned once; None where the end of the path is not written in the code."""

    def __init__(self, tree: ast.AST) -> None:
        values: dict[str, list[ast.expr]] = {}
        for node in walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values.setdefault(node.targets[0].id, []).append(node.value)
        self.values = {name: found[0] for name, found in values.items() if len(found) == 1}

    def tail(self, node: ast.AST, depth: int = 0) -> str | None:
        if depth > 5:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.JoinedStr) and node.values:
            last = node.values[-1]
            return last.value if isinstance(last, ast.Constant) and isinstance(last.value, str) else None
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
            return self.tail(node.right, depth + 1)
        if isinstance(node, ast.Name) and node.id in self.values:
            return self.tail(self.values[node.id], depth + 1)
        if isinstance(node, ast.Call) and leaf(node.func) == "join" and node.args and not (
                isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Constant)):
            return self.tail(node.args[-1], depth + 1)
        if isinstance(node, ast.Call) and leaf(node.func) in ("str", "fspath") and node.args:
            return self.tail(node.args[0], depth + 1)
        return None


def _saved_path(call: ast.Call, names: Names) -> ast.expr | None:
    """The path a Keras model save writes to: `model.save(path)`, `keras.models.save_model(model, path)`."""
    if (names.qualified(call.func) or "") in _SAVE_FUNCTIONS:
        given = call.args[1] if len(call.args) > 1 else None
        return given or next((k.value for k in call.keywords if k.arg == "filepath"), None)
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "save"):
        return None
    receiver = call.func.value
    if not may_be_a_model(receiver, names):
        return None
    # An error stops the job before it is paid for: only where the receiver is surely a model (its name
    # says so, and it is no module such as wandb or mlflow, whose save() takes any file).
    if isinstance(receiver, ast.Name) and receiver.id in names.aliases:
        return None
    if not _MODEL_NAME.search(leaf(receiver)):
        return None
    return call.args[0] if call.args else next((k.value for k in call.keywords if k.arg == "filepath"), None)


def save_format_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    if not applies(tree, names, job):
        return
    tails = _Tails(tree)
    parent_of = parents(tree)
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        path = _saved_path(node, names)
        if path is None:
            continue
        fix = ("save to a .keras file (model.save(os.path.join(os.environ[\"SM_MODEL_DIR\"], \"model.keras\"))), "
               "or call model.export(path) for a SavedModel (what TensorFlow Serving loads)")
        tail = tails.tail(path)
        if any(k.arg == "save_format" for k in node.keywords) and tail is None:
            # Keras 3 takes save_format only beside a .keras/.h5 path (with a deprecation note): where the
            # path's end is not in the code, the call may or may not raise.
            yield Hit(node.lineno, "keras3-save-path", f"Keras 3 (TensorFlow {job.framework_version}) model.save() "
                      "raises ValueError for save_format=... unless the path ends in .keras or .h5", fix, WARNING)
            continue
        if tail is not None and not tail.lower().endswith(_MODEL_FILE_EXTENSIONS):
            yield _hit(node, parent_of, "keras3-save-path",
                       f"Keras 3 (TensorFlow {job.framework_version}) model.save() refuses a path without the "
                       f".keras or .h5 extension (this one ends {tail[-40:]!r}): it raises ValueError", fix)
