"""A host's output line as a terminal shows it: carriage returns, backspaces and colour codes resolved.

Keras's progress bar (fit's default verbose) draws an epoch on one physical line: it writes each
update after backspaces and a carriage return over the last, colours it with ANSI codes, and ends
the line only at the epoch's end. The host logs keep those bytes as written (nothing is dropped);
whatever reads a line for a person or a metric regex reads what a terminal would show of it: the
final state of the bar and, after it, anything printed on the same line.
"""

from __future__ import annotations

import re

# CSI sequences (colours, cursor moves within the line are not drawn by Keras) and OSC titles.
_ESCAPES = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_CONTROL = re.compile(r"[\r\b]")


def as_shown(text: str) -> str:
    """`text` (one line, without its newline) as a terminal leaves it once everything is drawn."""
    text = _ESCAPES.sub("", text)
    if not _CONTROL.search(text):
        return text
    cells: list[str] = []
    column = 0
    for char in text:
        if char == "\r":
            column = 0
        elif char == "\b":
            column = max(column - 1, 0)
        else:
            if column < len(cells):
                cells[column] = char
            else:
                cells.append(char)
            column += 1
    return "".join(cells).rstrip()


def physical_lines(text: str) -> list[str]:
    """`text` split at its newlines only: str.splitlines() would also split at a progress bar's carriage
    returns (and form feeds, file separators...), and lose what follows them."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
