"""A line of a job's output as a terminal shows it, and nothing a terminal would act on.

Keras's progress bar (fit's default verbose) draws an epoch on one physical line: it writes each
update after backspaces and a carriage return over the last, colours it with ANSI codes, and ends
the line only at the epoch's end. Whatever reads a line for a person or a metric regex reads what a
terminal would show of it: the final state of the bar and, after it, anything printed on the same line.

The same step keeps a job's output from driving the reader's terminal: every escape sequence
(ECMA-48 control sequences, 7-bit or 8-bit, among them window titles, OSC 52 clipboard writes,
hyperlinks and device control strings), every other C0/C1 control but the tab, and the invisible
format characters (zero-width ones, bidirectional controls, the soft hyphen, tag characters) are
dropped, the way a careful log viewer shows text. Masking (smtrain.redact) runs on the result: a
secret printed with an escape sequence in its middle is whole again here, as the terminal would have
drawn it, and so is recognised.
"""

from __future__ import annotations

import re

# Invisible format characters: soft hyphen, grapheme joiner, bidirectional marks and overrides, zero-width
# ones, interlinear annotation, tags.
_INVISIBLE = r"\u00ad\u034f\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff\ufff9-\ufffb\U000e0000-\U000e007f"
# Alternatives in order: control strings (OSC, DCS, SOS, PM, APC; ended by ST or BEL, or running to the
# end of the text, as a terminal swallows an unterminated one); control sequences (CSI, colours among
# them); any other escape sequence (ESC, intermediates, final byte: charset switches, RIS...); and the
# single controls left (\b, \t, \n and \r are not among them: as_shown draws the first and last).
_ESCAPES = re.compile(
    r"(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|\x1b[ -/]*[0-~]?"
    rf"|[\x00-\x07\x0b\x0c\x0e-\x1f\x7f-\x9f{_INVISIBLE}]")
_CONTROL = re.compile(r"[\r\b]")
_ANY = re.compile(rf"[\x00-\x08\x0b-\x1f\x7f-\x9f{_INVISIBLE}]")


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


def shown_text(text: str) -> str:
    """`text` of any number of lines, each as_shown; text with no control character comes back as it is."""
    if not _ANY.search(text):
        return text
    return "\n".join(as_shown(line) for line in text.split("\n"))


def physical_lines(text: str) -> list[str]:
    """`text` split at its newlines only: str.splitlines() would also split at a progress bar's carriage
    returns (and form feeds, file separators...), and lose what follows them."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines
