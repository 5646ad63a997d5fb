"""The keeper a local run starts each process under: transparent while smtrain lives, deadly once it is gone."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from smtrain.local.lifeline import Lifeline
from tests.local.support import PATIENCE, alive, wait_until


def keep(lifeline: Lifeline, code: str, **kwargs: object) -> subprocess.Popen[str]:
    return subprocess.Popen(lifeline.command([sys.executable, "-c", code]), start_new_session=True,
                            pass_fds=lifeline.pass_fds, text=True, **kwargs)  # type: ignore[call-overload]


@pytest.mark.parametrize(("code", "status"), [
    ("raise SystemExit(7)", 7),
    ("pass", 0),
    ("import os, signal; os.kill(os.getpid(), signal.SIGTERM)", -signal.SIGTERM),
    ("import os, signal; os.kill(os.getpid(), signal.SIGKILL)", -signal.SIGKILL),
    ("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)", -signal.SIGSEGV),
], ids=["exit-7", "exit-0", "sigterm", "sigkill", "sigsegv"])
def test_the_keeper_ends_as_its_program_did(code: str, status: int) -> None:
    with Lifeline() as lifeline:
        assert keep(lifeline, code).wait(timeout=PATIENCE) == status


def test_the_program_gets_default_signals_environment_and_output(tmp_path: Path) -> None:
    code = ("import os, signal; print(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL, "
            "signal.getsignal(signal.SIGINT) is signal.default_int_handler, os.environ['MARK'], os.getcwd(), "
            "os.getpgrp() == os.getppid())")
    with Lifeline() as lifeline:
        proc = keep(lifeline, code, stdout=subprocess.PIPE, env={**os.environ, "MARK": "kept"}, cwd=tmp_path)
        out, _ = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 0
    assert out.split() == ["True", "True", "kept", str(tmp_path), "True"]  # the keeper leads the program's group


def test_a_sigterm_to_the_group_reaches_the_program_and_the_keeper_reports_it(tmp_path: Path) -> None:
    ready = tmp_path / "ready"
    code = f"import time; open({str(ready)!r}, 'w').close(); time.sleep(3600)"
    with Lifeline() as lifeline:
        proc = keep(lifeline, code)
        try:
            wait_until(ready.exists, "the program to start")
            os.killpg(proc.pid, signal.SIGTERM)
            assert proc.wait(timeout=PATIENCE) == -signal.SIGTERM
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)


def test_closing_the_lifeline_kills_a_silent_sigterm_ignoring_program_and_its_child(tmp_path: Path) -> None:
    child_pid = tmp_path / "child.pid"
    child = (f"import os, signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
             f"open({str(child_pid)!r}, 'w').write(str(os.getpid())); time.sleep(3600)")
    code = (f"import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            f"subprocess.Popen([sys.executable, '-c', {child!r}]); time.sleep(3600)")
    lifeline = Lifeline()
    proc = keep(lifeline, code)
    pids = {proc.pid}
    try:
        wait_until(lambda: child_pid.exists() and child_pid.read_text() != "", "the program's child to start")
        pids.add(int(child_pid.read_text()))
        assert proc.poll() is None
        lifeline.close()  # what the kernel does when smtrain ends, however it ends
        assert proc.wait(timeout=PATIENCE) == -signal.SIGKILL
        wait_until(lambda: not any(alive(pid) for pid in pids), "the program's child to end")
    finally:
        lifeline.close()
        for pid in pids:
            for kill in (os.killpg, os.kill):  # the keeper's group holds the program too
                try:
                    kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


def test_a_program_that_cannot_start_exits_127_with_the_reason(tmp_path: Path) -> None:
    with Lifeline() as lifeline:
        proc = subprocess.Popen(lifeline.command([str(tmp_path / "missing")]), start_new_session=True,
                                pass_fds=lifeline.pass_fds, stderr=subprocess.PIPE, text=True)
        _, err = proc.communicate(timeout=PATIENCE)
    assert proc.returncode == 127 and f"cannot start {tmp_path / 'missing'}" in err
