"""What Ctrl-C leaves behind while a command stays with a job (the wait loop is smtrain.api.waiting's).

Interrupting never touches the job: it keeps running, and the command that reattaches to it is printed; so
is it when the endpoint stops answering while following.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import click

from smtrain.errors import AwsError


@contextlib.contextmanager
def reattach_on_interrupt(job: str, command: str) -> Iterator[None]:
    """On Ctrl-C: say that `job` keeps running and how to come back, then let the interrupt through. When
    the endpoint is lost while following (an AWS error, exit 4), the job may well run on too: said the same way."""
    try:
        yield
    except KeyboardInterrupt:
        click.echo(f"\n{job} keeps running; reattach with: {command}", err=True)
        raise
    except AwsError:
        click.echo(f"\nlost contact with AWS while following {job}, which may still be running; follow it again "
                   f"with: {command}", err=True)
        raise
