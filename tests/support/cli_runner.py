"""Run the smtrain CLI as a user would: a separate process, real exit code, stdout and stderr apart."""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO

from tests.support import ROOT, like_a_terminal


def _env(env: Mapping[str, str] | None) -> dict[str, str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    full_env.update(env or {})
    return full_env


def smtrain(*args: str, env: Mapping[str, str] | None = None, cwd: Path | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "smtrain", *args], cwd=cwd or ROOT, env=_env(env),
                          capture_output=True, text=True, timeout=timeout)


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
