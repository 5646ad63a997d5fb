"""smtrain.validate: every problem of a spec in one run, stage by stage (spec fields, plan, tuning, code), as
the `validate` command reports them; a stage that needs what an earlier one could not give is skipped and named."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from smtrain.api.code_checks import check_code
from smtrain.api.display import fields_table
from smtrain.api.planning import catalog_of
from smtrain.api.specs import Overrides, override_texts
from smtrain.redact import mask_text
from smtrain.spec.problems import SpecError

if TYPE_CHECKING:
    from smtrain.plan.build import Plan
    from smtrain.plan.catalog import Catalog
    from smtrain.preflight.scan import Finding
    from smtrain.spec.problems import Problem


@dataclass
class Validation:
    """Everything `validate` found; `skipped` says which checks could not run, and why."""

    problems: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    plan: Plan | None = None
    skipped: list[str] = field(default_factory=list)

    @property
    def valid(self) -> bool:
        """No problem, no preflight error, and a plan: the spec can be sent (or run here)."""
        return not self.problems and not any(f.is_error for f in self.findings) and self.plan is not None

    def __repr__(self) -> str:  # short, and masked: a notebook shows it
        found = f"{len(self.problems)} problems, {len(self.warnings)} warnings, {len(self.findings)} findings"
        return mask_text(f"<Validation {'valid' if self.valid else 'not valid'}: {found}>")

    def _repr_html_(self) -> str:
        rows = [("problem", p.render()) for p in self.problems] + [("warning", w.render()) for w in self.warnings]
        rows += [("preflight", f.render()) for f in self.findings] + [("note", n) for n in self.skipped]
        return fields_table("valid" if self.valid else "not valid", rows)


def validate(spec: str | os.PathLike[str], overrides: Overrides = None, env: Mapping[str, str] | None = None, *,
             catalog: Catalog | str | os.PathLike[str] | Callable[[], Catalog] | None = None) -> Validation:
    """Run every check that can run on a spec file (no AWS, no TensorFlow; a code.git remote is not fetched),
    so that one run reports every problem. Raises SpecError only for a file that cannot be read as a spec.
    `catalog` may be a function that gives it: called only once the spec was read (a bad catalog file then
    hides none of the spec's problems)."""
    from smtrain.render.checked_plan import checked_plan_with_problems
    from smtrain.render.tuning_limits import checked_tuning_plan
    from smtrain.spec.model import read_spec
    from smtrain.spec.problems import dotted

    if not isinstance(spec, (str, os.PathLike)):
        raise TypeError(f"validate reads a spec file (its path), not {type(spec).__name__}: a mapping's problems "
                        "come from smtrain.load or smtrain.plan")
    reading = read_spec(spec, override_texts(overrides), env)
    found = Validation(problems=list(reading.problems))
    loaded = reading.loaded
    if loaded is None:
        found.skipped.append("the plan's and the code's checks did not run: the spec's fields above leave no job "
                             "to check")
        return found
    if reading.defaulted:
        fields = ", ".join(dotted(p) for p in reading.defaulted)
        found.skipped.append(f"the plan's and the code's checks did not run: they would judge a value you did not "
                             f"write in place of {fields}")
        return found
    found_catalog = catalog() if callable(catalog) else catalog_of(catalog)
    plan, plan_problems = checked_plan_with_problems(loaded, found_catalog, fetch_code=False)
    found.problems += _new_fields(found, plan_problems)
    if plan is None:
        found.skipped.append("the code's checks (bundle, preflight scan) did not run: no plan could be made")
        return found
    found.plan = plan
    found.warnings += plan.warnings
    if any(p.path[:1] == ("tuning",) for p in found.problems):
        found.skipped.append("the tuning job's checks did not run: its section has the problems above")
    elif loaded.spec.tuning is not None:
        try:
            checked_tuning_plan(loaded, plan)  # tuning: its checks that need the plan (the objective's metric)
        except SpecError as exc:
            found.problems += _new_fields(found, exc.problems)
    try:
        checks = check_code(loaded, plan)
        found.warnings += checks.warnings
        found.findings = checks.findings
    except SpecError as exc:
        found.problems += _new_fields(found, exc.problems)
        from smtrain.preflight.scan import scan

        found.findings = scan(plan, [])  # the bundle refused its files: the entry point's scan still runs
    return found


def _new_fields(found: Validation, later: list[Problem]) -> list[Problem]:
    """A later stage's problems outside the sections (code, compute, ...) the earlier ones are in: there
    they may only follow from those (a requirements file missing is the spec's problem and the bundle's;
    code.git beside code.source_dir leaves the repository without the entry point). What is held back is
    said in a note."""
    from smtrain.spec.problems import dotted

    sections = {p.path[:1] for p in found.problems}
    held = sorted({dotted(p.path[:1]) for p in later if p.path[:1] in sections})
    if held:
        found.skipped.append(f"later checks of {', '.join(held)} are left for the next run: they may only "
                             "follow from the problems above")
    return [p for p in later if p.path[:1] not in sections]
