"""`smtrain metrics JOB`: a job's metric series per epoch (CloudWatch for SageMaker jobs, the host logs for
local ones), as a table, JSON or CSV, followed until the job ends, or drawn in the terminal, with how its
examples/s scaled against an earlier one-replica job (smtrain.cli.job_scaling); with --system, each host's CPU,
memory and GPU use (smtrain.cli.system_usage).

Exit codes: 0 when the metrics were shown, a job with none (yet) included (it says so on stderr);
with --follow, the job's own code once it has ended (1 Failed, 3 Stopped), as `logs --follow`;
4 for an unknown job or an AWS error; 2 for a host the job does not have.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Callable

import click

from smtrain.cli.guard import guard
from smtrain.cli.options import region_option
from smtrain.jobs import Backend, JobInfo, JobMetrics, exit_code_for, poll_interval

PLOT_HEIGHT = 16
PLOT_MAX_WIDTH = 120


def _plot(metrics: JobMetrics) -> None:
    from smtrain.cli.metrics_plot import plot_text

    width = min(shutil.get_terminal_size((100, 24)).columns, PLOT_MAX_WIDTH)
    color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
    text = plot_text(metrics, width, PLOT_HEIGHT, color=color)
    if text is None:
        click.echo(f"nothing to plot: {metrics.job.name} has no loss or accuracy series", err=True)
    else:
        click.echo(text)


def _show(metrics: JobMetrics, output: str, plot: bool, backend: Backend) -> None:
    from smtrain.cli import metrics_table as table
    from smtrain.cli.job_scaling import scaling
    from smtrain.cli.render import dump

    names, rows = table.columns(metrics), table.rows(metrics)
    scaled = scaling(backend, metrics) if rows and output != "csv" else None
    if output in ("json", "yaml"):
        dump({**table.metrics_dict(metrics), "scaling": scaled.to_dict() if scaled else None}, output)
        return
    for note in metrics.notes:  # what was read and left out is said, not dropped in silence
        click.echo(f"note: {note}", err=True)
    if not rows:
        click.echo(table.no_metrics_text(metrics), err=True)
    if output == "csv":
        calls = table.several_fits(rows)
        click.echo(table.csv_header(names, calls))
        for row in rows:
            click.echo(table.csv_row(row, names, calls))
        return
    if rows:
        click.echo(f"{metrics.job.name} ({metrics.job.status}), {metrics.host}, from {_source(metrics)}:")
        click.echo(table.header_line(names))
        for line in table.table_lines(rows, names):
            click.echo(line)
        if scaled is not None:
            click.echo(f"scaling  {scaled.line()}")
    if plot and rows:
        _plot(metrics)


def _show_system(backend: Backend, job: str, output: str, plot: bool) -> None:
    from smtrain.cli import steps, system_usage
    from smtrain.cli.render import dump

    usage = system_usage.read(backend, backend.describe(job), steps.catalog(click.get_current_context()))
    if output in ("json", "yaml"):
        dump(usage.to_dict(), output)
        return
    for note in usage.notes:
        click.echo(f"note: {note}", err=True)
    if usage.empty:
        return
    if output == "csv":
        for line in system_usage.csv_lines(usage):
            click.echo(line)
        return
    click.echo(system_usage.table_text(usage))
    if plot:
        width = min(shutil.get_terminal_size((100, 24)).columns, PLOT_MAX_WIDTH)
        color = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        text = system_usage.plot_text(usage, width, PLOT_HEIGHT, color=color)
        click.echo(text if text is not None else f"nothing to plot: no host of {job} reported GPU use", err=text is None)


def _source(metrics: JobMetrics) -> str:
    return "CloudWatch" if metrics.source == "cloudwatch" else "its log"


def follow_metrics(backend: Backend, job: str, host: str | None, output: str,
                   sleep: Callable[[float], None] = time.sleep) -> JobInfo:
    """Print each epoch once as it arrives, until the job has ended; the job's last state."""
    from smtrain.api.waiting import WAIT_POLL_DEFAULT
    from smtrain.cli import metrics_table as table
    from smtrain.cli.render import dump_line

    interval = poll_interval(WAIT_POLL_DEFAULT)
    # The epochs printed, by fit call: each is printed once, whatever its number (0, negative, one logged after a
    # later one). Followed, a row's call is in JSON and in the table's line before a call's first epoch.
    shown: set[tuple[int, int]] = set()
    names: list[str] | None = None
    last_call = 1
    while True:
        done = backend.describe(job).done  # first: the read after the end has every epoch
        metrics = backend.metrics(job, host)
        for row in table.rows(metrics):
            if (row.fit, row.epoch) in shown:
                continue
            if output in ("json", "yaml"):
                dump_line({"job": job, "host": metrics.host, **table.row_dict(row)}, output)
            else:
                if names is None:  # the columns are those of the first epoch seen
                    names = table.columns(metrics)
                    # (Followed, later fit calls cannot be known: CSV carries the fit column always.)
                    click.echo(table.csv_header(names, True) if output == "csv" else table.header_line(names))
                if output != "csv" and row.fit != last_call:
                    click.echo(table.fit_line(row))
                click.echo(table.csv_row(row, names, True) if output == "csv" else table.row_line(row, names))
            last_call = row.fit
            shown.add((row.fit, row.epoch))
        if done:
            if not shown:
                click.echo(table.no_metrics_text(metrics), err=True)
            return metrics.job
        sleep(interval)


@click.command()
@click.argument("job")
@click.option("--follow", "-f", is_flag=True, help="Print new epochs as they arrive until the job ends; then exit "
                                                   "with the job's code (1 Failed, 3 Stopped).")
@click.option("--host", metavar="algo-N", help="The host whose series to show. [default: algo-1, the chief]")
@click.option("--plot", is_flag=True, help="Draw loss and accuracy per epoch in the terminal, after the table.")
@click.option("--system", is_flag=True, help="Each host's CPU, memory, GPU, GPU memory and disk use over the run "
                                             "(SageMaker's instance metrics in CloudWatch), and what the GPU figure "
                                             "says; --plot draws GPU use per host.")
@region_option
@click.option("--output", "-o", "output", type=click.Choice(["text", "json", "yaml", "csv"]), default="text",
              show_default=True,
              help="Output format (with --follow, json is one object per epoch per line, yaml one list item).")
@guard
def metrics(job: str, follow: bool, host: str | None, plot: bool, system: bool, region: str | None,
            output: str) -> None:
    """Show a job's metrics per epoch: the values its MetricDefinitions read (loss, accuracy, val_..., learning
    rate), from CloudWatch for a SageMaker job and from the host's log for a local one.

    With --system: each host's CPU, memory, GPU, GPU memory and disk use over the run (SageMaker's instance
    metrics), and what the GPU figure says.

    Exits 0 once shown (a job with no metrics yet says so), 4 for an unknown job; with --follow, the job's
    code once it ends (0 Completed, 1 Failed, 3 Stopped).
    """
    from smtrain.api.backends import backend_for_job
    from smtrain.cli.follow import reattach_on_interrupt
    from smtrain.jobs import reattach_command

    if plot and (output != "text" or follow):
        raise click.UsageError("--plot draws in text output, after the whole table: not with -o json/csv or --follow")
    if system and (follow or host):
        raise click.UsageError("--system shows every host over the whole run: not with --follow or --host")
    backend = backend_for_job(job, region)
    if system:
        _show_system(backend, job, output, plot)
        return
    if follow:
        with reattach_on_interrupt(job, reattach_command("metrics", job, "--follow", region=region)):
            info = follow_metrics(backend, job, host, output)
        click.get_current_context().exit(exit_code_for(info))
    _show(backend.metrics(job, host), output, plot, backend)
