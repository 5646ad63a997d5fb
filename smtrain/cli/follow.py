"""Staying with a job until it ends: the wait loop, log streaming, and what Ctrl-C leaves behind.

Generic over :class:`smtrain.jobs.Backend`. Interrupting never touches the job: it keeps running,
and the command that reattaches to it is printed.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

import click

from smtrain.jobs import Backend, JobInfo, poll_interval

WAIT_POLL_DEFAULT = 10.0


class WaitTimedOut(Exception):
    """`wait --timeout` ran out; `job` is the last state seen."""

    def __init__(self, job: JobInfo, timeout: float) -> None:
        super().__init__(f"{job.name} is still {job.status} after {timeout:g}s")
        self.job = job
        self.timeout = timeout


@contextlib.contextmanager
def reattach_on_interrupt(job: str, command: str) -> Iterator[None]:
    """On Ctrl-C: say that `job` keeps running and how to come back, then let the interrupt through."""
    try:
        yield
    except KeyboardInterrupt:
        click.echo(f"\n{job} keeps running; reattach with: {command}", err=True)
        raise


def wait_for(backend: Backend, name: str, *, timeout: float | None = None,
             on_change: Callable[[JobInfo], None] = lambda job: None,
             sleep: Callable[[float], None] = time.sleep,
             clock: Callable[[], float] = time.monotonic) -> JobInfo:
    """Poll until job `name` has ended; `on_change` sees every new (status, secondary status).

    Raises WaitTimedOut after `timeout` seconds (the job is left as it is).
    """
    deadline = None if timeout is None else clock() + timeout
    interval = poll_interval(WAIT_POLL_DEFAULT)
    seen: tuple[str, str | None] | None = None
    while True:
        job = backend.describe(name)
        if (job.status, job.secondary_status) != seen:
            seen = (job.status, job.secondary_status)
            on_change(job)
        if job.done:
            return job
        if deadline is not None:
            left = deadline - clock()
            if left <= 0:
                raise WaitTimedOut(job, timeout or 0)
            sleep(min(interval, left))
        else:
            sleep(interval)

