"""`smtrain init`: a starting job spec for a script (or a notebook) the user already has, as commented YAML text.

What the script says is read with ast (script_args.py), never by running it: the options its argparse
declares become `hyperparameters:` with their literal defaults, the channels it reads (`SM_CHANNEL_X`,
`smtrain_tf.channel("x")`) become `inputs:` placeholders. The rest are safe starting values: one A10G,
one node, the unchanged script wrapped in the strategy smtrain picks; what the script imports and reads
(script_reads.py) changes that where it must: a Horovod script gets a horovod job on the last image with
Horovod, unwrapped; a script that reads TF_CONFIG gets 2 nodes of multi_worker_mirrored (only those set it).
Placeholders (role, bucket) are marked; the command validates the text it wrote. A notebook (train.ipynb) is read
as the script made from its code cells (notebook.py) and becomes the entry point as it is; one that cannot become
a script is refused before anything is written (notebook_refusal).
"""

from __future__ import annotations

import ast
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from smtrain.spec import patterns
from smtrain.spec.fields import is_line
from smtrain.spec.notebook import NotebookError, is_notebook, notebook_script, read_code
from smtrain.spec.python_file import walk
from smtrain.spec.script_args import MISSING, ScriptArgs, script_args
from smtrain.spec.script_reads import ScriptReads, script_reads

PLACEHOLDER_ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
PLACEHOLDER_BUCKET = "s3://my-bucket"
DEFAULT_GPU = "A10G"  # ml.g5.xlarge: one 24GB GPU, among the cheapest that runs today's Keras models
# SageMaker's TensorFlow images dropped Horovod in 2.13 (smtrain.plan.distribution.HOROVOD_MAX_TF): a
# Horovod script gets the last image that has it.
HOROVOD_TF_VERSION = "2.12"
REQUIREMENTS = "requirements.txt"
# Directory names that say nothing about the job: the name comes from the one above them.
_GENERIC_DIRS = frozenset({"src", "code", "scripts", "script", "source", "training", "train", "app", "bin", "."})
_GENERIC_STEMS = frozenset({"train", "main", "run", "training", "script", "__main__", "entry", "entrypoint"})
_COMMENT_COLUMN = 33
_MAX_VALUE_CHARS = 1000  # a longer default is data, not a setting


@dataclass(frozen=True)
class ScriptFacts:
    """What `init` learns from the script."""

    args: ScriptArgs = field(default_factory=ScriptArgs)
    channels: tuple[str, ...] = ()
    parse_error: str | None = None  # the script does not parse: nothing read from it
    reads: ScriptReads = field(default_factory=ScriptReads)  # Horovod, TF_CONFIG: the job's shape

    @property
    def horovod(self) -> bool:
        return self.reads.horovod_line is not None

    @property
    def needs_tf_config(self) -> bool:
        return self.reads.tf_config_line is not None and not self.horovod


def _channels(tree: ast.AST) -> tuple[str, ...]:
    """The channels the script reads, in the order it first names them."""
    found: list[tuple[int, str]] = []
    for node in walk(tree):
        name = None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            match = re.fullmatch(r"SM_CHANNEL_([A-Z0-9_]+)", node.value)
            name = match.group(1).lower() if match else None
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "channel"
              and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            name = node.args[0].value
        if name and patterns.CHANNEL.matches(name):
            found.append((getattr(node, "lineno", 0), name))
    return tuple(dict.fromkeys(name for _, name in sorted(found)))


def read_script(path: Path) -> ScriptFacts:
    """What init learns from the script; nothing (and why) where it cannot be read: a syntax error, or a
    file too large or too deeply nested to read (python_file.py)."""
    try:
        read = read_code(path)  # a notebook: the script made from its code cells
    except OSError as exc:
        return ScriptFacts(parse_error=f"cannot read it: {exc.strerror or exc}")
    if read.syntax_error is not None:
        exc = read.syntax_error
        return ScriptFacts(parse_error=f"{exc.msg or exc}" + (f" (line {exc.lineno})" if exc.lineno else ""))
    if read.tree is None:
        return ScriptFacts(parse_error=read.skipped)
    try:
        return ScriptFacts(script_args(read.tree), _channels(read.tree), reads=script_reads(read.tree))
    except (RecursionError, MemoryError):  # bounded by python_file.MAX_DEPTH; the guard behind it
        return ScriptFacts(parse_error="too deeply nested to read")


def notebook_refusal(script: Path, shown: str) -> str | None:
    """Why the notebook `script` cannot be a job's entry point as it is, every problem at its cell and line (as
    `validate` names them, the notebook called `shown`); None for a notebook that can, and for a script. init
    says it before writing anything: a spec written for a notebook that no spec can run would only be in the way
    of the next `smtrain init` (it would need --force)."""
    if not is_notebook(script.name):
        return None
    try:
        notebook_script(script)
    except NotebookError as exc:
        n = len(exc.problems)
        return "\n".join([*(p.render(shown) for p in exc.problems),
                          f"{n} problem{'s' if n != 1 else ''} in {shown}; nothing written: fix the notebook, then "
                          f"run smtrain init again"])
    return None


def job_name(script: Path) -> str:
    """A job-name prefix from the script's directory (and its file name, when that says more than train.py)."""
    script = script.resolve()
    folder = script.parent
    while folder.name.lower() in _GENERIC_DIRS and folder.parent != folder:
        folder = folder.parent
    words = [folder.name] if folder.name else []
    if script.stem.lower() not in _GENERIC_STEMS:
        words.append(script.stem)
    name = re.sub(r"[^a-z0-9]+", "-", "-".join(words).lower()).strip("-")[:42].strip("-")
    return name if patterns.NAME.matches(name) else "my-job"


def _scalar(value: Any) -> str:
    """One YAML scalar as the loader reads it back: quoted where YAML would retype it, `${` kept literal."""
    if isinstance(value, str):
        value = value.replace("${", "$${")  # the loader expands ${VAR}
    text = yaml.safe_dump(value, allow_unicode=True, width=10**6, default_flow_style=True)
    return text.removesuffix("\n...\n").rstrip("\n")


def _usable(value: Any) -> bool:
    if isinstance(value, bool) or isinstance(value, int) and abs(value) <= 2**53 - 1:
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    return isinstance(value, str) and is_line(value) and len(value) <= _MAX_VALUE_CHARS


@dataclass(frozen=True)
class Hyperparameters:
    values: dict[str, Any]
    flags: tuple[str, ...]  # options that take no value: `--name value` cannot set them
    without_default: tuple[str, ...]  # no literal default: the script computes it, or needs it given
    required: tuple[str, ...]


def hyperparameters(args: ScriptArgs) -> Hyperparameters:
    """The declared options as hyperparameters: those with a literal default, and what was left out."""
    values: dict[str, Any] = {}
    flags, missing, required = [], [], []
    for option in args.options:
        name = option.name
        if option.positional or name is None:
            if option.required:
                required.append(option.dest)
            continue
        if name == "model_dir" or name.startswith("sagemaker_") or not is_line(name) or option.action in (
                "help", "version"):
            continue  # every job's request sets model_dir; sagemaker_* names are SageMaker's
        flag = f"--{name}"
        if not option.takes_value:
            flags.append(flag)
        elif option.default is MISSING or option.default is None or not _usable(option.default):
            (required if option.required else missing).append(flag)
        elif name not in values:
            values[name] = option.default
    return Hyperparameters(values, tuple(flags), tuple(missing), tuple(required))


def _line(text: str, comment: str = "") -> str:
    if not comment:
        return text
    return f"{text.ljust(_COMMENT_COLUMN - 1)} # {comment}" if len(text) < _COMMENT_COLUMN - 1 else f"{text}  # {comment}"


def starter_text(script: Path, spec_path: Path, facts: ScriptFacts, *, tf_version: str, region: str | None,
                 gpu: str = DEFAULT_GPU) -> str:
    """The commented job spec for `script`, to be written at `spec_path`."""
    script, spec_path = script.resolve(), spec_path.resolve()
    source_dir = Path(os.path.relpath(script.parent, spec_path.parent)).as_posix()
    region = region if region and patterns.REGION.matches(region) else "us-east-1"
    hps = hyperparameters(facts.args)
    spec_name = spec_path.name
    if facts.horovod:
        tf_version = HOROVOD_TF_VERSION
        version_note = f"the script imports horovod: {HOROVOD_TF_VERSION} is the last image that has it"
    else:
        version_note = "the SageMaker TensorFlow training image; Keras 3 from 2.16"
    nodes = 2 if facts.needs_tf_config else 1
    nodes_note = (f"the script reads TF_CONFIG (line {facts.reads.tf_config_line}), which the container sets "
                  "for several nodes only" if facts.needs_tf_config else
                  "more nodes: Horovod's processes on each" if facts.horovod else
                  "more nodes: MultiWorkerMirroredStrategy across them")
    out = [
        f"# A starting job spec for {script.name}, written by `smtrain init`. Check it: smtrain validate {spec_name}",
        "# Every field: the docs' \"The job spec\"; for your editor: smtrain schema > smtrain.schema.json",
        _line(f"name: {job_name(script)}", "job-name prefix: SageMaker's job is <name>-<time>-<4 hex>"),
        "# Replace with your SageMaker execution role: this placeholder passes `validate`, not SageMaker.",
        f"role: {PLACEHOLDER_ROLE}",
        _line(f"region: {region}", "where the job runs (else AWS_REGION / ~/.aws/config)"),
        "tensorflow:",
        _line(f"  version: {_scalar(tf_version)}", version_note),
        *_keras_lines(facts, tf_version),
        _line("compute:", "smtrain picks the cheapest instance that fits: `smtrain instances`"),
        _line(f"  gpu: {gpu}", "GPU model: T4, A10G, L4, L40S, V100, A100, H100, ..."),
        _line("  gpus_per_node: 1", "more GPUs on one node: one Horovod process each" if facts.horovod else
              "more GPUs on one node: MirroredStrategy over them"),
        _line(f"  nodes: {nodes}", nodes_note),
        _line("  max_run: 1d", "the job is stopped after this long"),
    ]
    if facts.horovod:
        out += ["distribution:",
                _line("  strategy: horovod", f"the script imports horovod (line {facts.reads.horovod_line}): "
                      "mpirun starts one process per GPU")]
    elif facts.needs_tf_config:
        out += ["distribution:",
                _line("  strategy: multi_worker_mirrored", "TF_CONFIG names every node's worker for the script")]
    out += [
        "code:",
        _line(f"  source_dir: {_scalar(source_dir)}", "your code, relative to this file: shipped with the job"),
        _line(f"  entry_point: {_scalar(script.name)}", "the notebook whose code cells the job runs, in source_dir"
              if is_notebook(script.name) else "the script SageMaker runs, in source_dir"),
    ]
    if (script.parent / REQUIREMENTS).is_file():
        out.append(_line(f"  requirements: {REQUIREMENTS}", "pip-installed in the container before the script runs"))
    if facts.horovod:
        out.append("  # not wrapped: a Horovod script runs under mpirun with its own hvd.init() and optimizer")
    else:
        out += [
            _line("  wrap: true", "run the script unchanged inside the strategy smtrain picks; model.fit"),
            _line("", "and model.save made right for several GPUs and nodes (the docs' \"Your own script\")"),
        ]
    if facts.channels:
        out.append(_line("inputs:", "each channel is a directory in the container: SM_CHANNEL_<NAME>"))
        for channel in facts.channels:
            out.append(_line(f"  {_scalar(channel)}: {PLACEHOLDER_BUCKET}/data/{channel}",
                             "replace: your data (s3://, or a local directory for --local)"))
    else:
        out += ["# inputs:                         # the script reads no SM_CHANNEL_* variable; a channel:",
                f"#   train: {PLACEHOLDER_BUCKET}/data/train     # a directory in the container: SM_CHANNEL_TRAIN"]
    out.append(_line(f"output: {PLACEHOLDER_BUCKET}/smtrain",
                     "replace: where the model, output and code go (s3://, or a local directory)"))
    out += _hyperparameter_lines(hps, facts)
    return "\n".join(line.rstrip() for line in out) + "\n"


def _keras_lines(facts: ScriptFacts, tf_version: str) -> list[str]:
    """`keras: 2` where the code reads as Keras 2 and the image's tf.keras is Keras 3 (TensorFlow 2.16+)."""
    parts = [int(p) for p in tf_version.split(".")[:2] if p.isdigit()]
    if facts.reads.keras2 is None or tuple(parts) < (2, 16):
        return []
    line, form = facts.reads.keras2
    return [_line("  keras: 2", f"your code reads as Keras 2 ({form}, line {line}): run as written on tf_keras;"),
            _line("", "without this line, `smtrain validate` names each line Keras 3 refuses")]


def _hyperparameter_lines(hps: Hyperparameters, facts: ScriptFacts) -> list[str]:
    notes = []
    if facts.parse_error:
        notes.append(f"the script could not be read ({facts.parse_error}): add its options here")
    elif not facts.args.options:
        notes.append("the script declares no argparse option: add `name: value` pairs for it here")
    if hps.required:
        notes.append("required, set them: " + ", ".join(hps.required))
    if hps.without_default:
        notes.append("no literal default, left out: " + ", ".join(hps.without_default))
    if hps.flags:
        notes.append("flags, left out (SageMaker passes `--name value`; a flag takes no value): "
                     + ", ".join(hps.flags))
    head = _line("hyperparameters:" + ("" if hps.values else " {}"),
                 "passed to the script as `--name value`: its argparse defaults")
    lines = [head]
    lines += [f"  {_scalar(name)}: {_scalar(value)}" for name, value in hps.values.items()]
    indent = "  " if hps.values else ""
    lines += [f"{indent}# {note}" for note in notes]
    return lines
