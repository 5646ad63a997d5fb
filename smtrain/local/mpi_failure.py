"""An MPI job's failure, told by the rank that failed rather than by mpirun's trailer.

Under `mpirun --tag-output` every line of a rank starts with `[job,rank]<stream>:` (a line Python writes
in pieces, as a traceback's last line, carries the tag again in its middle). When a rank exits non-zero,
mpirun ends the others and prints a trailer naming it ("Process name: [[27333,1],1]", or "process rank 1
with PID ... exited on signal 9"); the trailer is the end of the log, and alone it says nothing of why.
`rank_error` finds that rank's own last error in the lines: the exception line of its last traceback,
else its last line on stderr. mpirun forwards a rank's output in pieces as they come, each behind its
tag, so a line of the rank's stderr may span several lines of the log and share them with other
ranks: the rank's stderr is put back together piece by piece before it is read.
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


# A Python exception's line: its class (a dotted name ending as exceptions' names do), then its message.
_EXCEPTION = re.compile(r"^[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit|Failure|Fault)\b(?::.*)?$")


def _rank_stderr(lines: Sequence[str], rank: int) -> list[str]:
    """`rank`'s stderr, its pieces put back together: a log line ends one of its lines only where the
    rank's piece is the last thing on it (another rank's output may follow a piece that goes on later)."""
    text = []
    for line in lines:
        pieces = list(_TAG.finditer(line))
        for i, tag in enumerate(pieces):
            end = pieces[i + 1].start() if i + 1 < len(pieces) else len(line)
            if int(tag.group(2)) == rank and tag.group(3) == "stderr":
                text.append(line[tag.end():end])
                if i + 1 == len(pieces):
                    text.append("\n")
    return [part for part in "".join(text).split("\n") if part.strip()]


def rank_error(lines: Sequence[str]) -> tuple[int, str] | None:
    """(rank, its last error) for the rank mpirun names; None when the lines do not say."""
    rank = failed_rank(lines)
    if rank is None:
        return None
    # Its stderr alone: mpirun forwards stdout and stderr apart, so a print lands inside a traceback.
    errors = _rank_stderr(lines, rank)
    starts = [i for i, text in enumerate(errors) if text.startswith("Traceback (most recent call last)")]
    if starts:
        after = errors[starts[-1] + 1:]
        for i, text in enumerate(after):
            if _EXCEPTION.match(text.strip()):
                line = text.strip()
                # The class and its message may have come apart: `ValueError` then `: expected ...`.
                if ":" not in line and i + 1 < len(after) and after[i + 1].lstrip().startswith(":"):
                    line += after[i + 1].strip()
                return rank, line
    return (rank, errors[-1].strip()) if errors else None
