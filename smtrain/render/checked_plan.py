"""A Plan whose request keeps every limit of CreateTrainingJob: the plan stage's decisions, then the request
they lead to checked against botocore's model (the render stage's), every problem at its spec field.

`validate`, `plan`, `submit`, `tune` and each local trial start here, so a spec the service would refuse is
refused before anything is bundled or sent.
"""

from __future__ import annotations

from datetime import date

from smtrain.plan.build import Plan, plan_with_problems
from smtrain.plan.catalog import Catalog
from smtrain.render.request_limits import preview_problems
from smtrain.spec.model import LoadedSpec
from smtrain.spec.problems import Problem, SpecError


def checked_plan_with_problems(loaded: LoadedSpec, catalog: Catalog, today: date | None = None, *,
                               fetch_code: bool = True) -> tuple[Plan | None, list[Problem]]:
    """plan_with_problems(), and the limits its request breaks (validate reports every problem in one run)."""
    plan, problems = plan_with_problems(loaded, catalog, today, fetch_code=fetch_code)
    if plan is None:
        return None, problems
    try:
        limits = preview_problems(plan)
    except Exception:
        if not problems:
            raise
        limits = []  # a request of a plan with problems may not render: they are what to fix first
    return plan, problems + limits


def checked_plan(loaded: LoadedSpec, catalog: Catalog, today: date | None = None, *,
                 fetch_code: bool = True) -> Plan:
    """build_plan(), and its request within every limit; raise SpecError (with positions) if not."""
    plan, problems = checked_plan_with_problems(loaded, catalog, today, fetch_code=fetch_code)
    if problems or plan is None:
        raise SpecError(problems)
    return plan
