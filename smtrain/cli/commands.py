"""Command-line wiring only: parse, call, print, exit code."""

from __future__ import annotations

import signal
import sys
import threading
from pathlib import Path
from typing import Any

import click

from smtrain import exit_codes
from smtrain.cli import steps
from smtrain.cli.check_command import check, data_option, random_option, run_check, steps_option
from smtrain.cli.debug_command import debug
from smtrain.cli.guard import GuardedGroup, guard
from smtrain.cli.import_command import import_
from smtrain.cli.metrics_command import metrics
from smtrain.cli.options import output_option, region_option, set_option, spec_argument, strict_option, timeout_option
from smtrain.cli.shown_paths import shown_path as _shown
from smtrain.cli.tune_command import tune
from smtrain.errors import UserError, raise_terminated
from smtrain.jobs import JOB_STATUSES, exit_code_for
from smtrain.redact import mask_text
from smtrain.spec.units import parse_since, parse_size


@click.group(cls=GuardedGroup,
             context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.option("--debug", is_flag=True, help="Show Python tracebacks for unexpected errors.")
@click.option("--catalog", type=click.Path(dir_okay=False, path_type=Path), envvar="SMTRAIN_CATALOG",
              help="Your own instance catalog (YAML), merged over the bundled one. [env SMTRAIN_CATALOG]")
@click.option("--prices", type=click.Path(dir_okay=False, path_type=Path), envvar="SMTRAIN_PRICES",
              help="A YAML/JSON map of instance type -> hourly price overriding the catalog's. "
                   "[env SMTRAIN_PRICES]")
@click.option("--set", "early_overrides", multiple=True, metavar="FIELD=VALUE",
              help="Override a spec field for the command that reads a spec (as its own --set).")
@click.version_option(package_name="smtrain")
def main(debug: bool, catalog: Path | None, prices: Path | None, early_overrides: tuple[str, ...]) -> None:
    """Launch TensorFlow training jobs on Amazon SageMaker GPUs from a YAML job spec.

    Exit codes: 0 ok/Completed, 1 Failed, 2 invalid spec or usage, 3 Stopped,
    4 AWS/API error or unknown job, 5 the job does not fit the account's quota (nothing sent),
    70 internal error (a bug: rerun with --debug),
    124 wait timed out, 130 interrupted, 141 stdout closed by its reader, 143 SIGTERM.
    """
    # SIGTERM is an interrupt, as Ctrl-C is: what cleans up after one cleans up after the other
    # (smtrain.errors.Terminated; the guard says "interrupted" and exits 143).
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, raise_terminated)


@main.command()
@spec_argument
@set_option()
@strict_option
@output_option("text", "json", "yaml")
@guard
def validate(spec_file: str, overrides: tuple[str, ...], strict: bool, output: str) -> None:
    """Check a job spec: every problem, with file:line:column, and the preflight scan of your own
    script. No AWS, no TensorFlow."""
    from smtrain.api.validation import validate as validate_spec
    from smtrain.cli.render import dump, echo_problems, problem_dict, valid_text
    from smtrain.render.request_limits import local_only_problems

    ctx = click.get_current_context()
    checked = validate_spec(spec_file, steps.every_override(overrides), catalog=lambda: steps.catalog(ctx))
    problems, plan, findings = checked.problems, checked.plan, checked.findings
    errors = [f for f in findings if f.is_error]
    if problems or errors or plan is None:
        if output != "text":
            dump({"valid": False, "problems": [problem_dict(p) for p in problems],
                  "warnings": [problem_dict(w) for w in checked.warnings],
                  "preflight": [f.to_dict() for f in findings], "skipped": checked.skipped}, output)
            click.get_current_context().exit(exit_codes.USAGE)
        echo_problems(problems)
        echo_problems(checked.warnings, label="warning")
        steps.echo_findings(findings)
        for note in checked.skipped:
            click.echo(f"note: {note}", err=True)
        found = [f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"] if problems else []
        if errors:
            found.append(f"{len(errors)} preflight error{'s' if len(errors) != 1 else ''}")
        click.echo(f"{' and '.join(found)} found; nothing was sent.", err=True)
        click.get_current_context().exit(exit_codes.USAGE)
    local = local_only_problems(plan)  # inputs/output on this machine: valid for --local only
    if output != "text":
        dump({"valid": True, "local_only": bool(local), "local_only_fields": [problem_dict(p) for p in local],
              "problems": [], "warnings": [problem_dict(w) for w in checked.warnings],
              "preflight": [f.to_dict() for f in findings]}, output)
        steps.strict_exit(findings, strict)
        return
    echo_problems(checked.warnings, label="warning")
    echo_problems(local, label="local only")
    steps.echo_findings(findings)
    steps.strict_exit(findings, strict)
    click.echo(valid_text(spec_file, plan, local))


@main.command()
@spec_argument
@set_option()
@strict_option
@click.option("--check", is_flag=True,
              help="Also ask AWS (Service Quotas) whether the account's quota fits each instance choice; "
                   "exit 5 when none does.")
@output_option("text", "json", "yaml")
@guard
def plan(spec_file: str, overrides: tuple[str, ...], strict: bool, check: bool, output: str) -> None:
    """Show every decision: instance and why, replicas, batch and LR maths, per-host launch, cost."""
    from smtrain.cli.render import dump, plan_text

    found = steps.plan_spec(spec_file, overrides)
    result, tuning, findings = found.plan, found.tuning, found.findings
    quotas = None
    if check:  # the only part of plan that goes online
        from smtrain.cli.quota_check import check_quotas

        quotas = check_quotas(result)
    if output != "text":
        summary = found.summary()
        if quotas is not None:
            summary["quotas"] = quotas.to_dict()
        dump(summary, output)
    else:
        click.echo(plan_text(result, found.code.warnings, found.code.own_strategies))
        if tuning is not None:
            from smtrain.cli.tuning_render import tuning_lines

            click.echo("\n".join(tuning_lines(tuning.summary())))
        steps.echo_findings(findings)
        if quotas is not None and not quotas.refused:
            click.echo("\n".join(quotas.lines()))
    steps.strict_exit(findings, strict)
    if quotas is not None:
        from smtrain.cli.quota_check import refuse_if_none_fits

        refuse_if_none_fits(quotas)


@main.command()
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


@main.command()
@click.argument("job")
@region_option
@output_option("text", "json", "yaml")
@guard
def status(job: str, region: str | None, output: str) -> None:
    """Show a job: status, times, instances, failure reason, model and console URLs; a SageMaker job that started
    ends with its hosts' GPU use (`metrics JOB --system` shows it over time).

    A tuning job's name shows its trials and the best one. Exits 1 if the job Failed, 3 if it was
    Stopped, 0 otherwise.
    """
    from smtrain.api.backends import backend_for_job
    from smtrain.api.listing import priced
    from smtrain.cli.render import dump, job_text
    from smtrain.cli.system_usage import usage_line

    backend, catalog = backend_for_job(job, region), steps.catalog(click.get_current_context())
    info = priced(backend.describe(job), catalog)
    if output != "text":
        dump(info.to_dict(), output)
    else:
        click.echo(job_text(info))
        line = usage_line(backend, info, catalog)  # the hosts' GPU use, once SageMaker has published it
        if line:
            click.echo(line)
    click.get_current_context().exit(exit_code_for(info))


@main.command(name="list")
@click.option("--status", "status_", type=click.Choice(JOB_STATUSES), help="Only jobs in this state.")
@click.option("--name-contains", help="Only jobs whose name contains this text.")
@click.option("--since", metavar="WHEN", help="Only jobs created since: a duration ago (2h, 7d) or an ISO date/time.")
@click.option("--limit", type=click.IntRange(min=1), default=20, show_default=True, help="At most this many jobs.")
@click.option("--local", "local_", is_flag=True, help="List runs of the local backend instead.")
@click.option("--cost", "cost", is_flag=True,
              help="Add what each job cost (one DescribeTrainingJob per job listed).")
@click.option("--tuning", "tuning", is_flag=True, help="List hyperparameter tuning jobs instead (smtrain tune).")
@region_option
@output_option("text", "json", "yaml")
@guard
def list_(status_: str | None, name_contains: str | None, since: str | None, limit: int, local_: bool,
          cost: bool, tuning: bool, region: str | None, output: str) -> None:
    """List training jobs (with --tuning, tuning jobs), newest first."""
    from smtrain.api.listing import list_jobs
    from smtrain.aws import default_region
    from smtrain.cli.render import dump, jobs_table

    try:
        created_after = parse_since(since) if since else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--since") from None
    if tuning and (local_ or cost):
        raise click.UsageError("--tuning lists SageMaker tuning jobs: not with --local or --cost")
    if not local_ and not tuning and not (region or default_region()):
        # Someone who only runs jobs here: their jobs, rather than "pass --region". Tuning jobs exist only
        # on SageMaker, so `--tuning` gets the backend's own "pass --region" instead.
        click.echo("note: no AWS region (pass --region, or set AWS_REGION): listing local jobs", err=True)
        local_ = True
    jobs = list_jobs(status=status_, name_contains=name_contains, since=created_after, limit=limit, local=local_,
                     tuning=tuning, cost=cost, region=region,
                     catalog=steps.catalog(click.get_current_context()) if cost else None)
    if output != "text":
        dump({"jobs": [j.to_dict() for j in jobs]}, output)
    elif jobs:
        jobs_table(jobs, cost=cost)
    else:
        click.echo(f"no {'tuning' if tuning else 'training'} jobs found", err=True)


@main.command()
@click.argument("job")
@click.option("--follow", "-f", is_flag=True, help="Keep reading until the job ends (new hosts included).")
@region_option
@output_option("text", "json", "yaml")
@guard
def logs(job: str, follow: bool, region: str | None, output: str) -> None:
    """Print a job's logs: every host merged by time, each line prefixed with its host.

    With --output json: one JSON object per line (host, timestamp, message).
    """
    from smtrain.api.backends import backend_for_job
    from smtrain.cli.follow import reattach_on_interrupt
    from smtrain.cli.render import dump_line, log_line
    from smtrain.jobs import reattach_command
    from smtrain.redact import StreamMasker

    backend = backend_for_job(job, region)
    masker = StreamMasker()  # one across the stream: a private key block spans lines
    if follow:  # said before the wait: a job that has written nothing yet is not a silent command
        click.echo(f"following {job}'s logs until it ends (Ctrl-C stops following, not the job)", err=True)
    lines = 0
    with reattach_on_interrupt(job, reattach_command("logs", job, "--follow", region=region)):
        for event in backend.logs(job, follow=follow):
            lines += 1
            if output != "text":
                dump_line({**event.to_dict(), "message": masker(event.host, event.message)}, output)
            else:
                click.echo(log_line(event, masker))
    if not lines:
        info = backend.describe(job)
        click.echo(f"{job} has no log lines{' yet' if not info.done else ''} (status {info.status_text})", err=True)
    if follow:
        click.get_current_context().exit(exit_code_for(backend.describe(job)))


@main.command()
@click.argument("job")
@timeout_option
@region_option
@output_option("text", "json", "yaml")
@guard
def wait(job: str, timeout: str | None, region: str | None, output: str) -> None:
    """Wait for a job to end; exit 0 Completed, 1 Failed, 3 Stopped, 124 on --timeout."""
    from smtrain.api.backends import backend_for_job

    seconds = steps.parse_timeout(timeout)
    backend = backend_for_job(job, region)
    info, timed_out = steps.follow_job(backend, job, logs=False, timeout=seconds, output=output, region=region)
    steps.finish(info, timed_out, output, usage_of=backend)


@main.command()
@click.argument("job")
@click.option("--wait", "wait_", is_flag=True, help="Wait until the job has stopped; exit with its status code.")
@timeout_option
@region_option
@output_option("text", "json", "yaml")
@guard
def stop(job: str, wait_: bool, timeout: str | None, region: str | None, output: str) -> None:
    """Ask SageMaker to stop a job (it goes Stopping, then Stopped). The job's data stays."""
    from smtrain.api.backends import backend_for_job
    from smtrain.cli.render import dump, job_text
    from smtrain.jobs import reattach_command

    seconds = steps.parse_timeout(timeout)
    backend = backend_for_job(job, region)
    info = backend.stop(job)
    if info.done:
        click.echo(f"{job} had already ended ({info.status}): nothing to stop", err=True)
        if wait_:
            steps.finish(info, False, output)
    elif wait_:
        info, timed_out = steps.follow_job(backend, job, logs=False, timeout=seconds, output=output, region=region)
        steps.finish(info, timed_out, output)
    else:
        click.echo(f"stopping {job}; `{reattach_command('wait', job, region=region)}` waits until it has "
                   "stopped", err=True)
    if output != "text":
        dump(info.to_dict(), output)
    else:
        click.echo(job_text(info))


@main.command()
@click.argument("job")
@region_option
@click.option("--dir", "directory", type=click.Path(file_okay=False, resolve_path=True, path_type=Path), metavar="DIR",
              help="Download a SageMaker job's event files here: a new or empty directory, or one smtrain "
                   "downloaded into before. [default: $XDG_CACHE_HOME or ~/.cache, smtrain/tensorboard/JOB]")
@click.option("--no-launch", is_flag=True, help="Fetch the event files and say where they are; start nothing.")
@output_option("text", "json", "yaml")
@guard
def tensorboard(job: str, region: str | None, directory: Path | None, no_launch: bool, output: str) -> None:
    """Show a job's TensorBoard event files: a local job's where its chief host wrote them, a SageMaker
    job's downloaded from S3. Then, in text mode, start `tensorboard --logdir` on them when TensorBoard
    is installed (`pip install 'smtrain[tensorboard]'`) and exit with its code.

    Only event files (events.out.tfevents.*) are downloaded, and no file smtrain did not write is
    replaced: a --dir holding other files is refused (exit 2). Exits 4 when the job has no event files
    (yet), as for an unknown job.
    """
    import shlex

    from smtrain.api.backends import backend_for_job
    from smtrain.cli.render import dump, event_files_text, no_event_files
    from smtrain.cli.tensorboard_program import run, tensorboard_command

    found = backend_for_job(job, region).event_files(job, directory)  # the name checked there
    for note in found.notes:  # what was left out, before the outcome: it may be why nothing is there
        click.echo(mask_text(f"note: {note}"), err=True)
    if directory is not None and found.source == "local":
        click.echo("note: --dir is for SageMaker jobs; a local job's event files are read where they are", err=True)
    if not found.files:
        raise UserError(no_event_files(found), exit_codes.API)
    command = tensorboard_command(found.logdir)
    shown = shlex.join(command) if command else None
    if output != "text":
        dump(found.to_dict(shown), output)
        return
    click.echo(event_files_text(found, shown, launching=not no_launch))
    if command is not None and not no_launch:
        click.get_current_context().exit(run(command))


@main.command()
@click.option("--gpu", help="GPU model, e.g. A100, H100, V100, L4.")
@click.option("--gpus", type=click.IntRange(min=1), default=1, show_default=True, help="At least this many GPUs.")
@click.option("--min-gpu-memory", help="At least this much memory per GPU, e.g. 40GB.")
@click.option("--region", help="Only types this region offers for training (and its prices where known).")
@output_option("text", "json", "yaml")
@guard
def instances(gpu: str | None, gpus: int, min_gpu_memory: str | None, region: str | None, output: str) -> None:
    """The GPU instance catalog with on-demand prices, cheapest first ("?" where a fact is unknown)."""
    from smtrain.cli.render import dump, instance_dict, instances_table
    from smtrain.plan.catalog_listing import listing
    from smtrain.spec import patterns

    catalog = steps.catalog(click.get_current_context())
    try:
        memory = parse_size(min_gpu_memory) if min_gpu_memory else None
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--min-gpu-memory") from None
    if region is not None and not patterns.REGION.matches(region):
        raise click.BadParameter(f"{region!r} is not an AWS region name, e.g. eu-west-1", param_hint="--region")
    found = listing(catalog, gpu, gpus, memory, region, min_gpu_memory)  # CatalogError when nothing matches
    if output != "text":
        dump({"price_source": catalog.price_source, "price_date": catalog.price_date,
              "price_region": catalog.region, "region": region, "regions_source": catalog.regions_source,
              "excluded": dict(catalog.excluded),
              "instances": [instance_dict(i, catalog.price(i, region), region) for i in found]}, output)
        return
    where = f" for {region}" if region else ""
    instances_table(found, [catalog.price(i, region) for i in found], region,
                    f"{len(found)} instance types{where}; on-demand {catalog.region} prices: {catalog.price_source} "
                    f"({catalog.price_date})")

def _newest_tf_version(region: str | None) -> str:
    """The version a spec gets by default (the newest image AWS patches, as users write it: "2.21") where
    `region` has it; else the newest there is a training image for there."""
    from smtrain.plan.distribution import version_tuple
    from smtrain.plan.tf_image_choice import default_version
    from smtrain.plan.tf_images import image_regions as table_regions
    from smtrain.plan.tf_versions import image_regions, known_tf_versions

    if region is None or region in table_regions():
        return default_version()
    short = sorted((v for v in known_tf_versions() if v.count(".") == 1), key=version_tuple, reverse=True)
    return next((v for v in short if region in image_regions(v)), short[0])


def _init_example(name: str, force: bool, output: str) -> None:
    from smtrain.cli import examples
    from smtrain.cli.render import dump

    if name == "list":
        listed = {n: examples.summary(n) for n in examples.names()}
        if output != "text":
            dump({"examples": listed}, output)
        else:
            click.echo("\n".join(f"{n:<22} {what}" for n, what in listed.items()))
        return
    written = examples.write_example(name, Path.cwd(), force=force)
    if output != "text":
        dump({"spec_file": str(written.spec), "files": [str(f) for f in written.files]}, output)
        return
    click.echo(f"wrote {', '.join(_shown(f) for f in written.files)}")
    data = examples.demo_data_command(name)
    click.echo(f"next: smtrain plan {_shown(written.spec)}" + (f"; to run it here: {data}, then smtrain submit "
                                                               f"{_shown(written.spec)} --local" if data else ""))


@main.command()
@click.argument("script", required=False, type=click.Path(dir_okay=True, path_type=Path))
@click.argument("spec_file", metavar="[SPEC]", required=False, type=click.Path(path_type=Path))
@click.option("--force", is_flag=True, help="Replace SPEC if it exists.")
@click.option("--example", metavar="NAME", help="Write example NAME (configs/NAME.yaml and its code) here instead; "
              "--example list names them.")
@output_option("text", "json", "yaml")
@guard
def init(script: Path | None, spec_file: Path | None, force: bool, example: str | None, output: str) -> None:
    """Write a starting job spec for your script (default: job.yaml beside it), then validate it.

    The options the script's argparse declares become hyperparameters with their defaults; the script
    runs unchanged, wrapped in the strategy smtrain picks. Never replaces a file without --force.
    `smtrain init --example local-demo` writes one of the tested example specs instead.
    """
    if example is not None:
        if script is not None:
            raise click.UsageError("--example writes an example spec: not with SCRIPT")
        _init_example(example, force, output)
        return
    if script is None:
        raise click.UsageError("Missing argument 'SCRIPT' (or --example NAME).")
    import smtrain as api  # the library's names (smtrain.api.*), imported as they are used
    from smtrain.aws import default_region
    from smtrain.cli.render import dump
    from smtrain.spec import patterns
    from smtrain.spec.starter import hyperparameters, notebook_refusal, read_script, starter_text

    if not script.is_file():
        raise UserError(f"{script}: no such file" if not script.exists() else f"{script}: not a file",
                        exit_codes.USAGE)
    if script.suffix not in (".py", ".ipynb"):
        raise UserError(f"{script}: not a Python script (.py) or notebook (.ipynb): smtrain init reads a script's "
                        "argparse options", exit_codes.USAGE)
    refusal = notebook_refusal(script, _shown(script))  # before anything is written: a rerun needs no --force
    if refusal is not None:
        raise UserError(refusal, exit_codes.USAGE)
    target = spec_file if spec_file is not None else script.parent / "job.yaml"
    if (target.exists() or target.is_symlink()) and not force:
        raise UserError(f"{target} exists: pass --force to replace it, or name another file "
                        f"(smtrain init {_shown(script)} other.yaml)", exit_codes.USAGE)
    if target.is_dir():
        raise UserError(f"{target} is a directory: name the spec file to write", exit_codes.USAGE)
    facts = read_script(script)
    region = default_region()
    region = region if region and patterns.REGION.matches(region) else "us-east-1"
    text = starter_text(script, target, facts, tf_version=_newest_tf_version(region), region=region)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"cannot write {target}: {exc.strerror or exc}", exit_codes.USAGE) from None
    # Checked as `validate` checks it: a starting spec that does not validate is a bug of init's.
    found = api.plan(target, catalog=steps.catalog(click.get_current_context()))
    loaded, plan, warnings, findings = found.loaded, found.plan, found.code.warnings, found.findings
    shown = _shown(target)
    next_steps = [f"smtrain plan {shown}", f"smtrain submit {shown} --dry-run", f"smtrain submit {shown} --local"]
    errors = sum(f.is_error for f in findings)  # what the script does that no spec can make run
    if output != "text":
        dump({"spec_file": str(target), "script": str(script), "valid": not errors,
              "hyperparameters": hyperparameters(facts.args).values,
              "warnings": [w.render() for w in plan.warnings + warnings],
              "preflight": [f.to_dict() for f in findings], "next": next_steps}, output)
        if errors:
            click.get_current_context().exit(exit_codes.USAGE)
        return
    from smtrain.cli.render import echo_problems, valid_text

    echo_problems(plan.warnings + warnings, label="warning")
    steps.echo_findings(findings)
    click.echo(f"wrote {shown} for {_shown(script)}")
    if errors:
        click.echo(f"{shown} cannot run {_shown(script)} as it is: fix the {errors} preflight "
                   f"error{'s' if errors != 1 else ''} above in the script, then: smtrain validate {shown}", err=True)
        click.get_current_context().exit(exit_codes.USAGE)
    click.echo(valid_text(shown, plan))
    click.echo(f"Replace the placeholders in {shown} (role, output{', inputs' if loaded.spec.inputs else ''}), "
               "then:")
    click.echo("\n".join(f"  {step}" for step in next_steps))


@main.command()
@output_option("json", "yaml")
def schema(output: str) -> None:
    """Print the JSON Schema of the job spec (for editors)."""
    from smtrain.cli.render import dump
    from smtrain.spec.model import json_schema

    dump(json_schema(), output, mask=False)


@main.command()
@click.argument("shell", type=click.Choice(["bash", "zsh", "fish"]))
def completion(shell: str) -> None:
    """Print the shell completion script, e.g. `eval "$(smtrain completion bash)"` in ~/.bashrc."""
    from click.shell_completion import get_completion_class

    completer = get_completion_class(shell)
    assert completer is not None  # click knows every choice above
    click.echo(completer(main, {}, "smtrain", "_SMTRAIN_COMPLETE").source())


main.add_command(metrics)
main.add_command(tune)
main.add_command(check)
main.add_command(import_)
main.add_command(debug)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
