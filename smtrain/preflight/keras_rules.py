"""The preflight rules on what Keras 3 (TensorFlow 2.16 and later, without TF_USE_LEGACY_KERAS) refuses at
run time, after the job has paid for its start-up (and the one Keras 2.11+ ignores: `lr=`, a warning): an
optimizer given `lr=`, and `model.save(path)` to a
path without the `.keras` / `.h5` extension. Both raise ValueError for certain, so both are errors. So do
the Keras 2 calls Keras 3 removed: a metric's `reset_states()`, `keras.optimizers.legacy`, `fit_generator`
and its kin (removed_api_hits).
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
# Every break below has the same second way out: the script as written, on Keras 2 (smtrain.plan.keras_choice).
KEEP_KERAS_2 = "or run the script as written with Keras 2: tensorflow: {keras: 2}"
_MODEL_NAME = re.compile(r"(?i)model|net$|^net|classifier|regressor|autoencoder|encoder|decoder")


def applies(tree: ast.AST, names: Names, job: JobContext) -> bool:
    return bool(job.keras3) and names.uses("tensorflow", "keras") and not legacy_keras(tree, names)


def _optimizer(call: ast.Call, names: Names) -> str | None:
    name = names.qualified(call.func) or ""
    if name.startswith("keras.optimizers.") and name.rsplit(".", 1)[-1] in OPTIMIZERS:
        return name.rsplit(".", 1)[-1]
    return None


def _ignores_lr(job: JobContext) -> bool:
    """Keras 2.11 and later (TensorFlow 2.11+, tf_keras) take `lr=` and drop it with a log line: the optimizer
    keeps its default rate (tf_keras's Optimizer._process_kwargs)."""
    if job.keras3 is not False:  # Keras 3 (its own rule) or a TensorFlow not known
        return False
    parts = tuple(int(p) for p in (job.framework_version or "").split(".")[:2] if p.isdigit())
    return parts >= (2, 11)


def lr_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    keras3 = applies(tree, names, job)
    if not keras3:
        if names.uses("tensorflow", "keras") and _ignores_lr(job):
            yield from _ignored_lr_hits(tree, names)
        return
    parent_of = parents(tree)
    for node in walk(tree):
        if isinstance(node, ast.Call) and any(k.arg == "lr" for k in node.keywords):
            optimizer = _optimizer(node, names)
            if optimizer:
                yield _hit(node, parent_of, "keras3-lr",
                           f"Keras 3 (TensorFlow {job.framework_version}) refuses {optimizer}(lr=...): "
                           "\"Argument(s) not recognized\" (lr was Keras 2's old name)",
                           f"write {optimizer}(learning_rate=...), {KEEP_KERAS_2}")


def _ignored_lr_hits(tree: ast.AST, names: Names) -> Iterator[Hit]:
    for node in walk(tree):
        if isinstance(node, ast.Call) and any(k.arg == "lr" for k in node.keywords):
            optimizer = _optimizer(node, names)
            if optimizer:
                yield Hit(node.lineno, "keras2-lr-ignored",
                          f"Keras 2.11 and later ignore {optimizer}(lr=...): the optimizer trains at its default "
                          "rate (a log line says `lr` is deprecated)", f"write {optimizer}(learning_rate=...)",
                          WARNING)


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
               f"or call model.export(path) for a SavedModel (what TensorFlow Serving loads), {KEEP_KERAS_2}")
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


# Model methods Keras 3 removed (Keras 2 had them as deprecated aliases of fit/evaluate/predict).
_REMOVED_METHODS = {"fit_generator": "fit", "evaluate_generator": "evaluate", "predict_generator": "predict"}


def _metric_names(tree: ast.AST, names: Names) -> set[str]:
    """Names bound (once or more, always) to a Keras metric: `train_loss = tf.keras.metrics.Mean(...)`."""
    bound: dict[str, list[bool]] = {}
    for node in walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            key = ast.unparse(target) if isinstance(target, (ast.Name, ast.Attribute)) else None
            if key is not None:
                is_metric = isinstance(node.value, ast.Call) and (
                    names.qualified(node.value.func) or "").startswith("keras.metrics.")
                bound.setdefault(key, []).append(is_metric)
    return {key for key, kinds in bound.items() if all(kinds)}


def removed_api_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    """What Keras 2 scripts call and Keras 3 has not: a metric's reset_states(), the legacy optimizers,
    fit_generator and its kin. Each raises at its line (AttributeError, ImportError): errors."""
    if not applies(tree, names, job):
        return
    parent_of = parents(tree)
    metrics = _metric_names(tree, names)
    version = f"Keras 3 (TensorFlow {job.framework_version})"
    keep = KEEP_KERAS_2
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        qualified = names.qualified(node.func) or ""
        if qualified.startswith("keras.optimizers.legacy."):
            name = qualified.rsplit(".", 1)[-1]
            yield _hit(node, parent_of, "keras3-legacy-optimizer",
                       f"{version} has no keras.optimizers.legacy: {name}(...) raises ImportError",
                       f"use keras.optimizers.{name}(...), {keep}")
        if not isinstance(node.func, ast.Attribute):
            continue
        method = node.func.attr
        if method in _REMOVED_METHODS and may_be_a_model(node.func.value, names):
            yield _hit(node, parent_of, "keras3-removed-method",
                       f"{version} models have no {method}(): AttributeError",
                       f"call model.{_REMOVED_METHODS[method]}(...) with the same generator, {keep}")
        if method == "reset_states" and not node.args and ast.unparse(node.func.value) in metrics:
            yield _hit(node, parent_of, "keras3-reset-states",
                       f"{version} metrics have no reset_states(): AttributeError (it is reset_state())",
                       f"write {ast.unparse(node.func.value)}.reset_state(), {keep}")


_MODEL_BASES = ("keras.Model", "keras.models.Model")


def model_without_call_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    """A Model subclass with no call() of its own, as Keras 2 scripts wrote a model trained by its own
    train_step (the keras.io VAE before Keras 3). Keras 3 fits it (train_step never calls the model), but
    calling it, predict(), evaluate() without a test_step of its own, and a save that traces it raise
    NotImplementedError ("does not have a `call()` method implemented"): a warning, as the script may not
    reach any of them."""
    if not applies(tree, names, job):
        return
    classes = {node.name: node for node in walk(tree) if isinstance(node, ast.ClassDef)}

    def defines(cls: ast.ClassDef, method: str, depth: int = 0) -> bool:
        if any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method for item in cls.body):
            return True
        bases = [classes[b.id] for b in cls.bases if isinstance(b, ast.Name) and b.id in classes]
        return depth < 10 and any(defines(base, method, depth + 1) for base in bases)

    def defines_call(cls: ast.ClassDef) -> bool:
        return defines(cls, "call")

    def is_model(cls: ast.ClassDef, depth: int = 0) -> bool:
        for base in cls.bases:
            if (names.qualified(base) or "") in _MODEL_BASES:
                return True
            if depth < 10 and isinstance(base, ast.Name) and base.id in classes and is_model(classes[base.id], depth + 1):
                return True
        return False

    def functional(name: str) -> bool:
        """Made as a functional model somewhere (`PenalizedModel(inputs, outputs)`, keras.io's customizing-fit form):
        Keras's Functional call() is its forward pass, so nothing of this warning holds. A class with an __init__ of
        its own takes its arguments there (keras.io's `VAE(encoder, decoder)`)."""
        if defines(classes[name], "__init__"):
            return False
        for node in walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name:
                given = {k.arg for k in node.keywords}
                if len(node.args) >= 2 or {"inputs", "outputs"} <= given or (node.args and "outputs" in given):
                    return True
        return False

    for cls in classes.values():
        if is_model(cls) and not defines_call(cls) and not functional(cls.name):
            yield Hit(cls.lineno, "keras3-model-without-call",
                      f"Keras 3 (TensorFlow {job.framework_version}): {cls.name} subclasses Model without a call() "
                      "method: fit() runs its train_step, but calling the model, predict(), evaluate() without a "
                      "test_step of its own, and saving it raise NotImplementedError",
                      f"define {cls.name}.call(inputs) (the forward pass), {KEEP_KERAS_2}", WARNING)
