"""The checks of a job's code before anything is packed: the bundle's refusals and warnings, the preflight scan
of the .py files it ships, and the strategies a wrapped script builds. validate, plan, submit, tune and init all
come here, so they refuse and warn alike."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from smtrain.errors import PreflightError
from smtrain.spec.problems import SpecError

if TYPE_CHECKING:
    from smtrain.bundle.model import BundleError
    from smtrain.plan.build import Plan
    from smtrain.preflight.scan import Finding, StandIn
    from smtrain.spec.model import LoadedSpec
    from smtrain.spec.problems import Path_, Problem


@dataclass(frozen=True)
class CodeChecks:
    warnings: list[Problem] = field(default_factory=list)  # the bundle's, at code.source_dir
    findings: list[Finding] = field(default_factory=list)  # the preflight scan's
    own_strategies: list[StandIn] = field(default_factory=list)  # what the wrap stands in for


def code_field(loaded: LoadedSpec, field_: Path_) -> Path_:
    """code.source_dir's problems are code.git's when the code comes from git."""
    return ("code", "git") if field_ == ("code", "source_dir") and loaded.spec.code.git is not None else field_


def bundle_refusal(loaded: LoadedSpec, exc: BundleError) -> SpecError:
    """A bundle refusal as a spec problem: at the code field it concerns, exit 2."""
    return SpecError([loaded.problem(code_field(loaded, exc.field), str(exc))])


@contextlib.contextmanager
def bundle_refused_as_spec_problem(loaded: LoadedSpec) -> Iterator[None]:
    """Around the bundling and sending of a job: a bundle refusal comes out as a spec problem (exit 2)."""
    from smtrain.bundle.model import BundleError

    try:
        yield
    except BundleError as exc:
        raise bundle_refusal(loaded, exc) from exc


def check_code(loaded: LoadedSpec, plan: Plan) -> CodeChecks:
    """Every check of the code bundle (nothing packed), then the preflight scan of the .py files it ships.
    Raises SpecError where the bundle refuses its files."""
    from smtrain.bundle.model import BundleError
    from smtrain.bundle.request import check_bundle
    from smtrain.preflight.scan import scan, stand_ins

    if plan.git is not None and plan.git.commit is None:
        return CodeChecks()  # validate left a remote repository unfetched: the plan's warning says so
    try:
        checked = check_bundle(plan)
    except BundleError as exc:
        raise bundle_refusal(loaded, exc) from None
    shipped = [(f.path, Path(f.source)) for f in checked.files if f.origin == "source" and f.path.endswith(".py")]
    where = code_field(loaded, ("code", "source_dir"))
    return CodeChecks([loaded.problem(where, w) for w in checked.warnings], scan(plan, shipped),
                      stand_ins(plan, shipped))


def refuse_findings(findings: list[Finding], strict: bool, strict_name: str = "strict") -> None:
    """An error finding (the job would fail there for certain) refuses the job: PreflightError, exit 2, nothing
    sent; with `strict` any finding does (for CI). A file the scan did not read is said, never a block."""
    errors = [f for f in findings if f.is_error]
    if errors:
        n = len(errors)
        raise PreflightError(f"{n} preflight error{'s' if n != 1 else ''}: the job would fail at "
                             f"{'those lines' if n != 1 else 'that line'}; nothing was sent.", errors)
    warnings = [f for f in findings if not f.is_note]
    if strict and warnings:
        n = len(warnings)
        raise PreflightError(f"{n} preflight warning{'s' if n != 1 else ''} and {strict_name}; nothing was sent.", warnings)


def refuse_local_places(plan: Plan, run_here: str) -> None:
    """A spec for a local run (inputs or output on this machine) refused by a dry run or a send to SageMaker,
    each at its own field, with what runs it here (`submit --local`, `local=True`)."""
    from smtrain.render.request_limits import local_only_problems
    from smtrain.spec.problems import Problem

    local = local_only_problems(plan)
    if local:
        raise SpecError([Problem(p.path, "a place on this machine: SageMaker reads s3:// URIs only; give an "
                                 f"s3:// URI here, or run the spec with `{run_here}`", p.location) for p in local])
