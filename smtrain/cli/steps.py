"""The steps the commands share between parsing and printing: a spec read with every --set, the catalog, the
code's checks with what they found shown, a bundle's refusal as a spec problem, following a job to its exit
code.

Imports stay light here (click and smtrain's own plain modules): `validate`, `plan` and `--help` load this
module, and every stage a step needs is imported inside it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from smtrain import exit_codes
from smtrain.jobs import exit_code_for
from smtrain.plan.catalog import Catalog
from smtrain.plan.catalog_files import load_catalog
from smtrain.redact import mask_text
from smtrain.spec.problems import SpecError
from smtrain.spec.units import parse_duration

if TYPE_CHECKING:
    from smtrain.bundle.model import BundleError
    from smtrain.plan.build import Plan
    from smtrain.preflight.scan import Finding, StandIn
    from smtrain.spec.model import LoadedSpec
    from smtrain.spec.problems import Problem


def catalog(ctx: click.Context) -> Catalog:
    """The catalog of --catalog/--prices (or the bundled one), its notes said."""
    root = ctx.find_root().params
    found = load_catalog(root.get("catalog"), root.get("prices"))
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
    from smtrain.spec.model import load_spec  # pydantic's model building is most of start-up: only when needed

    return load_spec(spec_file, every_override(overrides))


def bundle_refusal(loaded: LoadedSpec, exc: BundleError) -> SpecError:
    """A bundle refusal as a spec problem: at the code field it concerns, exit 2."""
    return SpecError([loaded.problem(_code_field(loaded, exc.field), str(exc))])


@contextlib.contextmanager
def bundle_refused_as_spec_problem(loaded: LoadedSpec) -> Iterator[None]:
    """Around the bundling and sending of a job: a bundle refusal comes out as a spec problem (exit 2)."""
    from smtrain.bundle.model import BundleError

    try:
        yield
    except BundleError as exc:
        raise bundle_refusal(loaded, exc) from exc


def _code_field(loaded: LoadedSpec, field: tuple[str, ...]) -> tuple[str, ...]:
    """code.source_dir's problems are code.git's when the code comes from git."""
    return ("code", "git") if field == ("code", "source_dir") and loaded.spec.code.git is not None else field


def check_code(loaded: LoadedSpec, plan: Plan) -> tuple[list[Problem], list[Finding]]:
    """Run every check of the code bundle (nothing packed), then the preflight scan of the .py files it
    ships: the bundle's warnings at code.source_dir, and the scan's findings.

    validate, plan, submit, tune and init all call this, so they refuse and warn alike, and a submit warns
    about large files before compressing them.
    """
    warnings, findings, _ = code_checks(loaded, plan)
    return warnings, findings


def code_checks(loaded: LoadedSpec, plan: Plan) -> tuple[list[Problem], list[Finding], list[StandIn]]:
    """check_code's answer, and the strategies a wrapped script builds that the wrap stands in for."""
    from smtrain.bundle.model import BundleError
    from smtrain.bundle.request import check_bundle
    from smtrain.preflight.scan import scan, stand_ins

    if plan.git is not None and plan.git.commit is None:
        return [], [], []  # validate left a remote repository unfetched: the plan's warning says so
    try:
        checked = check_bundle(plan)
    except BundleError as exc:
        raise bundle_refusal(loaded, exc) from None
    shipped = [(f.path, Path(f.source)) for f in checked.files if f.origin == "source" and f.path.endswith(".py")]
    where = _code_field(loaded, ("code", "source_dir"))
    return [loaded.problem(where, w) for w in checked.warnings], scan(plan, shipped), stand_ins(plan, shipped)


def checked_code_shown(loaded: LoadedSpec, plan: Plan, output: str) -> list[Finding]:
    """check_code() before a job is sent (submit, tune): its warnings printed first, so that a large file is
    named before minutes of compressing it; the scan's findings returned, for the caller to show.

    In text the plan's warnings come too (a TensorFlow image past its end of patches): that is where money
    is spent. With -o json/yaml they are left to `validate`/`plan -o json`, which carry them in their documents.
    """
    from smtrain.cli.render import echo_problems

    bundle_warnings, findings = check_code(loaded, plan)
    echo_problems((plan.warnings if output == "text" else []) + bundle_warnings, label="warning")
    return findings


def echo_findings(findings: list[Finding]) -> None:
    for finding in findings:
        click.echo(mask_text(finding.render()), err=True)  # a literal in the user's code may be a secret


def strict_exit(findings: list[Finding], strict: bool) -> None:
    """An error finding (the job would fail there for certain) ends the command with exit 2, nothing sent;
    with --strict any finding does (for CI)."""
    errors = sum(f.is_error for f in findings)
    if errors:
        click.echo(f"{errors} preflight error{'s' if errors != 1 else ''}: the job would fail at "
                   f"{'those lines' if errors != 1 else 'that line'}; nothing was sent.", err=True)
        click.get_current_context().exit(exit_codes.USAGE)
    findings = [f for f in findings if not f.is_note]  # a file the scan did not read: said, never a block
    if strict and findings:
        n = len(findings)
        click.echo(f"{n} preflight warning{'s' if n != 1 else ''} and --strict; nothing was sent.", err=True)
        click.get_current_context().exit(exit_codes.USAGE)


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
    from smtrain.cli.follow import WaitTimedOut, reattach_on_interrupt, wait_for
    from smtrain.cli.render import job_change_line, log_line
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
        except WaitTimedOut as exc:
            click.echo(f"timed out: {exc}; it keeps running. Wait again with: {command}", err=True)
            return exc.job, True


def finish(job: Any, timed_out: bool, output: str, data: dict[str, Any] | None = None,
           metrics_of: Any = None) -> None:
    """Print the final state of a followed job (`data`, else the job) and exit with its code; with `metrics_of`
    (the job's backend), the summary of its metrics ends it (README "Metrics"), the `metrics` key in JSON."""
    from smtrain.cli.metrics_command import final_summary
    from smtrain.cli.render import dump, job_text

    summarise = metrics_of is not None and not timed_out
    if output == "text":
        click.echo(job_text(job))
        if summarise:
            final_summary(metrics_of, job, output)
    else:
        data = data if data is not None else job.to_dict()
        dump({**data, "metrics": final_summary(metrics_of, job, output)} if summarise else data, output)
    click.get_current_context().exit(exit_codes.TIMEOUT if timed_out else exit_code_for(job))


def refuse_local_places(plan: Plan, run_here: str) -> None:
    """A spec for a local run (inputs or output on this machine) refused by a dry run or a send to SageMaker,
    each at its own field, with the command that runs it here (`submit --local`, `tune --local`)."""
    from smtrain.render.request_limits import local_only_problems
    from smtrain.spec.problems import Problem

    local = local_only_problems(plan)
    if local:
        raise SpecError([Problem(p.path, "a place on this machine: SageMaker reads s3:// URIs only; give an "
                                 f"s3:// URI here, or run the spec with `{run_here}`", p.location) for p in local])
