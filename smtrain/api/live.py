"""A live view of a job in Jupyter: one output area updated in place (IPython's display handles) with the job's
status, its epoch lines and its latest line, so that a wait shows progress without flooding the cell (a Keras
progress bar alone writes a line per step). Outside a notebook kernel nothing is shown: the library prints
nothing; the CLI streams for itself."""

from __future__ import annotations

import re
import sys
import threading
import time
from typing import Any

from smtrain.api.display import cell, lines_block
from smtrain.jobs import JobInfo
from smtrain.redact import mask_text

EPOCH_LINE = re.compile(r"epoch=[0-9]+ step=")  # smtrain's metric line, one per epoch (metric_definitions.json)
KEPT_EPOCHS = 20  # the latest epoch lines shown; the rest is in `job.logs()`
REFRESH_SECONDS = 0.5  # at most two redraws a second, however fast the lines come


def in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (where a display can be updated in place)."""
    shell = sys.modules.get("IPython")
    if shell is None or "ipykernel" not in sys.modules:
        return False
    ip = shell.get_ipython()
    return ip is not None and type(ip).__name__ == "ZMQInteractiveShell"


class LiveView:
    """A file-like sink for a job's output lines and a status setter, drawn into one display area."""

    def __init__(self, name: str, warnings: list[str] | None = None, state: str = "starting") -> None:
        from IPython.display import HTML, display  # only in a notebook kernel, where IPython is

        self._html = HTML
        self.name = name
        self.warnings = list(warnings or [])  # the plan's and the code's, as the CLI prints them before a run
        self.state = state
        self.epochs: list[str] = []
        self.latest = ""
        self._partial = ""
        self._drawn = 0.0
        self.closed = False  # after close(), nothing more is drawn (a log thread may still be finishing)
        self._lock = threading.Lock()  # Job.wait writes log lines from a thread while it polls the status
        self._handle: Any = display(HTML(self._render()), display_id=True)

    def status(self, job: JobInfo) -> None:
        with self._lock:
            self.state = job.status_text
            self._draw(force=True)

    def write(self, text: str) -> int:
        with self._lock:
            self._partial += text
            *complete, self._partial = re.split(r"[\r\n]", self._partial)
            for line in complete:
                if EPOCH_LINE.search(line):
                    self.epochs = [*self.epochs, line][-KEPT_EPOCHS:]
                elif line.strip():
                    self.latest = line
            self._draw()
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._draw(force=True)

    def close(self, job: JobInfo | None = None, state: str | None = None) -> None:
        """The last state: the job's (its failure reason when it failed), and `state` where the job has not ended
        (a wait that ran out, an interrupt); the latest line stays (a run's last words: where the model went, or
        what failed)."""
        with self._lock:
            if job is not None:
                self.state = job.status + (f": {job.failure_reason}" if job.failure_reason else "")
                if state is not None and not job.done:
                    self.state += f" ({state})"
            elif state is not None:
                self.state = state
            self._draw(force=True)
            self.closed = True

    def _render(self) -> str:
        body = lines_block([*self.epochs, *([self.latest] if self.latest else [])]) if self.epochs or self.latest else ""
        warned = "".join(f"<div>warning: {cell(w)}</div>" for w in self.warnings)
        return f"<div><strong>{cell(self.name)}</strong>: {cell(mask_text(self.state))}{warned}{body}</div>"

    def _draw(self, force: bool = False) -> None:
        if self.closed:
            return
        now = time.monotonic()
        if force or now - self._drawn >= REFRESH_SECONDS:
            self._drawn = now
            self._handle.update(self._html(self._render()))
