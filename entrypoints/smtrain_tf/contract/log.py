"""The program's output lines: what SageMaker's logs, its metric regexes and the tests read."""

from __future__ import annotations

import sys
from typing import Any, TextIO


class LineTracking:
    """A text stream that remembers whether the last text written to it ended its line.

    Keras's progress bar (fit's default verbose) rewrites its line with carriage returns and
    backspaces and leaves the cursor at the end of it: a line printed then would be glued to the
    bar, in the terminal, in CloudWatch's events and in the metric regexes' input. `say` starts its
    line on a line of its own when the stream it writes to is one of these and is mid-line.
    Everything but `write` is the wrapped stream's own (isatty, fileno, encoding, buffer...).
    """

    def __init__(self, stream: TextIO) -> None:
        self._stream = stream
        self.mid_line = False

    def write(self, text: str) -> int:
        if text:
            self.mid_line = not text.endswith("\n")
        return self._stream.write(text)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def track_lines() -> None:
    """Make sys.stdout a LineTracking stream (once), so that `say` knows where the cursor is."""
    if not isinstance(sys.stdout, LineTracking):
        sys.stdout = LineTracking(sys.stdout)  # type: ignore[assignment]


def say(line: str) -> None:
    """Print `line` on a line of its own, in one write: under PYTHONUNBUFFERED, print() writes the text and
    its newline separately, and mpirun --tag-output (Horovod, smddp) may slip another rank's output between them."""
    lead = "\n" if getattr(sys.stdout, "mid_line", False) else ""
    sys.stdout.write(lead + line + "\n")
    sys.stdout.flush()
