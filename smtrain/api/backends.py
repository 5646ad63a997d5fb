"""Backends that turn a resolved plan into a training job: one module per backend.

Each backend imports its heavy dependencies lazily, so importing this package stays cheap.
Job.attach and the lifecycle commands (status, logs, wait, stop) find a job's backend with :func:`backend_for_job`
(SageMaker's takes tuning job names too: smtrain.sagemaker.tuning_jobs).
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

from smtrain import exit_codes
from smtrain.aws import default_region
from smtrain.errors import UserError
from smtrain.jobs import Backend
from smtrain.spec.patterns import check_job_name


def local_module() -> ModuleType | None:
    """smtrain.local.backend when this install has it (it is optional)."""
    try:
        from smtrain.local import backend as local
    except ImportError:
        return None
    return local if hasattr(local, "LocalBackend") else None


def sagemaker_backend(region: str | None, *, with_tuning: bool = False) -> Any:
    """The SageMaker backend for `region`, else the default region (AWS_REGION, ~/.aws/config).
    with_tuning: one that takes a tuning job's name too (its `.tuning` lists tuning jobs)."""
    region = region or default_region()
    if not region:
        raise UserError("no AWS region: pass --region (region= in Python), or set AWS_REGION or a region in ~/.aws/config",
                        exit_codes.USAGE)
    if with_tuning:
        from smtrain.sagemaker.tuning_jobs import SageMakerJobsBackend

        return SageMakerJobsBackend(region)
    from smtrain.sagemaker.backend import SageMakerBackend

    return SageMakerBackend(region)


def local_backend() -> Backend:
    local = local_module()
    if local is None:
        raise UserError("the local backend is not part of this install", exit_codes.USAGE)
    return local.LocalBackend()


def backend_for_job(name: str, region: str | None) -> Backend:
    """The backend that knows job `name`: a local run of that name, else SageMaker. Every command that takes
    a JOB comes here first, so the name is checked here, once for all of them."""
    check_job_name(name, given_as="JOB")
    local = local_module()
    if local is not None:
        backend = local.LocalBackend()
        if backend.has(name):
            return backend
        if not (region or default_region()):
            # Someone who only runs jobs here asked for one that does not exist: say that, not
            # "pass --region". Exit 4, as for any unknown job.
            raise UserError(f"no local job named {name} (and no AWS region to look for a SageMaker job "
                            "of that name: pass --region (region= in Python), or set AWS_REGION)", exit_codes.API)
    return sagemaker_backend(region, with_tuning=True)  # a tuning job's name works too
