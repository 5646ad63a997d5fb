"""Processes that die with smtrain, however smtrain ends (SIGKILL included), on Linux and macOS.

smtrain holds the write end of a pipe, the lifeline, and starts each process of a local run
(every host's, pip's) through a keeper: this file run as a script, `python lifeline.py FD --
PROGRAM...`, the leader of a new session, reading the lifeline's read end FD. Whatever ends
smtrain, the kernel then closes the write end and the keeper's read returns end-of-file; the
keeper kills its whole process group with SIGKILL: the program, and what the program started in
its group (mpirun's ranks). Nothing has to run in smtrain for that, no signal has to be honoured,
no output has to be written. (Linux's PR_SET_PDEATHSIG would reach the direct child only, and
macOS has no such call; a pipe's end-of-file works the same on both.)

Otherwise the keeper waits for the program and ends as it did (its exit code, or killed by the
same signal), so smtrain sees the program's own exit status. The keeper outlives a SIGTERM sent
to the group so it can report that status; SIGKILL ends it with the rest.

The script imports the standard library only: it starts in milliseconds and never loads smtrain.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Sequence
from pathlib import Path

KEEPER = Path(__file__).resolve()


class Lifeline:
    """The pipe; `command()` wraps a program's argv in a keeper, `close()` ends every keeper's group.

    Start the wrapped command with `pass_fds=lifeline.pass_fds` and `start_new_session=True`
    (the keeper kills its own process group, which must be the program's alone). The pipe's
    ends are not inheritable, so no other child of smtrain holds the write end open. As a
    context manager, leaving the block (an exception included) closes it.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()

    def __enter__(self) -> Lifeline:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def pass_fds(self) -> tuple[int]:
        return (self._read,)

    def command(self, argv: Sequence[str]) -> list[str]:
        # -I -S: the keeper ignores PYTHON* variables and site-packages (meant for the program).
        return [sys.executable, "-I", "-S", str(KEEPER), str(self._read), "--", *argv]

    def close(self) -> None:
        """Close both ends: any keeper still running kills its group."""
        for fd in (self._read, self._write):
            try:
                os.close(fd)
            except OSError:
                pass
        self._read = self._write = -1


# -- the keeper (runs as a script, in its own process) ---------------------------------------------

def _watch(fd: int) -> None:
    try:
        while os.read(fd, 4096):
            pass  # smtrain writes nothing; only the end of the pipe means something
    except OSError:
        return  # cannot watch (not expected): leave the program to smtrain
    os.killpg(os.getpgrp(), signal.SIGKILL)


def _end_as(code: int) -> None:
    """Exit as the program did: with its code, or killed by its signal."""
    if code >= 0:
        sys.exit(code)
    sig = -code
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # the program's core dump, if any, is the one that counts
    except (ImportError, ValueError, OSError):
        pass
    try:
        signal.signal(sig, signal.SIG_DFL)  # SIGKILL and SIGSTOP cannot be caught: nothing to reset
    except (OSError, ValueError):
        pass
    os.kill(os.getpid(), sig)
    sys.exit(128 + sig)  # a signal whose default is to be ignored


def _keep(args: Sequence[str]) -> None:
    fd, program = int(args[0]), list(args[2:])
    if os.getpgrp() != os.getpid():
        os.setpgid(0, 0)  # started without a session of its own: the group it kills must be its own alone
    # A handler, not SIG_IGN: the program must not inherit an ignored SIGTERM (exec resets handlers).
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, frame: None)
    threading.Thread(target=_watch, args=(fd,), daemon=True).start()
    try:
        child = subprocess.Popen(program)  # same environment, directory, output and process group
    except OSError as exc:
        print(f"cannot start {program[0]}: {exc}", file=sys.stderr, flush=True)
        sys.exit(127)  # as a shell says "command not found"
    _end_as(child.wait())


if __name__ == "__main__":
    _keep(sys.argv[1:])
