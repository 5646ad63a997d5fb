"""The preflight scan's rules: each reads one parsed file (and what the job will be) and says where it breaks.

Two kinds. API rules hold for any file the bundle ships (a name TensorFlow removed is removed whoever
imports the file). Job rules need the job's shape (nodes, GPUs, strategy, TensorFlow version, wrap) and
hold for the files that run: the entry point and the modules of source_dir it imports.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from smtrain.plan.preflight_names import Names, leaf, references
from smtrain.spec.script_args import ScriptArgs


@dataclass(frozen=True)
class JobContext:
    """What the rules know of the job (from the Plan)."""

    nodes: int = 1
    gpus: int = 1
    strategy: str = "none"
    processes: int = 1  # processes that run the script, all hosts together
    wrapped: bool = False
    keras3: bool | None = None  # TensorFlow >= 2.16 without TF_USE_LEGACY_KERAS; None: version unknown
    framework_version: str | None = None
    hyperparameters: tuple[str, ...] = ()  # the names the script receives, besides the SDK's
    channels: tuple[str, ...] = ()

    @property
    def several_processes(self) -> bool:
        return self.processes > 1


@dataclass(frozen=True)
class Hit:
    line: int
    rule: str
    message: str
    fix: str


MULTI_WORKER_STRATEGIES = ("multi_worker_mirrored", "parameter_server")
MPI_STRATEGIES = ("horovod", "smddp")


# --- API rules ----------------------------------------------------------------------------------

_GRAPH_MODE = frozenset(f"{prefix}.{name}" for prefix in ("tensorflow", "tensorflow.compat.v1")
                        for name in ("Session", "InteractiveSession", "placeholder", "placeholder_with_default",
                                     "disable_eager_execution", "disable_v2_behavior"))


def _under(name: str, *prefixes: str) -> bool:
    return any(name == p or name.startswith(p + ".") for p in prefixes)


def api_hits(tree: ast.AST, names: Names) -> Iterator[Hit]:
    for name, line in references(tree, names):
        if name.rsplit(".", 1)[-1] == "multi_gpu_model":
            yield Hit(line, "multi-gpu-model", "keras.utils.multi_gpu_model was removed in TensorFlow 2.4",
                      "build the model inside a tf.distribute strategy's scope (smtrain_tf.strategy()), "
                      "or run the script unchanged with code.wrap: true")
        elif _under(name, "tensorflow.estimator", "tensorflow.compat.v1.estimator", "tensorflow_estimator",
                    "keras.estimator"):
            yield Hit(line, "tf-estimator", "tf.estimator was removed in TensorFlow 2.16",
                      "port the model to Keras (model.fit, or smtrain_tf.fit under any strategy), or pin "
                      "tensorflow.version below 2.16")
        elif _under(name, "tensorflow.contrib", "tensorflow.compat.v1.contrib"):
            yield Hit(line, "tf-contrib", "tf.contrib was removed in TensorFlow 2.0",
                      "use its TensorFlow 2 replacement (tf.keras layers, tf.distribute, TensorFlow Addons' "
                      "successors); SageMaker's TensorFlow images are all 2.x")
        elif name in _GRAPH_MODE:
            short = name.replace("tensorflow.", "tf.", 1)
            yield Hit(line, "tf1-graph-mode", f"{short} runs TensorFlow 1 graph mode: tf.distribute strategies "
                      "and Keras's fit do not distribute it",
                      "write the step as eager code or a tf.function (Keras model.fit, or smtrain_tf.fit)")


# --- job rules: strategies, Keras 3 fit, CUDA_VISIBLE_DEVICES ------------------------------------------

def strategies_built(tree: ast.AST, names: Names) -> Iterator[tuple[str, int]]:
    """(MirroredStrategy | MultiWorkerMirroredStrategy | ParameterServerStrategy, line) of each call."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = names.qualified(node.func) or ""
            last = name.rsplit(".", 1)[-1]
            if last in ("MirroredStrategy", "MultiWorkerMirroredStrategy", "ParameterServerStrategy"):
                yield last, node.lineno


def strategy_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    for strategy, line in strategies_built(tree, names):
        if strategy == "MirroredStrategy" and job.nodes > 1:
            yield Hit(line, "mirrored-multi-node",
                      f"MirroredStrategy() in a job of {job.nodes} nodes mirrors the GPUs of one host only: "
                      "each host would train a model of its own",
                      "build tf.distribute.MultiWorkerMirroredStrategy() (it spans the hosts and their GPUs) "
                      "or take smtrain_tf.strategy(); or build none and set code.wrap: true")
        elif strategy == "MultiWorkerMirroredStrategy" and job.nodes == 1 and job.gpus == 1:
            yield Hit(line, "mwms-single-gpu",
                      "MultiWorkerMirroredStrategy() in a job of one node with one GPU: there is nothing to "
                      "mirror, and its collectives still cost each step",
                      "take smtrain_tf.strategy() (the default strategy here, MultiWorkerMirrored on several "
                      "nodes), or use more nodes")


# Receivers whose .fit is not Keras's (scikit-learn and friends).
_NOT_KERAS_FIT = re.compile(r"(?i)scaler|tokeni[sz]er|vectori[sz]er|pca|imputer|kmeans|sklearn")
_NOT_KERAS_MODULES = ("sklearn", "xgboost", "lightgbm", "catboost", "smtrain_tf", "numpy", "pandas")


def _legacy_keras(tree: ast.AST, names: Names) -> bool:
    """Keras 2 on a new TensorFlow: tf_keras imported, or TF_USE_LEGACY_KERAS set by the script."""
    if any(m == "tf_keras" or m.startswith("tf_keras.") for m in names.imported):
        return True
    return any(isinstance(n, ast.Constant) and n.value == "TF_USE_LEGACY_KERAS" for n in ast.walk(tree))


def fit_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    if job.wrapped or not job.keras3 or not names.uses("tensorflow", "keras") or _legacy_keras(tree, names):
        return
    built = {s for s, _ in strategies_built(tree, names)}
    if job.strategy in MULTI_WORKER_STRATEGIES:
        strategy = "MultiWorkerMirroredStrategy" if job.strategy == "multi_worker_mirrored" else "ParameterServerStrategy"
    elif built & {"MultiWorkerMirroredStrategy", "ParameterServerStrategy"}:
        strategy = "MultiWorkerMirroredStrategy" if "MultiWorkerMirroredStrategy" in built else "ParameterServerStrategy"
    else:
        return
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "fit"):
            continue
        receiver = node.func.value
        owner = names.qualified(receiver.func if isinstance(receiver, ast.Call) else receiver) or ""
        if owner.split(".")[0] in _NOT_KERAS_MODULES or _NOT_KERAS_FIT.search(leaf(receiver)):
            continue
        if strategy == "MultiWorkerMirroredStrategy":
            yield Hit(node.lineno, "keras3-fit-multi-worker",
                      f"Keras 3 (TensorFlow {job.framework_version}) model.fit fails under "
                      "MultiWorkerMirroredStrategy (\"unsupported type PerReplica\", keras-team/keras#20585)",
                      "set code.wrap: true (the wrap runs fit through smtrain's distributed loop), or call "
                      "smtrain_tf.fit(model, ...) instead")
        else:
            yield Hit(node.lineno, "keras3-fit-multi-worker",
                      f"Keras 3 (TensorFlow {job.framework_version}) model.fit does not run under "
                      "ParameterServerStrategy",
                      "call smtrain_tf.fit(model, ...) instead (it runs every strategy), or set "
                      "environment: {TF_USE_LEGACY_KERAS: \"1\"} with tf_keras in code.requirements")


_CUDA = "CUDA_VISIBLE_DEVICES"


def _is_environ(node: ast.AST, names: Names) -> bool:
    return names.qualified(node) == "os.environ"


def _sets_cuda(node: ast.AST, names: Names) -> bool:
    if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        return any(isinstance(t, ast.Subscript) and _is_environ(t.value, names)
                   and isinstance(t.slice, ast.Constant) and t.slice.value == _CUDA for t in targets)
    if not isinstance(node, ast.Call):
        return False
    name = names.qualified(node.func) or ""
    first = node.args[0] if node.args else None
    if name in ("os.environ.setdefault", "os.putenv", "os.environ.__setitem__"):
        return isinstance(first, ast.Constant) and first.value == _CUDA
    if name == "os.environ.update":
        given = any(k.arg == _CUDA for k in node.keywords)
        return given or (isinstance(first, ast.Dict) and any(
            isinstance(k, ast.Constant) and k.value == _CUDA for k in first.keys))
    return False


def cuda_hits(tree: ast.AST, names: Names) -> Iterator[Hit]:
    for node in ast.walk(tree):
        if _sets_cuda(node, names):
            yield Hit(getattr(node, "lineno", 1), "cuda-visible-devices",
                      "the script sets CUDA_VISIBLE_DEVICES: it hides GPUs the instance has and the job pays for",
                      "remove it: the strategy uses every GPU of the instance; pick fewer GPUs with "
                      "compute.instance_type or compute.gpus_per_node instead")


# --- argparse against the hyperparameters ------------------------------------------------------------

def _flag(name: str) -> str:
    return f"--{name}"


def argparse_hits(args: ScriptArgs, job: JobContext, parse_at: tuple[str, int],
                  files_of: dict[int, str]) -> Iterator[tuple[str, Hit]]:
    """(file, hit) for the command line SageMaker gives a script whose parser cannot take it.

    `args` merges the files that run; `parse_at` is the (file, line) of the call that parses the
    command line; `files_of` maps an option (by identity) to its file.
    """
    parse_file, parse_line = parse_at
    if not args.makes_parser or not args.parses:
        return
    given = list(job.hyperparameters)
    sent = given + ([] if "model_dir" in given else ["model_dir"])
    if args.strict and args.complete:
        unknown = [n for n in sent if args.option_for(n) is None]
        if unknown:
            listed = ", ".join(_flag(n) for n in unknown)
            spec_given = [n for n in unknown if n != "model_dir"]
            ways = [f"declare {'them' if len(unknown) > 1 else 'it'} (parser.add_argument(\"{_flag(unknown[0])}\"))"]
            if spec_given:
                ways.append(f"remove {', '.join(spec_given)} from the spec's hyperparameters:")
            ways.append("parse with parser.parse_known_args()")
            fix = ", or ".join(ways)
            if "model_dir" in unknown:
                fix += ("; SageMaker passes --model_dir to every TensorFlow script: declare it even unused "
                        "(parser.add_argument(\"--model_dir\"))")
            yield parse_file, Hit(parse_line, "undeclared-hyperparameters",
                                  f"parse_args() ends the script on arguments its parser does not declare: {listed}",
                                  fix)
    for name in given:
        option = args.option_for(name)
        if option is not None and not option.takes_value:
            outcome = ("parse_args() fails on the value" if args.strict
                       else "the flag is set whatever the value says (false included)")
            yield files_of.get(id(option), parse_file), Hit(
                option.line, "flag-hyperparameter",
                f"{_flag(name)} is a flag ({option.action}), but SageMaker passes every hyperparameter as "
                f"`{_flag(name)} <value>`: {outcome}",
                "declare it with a value (e.g. type=lambda s: s.lower() in (\"1\", \"true\")), or remove it "
                "from the spec's hyperparameters:")
    for option in args.options:
        if not option.required:
            continue
        reached = option.name is not None and any(args.option_for(n) is option for n in sent)
        if reached:
            continue
        where = files_of.get(id(option), parse_file)
        if option.positional:
            yield where, Hit(option.line, "required-argument",
                             f"the parser requires the positional argument {option.dest}, but SageMaker passes "
                             "only `--name value` pairs: the script ends at parse",
                             f"make it an option (\"--{option.dest}\") with a default, or set it from the spec's "
                             "hyperparameters:")
        else:
            yield where, Hit(option.line, "required-argument",
                             f"the parser requires {option.flags[0]}, and the spec's hyperparameters do not set "
                             "it: the script ends at parse",
                             f"set hyperparameters: {{{option.name or option.dest}: ...}} in the spec, or give "
                             "the option a default")
