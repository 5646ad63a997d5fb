"""Ports of 127.0.0.1 for a local run's TF_CONFIG (and a test's servers), reserved so that none is taken twice.

MultiWorkerMirrored and parameter-server hosts need every host's address in TF_CONFIG before any host starts,
so the port cannot be the child's own `bind(0)`; and TensorFlow's gRPC server turns SO_REUSEPORT off, so a
socket held open on the port would make the host's own bind fail. A port chosen with `bind(0)` and closed
again (how it was done) can be handed to another process in between: two multi-host runs, or two test
workers, starting at once could both get it, and one run then fails with "address in use".

So a port is taken from below the kernel's ephemeral range (Linux's ip_local_port_range, 32768-60999 by
default; macOS's 49152-65535), which no `bind(0)` and no outgoing connection of any program is given, and
each is claimed with an exclusive lock on a file of its own in the user's directory /tmp/smtrain-ports-<uid>,
held until the run ends: two smtrain processes of a user never hold the same port, and a port
some other program (or user) listens on fails the bind checked before it is claimed. Where the ephemeral
range leaves no room below it (a machine set to hand out 1024-65535), ports come from the kernel as before,
still locked against smtrain's other runs.
"""

from __future__ import annotations

import errno
import fcntl
import os
import random
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

LOWEST = 20000  # below it lie the well-known services' registered ports most often in use
_LINUX_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")
_MACOS_FIRST_EPHEMERAL = 49152  # net.inet.ip.portrange.first's default


def ephemeral_start() -> int:
    """The first port the kernel hands out by itself."""
    if sys.platform.startswith("linux"):
        try:
            return int(_LINUX_RANGE.read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return 32768
    return _MACOS_FIRST_EPHEMERAL


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        try:
            probe.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _kernel_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def lock_directory() -> Path:
    """/tmp/smtrain-ports-<uid>: the same for every process of the user whatever its TMPDIR or HOME (a check's
    runs, a test, a job's own environment set either), or the runs would not see each other's locks."""
    root = Path("/tmp")
    return (root if root.is_dir() else Path(tempfile.gettempdir())) / f"smtrain-ports-{os.getuid()}"


class Reserved:
    """Ports claimed for this process until release() (or the `with` block's end, or the process's)."""

    def __init__(self, directory: Path | None = None, span: range | None = None) -> None:
        self._directory = directory or lock_directory()
        self._span = span  # the ports to choose from (a test's); default: LOWEST up to the ephemeral range
        self._locks: dict[int, IO[bytes]] = {}

    def _candidates(self) -> Iterator[int]:
        if self._span is not None:
            return iter(self._span)
        start = ephemeral_start()
        if start > LOWEST + 1000:
            return iter(random.sample(range(LOWEST, start), start - LOWEST))
        return (_kernel_port() for _ in range(10_000))

    def take(self, count: int) -> list[int]:
        """`count` more ports, all different from each other and from every port another process holds;
        OSError (EADDRINUSE) when there are not that many."""
        self._directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        candidates = self._candidates()
        taken: list[int] = []
        for port in candidates:
            if len(taken) == count:
                break
            if port not in self._locks and self._claim(port):
                taken.append(port)
        if len(taken) < count:
            for port in taken:  # nothing half-claimed stays held
                self._locks.pop(port).close()
            raise OSError(errno.EADDRINUSE, f"no {count} free ports of 127.0.0.1 for the run's hosts")
        return taken

    def _claim(self, port: int) -> bool:
        lock = open(self._directory / f"{port}.lock", "ab")  # noqa: SIM115 - held until release()
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # another process holds it
            lock.close()
            return False
        if not _bindable(port):  # a program of another kind listens there, or a connection still lingers
            fcntl.flock(lock, fcntl.LOCK_UN)
            lock.close()
            return False
        self._locks[port] = lock
        return True

    def release(self) -> None:
        for lock in self._locks.values():
            lock.close()  # closing the file drops its lock
        self._locks.clear()

    def __enter__(self) -> Reserved:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
