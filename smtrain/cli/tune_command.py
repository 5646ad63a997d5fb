"""`smtrain tune SPEC`: a hyperparameter tuning job over the spec's training job (its `tuning:` section).

    smtrain tune job.yaml --dry-run      the exact CreateHyperParameterTuningJob request, offline
    smtrain tune job.yaml [--wait]       upload the bundle as submit does, create the tuning job
    smtrain tune job.yaml --local        trials here, one after another (cli.tune_local, local.tuning)

Exit codes as submit's: 2 for a spec problem (file:line), 4 for AWS errors; with --wait the tuning
job's own (0 Completed, 1 Failed, 3 Stopped, 124 on --timeout).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

import click

from smtrain import exit_codes
from smtrain.errors import UserError

if TYPE_CHECKING:
    from smtrain.plan.build import Plan
    from smtrain.plan.tuning import TuningPlan
    from smtrain.spec.model import LoadedSpec


def tuning_plan(loaded: LoadedSpec, plan: Plan) -> TuningPlan | None:
    """The spec's tuning plan (its checks: the objective against the job's metrics...), None without `tuning:`.
    validate and plan call it too, so they refuse what tune would."""
    if loaded.spec.tuning is None:
        return None
    from smtrain.plan.tuning import build_tuning_plan

    return build_tuning_plan(loaded, plan)


def _check_tuning_name(value: str | None) -> None:
    if value is not None:
        from smtrain.sagemaker.tuning import validate_tuning_job_name

        validate_tuning_job_name(value)


def tune_command(cli: ModuleType) -> click.Command:
    """The `tune` command, built over smtrain.cli.commands (`cli`), which registers it: it loads, plans,
    checks the code and follows a job with the same steps as `submit` (cli._load, _catalog, _check_code,
    _follow, _finish). Handed over rather than imported, so that the two modules do not import each other."""

    @click.command()
    @click.argument("spec_file", metavar="SPEC", type=click.Path(dir_okay=False))
    @click.option("--set", "overrides", multiple=True, metavar="FIELD=VALUE",
                  help="Override a spec field, e.g. --set tuning.max_jobs=4 (repeatable).")
    @click.option("--dry-run", is_flag=True,
                  help="Print the exact CreateHyperParameterTuningJob request; send nothing.")
    @click.option("--job-name", help="Use this tuning job name (at most 32 characters) instead of "
                                     "<name, cut to 18>-<UTC yymmdd-HHMMSS>.")
    @click.option("--wait", "wait_", is_flag=True, help="Wait for the tuning job to end; exit with its status code.")
    @click.option("--timeout", metavar="DURATION",
                  help="Give up waiting after this long (90s, 30m, 2h); exit 124, the job runs on.")
    @click.option("--local", "local_", is_flag=True,
                  help="Run the trials here, one after another, through the local backend (random or grid search).")
    @click.option("--seed", type=click.IntRange(min=0), metavar="N",
                  help="--local: seed of the random search; default the spec's training.seed, else 0.")
    @click.option("--no-quota-check", is_flag=True,
                  help="Skip the Service Quotas check (max_parallel_jobs trials at once) before the upload.")
    @click.option("--output", "-o", "output", type=click.Choice(["text", "json", "yaml"]), default="text",
                  show_default=True, help="Output format.")
    def tune(spec_file: str, overrides: tuple[str, ...], dry_run: bool, job_name: str | None, wait_: bool,
             timeout: str | None, local_: bool, seed: int | None, no_quota_check: bool, output: str) -> None:
        """Tune hyperparameters: a SageMaker tuning job over the spec's training job (`tuning:` in the spec).

        With --dry-run, show exactly what would be sent. `status`, `wait`, `stop`, `logs` and
        `list --tuning` take the tuning job's name.
        """
        _tune(cli, spec_file, overrides, dry_run=dry_run, job_name=job_name, wait=wait_, timeout=timeout,
              local=local_, seed=seed, quota_check=not no_quota_check, output=output)

    return tune


def _tune(cli: ModuleType, spec_file: str, overrides: tuple[str, ...], *, dry_run: bool, job_name: str | None,
          wait: bool, timeout: str | None, local: bool, seed: int | None, quota_check: bool, output: str) -> None:
    from smtrain.cli.render import dump, echo_problems
    from smtrain.plan.build import build_plan

    if dry_run and (wait or timeout or local):
        raise click.UsageError("--wait, --timeout and --local run a tuning job: not with --dry-run")
    if local and (wait or timeout):
        raise click.UsageError("--wait and --timeout apply to SageMaker tuning jobs: --local runs until it ends")
    if seed is not None and not local:
        raise click.UsageError("--seed applies to --local runs (SageMaker's search seeds itself)")
    seconds = cli._parse_timeout(timeout)
    _check_tuning_name(job_name)
    loaded = cli._load(spec_file, overrides)
    if loaded.spec.tuning is None:
        raise UserError(f"{spec_file} has no tuning: section: add one (README, \"Hyperparameter tuning\"), or run "
                        "the job once with `smtrain submit`", exit_codes.USAGE)
    ctx = click.get_current_context()
    if local:
        from smtrain.cli.tune_local import run_local_tuning

        every = (*(ctx.find_root().params.get("early_overrides") or ()), *overrides)  # as cli._load applies them
        ctx.exit(run_local_tuning(loaded, spec_file=spec_file, overrides=every, catalog=cli._catalog(ctx),
                                  output=output, tuning_name=job_name, seed=seed))
    result = build_plan(loaded, cli._catalog(ctx))
    tp = tuning_plan(loaded, result)
    assert tp is not None
    bundle_warnings, findings = cli._check_code(loaded, result)
    # As submit: the plan's warnings too in text (an image past its patches); JSON carries preflight only.
    echo_problems((result.warnings if output == "text" else []) + bundle_warnings, label="warning")
    if output == "text":
        cli._echo_findings(findings)
    preflight = [f.to_dict() for f in findings]
    from smtrain.bundle.model import BundleError
    from smtrain.sagemaker import tuning as tuning_backend

    try:
        if dry_run:
            rendered = tuning_backend.dry_run(tp, job_name)
            if output == "text":
                from smtrain.cli.tuning_render import tuning_dry_run_text

                click.echo(tuning_dry_run_text(rendered, result.region))
            else:
                dump({**rendered, "preflight": preflight}, output)
            return
        from smtrain.sagemaker.upload import want_progress_bar

        if quota_check:  # as submit's, before the upload: the trials that run at once must fit
            from smtrain.cli.quota_check import check_before_submit

            check_before_submit(tp.parallel_trials())
        submitted = tuning_backend.tune(tp, job_name, progress=want_progress_bar(output))
    except BundleError as exc:
        raise cli._bundle_refusal(loaded, exc) from exc
    _report(cli, submitted, output, wait=wait, timeout=seconds, preflight=preflight)


def _report(cli: ModuleType, submitted: Any, output: str, *, wait: bool, timeout: float | None,
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
    from smtrain.cli.backends import sagemaker_backend

    backend = sagemaker_backend(submitted.region, with_tuning=True)
    job, timed_out = cli._follow(backend, submitted.job_name, logs=False, timeout=timeout, output=output,
                                 region=submitted.region_flag)
    data.update(status=job.status, job=job.to_dict())
    cli._finish(job, timed_out, output, data)
