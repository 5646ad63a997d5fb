"""What the commands share between parsing and printing: the catalog with its notes said, every --set, a plan's
warnings and findings shown, a refusal of findings as exit 2, following a job to its exit code. The steps
themselves are the library's (smtrain.api); these show them.

Imports stay light here (click and smtrain's own plain modules): `validate`, `plan` and `--help` load this
module, and every stage a step needs is imported inside it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import click

from smtrain import exit_codes
from smtrain.jobs import exit_code_for
from smtrain.plan.catalog import Catalog
from smtrain.redact import mask_text
from smtrain.spec.units import parse_duration

if TYPE_CHECKING:
    from smtrain.api.planning import Planned
    from smtrain.preflight.scan import Finding
    from smtrain.spec.model import LoadedSpec


def catalog(ctx: click.Context) -> Catalog:
    """The catalog of --catalog/--prices (or the bundled one), its notes said."""
    from smtrain.api.planning import catalog_of

    root = ctx.find_root().params
    found = catalog_of(root.get("catalog"), root.get("prices"))
    for note in found.notes:  # what a user's file was read as (an old field converted)
        click.echo(f"note: {note}", err=True)
    return found


def every_override(overrides: tuple[str, ...]) -> tuple[str, ...]:
    """The group's --set, then the command's: `smtrain --set a=b plan job.yaml` and `smtrain plan job.yaml
    --set a=b` both work, and the command's own comes last, so it wins."""
    early = click.get_current_context().find_root().params.get("early_overrides") or ()
    return (*early, *overrides)


def load(spec_file: str, overrides: tuple[str, ...]) -> LoadedSpec:
    """The spec with every --set applied; SpecError (file:line) if it is not valid."""
    from smtrain.api.specs import load as load_spec  # pydantic's model building is most of start-up: only when needed

    return load_spec(spec_file, every_override(overrides))


def plan_spec(spec_file: str, overrides: tuple[str, ...]) -> Planned:
    """smtrain.api.plan for the command's spec, with every --set and the group's catalog."""
    from smtrain.api.planning import plan

    return plan(load(spec_file, overrides), catalog=catalog(click.get_current_context()))


def show_checks(found: Planned, output: str) -> None:
    """Before a job is sent (submit, tune): the code's warnings first, so that a large file is named before
    minutes of compressing it. In text the plan's warnings come too (a TensorFlow image past its end of
    patches): that is where money is spent. With -o json/yaml they are left to `validate`/`plan -o json`,
    which carry them in their documents."""
    from smtrain.cli.render import echo_problems

    echo_problems((found.plan.warnings if output == "text" else []) + found.code.warnings, label="warning")


def echo_findings(findings: list[Finding]) -> None:
    for finding in findings:
        click.echo(mask_text(finding.render()), err=True)  # a literal in the user's code may be a secret


def strict_exit(findings: list[Finding], strict: bool) -> None:
    """The library's refusal of findings (an error; with --strict any) as the CLI says it: exit 2."""
    from smtrain.api.code_checks import refuse_findings

    refuse_findings(findings, strict, "--strict")


def parse_timeout(value: str | None) -> float | None:
    """--timeout in seconds; a usage error (exit 2) when it is not a duration."""
    if value is None:
        return None
    try:
        return float(parse_duration(value))
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--timeout") from None


def follow_job(backend: Any, name: str, *, logs: bool, timeout: float | None, output: str,
               region: str | None) -> tuple[Any, bool]:
    """Stay with job `name` until it ends, streaming its logs if asked: (last JobInfo, timed out).

    Log lines go to stdout in text mode and to stderr otherwise, so that stdout stays one JSON
    document. Ctrl-C prints how to reattach (then exit 130 through the guard).
    """
    from smtrain.api.waiting import wait_for
    from smtrain.cli.follow import reattach_on_interrupt
    from smtrain.cli.render import job_change_line, log_line
    from smtrain.errors import WaitTimeout
    from smtrain.jobs import reattach_command
    from smtrain.redact import StreamMasker

    command = reattach_command(*(("logs", name, "--follow") if logs else ("wait", name)), region=region)
    with reattach_on_interrupt(name, command):
        if logs:
            masker = StreamMasker()
            for event in backend.logs(name, follow=True):
                click.echo(log_line(event, masker), err=output != "text")
            return backend.describe(name), False
        try:
            return wait_for(backend, name, timeout=timeout,
                            on_change=lambda job: click.echo(mask_text(job_change_line(job)), err=True)), False
        except WaitTimeout as exc:
            click.echo(f"timed out: {exc}; it keeps running. Wait again with: {command}", err=True)
            return exc.job, True


def finish(job: Any, timed_out: bool, output: str, data: dict[str, Any] | None = None,
           metrics_of: Any = None, usage_of: Any = None) -> None:
    """Print the final state of a followed job (`data`, else the job) and exit with its code; with `metrics_of`
    (the job's backend), the summary of its metrics ends it (README "Metrics"), the `metrics` key in JSON; with
    `usage_of` (the same), a text output's last line is the hosts' utilization (README "Utilization")."""
    from smtrain.cli.metrics_table import final_summary
    from smtrain.cli.render import dump, job_text
    from smtrain.cli.system_usage import usage_line

    summarise = metrics_of is not None and not timed_out
    if output == "text":
        click.echo(job_text(job))
        if summarise:
            final_summary(metrics_of, job, output)
        # The catalog only for a SageMaker job that started: read again, it would repeat a user catalog's notes.
        wanted = usage_of is not None and job.backend == "sagemaker" and job.started is not None
        line = usage_line(usage_of, job, catalog(click.get_current_context())) if wanted else None
        if line:
            click.echo(line)
    else:
        data = data if data is not None else job.to_dict()
        dump({**data, "metrics": final_summary(metrics_of, job, output)} if summarise else data, output)
    click.get_current_context().exit(exit_codes.TIMEOUT if timed_out else exit_code_for(job))
