"""smtrain's commands run in this process (click's CliRunner): the real exit code and output, in milliseconds.

For tests that run thousands of specs (the fuzz suite, the README examples), with smtrain's Run record.
tests/support/cli_runner.py runs commands in-process too, as subprocess.CompletedProcess with the process's
environment rules, and as a real process where a test needs one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from click.testing import CliRunner

from smtrain.cli.commands import main

_RUNNER = CliRunner()
# Variables that would make a run depend on this machine (its region, catalog, AWS config).
_CLEARED = ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_PROFILE", "SMTRAIN_CATALOG",
            "SMTRAIN_PRICES", "SMTRAIN_HOME")
# Problems about a file as a whole have no line: the file is empty, too large, not a file at all.
_FILE_LEVEL = ("the file is empty", "larger than", "not a regular file", "no such file")


@dataclass(frozen=True)
class Run:
    code: int
    stdout: str
    stderr: str
    exception: BaseException | None  # one that escaped the command (a bug), else None

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def run(*args: str, env: Mapping[str, str | None] | None = None, home: Path | None = None) -> Run:
    full_env: dict[str, str | None] = {name: None for name in _CLEARED}
    if home is not None:
        full_env["HOME"] = str(home)
    full_env.update(env or {})
    result = _RUNNER.invoke(main, list(args), env=full_env, catch_exceptions=True)
    escaped = result.exception if not isinstance(result.exception, SystemExit) else None
    return Run(result.exit_code, result.stdout, result.stderr, escaped)


def problems_without_position(run_: Run, spec: Path) -> list[str]:
    """The lines of an exit-2 run that are not `error: FILE:LINE:COLUMN: field: message` (or a warning, a
    note of checks that could not run, the count, or a file-level problem naming the file alone)."""
    where = re.compile(re.escape(f"error: {spec}:") + r"[0-9]+:[0-9]+: ")
    bad = []
    positioned = False  # the line before was a positioned problem: an indented line goes on with it
    # The breaks a terminal makes (not U+2028); on stderr: -o json's document is on stdout.
    for line in re.split(r"\r\n|\r|\n", run_.stderr):
        if positioned and line.startswith("  "):
            continue  # a problem listing several files ("cannot bundle the code:" then one a line)
        positioned = False
        if not line or line.startswith(("warning: ", "note: ")) or re.fullmatch(
                r"[0-9]+ problems?( and [0-9]+ preflight errors?)? found; nothing was sent\.", line):
            continue
        if where.match(line):
            positioned = True
            continue
        if line.startswith(f"error: {spec}: (top level): ") and any(f in line for f in _FILE_LEVEL):
            continue
        bad.append(line)
    return bad


def strict_json(text: str) -> object:
    """json.loads that refuses Infinity and NaN (Python's json writes them; no other reader takes them)."""
    def refuse(constant: str) -> object:
        raise ValueError(f"not JSON: {constant}")

    return json.loads(text, parse_constant=refuse)
