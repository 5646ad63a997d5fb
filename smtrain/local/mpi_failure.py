"""An MPI job's failure, told by the rank that failed rather than by mpirun's trailer.

Under `mpirun --tag-output` every line of a rank starts with `[job,rank]<stream>:` (a line Python writes
in pieces, as a traceback's last line, carries the tag again in its middle). When a rank exits non-zero,
mpirun ends the others and prints a trailer naming it ("Process name: [[27333,1],1]", or "process rank 1
with PID ... exited on signal 9"); the trailer is the end of the log, and alone it says nothing of why.
`rank_error` finds that rank's own last error in the lines: the last line of its last traceback, else
its last line on stderr.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

_TAG = re.compile(r"\[(\d+),(\d+)\]<(stdout|stderr|stddiag)>:")
_FAILED_RANK = (re.compile(r"Process name:\s*\[\[\d+,\d+\],(\d+)\]"),
                re.compile(r"process rank (\d+) with PID"))


def failed_rank(lines: Sequence[str]) -> int | None:
    """The rank mpirun's trailer names as the first to fail; None without a trailer."""
    for line in reversed(lines):
        for pattern in _FAILED_RANK:
            found = pattern.search(line)
            if found:
                return int(found.group(1))
    return None


def _rank_lines(lines: Sequence[str], rank: int) -> list[tuple[str, str]]:
    """(stream, text) of each line `rank` wrote, every tag taken out."""
    mine = []
    for line in lines:
        tag = _TAG.match(line)
        if tag and int(tag.group(2)) == rank:
            mine.append((tag.group(3), _TAG.sub("", line)))
    return mine


def rank_error(lines: Sequence[str]) -> tuple[int, str] | None:
    """(rank, its last error) for the rank mpirun names; None when the lines do not say."""
    rank = failed_rank(lines)
    if rank is None:
        return None
    # Its stderr alone: mpirun forwards stdout and stderr apart, so a print lands inside a traceback.
    errors = [text for stream, text in _rank_lines(lines, rank) if stream == "stderr" and text.strip()]
    starts = [i for i, text in enumerate(errors) if text.startswith("Traceback (most recent call last)")]
    if starts:
        # The exception's own line: the first after the traceback's frames (which are indented).
        exception = [text for text in errors[starts[-1] + 1:] if not text.startswith((" ", "\t"))]
        if exception:
            return rank, exception[0].strip()
    return (rank, errors[-1].strip()) if errors else None
