"""smtrain.plan: a spec's every decision (instance, strategy, batch and learning-rate maths, launch, cost), the
limits of its request, and its code checked, nothing packed and nothing sent (the `plan` command's answer)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from smtrain.api.code_checks import CodeChecks, check_code
from smtrain.api.display import fields_table
from smtrain.api.specs import Overrides, SpecSource, load
from smtrain.redact import mask_text

if TYPE_CHECKING:
    from smtrain.plan.build import Plan
    from smtrain.plan.catalog import Catalog
    from smtrain.preflight.scan import Finding
    from smtrain.render.tuning_limits import TuningPlan
    from smtrain.spec.model import LoadedSpec
    from smtrain.spec.problems import Problem

def catalog_of(catalog: Catalog | str | os.PathLike[str] | None = None,
               prices: str | os.PathLike[str] | None = None) -> Catalog:
    """The instance catalog: one given, else the bundled one with a user's catalog file and prices merged over it
    (its `.notes` say what a user's file was read as)."""
    from smtrain.plan.catalog import Catalog
    from smtrain.plan.catalog_files import load_catalog

    if isinstance(catalog, Catalog):
        return catalog
    from pathlib import Path

    return load_catalog(Path(catalog) if catalog is not None else None, Path(prices) if prices is not None else None)


@dataclass(frozen=True)
class Planned:
    """A spec's plan with its code checked: what `smtrain plan` shows. `plan` is the Plan itself (its
    `summary()` the documented keys); `tuning` the tuning job's plan where the spec has a tuning section."""

    loaded: LoadedSpec
    plan: Plan
    code: CodeChecks
    tuning: TuningPlan | None = None
    notes: list[str] = field(default_factory=list)  # the catalog's: what a user's file was read as

    @property
    def warnings(self) -> list[Problem]:
        """The plan's warnings (an image past its patches), then the bundle's (a large file)."""
        return [*self.plan.warnings, *self.code.warnings]

    @property
    def findings(self) -> list[Finding]:
        """What the preflight read in your code (an own script's strategy, batch, saving...)."""
        return self.code.findings

    def summary(self) -> dict[str, Any]:
        """`smtrain plan -o json`'s document (README "JSON output")."""
        summary = self.plan.summary()
        summary["warnings"] += [w.render() for w in self.code.warnings]
        summary["preflight"] = [f.to_dict() for f in self.findings]
        summary["program"]["own_strategies"] = [o.to_dict() for o in self.code.own_strategies]
        if self.tuning is not None:
            summary["tuning"] = self.tuning.summary()
        return summary

    def __repr__(self) -> str:
        p = self.plan
        return mask_text(f"<Planned {p.spec.name}: {p.nodes} x {p.instance.name}, {p.strategy}, {p.replicas} replicas>")

    def _repr_html_(self) -> str:
        s = self.summary()
        batch, lr, cost = s["batch"], s["learning_rate"], s["cost_usd"]
        gpus = s["gpus_per_node"]
        rows = [("instance", f"{s['nodes']} x {s['instance']['type']} ({gpus} GPU{'s' if gpus != 1 else ''} each)"),
                ("why", s["instance"]["reason"]),
                ("strategy", f"{s['strategy']['name']} ({s['strategy']['reason']})"),
                ("replicas", s["replicas"])]
        # An own script does its own batch and learning-rate maths: the plan has none to show (None).
        if batch is not None:
            rows.append(("batch", f"{batch['per_replica']} per replica, {batch['global']} global"))
        if lr is not None:
            rows.append(("learning rate", f"{lr['base']} x {lr['scaling']} = {lr['scaled']}"))
        rows += [("TensorFlow", f"{s['tensorflow']['version']} ({s['tensorflow']['image_uri']})"),
                 ("program", s["entry_point"]),
                 ("cost", f"${cost['per_hour']}/h, at most ${cost['max_for_run']}" if cost.get("per_hour") else "-")]
        rows += [("warning", w) for w in s["warnings"]]
        rows += [("preflight", f.render()) for f in self.findings]
        return fields_table(f"plan: {s['name']} in {s['region']}", rows)


def plan(spec: SpecSource, overrides: Overrides = None, *, catalog: Catalog | str | os.PathLike[str] | None = None,
         prices: str | os.PathLike[str] | None = None) -> Planned:
    """Every decision for a spec (a path, a mapping or a loaded spec), its request checked against SageMaker's
    limits and its code against the bundle's and preflight's rules. Nothing is packed or sent; no AWS call
    (a code.git source is fetched). Raises SpecError with the problems."""
    from smtrain.render.checked_plan import checked_plan
    from smtrain.render.tuning_limits import checked_tuning_plan

    loaded = load(spec, overrides)
    found = catalog_of(catalog, prices)
    result = checked_plan(loaded, found)
    tuning = checked_tuning_plan(loaded, result) if loaded.spec.tuning is not None else None
    return Planned(loaded, result, check_code(loaded, result), tuning, list(found.notes))
