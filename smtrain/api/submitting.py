"""smtrain.dry_run and smtrain.submit: a spec's job rendered (the exact CreateTrainingJob request), sent to
SageMaker, or run here. The order is the CLI's, since the CLI calls these: spec -> plan and its limits -> code
checks (a certain failure refuses) -> the spec's places -> bundle -> the rendered request -> the backend."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import IO, TYPE_CHECKING, Any

from smtrain import exit_codes
from smtrain.api.code_checks import bundle_refused_as_spec_problem, refuse_findings, refuse_local_places
from smtrain.api.job import Job
from smtrain.api.planning import Planned, plan
from smtrain.api.specs import Overrides, SpecSource
from smtrain.errors import UserError

if TYPE_CHECKING:
    from smtrain.plan.catalog import Catalog


def planned(spec: SpecSource | Planned, overrides: Overrides = None,
            catalog: Catalog | str | os.PathLike[str] | None = None) -> Planned:
    """A Planned as given, else the plan of a spec (a path, mapping or loaded spec)."""
    if isinstance(spec, Planned):
        if overrides:
            raise TypeError("overrides apply while a spec is read: pass its file or mapping instead of a plan")
        return spec
    return plan(spec, overrides, catalog=catalog)


def dry_run(spec: SpecSource | Planned, overrides: Overrides = None, *, job_name: str | None = None,
            strict: bool = False, catalog: Catalog | str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """What submit would send, with no credentials and no network: {"request": CreateTrainingJob's input,
    "upload": where the bundle would go, ..., "warnings": what the CLI says before sending (the plan's, the
    bundle's, the code's findings)} (README "JSON output"). Raises SpecError or PreflightError as submit would,
    before anything else."""
    from smtrain.sagemaker import submit as submission
    from smtrain.spec.patterns import check_job_name

    if job_name is not None:
        check_job_name(job_name, given_as="job_name")
    found = planned(spec, overrides, catalog)
    refuse_findings(found.findings, strict)
    refuse_local_places(found.plan, "submit --local")
    with bundle_refused_as_spec_problem(found.loaded):
        return {**submission.dry_run(found.plan, job_name), "warnings": advisories(found)}


def submit(spec: SpecSource | Planned, overrides: Overrides = None, *, local: bool = False, wait: bool = False,
           timeout: float | str | None = None, job_name: str | None = None, strict: bool = False,
           quota_check: bool = True, replicas_per_host: int | None = None, python: str | None = None,
           verbose: bool = False, stream: IO[str] | None = None, progress: bool = False, show: bool | None = None,
           on_quota: Callable[[Any], None] = lambda report: None,
           catalog: Catalog | str | os.PathLike[str] | None = None) -> Job:
    """Send the spec's training job to SageMaker, or with `local=True` run it here (hosts as processes, logical
    CPU devices as GPUs), and hand back its Job.

    A local run has ended when this returns; its lines go to `stream` (in Jupyter, by default, a live view
    of its status and epoch lines). With `wait=True` a SageMaker job is waited for (WaitTimeout after
    `timeout` seconds). Before anything is uploaded, the account's Service Quotas are asked whether the job
    fits (`quota_check=False` skips it): `on_quota` sees the report (smtrain.sagemaker.quotas.QuotaCheck), then
    UserError with exit code 5 when no instance choice does.
    Raises SpecError (the spec, the bundle), PreflightError (the code would fail for certain; with `strict`,
    any finding), AwsError.
    """
    from smtrain.api.arguments import flag_arg, timeout_arg
    from smtrain.spec.patterns import check_job_name

    local, wait, strict = flag_arg(local, "local"), flag_arg(wait, "wait"), flag_arg(strict, "strict")
    timeout = timeout_arg(timeout)
    if job_name is not None:
        check_job_name(job_name, given_as="job_name")
    if not local and (replicas_per_host or python or verbose):
        raise TypeError("replicas_per_host, python and verbose apply to local runs (local=True)")
    found = planned(spec, overrides, catalog)
    refuse_findings(found.findings, strict)
    if local:
        return _run_here(found, job_name, stream=stream, show=show, replicas_per_host=replicas_per_host,
                         python=python, verbose=verbose)
    refuse_local_places(found.plan, "submit --local")
    with bundle_refused_as_spec_problem(found.loaded):
        if quota_check:  # before anything is uploaded
            check_quota_before_sending(found.plan, on_quota)
        from smtrain.sagemaker import submit as submission

        sent = submission.submit(found.plan, job_name, progress=progress)
    from smtrain.api.backends import sagemaker_backend

    job = Job(sent.job_name, sagemaker_backend(sent.region), region=sent.region, submitted=sent,
              warnings=advisories(found))
    if wait:
        job.wait(timeout, show=show)
    return job


def check_quota_before_sending(plan: Any, on_quota: Callable[[Any], None] = lambda report: None) -> None:
    """The Service Quotas check before an upload: `on_quota` sees the report (smtrain.sagemaker.quotas.QuotaCheck),
    then UserError (exit 5) when every choice is known not to fit."""
    report = check_quotas(plan)
    on_quota(report)
    if report.refused:
        raise UserError(report.refusal(), exit_codes.QUOTA)


def check_quotas(plan: Any) -> Any:
    """Ask Service Quotas whether each instance choice of `plan` fits the account (`plan --check`): the report."""
    from smtrain.sagemaker.quotas import check_quotas as ask  # boto3: only when a check is asked for

    return ask(plan)


def advisories(found: Planned) -> list[str]:
    """What the CLI says before it sends or runs a job, and the job would still run: the plan's and the bundle's
    warnings, the code's findings that are not certain failures (those were refused)."""
    return [*(w.render() for w in found.warnings), *(f.render() for f in found.findings if not f.is_error)]


def _run_here(found: Planned, job_name: str | None, *, stream: IO[str] | None, show: bool | None,
              replicas_per_host: int | None, python: str | None, verbose: bool) -> Job:
    from smtrain.api.live import LiveView, in_notebook
    from smtrain.local.backend import LocalBackend, local_request

    with bundle_refused_as_spec_problem(found.loaded):
        request = local_request(found.plan, job_name)
        backend = LocalBackend()
        shown = stream is None and show is not False and in_notebook()  # outside a kernel nothing is shown
        view = LiveView(request.job_name, advisories(found), state=f"InProgress (here: {found.plan.nodes} host"
                        f"{'s' if found.plan.nodes != 1 else ''})") if shown else None
        info, ended = None, "ended before the job did: see the error"
        try:
            info = backend.run(request, stream=stream if view is None else view,  # type: ignore[arg-type]
                               replicas_per_host=replicas_per_host, python=python, verbose=verbose)
        except KeyboardInterrupt:
            ended = "Stopped (interrupted)"
            raise
        finally:
            if view is not None:
                view.close(info, None if info is not None else ended)
    return Job(request.job_name, backend, info=info, submitted=request, warnings=advisories(found))
