"""Run the smtrain CLI as a test: its exit code, stdout and stderr apart, as a user's shell gets them.

`smtrain(...)` runs the command in this process by default (click's CliRunner over the same `main` that
`python -m smtrain` calls, with the process's environment rules: AWS_* cleared, `env` added, `cwd` as the
working directory, SIGTERM's handler put back after), in milliseconds where a process costs about 2 s of
imports. A test of what only a process has passes `process=True`: start-up imports, signals, a closed stdout,
`python -m smtrain` itself (and start_smtrain/running_smtrain always start one). SMTRAIN_TESTS_CLI=process runs
every command as a process: how a change to this runner is checked against the real thing.
"""

from __future__ import annotations

import contextlib
import faulthandler
import os
import select
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from tests.support import ROOT, like_a_terminal


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full_env.update(env or {})
    return full_env


def smtrain(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300, process: bool = False) -> subprocess.CompletedProcess[str]:
    """The command's exit code, stdout and stderr (see the module's docstring for where it runs)."""
    if process or os.environ.get("SMTRAIN_TESTS_CLI") == "process":
        return subprocess.run([sys.executable, "-m", "smtrain", *args], cwd=cwd or ROOT, env=_env(env),
                              capture_output=True, text=True, timeout=timeout)
    return _in_process(list(args), env, cwd or ROOT, timeout)


_ONE_AT_A_TIME = threading.Lock()


def _in_process(args: list[str], env: Mapping[str, str] | None, cwd: Path,
                timeout: float) -> subprocess.CompletedProcess[str]:
    from click.testing import CliRunner

    from smtrain.cli.commands import main

    # CliRunner swaps the process's sys.stdout, environment and working directory: two commands at once (a
    # test's threads) would write into each other's output. Such a test runs them as processes.
    # An interpreter reads PYTHON* variables as it starts, never after: a test setting one needs a process.
    if any(name.startswith("PYTHON") and os.environ.get(name) != value for name, value in (env or {}).items()):
        raise RuntimeError("only a process reads PYTHON* variables: pass process=True")
    if not _ONE_AT_A_TIME.acquire(blocking=False):
        raise RuntimeError("in-process smtrain commands cannot overlap: pass process=True to each")
    try:
        return _invoke(CliRunner(), main, args, env, cwd, timeout)
    finally:
        _ONE_AT_A_TIME.release()


def _invoke(runner: Any, main: Any, args: list[str], env: Mapping[str, str] | None, cwd: Path,
            timeout: float) -> subprocess.CompletedProcess[str]:
    # The process's environment: AWS_* of this one cleared, `env` over the rest (CliRunner restores it after).
    changes: dict[str, str | None] = {k: None for k in os.environ if k.startswith("AWS_")}
    changes.update(env or {})
    sigterm = signal.getsignal(signal.SIGTERM)  # main() installs its own, as the process does
    before = Path.cwd()
    # A command that never ends would hang the suite where the process runner's timeout fails the test: dump
    # every thread's stack and end this worker instead (pytest-xdist reports the test as crashed).
    faulthandler.dump_traceback_later(timeout, exit=True)
    try:
        os.chdir(cwd)
        result = runner.invoke(main, args, env=changes, prog_name="smtrain", catch_exceptions=True)
    finally:
        faulthandler.cancel_dump_traceback_later()
        os.chdir(before)
        if threading.current_thread() is threading.main_thread():  # where main() installed its own
            signal.signal(signal.SIGTERM, sigterm)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        # What escaped the command is what the process prints as it dies: its traceback, exit 1.
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["smtrain", *args], result.exit_code, result.stdout, stderr)


def start_smtrain(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None) -> subprocess.Popen[str]:
    """The CLI started and left running, for a test that signals it (SIGINT at its default, as a terminal
    starts a program); stdout and stderr are pipes."""
    return subprocess.Popen([sys.executable, "-m", "smtrain", *args], cwd=cwd or ROOT, env=_env(env), text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=like_a_terminal)


@contextlib.contextmanager
def running_smtrain(*args: str, env: Mapping[str, str] | None = None,
                    cwd: Path | None = None) -> Iterator[subprocess.Popen[str]]:
    """start_smtrain() for a `with` block: a command still running when the block ends (a failed assertion)
    is killed, so no test leaves one behind."""
    proc = start_smtrain(*args, env=env, cwd=cwd)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()


def read_until(stream: IO[str], words: str, timeout: float = 60) -> str:
    """What `stream` (a started command's pipe) gave up to and including the first line holding `words`;
    AssertionError with what came when it does not come within `timeout` seconds or the stream ends first.
    Read from the pipe itself, not through the stream's buffer (a line already buffered would be one
    select() never reports); communicate() reads the rest."""
    seen = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([stream.fileno()], [], [], max(0.0, deadline - time.monotonic()))
        chunk = os.read(stream.fileno(), 65536) if ready else b""
        if not chunk:
            break
        seen += chunk
        text = seen.decode(errors="replace")
        if any(words in line for line in text.splitlines(keepends=True) if line.endswith("\n")):
            return text
    raise AssertionError(f"{words!r} never came; the stream held:\n{seen.decode(errors='replace')}")


def no_result(stdout: str) -> bool:
    """What a failing command leaves on stdout: nothing in text, else (-o json / -o yaml) only its failure
    document, `{"ok": false, "exit_code": N, ...}`, never a result."""
    import json

    import yaml

    if not stdout.strip():
        return True
    try:
        document = json.loads(stdout)
    except ValueError:
        document = yaml.safe_load(stdout)
    return isinstance(document, dict) and document.get("ok") is False and isinstance(document.get("exit_code"), int)
