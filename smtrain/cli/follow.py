"""What Ctrl-C leaves behind while a command stays with a job (the wait loop is smtrain.api.waiting's).

Interrupting never touches the job: it keeps running, and the command that reattaches to it is printed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click


@contextlib.contextmanager
def reattach_on_interrupt(job: str, command: str) -> Iterator[None]:
    """On Ctrl-C: say that `job` keeps running and how to come back, then let the interrupt through."""
    try:
        yield
    except KeyboardInterrupt:
        click.echo(f"\n{job} keeps running; reattach with: {command}", err=True)
        raise
