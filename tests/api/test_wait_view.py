"""Job.wait's live view (in Jupyter): the status polled, the log followed in a thread. A wait that runs out leaves
at once and the thread stops reading; a wait that sees the end reads the last lines. A fake backend and IPython's
display stubbed, as a kernel would provide it; no timing is relied on beyond generous bounds."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import IPython.display
import pytest

import smtrain
from smtrain.api import job as job_module
from smtrain.api import live
from smtrain.jobs import JobInfo, LogEvent


class Handle:
    def __init__(self) -> None:
        self.shown: list[str] = []

    def update(self, html: Any) -> None:
        self.shown.append(html.data)


class Backend:
    """A job InProgress until `end` is set; its log: one line, then lines only as `more` is set."""

    def __init__(self) -> None:
        self.end = threading.Event()
        self.more = threading.Event()
        self.log_closed = threading.Event()

    def describe(self, name: str) -> JobInfo:
        return JobInfo(name=name, backend="sagemaker", status="Completed" if self.end.is_set() else "InProgress")

    def logs(self, name: str, *, follow: bool) -> Iterator[LogEvent]:
        import datetime as dt

        try:
            yield LogEvent("algo-1", dt.datetime.now(dt.timezone.utc), "epoch=1 step=10 loss=0.5")
            while not self.end.is_set():
                self.more.wait(60)
                yield LogEvent("algo-1", dt.datetime.now(dt.timezone.utc), "epoch=2 step=20 loss=0.4")
        finally:
            self.log_closed.set()


@pytest.fixture
def handle(monkeypatch: pytest.MonkeyPatch) -> Handle:
    shown = Handle()
    monkeypatch.setattr(live, "in_notebook", lambda: True)
    monkeypatch.setattr(IPython.display, "display", lambda *args, **kwargs: shown)
    monkeypatch.setenv("SMTRAIN_POLL_SECONDS", "0.05")
    monkeypatch.setattr(job_module, "LAST_LINES_SECONDS", 120.0)  # a join after a timeout would show as a hang
    return shown


def test_a_wait_that_runs_out_leaves_at_once_and_the_log_thread_stops(handle: Handle) -> None:
    backend = Backend()
    job = smtrain.Job("my-job", backend)
    started = time.monotonic()
    with pytest.raises(smtrain.WaitTimeout):
        job.wait(timeout=0.3)
    assert time.monotonic() - started < 60  # not the 120 s join of a wait that saw the end
    assert "still running" in handle.shown[-1] and "InProgress" in handle.shown[-1]
    drawn = len(handle.shown)
    backend.more.set()  # the thread's next line comes: it sees the stop and closes the log
    assert backend.log_closed.wait(30)
    assert len(handle.shown) == drawn  # nothing drawn after close


def test_a_wait_that_sees_the_end_shows_the_epoch_lines(handle: Handle) -> None:
    backend = Backend()
    backend.end.set()
    info = smtrain.Job("my-job", backend).wait()
    assert info.status == "Completed" and backend.log_closed.wait(30)
    assert "Completed" in handle.shown[-1] and "algo-1: epoch=1 step=10 loss=0.5" in handle.shown[-1]
