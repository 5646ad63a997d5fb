"""The spec file read safely: a regular file, at most MAX_FILE_BYTES, in UTF-8.

A named pipe would block the read forever and /dev/zero would fill memory, so anything but a
regular file is refused before a byte is read, and no more than the cap is ever read. A byte
that is not UTF-8 is reported at its line and column.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from smtrain.spec.problems import Location, Problem, SpecError

MAX_FILE_BYTES = 1_000_000  # a job spec is a page or two; 1MB is far beyond any real one


def _refuse(file: Path, message: str, line: int | None = None, column: int | None = None) -> SpecError:
    return SpecError([Problem((), message, Location(str(file), line, column))])


def _read_capped(file: Path) -> bytes:
    # O_NONBLOCK: opening a FIFO that has no writer must not wait for one.
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(file, flags)
    except FileNotFoundError:
        raise _refuse(file, "no such file") from None
    except OSError as exc:
        raise _refuse(file, f"cannot read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise _refuse(file, "not a regular file (a directory, pipe or device): give the path of a YAML file")
        chunks, size = [], 0
        while size <= MAX_FILE_BYTES:
            chunk = os.read(fd, MAX_FILE_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError as exc:
        raise _refuse(file, f"cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if size > MAX_FILE_BYTES:
        raise _refuse(file, f"larger than {MAX_FILE_BYTES // 1000}KB: a job spec is far smaller; is this the "
                            "right file?")
    return b"".join(chunks)


def read_spec_text(file: Path) -> str:
    """The text of the spec file, or SpecError naming the file (and line:column where one is known)."""
    data = _read_capped(file)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        before = data[: exc.start]
        line_start = before.rfind(b"\n") + 1
        column = len(before[line_start:].decode("utf-8", errors="replace")) + 1
        raise _refuse(file, f"byte 0x{data[exc.start]:02x} is not UTF-8: save the file as UTF-8",
                      before.count(b"\n") + 1, column) from None
    return text.removeprefix("\ufeff")  # a byte-order mark is allowed, and no part of line 1
