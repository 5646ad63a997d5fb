"""A reader that goes away ends smtrain quietly: `smtrain logs JOB | head -1` exits 141, printing nothing.

Python ignores SIGPIPE, so writing to a pipe nobody reads raises BrokenPipeError wherever the
write happens. `ClosedOutputGroup`, smtrain's top command, turns it into exit code 141 (128 +
SIGPIPE, what a shell reports for a program that SIGPIPE ended) for every command, `--help` and
usage errors included. Click has its own handling (exit 1), so the error is caught where click
would see it: while parsing, while running the command, and while click reports an error.
"""

from __future__ import annotations

import errno
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

import click

from smtrain import exit_codes

if TYPE_CHECKING:
    from rich.console import Console


@contextmanager
def closed_output_ends_quietly() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError:
        _silence_standard_streams()
        raise SystemExit(exit_codes.OUTPUT_CLOSED) from None


def _silence_standard_streams() -> None:
    """Point stdout and stderr at /dev/null: what is still buffered, and Python's flush at exit,
    then go nowhere instead of failing again ("Exception ignored ... BrokenPipeError")."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError, AttributeError):
                pass  # not a file descriptor (an in-process test runner): nothing flushes it at exit
    finally:
        os.close(devnull)


class ClosedOutputGroup(click.Group):
    """click.Group whose every output path ends quietly with exit 141 when stdout's reader is gone."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        with closed_output_ends_quietly():  # --help and --version print while parsing
            return super().make_context(*args, **kwargs)

    def invoke(self, ctx: click.Context) -> Any:
        with closed_output_ends_quietly():
            return super().invoke(ctx)

    def main(self, *args: Any, **kwargs: Any) -> Any:
        with closed_output_ends_quietly():  # click prints usage errors after invoke returned
            return super().main(*args, **kwargs)


def stdout_console(width_when_piped: int) -> Console:
    """A rich Console on stdout (this width when stdout is no terminal) whose broken pipe ends smtrain
    as any other write does: rich's own handling would exit 1."""
    from rich.console import Console  # rich loads only for the commands that draw tables

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError(errno.EPIPE, "the reader of stdout went away")

    return _Console(file=sys.stdout, width=None if sys.stdout.isatty() else width_when_piped)
