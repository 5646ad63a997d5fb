"""smtrain.list_jobs: jobs newest first (SageMaker's in a region, tuning jobs, or the local runs), and what each
cost: a job priced from its billable time and the catalog's price (`status`, `list --cost`)."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.jobs import JobInfo

if TYPE_CHECKING:
    from smtrain.plan.catalog import Catalog


def _priceable(job: JobInfo) -> bool:
    # A local job runs free; a tuning job (smtrain.sagemaker.tuning_jobs, a JobInfo with `tuning`) is billed
    # through its trials, which are training jobs of their own (`list --cost` prices them).
    return job.backend != "local" and not hasattr(job, "tuning")


def priced(job: JobInfo, catalog: Catalog) -> JobInfo:
    """`job` with its cost, when it is a job that is billed for itself."""
    from smtrain.plan.job_cost import job_cost

    return replace(job, cost=job_cost(job, catalog)) if _priceable(job) else job


def priced_list(backend: Any, jobs: Sequence[JobInfo], catalog: Catalog) -> list[JobInfo]:
    """Each entry priced from its description (ListTrainingJobs carries no billing facts); the entries keep
    their own fields."""
    from smtrain.plan.job_cost import job_cost

    return [replace(j, cost=job_cost(backend.describe(j.name), catalog)) if _priceable(j) else j for j in jobs]


def list_jobs(*, status: str | None = None, name_contains: str | None = None,
              since: dt.datetime | dt.date | dt.timedelta | str | None = None,
              limit: int = 20, local: bool = False, tuning: bool = False, cost: bool = False,
              region: str | None = None, catalog: Catalog | str | os.PathLike[str] | None = None) -> list[JobInfo]:
    """Training jobs newest first: SageMaker's in `region` (default: the default region), or with `local` the
    runs here, or with `tuning` SageMaker's tuning jobs. With `cost`, each is priced (one describe per job).
    `since`: a datetime (naive: local time), a date, a timedelta (that long ago), or text as --since takes it."""
    from smtrain.api.arguments import flag_arg, limit_arg, since_arg
    from smtrain.api.backends import local_backend, sagemaker_backend

    since, limit = since_arg(since), limit_arg(limit)
    local, tuning, cost = flag_arg(local, "local"), flag_arg(tuning, "tuning"), flag_arg(cost, "cost")
    if tuning and (local or cost):
        raise UserError("tuning lists SageMaker tuning jobs: not with local or cost", exit_codes.USAGE)
    backend = local_backend() if local else sagemaker_backend(region, with_tuning=tuning)
    if tuning:
        backend = backend.tuning  # smtrain.sagemaker.tuning_jobs: ListHyperParameterTuningJobs
    jobs = backend.list(status=status, name_contains=name_contains, since=since, limit=limit)
    if cost:
        from smtrain.api.planning import catalog_of

        jobs = priced_list(backend, jobs, catalog_of(catalog))
    return jobs
