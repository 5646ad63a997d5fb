"""Ports reserved for local runs and tests (smtrain.local.ports): never handed out twice, never one in use."""

from __future__ import annotations

import errno
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from smtrain.local import ports
from smtrain.local.ports import Reserved

HOLDER = """\
import sys, time
from pathlib import Path
from smtrain.local.ports import Reserved
held = Reserved(Path(sys.argv[1]), range(int(sys.argv[2]), int(sys.argv[3])))
print(" ".join(map(str, held.take(int(sys.argv[4])))), flush=True)
sys.stdin.read()  # held until the test closes its stdin
"""


def _span(width: int) -> range:
    """`width` ports below the ephemeral range that nothing listens on now (a test's own choice of range)."""
    start = ports.LOWEST + 3000
    while not all(ports._bindable(p) for p in range(start, start + width)):
        start += width
    return range(start, start + width)


def test_ports_come_from_below_the_kernels_ephemeral_range(tmp_path: Path) -> None:
    taken = Reserved(tmp_path).take(40)
    assert len(set(taken)) == 40
    assert all(ports.LOWEST <= p < ports.ephemeral_start() for p in taken), taken


def test_a_port_another_process_holds_is_never_handed_out(tmp_path: Path) -> None:
    # Another smtrain process (a local run, a test worker) holds 4 of 8 ports: this one gets the other 4, then none.
    span = _span(8)
    with subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path), str(span.start), str(span.stop), "4"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as holder:
        assert holder.stdout is not None and holder.stdin is not None
        theirs = {int(p) for p in holder.stdout.readline().split()}
        mine = Reserved(tmp_path, span)
        assert set(mine.take(4)) == set(span) - theirs  # at the limit: every port left
        with pytest.raises(OSError) as refused:  # past it
            mine.take(1)
        assert refused.value.errno == errno.EADDRINUSE
        holder.stdin.close()
    assert set(Reserved(tmp_path, span).take(4)) == theirs  # released with the process that held them
    mine.release()


def test_a_port_some_program_listens_on_is_skipped(tmp_path: Path) -> None:
    span = _span(3)
    with socket.socket() as server:
        server.bind(("127.0.0.1", span.start))
        server.listen()
        held = Reserved(tmp_path, span)
        assert held.take(2) == [span.start + 1, span.start + 2]  # below the limit and at it
        with pytest.raises(OSError):
            held.take(1)


def test_a_failed_take_holds_nothing_and_a_release_frees_every_port(tmp_path: Path) -> None:
    span = _span(3)
    first = Reserved(tmp_path, span)
    with pytest.raises(OSError):
        first.take(4)
    with Reserved(tmp_path, span) as second:
        assert second.take(3) == list(span)  # the failed take left none of the three locked
    assert Reserved(tmp_path, span).take(3) == list(span)


def test_with_no_room_below_the_ephemeral_range_ports_come_from_the_kernel_still_locked(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ports, "ephemeral_start", lambda: ports.LOWEST + 10)  # a machine handing out almost all
    first = Reserved(tmp_path)
    taken = first.take(3)
    assert len(set(taken)) == 3 and all(p >= ports.LOWEST + 10 for p in taken)
    with pytest.raises(OSError):
        Reserved(tmp_path, range(taken[0], taken[0] + 1)).take(1)  # locked by the first reservation
    first.release()


def test_every_process_of_the_user_locks_in_one_place_whatever_its_temporary_directory(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A check's runs and tests set TMPDIR (and HOME) of their own: the locks must stay where every run sees them,
    # and out of the directory a test counts for what a run left behind.
    before = ports.lock_directory()
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr("tempfile.tempdir", None)
    assert ports.lock_directory() == before and tmp_path not in before.parents
