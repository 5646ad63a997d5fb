"""The preflight rules about where a script reads and writes: paths of the author's machine, and a model
saved by every worker of a multi-process job.

A path is "local" when a string literal that starts it is absolute or under a home directory and not
under /opt/ml (the container's contract) or a system directory every image has (/tmp, /usr, ...). It
counts where it reaches a call that loads or saves (open, np.load, model.save, a dataset from files, a
checkpoint or log callback), directly, through os.path.join / pathlib / an f-string, or through a
variable assigned once; and as an argparse default. A literal given as the fallback of
`os.environ.get(...)` / `os.getenv(...)` is a default for runs elsewhere, not a hard-coded path.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from smtrain.preflight.names import Names, leaf, parents
from smtrain.preflight.rules import MPI_STRATEGIES, Hit, JobContext
from smtrain.spec.problems import brief
from smtrain.spec.python_file import walk

LOADS = frozenset({
    "open", "load", "loadtxt", "genfromtxt", "fromfile", "memmap", "read_csv", "read_table", "read_parquet",
    "read_json", "read_pickle", "read_excel", "read_feather", "read_hdf", "TFRecordDataset", "TextLineDataset",
    "FixedLengthRecordDataset", "list_files", "make_csv_dataset", "CsvDataset", "image_dataset_from_directory",
    "text_dataset_from_directory", "audio_dataset_from_directory", "flow_from_directory", "load_model",
    "load_weights", "load_img", "imread", "GFile", "listdir", "scandir", "walk", "glob", "iglob", "File",
    "from_pretrained", "load_dataset", "restore", "copy", "copyfile", "copytree"})
SAVES = frozenset({"save", "save_weights", "save_model", "export", "savez", "savez_compressed", "savetxt",
                   "to_csv", "to_parquet", "to_json", "to_pickle", "save_pretrained"})
CHECKPOINTS = frozenset({"ModelCheckpoint", "BackupAndRestore", "CheckpointManager"})
LOGS = frozenset({"TensorBoard", "CSVLogger", "create_file_writer", "FileWriter", "savefig"})
_IO = LOADS | SAVES | CHECKPOINTS | LOGS

# Calls that build a path from their first argument.
_PATH_BUILDERS = frozenset({"join", "Path", "PurePath", "PosixPath", "expanduser", "abspath", "realpath",
                            "normpath", "str", "fspath", "resolve"})
_ENV_GETS = frozenset({"os.environ.get", "os.getenv", "os.environ.setdefault"})
# Present in every image: reading or writing there is no mistake.
_SYSTEM_ROOTS = frozenset({"tmp", "dev", "proc", "sys", "usr", "etc", "var", "run", "bin", "sbin", "lib",
                           "lib64"})
_KEYWORDS_NOT_PATHS = frozenset({"mode", "encoding", "errors", "newline", "sep", "delimiter", "format",
                                 "save_format", "monitor", "compression", "compression_type"})


def is_local_path(text: str) -> bool:
    if not text or len(text) > 4096 or "://" in text or not text.isprintable():
        return False
    if text == "~" or text.startswith(("~/", "$HOME", "${HOME}")):
        return True
    if re.match(r"[A-Za-z]:[\\/]", text):  # a Windows drive
        return True
    if not text.startswith("/") or text.startswith("//") or not re.search(r"[A-Za-z]", text):
        return False
    if text == "/opt/ml" or text.startswith("/opt/ml/"):
        return False
    return text.split("/")[1] not in _SYSTEM_ROOTS


class _Paths:
    """The local path an expression starts with, if any; variables assigned a local path once."""

    def __init__(self, tree: ast.AST, names: Names) -> None:
        self.names = names
        values_of: dict[str, list[ast.expr]] = {}
        for node in walk(tree):
            if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for target in targets:
                    if isinstance(target, ast.Name):
                        values_of.setdefault(target.id, []).append(node.value)
        assigned = {name: [self.start(v, {}) for v in values] for name, values in values_of.items()}
        self.variables = self._once(assigned)
        # Once more with those: `TRAIN = DATA + "/train"` after `DATA = "/home/me"`.
        assigned = {name: [self.start(v, self.variables) for v in values] for name, values in values_of.items()}
        self.variables = self._once(assigned)

    @staticmethod
    def _once(assigned: dict[str, list[str | None]]) -> dict[str, str]:
        # A name counts only when every assignment gives the same local path (no `if on_sagemaker:` branch).
        return {name: values[0] for name, values in assigned.items()
                if values[0] is not None and all(v == values[0] for v in values)}

    def _is_env_get(self, node: ast.Call) -> bool:
        return (self.names.qualified(node.func) or "") in _ENV_GETS

    def start(self, node: ast.AST, variables: dict[str, str] | None = None) -> str | None:
        variables = self.variables if variables is None else variables
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value if is_local_path(node.value) else None
        if isinstance(node, ast.JoinedStr) and node.values:
            return self.start(node.values[0], variables)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
            return self.start(node.left, variables)
        if isinstance(node, ast.Name):
            return variables.get(node.id)
        if isinstance(node, ast.Call):
            if self._is_env_get(node):
                return None
            if (self.names.qualified(node.func) or "").endswith("Path.home"):
                return "Path.home()"
            if isinstance(node.func, ast.Attribute) and node.func.attr in _PATH_BUILDERS - {"join"}:
                if not node.args:  # Path("/home/x").resolve(): the path is the receiver
                    return self.start(node.func.value, variables)
            if leaf(node.func) in _PATH_BUILDERS and node.args:
                if leaf(node.func) == "join" and isinstance(node.func, ast.Attribute) and isinstance(
                        node.func.value, ast.Constant):
                    return None  # "/".join(parts): the literal is a separator
                return self.start(node.args[0], variables)
        return None


def _kind(call: ast.Call, function: str) -> str:
    if function == "open":
        mode = call.args[1] if len(call.args) > 1 else next((k.value for k in call.keywords if k.arg == "mode"), None)
        writes = isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax")
        return "save" if writes else "load"
    if function in SAVES:
        return "save"
    if function in CHECKPOINTS:
        return "checkpoint"
    if function in LOGS:
        return "logs"
    return "load"


def _fix(kind: str, job: JobContext) -> str:
    channel = job.channels[0] if job.channels else "train"
    return {
        "load": f"read the data from its channel: os.environ[\"SM_CHANNEL_{channel.upper()}\"] (or "
                f"smtrain_tf.channel(\"{channel}\")), with inputs.{channel} in the spec naming the data",
        "save": "save under os.environ[\"SM_MODEL_DIR\"] (or smtrain_tf.model_dir()): that directory becomes "
                "the job's model.tar.gz",
        "checkpoint": "write checkpoints to /opt/ml/checkpoints (smtrain_tf.checkpoint_dir()), which the spec's "
                      "checkpoints: keeps in S3",
        "logs": "write logs and other outputs under os.environ[\"SM_OUTPUT_DATA_DIR\"] (uploaded as output.tar.gz)",
    }[kind]


def _message(path: str, kind: str) -> str:
    where = f"hard-coded local path {brief(path)}"
    if kind == "load":
        return f"{where}: the SageMaker container has no such path"
    return f"{where}: in the SageMaker container, what is written there is lost when the job ends"


def path_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    paths = _Paths(tree, names)
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = leaf(node.func)
        if function == "add_argument":
            default = next((k.value for k in node.keywords if k.arg == "default"), None)
            found = paths.start(default) if default is not None else None
            if found:
                dest = " ".join(a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str))
                kind = "checkpoint" if re.search(r"(?i)ckpt|checkpoint", dest) else (
                    "save" if re.search(r"(?i)model|output|save|export", dest) else "load")
                yield Hit(node.lineno, "local-path", _message(found, kind), _fix(kind, job))
            continue
        if function not in _IO:
            continue
        kind = _kind(node, function)
        values = [*node.args, *(k.value for k in node.keywords if k.arg not in _KEYWORDS_NOT_PATHS)]
        for value in values:
            found = paths.start(value)
            if found:
                yield Hit(node.lineno, "local-path", _message(found, kind), _fix(kind, job))
                break


# --- the model saved by every worker ---------------------------------------------------------------

# Receivers whose save is no model's (a checkpoint, an image, a figure, a data frame, an array).
NOT_A_MODEL = re.compile(r"(?i)ckpt|checkpoint|manager|img|image|fig|plot|plt|writer|^df$|frame|tokeni[sz]er"
                          r"|array|^arr$|^np$")
NOT_MODEL_MODULES = ("numpy", "pandas", "torch", "joblib", "pickle", "json", "PIL", "matplotlib", "h5py",
                      "smtrain_tf", "shutil", "yaml")
# What a condition that picks one process says: the chief, a rank, a task index, SageMaker's first host.
_GUARD = re.compile(r"(?i)chief|rank|task_index|task_id|task_type|['\"]task['\"]|worker_index|worker_id|primary"
                    r"|master|leader|is_main|current_host|hosts\[0\]")
_SAVE_METHODS = ("save", "save_weights", "export")
_SAVE_FUNCTIONS = ("tensorflow.saved_model.save", "keras.models.save_model", "keras.saving.save_model")


def may_be_a_model(receiver: ast.expr, names: Names) -> bool:
    """Whether the object a `.save(...)` is called on may be a Keras model: not a module whose save()
    takes any file (numpy, wandb...), not TensorFlow itself, not named like an image, a writer, a frame."""
    owner = names.qualified(receiver.func if isinstance(receiver, ast.Call) else receiver) or ""
    return not (owner.split(".")[0] in NOT_MODEL_MODULES or owner.startswith("tensorflow")
                or NOT_A_MODEL.search(leaf(receiver)))


def _saves_a_model(call: ast.Call, names: Names) -> bool:
    if (names.qualified(call.func) or "") in _SAVE_FUNCTIONS:
        return True
    if not isinstance(call.func, ast.Attribute) or call.func.attr not in _SAVE_METHODS:
        return False
    if not may_be_a_model(call.func.value, names):
        return False
    return bool(call.args or call.keywords)


def _ends_early(statement: ast.stmt) -> bool:
    """`if not is_chief: return` (or raise, continue, sys.exit()): what follows runs on the chief only."""
    if not (isinstance(statement, ast.If) and _GUARD.search(ast.unparse(statement.test))) or not statement.body:
        return False
    last = statement.body[-1]
    if isinstance(last, (ast.Return, ast.Raise, ast.Continue, ast.Break)):
        return True
    return isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) and leaf(last.value.func) in (
        "exit", "_exit")


def _calls_of(function: str, tree: ast.AST) -> list[ast.Call]:
    """Calls of a function or method of this name: `save_model(...)`, `self.save_model(...)`."""
    return [n for n in walk(tree) if isinstance(n, ast.Call) and leaf(n.func) == function
            and isinstance(n.func, (ast.Name, ast.Attribute))]


def _guarded(node: ast.AST, tree: ast.AST, parent_of: dict[ast.AST, ast.AST], depth: int = 0) -> bool:
    """Whether only some process gets here: under a condition on the chief or the rank, after an early
    return of the others, or in a function that is called only so (followed three calls deep)."""
    child, parent = node, parent_of.get(node)
    while parent is not None:
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and child is not parent.test and _GUARD.search(
                ast.unparse(parent.test)):
            return True
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            if _GUARD.search(parent.name):
                return True
            calls = _calls_of(parent.name, tree) if depth < 3 else []
            if calls and all(_guarded(c, tree, parent_of, depth + 1) for c in calls):
                return True
        for body in ("body", "orelse", "finalbody"):
            block = getattr(parent, body, None)
            if isinstance(block, list) and child in block:
                if any(_ends_early(s) for s in block[: block.index(child)]):
                    return True
        child, parent = parent, parent_of.get(parent)
    return False


def save_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    if job.wrapped or not job.several_processes:
        return
    parent_of = parents(tree)
    if job.strategy in MPI_STRATEGIES:
        fix = ("save on rank 0 only (if hvd.rank() == 0:, or if smtrain_tf.is_chief():), or call "
               "smtrain_tf.save(model)")
        who = f"every one of the {job.processes} {job.strategy} processes"
    else:
        fix = ("call smtrain_tf.save(model) on every worker: only the chief writes SM_MODEL_DIR, the others "
               "take part in reading the weights and write nothing")
        if job.strategy != "parameter_server":
            fix += "; or set code.wrap: true, which sends the other workers' saves to a temporary directory"
        who = f"every one of the {job.nodes} workers"
    for node in walk(tree):
        if isinstance(node, ast.Call) and _saves_a_model(node, names) and not _guarded(node, tree, parent_of):
            yield Hit(node.lineno, "save-every-worker",
                      f"{who} saves the model here: they write over one another in SM_MODEL_DIR, so the "
                      "job's model may be any worker's, or a mix", fix)


# --- args.model_dir: an s3:// URI on SageMaker ----------------------------------------------------------

# The SDK (and smtrain) passes `--model_dir s3://<output>/<job>/model` to every TensorFlow script but
# an MPI job's (whose is /opt/ml/model): the script's argparse value is that URI, not a directory.


class _FromOption:
    """Whether an expression is built from one argparse value (`args.model_dir`, os.path.join of it, an
    f-string or Path starting with it, or a variable assigned once from it)."""

    def __init__(self, tree: ast.AST, dest: str) -> None:
        self.dest = dest
        values: dict[str, list[ast.expr]] = {}
        for node in walk(tree):
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                values.setdefault(node.targets[0].id, []).append(node.value)
        self.variables: set[str] = set()
        for _ in range(2):  # `MODEL = args.model_dir; PATH = os.path.join(MODEL, "m")`
            self.variables |= {name for name, found in values.items() if all(self.built(v) for v in found)}

    def built(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr == self.dest and isinstance(node.value, ast.Name)
        if isinstance(node, ast.Name):
            return node.id in self.variables
        if isinstance(node, ast.JoinedStr):
            first = node.values[0] if node.values else None
            return isinstance(first, ast.FormattedValue) and self.built(first.value)
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Div)):
            return self.built(node.left)
        if isinstance(node, ast.Call) and leaf(node.func) in _PATH_BUILDERS and node.args:
            return self.built(node.args[0])
        return False


def model_dir_hits(tree: ast.AST, names: Names, job: JobContext, dest: str | None) -> Iterator[Hit]:
    """`dest`: the argparse destination `--model_dir` reaches in the script (None: not declared).

    A warning, not an error: whether the write fails depends on what the image loads (TensorFlow reads
    s3:// itself only up to 2.5; later only with tensorflow-io's file system), but in no case does it
    reach the job's model.tar.gz, which holds what is under SM_MODEL_DIR.
    """
    if dest is None or job.strategy in MPI_STRATEGIES:
        return
    built = _FromOption(tree, dest)
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        function = leaf(node.func)
        if function not in _IO and function not in ("makedirs", "mkdir"):
            continue
        values = [*node.args, *(k.value for k in node.keywords if k.arg not in _KEYWORDS_NOT_PATHS)]
        if any(built.built(v) for v in values):
            yield Hit(node.lineno, "model-dir-s3",
                      f"args.{dest} is what SageMaker passes as --model_dir: an s3:// URI (s3://<output>/<job>/"
                      "model), not a directory of the container: a save there fails (no S3 file system in "
                      "TensorFlow since 2.6 without tensorflow-io) or writes where the job's model.tar.gz "
                      "never looks",
                      "save under os.environ[\"SM_MODEL_DIR\"] (/opt/ml/model, uploaded as model.tar.gz): e.g. "
                      "parser.add_argument(\"--sm-model-dir\", default=os.environ.get(\"SM_MODEL_DIR\")) and "
                      "save to args.sm_model_dir")


# --- literal /opt/ml paths -------------------------------------------------------------------------

# The variable the container (and a local run) sets for each place under /opt/ml, longest first.
_OPT_ML_VARIABLES = (("/opt/ml/input/data/", "SM_CHANNEL_<NAME>"), ("/opt/ml/output/data", "SM_OUTPUT_DATA_DIR"),
                     ("/opt/ml/model", "SM_MODEL_DIR"), ("/opt/ml/output", "SM_OUTPUT_DIR"),
                     ("/opt/ml/input/config", "SM_INPUT_CONFIG_DIR"), ("/opt/ml/input", "SM_INPUT_DIR"),
                     ("/opt/ml/checkpoints", None))


def opt_ml_hits(tree: ast.AST, names: Names) -> Iterator[Hit]:
    """A path under /opt/ml written as a literal: right in SageMaker's container, but `submit --local` runs
    the script on this machine, where it reads or writes this machine's /opt/ml instead of the job's."""
    paths = _Paths(tree, names)
    parent_of = parents(tree)
    for node in walk(tree):
        if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
            continue
        text = node.value
        if not (text == "/opt/ml" or text.startswith("/opt/ml/")):
            continue
        holder = parent_of.get(node)
        if isinstance(holder, ast.Expr):
            continue  # a docstring
        if isinstance(holder, ast.Call) and paths._is_env_get(holder) and holder.args and holder.args[0] is not node:
            continue  # os.environ.get("SM_MODEL_DIR", "/opt/ml/model"): the variable wins wherever it is set
        variable = next((v for prefix, v in _OPT_ML_VARIABLES if text.startswith(prefix)), None)
        if text.startswith("/opt/ml/checkpoints"):
            fix = "take the directory from smtrain_tf.checkpoint_dir() (each local host gets its own)"
        elif variable:
            fix = (f"read it from os.environ[\"{variable}\"]" if "<" not in variable else
                   "read it from os.environ[\"SM_CHANNEL_<NAME>\"] (or smtrain_tf.channel(name))")
        else:
            fix = "take it from the SM_* variable for that place (SM_MODEL_DIR, SM_OUTPUT_DATA_DIR, SM_CHANNEL_<NAME>)"
        yield Hit(node.lineno, "opt-ml-path",
                  f"hard-coded {brief(text)}: right in SageMaker's container, but a local run (submit --local) "
                  "would use this machine's /opt/ml, not the job's directories", fix)
