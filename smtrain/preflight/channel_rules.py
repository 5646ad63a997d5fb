"""The preflight rule on input channels: a channel the script reads that the spec's `inputs` do not give.

SageMaker sets SM_CHANNEL_<NAME> (and fills /opt/ml/input/data/<name>) for the channels of the job's
request only. A script that reads another channel:
- `os.environ["SM_CHANNEL_X"]` or `smtrain_tf.channel("x")`: fails there for certain (KeyError; the
  helper's own refusal): an error, or a warning where the line may not run (a branch, a handled try,
  as `if args.validate:`);
- `os.environ.get("SM_CHANNEL_X")`, `os.getenv(...)`: gets None (or its fallback, often a directory that
  `source_dir` ships beside the code, so the job trains on that copy without a word): a warning.
The name is compared as SageMaker makes the variable: the channel's name in upper case.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from smtrain.preflight.names import Names, parents
from smtrain.preflight.rules import ERROR, WARNING, Hit, JobContext
from smtrain.spec.python_file import walk
from smtrain.spec.script_reads import conditional

_VARIABLE = re.compile(r"SM_CHANNEL_([A-Za-z0-9_.-]+)")
_ENV_GETS = frozenset({"os.environ.get", "os.getenv"})


def _variable(node: ast.AST) -> str | None:
    """The channel of a literal "SM_CHANNEL_X", as written after the prefix."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        found = _VARIABLE.fullmatch(node.value)
        return found.group(1) if found else None
    return None


def _reads(tree: ast.AST, names: Names) -> Iterator[tuple[ast.AST, str, str, bool]]:
    """(node, channel as written, how it is read, failing for certain without the channel) of each read."""
    for node in walk(tree):
        if isinstance(node, ast.Subscript) and (names.qualified(node.value) or "") == "os.environ":
            channel = _variable(node.slice)
            if channel is not None:
                yield node, channel, f'os.environ["SM_CHANNEL_{channel}"]', True
        elif isinstance(node, ast.Call) and node.args:
            called = names.qualified(node.func) or ""
            channel = _variable(node.args[0])
            if channel is not None and called in _ENV_GETS:
                fallback = len(node.args) > 1 or any(k.arg == "default" for k in node.keywords)
                how = f'{called}("SM_CHANNEL_{channel}"{", ..." if fallback else ""})'
                yield node, channel, how, False
            elif (called.endswith("smtrain_tf.channel") and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)):
                yield node, node.args[0].value, f'smtrain_tf.channel("{node.args[0].value}")', True


def channel_hits(tree: ast.AST, names: Names, job: JobContext) -> Iterator[Hit]:
    given = {name.upper() for name in job.channels}
    parent_of = parents(tree)
    for node, channel, how, fails in _reads(tree, names):
        if channel.upper() in given:
            continue
        certain = fails and not conditional(node, parent_of)
        listed = ", ".join(sorted(job.channels)) or "none"
        outcome = ("fails here (SageMaker sets SM_CHANNEL_<NAME> for the request's channels only)" if fails else
                   "gets None or its fallback here (SageMaker sets SM_CHANNEL_<NAME> for the request's channels "
                   "only): a fallback directory shipped with the code would be trained on without a word")
        maybe = "" if certain or not fails else "if this line runs: "
        yield Hit(node.lineno, "channel-not-given",
                  f"{maybe}{how} reads channel '{channel.lower()}', which the spec's inputs do not give (given: "
                  f"{listed}): the job {outcome}",
                  f"add it to the spec: inputs: {{{channel.lower()}: s3://bucket/prefix}} (a local path for --local)",
                  ERROR if certain else WARNING)
