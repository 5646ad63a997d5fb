"""`smtrain submit SPEC`: to SageMaker (--dry-run shows the request, --wait/--logs follow the job), or here
(--local), after a check when asked (--check)."""


from __future__ import annotations

import sys
from typing import Any

import click

from smtrain import exit_codes
from smtrain.cli import steps
from smtrain.cli.check_command import data_option, random_option, run_check, steps_option
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option, set_option, spec_argument, strict_option, timeout_option
from smtrain.errors import UserError


@click.command()
@spec_argument
@set_option()
@click.option("--dry-run", is_flag=True, help="Print the exact CreateTrainingJob request; send nothing.")
@click.option("--job-name", help="Use this job name instead of <name>-<UTC time>-<4 hex>.")
@click.option("--wait", "wait_", is_flag=True, help="Wait for the job to end; exit with its status code.")
@click.option("--logs", "logs_", is_flag=True, help="Stream the job's logs until it ends (implies --wait).")
@timeout_option
@click.option("--local", "local_", is_flag=True,
              help="Run here instead: the same bundle and container contract, each host a process, no Docker.")
@click.option("--replicas-per-host", "--cpu-replicas", "replicas_per_host", type=click.IntRange(min=1), metavar="K",
              help="--local: train with K replicas per host instead of the plan's (each host gets as many CPU "
                   "devices as its planned GPUs by default; fewer use less memory).")
@click.option("--python", "python_", type=click.Path(dir_okay=False, exists=True), metavar="PATH",
              help="--local, --check: the Python that runs the hosts (default: this one; e.g. an env with Horovod).")
@click.option("--verbose", is_flag=True,
              help="--local: show TensorFlow's start-up lines (oneDNN, CUDA, CPU features) too; the host logs "
                   "always have them.")
@click.option("--no-quota-check", is_flag=True,
              help="Skip the Service Quotas check before the upload (for credentials without permission to read "
                   "quotas).")
@click.option("--check", "check_first", is_flag=True,
              help="Run `smtrain check` first: send nothing (exit 1) unless the planned run trains as one device.")
@click.option("--force", is_flag=True, help="--check: send even when the check finds the run not equivalent.")
@data_option
@steps_option
@random_option
@strict_option
@output_option("text", "json", "yaml")
@guard
def submit(spec_file: str, overrides: tuple[str, ...], dry_run: bool, job_name: str | None, wait_: bool,
           logs_: bool, timeout: str | None, local_: bool, replicas_per_host: int | None, python_: str | None,
           verbose: bool, no_quota_check: bool, check_first: bool, force: bool, data: tuple[str, ...],
           check_steps: int, random_layers: str, strict: bool, output: str) -> None:
    """Submit a training job (or, with --dry-run, show exactly what would be sent).

    With --local the job runs on this machine and the command ends with it (exit 0 Completed,
    1 Failed, 3 Stopped). With --check the job's first steps are compared on one device and in the
    planned layout first (`smtrain check`), and nothing is sent unless they agree (or --force).
    """
    import smtrain as api  # the library's names (smtrain.api.*), imported as they are used
    from smtrain.cli.render import dry_run_text, dump
    from smtrain.spec.patterns import check_job_name

    if job_name is not None:
        check_job_name(job_name, given_as="--job-name")
    seconds = steps.parse_timeout(timeout)
    if dry_run and (wait_ or logs_ or timeout or local_):
        raise click.UsageError("--wait, --logs, --timeout and --local run a job: not with --dry-run")
    if not local_ and (replicas_per_host or verbose or (python_ and not check_first)):
        raise click.UsageError("--replicas-per-host, --python and --verbose apply to --local runs (--python to "
                               "--check too)")
    found = steps.plan_spec(spec_file, overrides)
    steps.show_checks(found, output)
    findings = found.findings
    if output == "text" or ((strict or any(f.is_error for f in findings)) and findings):  # else in the JSON
        steps.echo_findings(findings)
    steps.strict_exit(findings, strict)
    given = click.get_current_context().get_parameter_source("check_steps") != click.core.ParameterSource.DEFAULT
    if not check_first and (force or data or random_layers != "on" or given):
        raise click.UsageError("--force, --data, --check-steps and --random-layers go with --check")
    checked = (_check_before_sending(spec_file, overrides, data, check_steps, random_layers, force, output, python_)
               if check_first else None)
    # What the check found travels with what was sent (--check -o json).
    preflight = [f.to_dict() for f in findings]
    extra: dict[str, Any] = {"check": checked.to_dict()} if checked is not None else {}
    if local_:
        from smtrain.cli.render import local_submitted

        job = api.submit(found, local=True, job_name=job_name, stream=sys.stdout if output == "text" else sys.stderr,
                         replicas_per_host=replicas_per_host, python=python_, verbose=verbose, show=False)
        steps.finish(job.info, False, output, {**local_submitted(job.submitted, job.info), "preflight": preflight,
                                               **extra}, metrics_of=job.backend)
        return
    if dry_run:
        rendered = api.dry_run(found, job_name=job_name)
        if output == "text":
            click.echo(dry_run_text(rendered, found.plan.region))
        else:
            dump({**rendered, "preflight": preflight, **extra}, output)
        return
    from smtrain.cli.quota_check import show_before_submit
    from smtrain.sagemaker.upload import want_progress_bar

    # The library's order: the spec's places, the quota check (exit 5 when no choice fits), the upload.
    job = api.submit(found, job_name=job_name, quota_check=not no_quota_check, on_quota=show_before_submit,
                     progress=want_progress_bar(output), show=False)
    _report_submitted(job.submitted, output, wait=wait_ or logs_, logs=logs_, timeout=seconds, preflight=preflight,
                      extra=extra)


def _check_before_sending(spec_file: str, overrides: tuple[str, ...], data: tuple[str, ...], check_steps: int,
                          random_layers: str, force: bool, output: str, python: str | None) -> Any:
    """submit --check: the check's report on stderr; not equivalent stops here (exit 1) unless --force."""
    from smtrain.cli.check_command import show
    from smtrain.cli.render import dump

    result = run_check(spec_file, overrides, data, check_steps, random_layers, python)
    if result.equivalent or force or output == "text":
        show(result, "text", err=True)
    if result.equivalent:
        return result
    if force:
        click.echo("warning: the check found the planned run not equivalent to one device; sending it anyway "
                   "(--force)", err=True)
        return result
    if output != "text":
        dump({"sent": False, "check": result.to_dict()}, output)
    raise UserError("nothing was sent: the planned run does not train as one device would (see the check above; "
                    "--force sends it anyway)", exit_codes.FAILED)


def _report_submitted(submitted: Any, output: str, *, wait: bool, logs: bool, timeout: float | None,
                      preflight: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> None:
    from smtrain.cli.render import dump, submitted_text

    data = {**submitted.to_dict(), "preflight": preflight, **(extra or {})}
    if output == "text":
        click.echo(submitted_text(data, submitted.confirmed_by_describe), err=wait)
    if not wait:
        if output != "text":
            dump(data, output)
        return
    from smtrain.api.backends import sagemaker_backend

    backend = sagemaker_backend(submitted.region)
    job, timed_out = steps.follow_job(backend, submitted.job_name, logs=logs, timeout=timeout,
                             output=output, region=submitted.region_flag)
    data.update(status=job.status, job=job.to_dict())
    steps.finish(job, timed_out, output, data, metrics_of=backend, usage_of=backend)
