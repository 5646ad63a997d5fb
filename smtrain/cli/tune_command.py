"""`smtrain tune SPEC`: a hyperparameter tuning job over the spec's training job (its `tuning:` section).

    smtrain tune job.yaml --dry-run      the exact CreateHyperParameterTuningJob request, offline
    smtrain tune job.yaml [--wait]       upload the bundle as submit does, create the tuning job
    smtrain tune job.yaml --local        trials here, one after another (cli.tune_local, local.tuning)

Exit codes as submit's: 2 for a spec problem (file:line), 4 for AWS errors; with --wait the tuning
job's own (0 Completed, 1 Failed, 3 Stopped, 124 on --timeout).
"""

from __future__ import annotations

from typing import Any

import click

from smtrain import exit_codes
from smtrain.api.tuning import check_tuning_name
from smtrain.cli import steps
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option, set_option, spec_argument, timeout_option
from smtrain.errors import UserError


@click.command()
@spec_argument
@set_option("tuning.max_jobs=4")
@click.option("--dry-run", is_flag=True,
              help="Print the exact CreateHyperParameterTuningJob request; send nothing.")
@click.option("--job-name", help="Use this tuning job name (at most 32 characters) instead of "
                                 "<name, cut to 18>-<UTC yymmdd-HHMMSS>.")
@click.option("--wait", "wait_", is_flag=True, help="Wait for the tuning job to end; exit with its status code.")
@timeout_option
@click.option("--local", "local_", is_flag=True,
              help="Run the trials here, one after another, through the local backend (random or grid search).")
@click.option("--seed", type=click.IntRange(min=0), metavar="N",
              help="--local: seed of the random search; default the spec's training.seed, else 0.")
@click.option("--no-quota-check", is_flag=True,
              help="Skip the Service Quotas check (max_parallel_jobs trials at once) before the upload.")
@output_option("text", "json", "yaml")
@guard
def tune(spec_file: str, overrides: tuple[str, ...], dry_run: bool, job_name: str | None, wait_: bool,
         timeout: str | None, local_: bool, seed: int | None, no_quota_check: bool, output: str) -> None:
    """Tune hyperparameters: a SageMaker tuning job over the spec's training job (`tuning:` in the spec).

    With --dry-run, show exactly what would be sent. `status`, `wait`, `stop`, `logs` and
    `list --tuning` take the tuning job's name.
    """
    import smtrain as api  # the library's names (smtrain.api.*), imported as they are used
    from smtrain.cli.render import dump

    if dry_run and (wait_ or timeout or local_):
        raise click.UsageError("--wait, --timeout and --local run a tuning job: not with --dry-run")
    if local_ and (wait_ or timeout):
        raise click.UsageError("--wait and --timeout apply to SageMaker tuning jobs: --local runs until it ends")
    if seed is not None and not local_:
        raise click.UsageError("--seed applies to --local runs (SageMaker's search seeds itself)")
    seconds = steps.parse_timeout(timeout)
    check_tuning_name(job_name, given_as="--job-name")
    loaded = steps.load(spec_file, overrides)
    if loaded.spec.tuning is None:
        raise UserError(f"{spec_file} has no tuning: section: add one (the docs, \"Hyperparameter tuning\"), or run "
                        "the job once with `smtrain submit`", exit_codes.USAGE)
    ctx = click.get_current_context()
    if local_:
        from smtrain.cli.tune_local import run_local_tuning

        ctx.exit(run_local_tuning(spec_file, overrides=steps.every_override(overrides), catalog=steps.catalog(ctx),
                                  output=output, tuning_name=job_name, seed=seed))
    from smtrain.api.planning import plan

    found = plan(loaded, catalog=steps.catalog(ctx))
    steps.show_checks(found, output)  # as submit's
    if output == "text" or any(f.is_error for f in found.findings):  # else in the JSON
        steps.echo_findings(found.findings)
    # Every trial would fail at an error's line: nothing is sent, as submit sends nothing.
    steps.strict_exit(found.findings, strict=False)
    preflight = [f.to_dict() for f in found.findings]
    if dry_run:
        rendered = api.tune_dry_run(found, job_name=job_name)
        if output == "text":
            from smtrain.cli.tuning_render import tuning_dry_run_text

            click.echo(tuning_dry_run_text(rendered, found.plan.region))
        else:
            dump({**rendered, "preflight": preflight}, output)
        return
    from smtrain.cli.quota_check import show_before_submit
    from smtrain.sagemaker.upload import want_progress_bar

    # As submit's: the spec's places, then the quota check of the trials that run at once, then the upload.
    job = api.tune(found, job_name=job_name, quota_check=not no_quota_check, on_quota=show_before_submit,
                   progress=want_progress_bar(output), show=False)
    _report(job.submitted, output, wait=wait_, timeout=seconds, preflight=preflight)


def _report(submitted: Any, output: str, *, wait: bool, timeout: float | None,
            preflight: list[dict[str, Any]]) -> None:
    from smtrain.cli.render import dump
    from smtrain.cli.tuning_render import tuning_submitted_text

    data = {**submitted.to_dict(), "preflight": preflight}
    if output == "text":
        click.echo(tuning_submitted_text(data), err=wait)
    if not wait:
        if output != "text":
            dump(data, output)
        return
    from smtrain.api.backends import sagemaker_backend

    backend = sagemaker_backend(submitted.region, with_tuning=True)
    job, timed_out = steps.follow_job(backend, submitted.job_name, logs=False, timeout=timeout, output=output,
                                      region=submitted.region_flag)
    data.update(status=job.status, job=job.to_dict())
    steps.finish(job, timed_out, output, data)
