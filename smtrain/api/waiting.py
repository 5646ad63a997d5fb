"""Staying with a job until it ends: the poll loop every wait uses (Job.wait, `smtrain wait`, `submit --wait`).

Generic over smtrain.jobs.Backend. A wait that runs out raises WaitTimeout and leaves the job as it is."""

from __future__ import annotations

import time
from collections.abc import Callable

from smtrain.errors import WaitTimeout
from smtrain.jobs import Backend, JobInfo, poll_interval

WAIT_POLL_DEFAULT = 10.0


def wait_for(backend: Backend, name: str, *, timeout: float | None = None,
             on_change: Callable[[JobInfo], None] = lambda job: None,
             sleep: Callable[[float], None] = time.sleep,
             clock: Callable[[], float] = time.monotonic) -> JobInfo:
    """Poll until job `name` has ended; `on_change` sees every new (status, secondary status).
    Raises WaitTimeout after `timeout` seconds (the job is left as it is).
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
                raise WaitTimeout(job, timeout or 0)
            sleep(min(interval, left))
        else:
            sleep(interval)
