"""Following jobs: `status`, `list`, `logs`, `wait` and `stop`, for SageMaker and local jobs alike."""


from __future__ import annotations

import click

from smtrain.cli import steps
from smtrain.cli.guard import guard
from smtrain.cli.options import output_option, region_option, timeout_option
from smtrain.jobs import JOB_STATUSES, exit_code_for
from smtrain.spec.units import parse_since


@click.command()
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


@click.command(name="list")
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


@click.command()
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


@click.command()
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


@click.command()
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
