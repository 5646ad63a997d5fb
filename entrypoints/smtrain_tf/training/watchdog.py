"""A last line of defence against hangs: a job whose peer died must fail, not wait forever.

TensorFlow's own timeouts (collective timeouts, the coordination service's heartbeats) should
fire first; this thread ends the process if no progress is reported for longer than the limit.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Callable, Optional


class Watchdog:
    def __init__(self, on_timeout: Callable[[str], None]) -> None:
        self._on_timeout = on_timeout
        self._lock = threading.Lock()
        self._deadline: Optional[float] = None
        self._what = ""
        self._thread: Optional[threading.Thread] = None

    def expect(self, seconds: float, what: str) -> None:
        """The next beat must come within `seconds`; `what` says what was awaited if it does not."""
        with self._lock:
            self._deadline = time.monotonic() + seconds
            self._what = what
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, name="smtrain-watchdog", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        with self._lock:
            self._deadline = None

    def _watch(self) -> None:
        while True:
            time.sleep(1.0)
            with self._lock:
                deadline, what = self._deadline, self._what
            if deadline is not None and time.monotonic() > deadline:
                self._on_timeout(what)
                return


def exit_now(code: int) -> None:
    """Leave without waiting for TensorFlow threads that may be blocked on a dead peer."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
