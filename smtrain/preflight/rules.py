"""The preflight scan's rules: each reads one parsed file (and what the job will be) and says where it breaks.

Two kinds. API rules hold for any file the bundle ships (a name TensorFlow removed is removed whoever
imports the file). Job rules need the job's shape (nodes, GPUs, strategy, TensorFlow version, wrap) and
hold for the files that run: the entry point and the modules of source_dir it imports.
"""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from smtrain.plan.distribution import HOROVOD_MAX_TF, version_tuple
from smtrain.preflight.names import Names, leaf, references
from smtrain.spec.python_file import walk
from smtrain.spec.script_args import ScriptArgs
from smtrain.spec.script_reads import conditional, parents_of, script_reads


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
    hyperparameters: tuple[str, ...] = ()  # the names the script receives, besides the contract's
    channels: tuple[str, ...] = ()
    tf_config: bool = False  # the container sets TF_CONFIG (multi_worker_mirrored, parameter_server on 2+ hosts)
    own_script: bool = False  # code.entry_point: the user's script runs (the bundled entrypoint reads channels itself)

    @property
    def several_processes(self) -> bool:
        return self.processes > 1


ERROR = "error"  # the job fails for certain when it reaches this line: validate, plan and submit refuse it
WARNING = "warning"  # it may fail, or waste the job: reported, the job goes on (--strict refuses it)


@dataclass(frozen=True)
class Hit:
    line: int
    rule: str
    message: str
    fix: str
    severity: str = WARNING


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
            yield Hit(line, "multi-gpu-model", "keras.utils.multi_gpu_model was removed in TensorFlow 2.4: "
                      "the import fails",
                      "remove the import and the multi_gpu_model(...) call, and train the model itself: with "
                      "code.wrap: true the wrap supplies the strategy over every GPU (or build the model in "
                      "smtrain_tf.strategy().scope())")
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
    for node in walk(tree):
        if isinstance(node, ast.Call):
            name = names.qualified(node.func) or ""
            last = name.rsplit(".", 1)[-1]
            if last in ("MirroredStrategy", "MultiWorkerMirroredStrategy", "ParameterServerStrategy"):
                yield last, node.lineno


# The wrap makes these, built without devices, return its own strategy (the job's); it cannot stand in for
# any other strategy, nor for one given its own devices or cluster: two strategies in one program fail
# ("Mixing different tf.distribute.Strategy objects") once there are several replicas.
WRAP_STANDS_FOR = ("MirroredStrategy", "MultiWorkerMirroredStrategy")
_REFUSED_UNDER_WRAP = {
    "OneDeviceStrategy": "remove it: the wrap's strategy already places the model (one device on a one-GPU job)",
    "TPUStrategy": "remove it: SageMaker's GPU instances have no TPU (the wrap's strategy covers their GPUs)",
    "ParameterServerStrategy": "run it unwrapped (code.wrap: false, distribution.strategy: parameter_server), or "
                               "build MultiWorkerMirroredStrategy() (under the wrap: the job's strategy)",
    "CentralStorageStrategy": "build MirroredStrategy() instead (under the wrap: the job's strategy), or run the "
                              "script unwrapped (code.wrap: false)",
}
_EXPLICIT = ("devices", "cluster_resolver")


@dataclass(frozen=True)
class BuiltStrategy:
    """A tf.distribute strategy the script builds itself."""

    name: str  # the class: MirroredStrategy, TPUStrategy, ...
    line: int
    explicit: bool  # given devices (or a cluster resolver) of its own

    @property
    def call(self) -> str:
        return f"{self.name}({'...' if self.explicit else ''})"


def _none(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value is None


def _placement_args(name: str, call: ast.Call) -> list[ast.expr]:
    """The arguments of a strategy's call that choose where it runs (devices, a cluster), as its signature
    places them: MirroredStrategy(devices, ...), MultiWorkerMirroredStrategy(cluster_resolver, ...),
    experimental.MultiWorkerMirroredStrategy(communication, cluster_resolver)."""
    position = {"MirroredStrategy": 0, "MultiWorkerMirroredStrategy": 1 if ".experimental." in name else 0}
    at = position.get(name.rsplit(".", 1)[-1])
    given = [k.value for k in call.keywords if k.arg in _EXPLICIT]
    if at is not None and len(call.args) > at:
        given.append(call.args[at])
    return given


def strategies_of(tree: ast.AST, names: Names, with_nodes: bool = False) -> Iterator[Any]:
    """Every tf.distribute strategy the file builds, with whether it names its own devices (BuiltStrategy;
    with_nodes: (BuiltStrategy, its call))."""
    known = (*WRAP_STANDS_FOR, *_REFUSED_UNDER_WRAP)
    for node in walk(tree):
        if isinstance(node, ast.Call):
            name = names.qualified(node.func) or ""
            last = name.rsplit(".", 1)[-1]
            if last in known and (name == last or "distribute" in name):
                explicit = any(not _none(arg) for arg in _placement_args(name, node))
                built = BuiltStrategy(last, node.lineno, explicit)
                yield (built, node) if with_nodes else built


def wrap_strategy_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    """Under the wrap: the strategies it cannot stand for, refused at their line before anything is paid."""
    if not job.wrapped:
        return
    parent_of = parents_of(tree)
    for built, node in strategies_of(tree, names, with_nodes=True):
        if built.name in WRAP_STANDS_FOR and not built.explicit:
            continue
        if built.name in WRAP_STANDS_FOR:
            what = "devices" if built.name == "MirroredStrategy" else "a cluster"
            message = (f"{built.name}(...) given {what} of its own in a wrapped script: the wrap runs the script "
                       f"inside the job's {job.strategy} strategy and stands in only for {built.name}() without "
                       "arguments; a second strategy fails (\"Mixing different tf.distribute.Strategy objects\")")
            fix = (f"build {built.name}() without arguments: under the wrap it is the job's strategy over every GPU "
                   "(choose GPUs with compute.instance_type or compute.gpus_per_node); or set code.wrap: false")
        else:
            message = (f"{built.name} in a wrapped script: the wrap runs the script inside the job's {job.strategy} "
                       "strategy and cannot stand in for this one; a second strategy fails (\"Mixing different "
                       "tf.distribute.Strategy objects\")")
            fix = _REFUSED_UNDER_WRAP[built.name]
        if conditional(node, parent_of):
            # `try: TPUStrategy(...) except ValueError: MirroredStrategy()`: on a GPU host the other branch
            # may be what runs; the script fails only if this line does.
            yield Hit(built.line, "strategy-under-wrap", f"if this line runs: {message}", fix, WARNING)
        else:
            yield Hit(built.line, "strategy-under-wrap", message, fix, ERROR)


def strategy_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    if job.wrapped:
        return  # the wrap's strategy stands in for the script's (wrap_strategy_hits: those it cannot)
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


HOROVOD_LAST_IMAGE = ".".join(map(str, HOROVOD_MAX_TF))  # the images dropped Horovod after it


def job_shape_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    """What the script reads that the job must provide: Horovod's mpirun (never under the wrap) and
    TF_CONFIG (set by the container for multi-worker strategies only)."""
    reads = script_reads(tree)
    if reads.horovod_line is not None and job.wrapped:
        # From 2.13 on the image has no Horovod: the import fails for certain. Up to 2.12 it imports, and each
        # process trains apart (hvd.size() is 1 without mpirun): wrong, but not a failure.
        fails = job.framework_version is None or version_tuple(job.framework_version)[:2] > HOROVOD_MAX_TF
        yield Hit(reads.horovod_line, "horovod-wrapped",
                  "the script imports horovod, but a wrapped script runs inside a tf.distribute strategy, not "
                  "under mpirun (and SageMaker's TensorFlow images since 2.13 have no Horovod: the import fails)",
                  f"run it as a Horovod job: code.wrap: false, distribution.strategy: horovod and "
                  f"tensorflow.version: \"{HOROVOD_LAST_IMAGE}\" (the last image with Horovod); or remove Horovod "
                  "from the script (hvd.init, DistributedOptimizer, its callbacks): the wrap supplies the strategy",
                  ERROR if fails else WARNING)
    if reads.tf_config_line is not None and not job.tf_config:
        shape = f"{job.strategy} on {job.nodes} node{'s' if job.nodes != 1 else ''}"
        yield Hit(reads.tf_config_line, "tf-config-unset",
                  f"the script reads TF_CONFIG, which the container sets only for multi_worker_mirrored (and "
                  f"parameter_server on 2 or more nodes); this job ({shape}) has none: the read fails (KeyError)",
                  "set compute.nodes: 2 (or more) and distribution.strategy: multi_worker_mirrored; or read it "
                  "with a default: json.loads(os.environ.get(\"TF_CONFIG\", \"{}\"))", ERROR)


# Receivers whose .fit is not Keras's (scikit-learn and friends).
_NOT_KERAS_FIT = re.compile(r"(?i)scaler|tokeni[sz]er|vectori[sz]er|pca|imputer|kmeans|sklearn")
_NOT_KERAS_MODULES = ("sklearn", "xgboost", "lightgbm", "catboost", "smtrain_tf", "numpy", "pandas")


def legacy_keras(tree: ast.AST, names: Names) -> bool:
    """Keras 2 on a new TensorFlow: tf_keras imported, or TF_USE_LEGACY_KERAS set by the script."""
    if any(m == "tf_keras" or m.startswith("tf_keras.") for m in names.imported):
        return True
    return any(isinstance(n, ast.Constant) and n.value == "TF_USE_LEGACY_KERAS" for n in walk(tree))


def fit_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    if job.wrapped or not job.keras3 or not names.uses("tensorflow", "keras") or legacy_keras(tree, names):
        return
    built = {s for s, _ in strategies_built(tree, names)}
    if job.strategy in MULTI_WORKER_STRATEGIES:
        strategy = "MultiWorkerMirroredStrategy" if job.strategy == "multi_worker_mirrored" else "ParameterServerStrategy"
    elif built & {"MultiWorkerMirroredStrategy", "ParameterServerStrategy"}:
        strategy = "MultiWorkerMirroredStrategy" if "MultiWorkerMirroredStrategy" in built else "ParameterServerStrategy"
    else:
        return
    for node in walk(tree):
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
                      "call smtrain_tf.fit(model, ...) instead (it runs every strategy), or run it with Keras 2: "
                      "tensorflow: {keras: 2}")


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
    for node in walk(tree):
        if _sets_cuda(node, names):
            yield Hit(getattr(node, "lineno", 1), "cuda-visible-devices",
                      "the script sets CUDA_VISIBLE_DEVICES: it hides GPUs the instance has and the job pays for",
                      "remove it: the strategy uses every GPU of the instance; pick fewer GPUs with "
                      "compute.instance_type or compute.gpus_per_node instead")


# --- argparse against the hyperparameters ------------------------------------------------------------

def _flag(name: str) -> str:
    return f"--{name}"


def did_you_mean(name: str, declared: Sequence[str]) -> str | None:
    """The declared option a hyperparameter name was meant for: the same name with - for _ (or the other
    way round) first, else the closest spelling."""
    same = [d for d in declared if d.replace("-", "_") == name.replace("-", "_")]
    if same:
        return same[0]
    close = difflib.get_close_matches(name, declared, n=1, cutoff=0.75)
    return close[0] if close else None


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
            declared = [f[2:] for o in args.options for f in o.long_flags]
            # SageMaker's own --model_dir cannot be renamed: no "did you mean" for it (its fix follows).
            meant = {n: m for n in unknown if n != "model_dir" and (m := did_you_mean(n, declared)) is not None}
            listed = ", ".join(_flag(n) + (f" (did you mean {_flag(meant[n])}?)" if n in meant else "")
                               for n in unknown)
            spec_given = [n for n in unknown if n != "model_dir"]
            renames = [f"{n} -> {meant[n]}" for n in spec_given if n in meant]
            ways = [f"rename in the spec's hyperparameters: {', '.join(renames)}"] if renames else []
            ways.append(f"declare {'them' if len(unknown) > 1 else 'it'} (parser.add_argument(\"{_flag(unknown[0])}\"))")
            if spec_given:
                ways.append(f"remove {', '.join(spec_given)} from the spec's hyperparameters:")
            ways.append("parse with parser.parse_known_args()")
            fix = ", or ".join(ways)
            if "model_dir" in unknown:
                fix += ("; SageMaker passes --model_dir to every TensorFlow script: declare it even unused "
                        "(parser.add_argument(\"--model_dir\"))")
            # Certain when every parse is parse_args() and every option is read here: argparse exits 2 at
            # that line, on SageMaker and here. A parent parser (parents=[...]) may declare what is not read.
            certain = all(p.strict for p in args.parses) and not args.inherits
            yield parse_file, Hit(parse_line, "undeclared-hyperparameters",
                                  f"parse_args() ends the script on arguments its parser does not declare: {listed}",
                                  fix, ERROR if certain else WARNING)
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
