"""The rules of compute.prefer (a fallback list of instance types) that need no catalog.

From CreateTrainingJob's model (botocore, ResourceConfig.InstancePreferences and InstancePreference):
the list is "mutually exclusive with InstanceType, InstanceGroups, InstancePlacementConfig, and
EnableManagedSpotTraining", "an instance type can appear only once", and a preference's own
TrainingPlanArns "is mutually exclusive with the job-level TrainingPlanArn". The catalog's rules
(known types, strategies that fit every choice) are the plan's (smtrain.plan.choices).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from smtrain.spec.problems import Path_, Problem


def capacity_problems(c: Any, problem: Callable[[Path_, str], Problem]) -> list[Problem]:
    """What compute.prefer (`c`: the spec's ComputeSpec) cannot be combined with, each made by
    `problem` (LoadedSpec.problem: model.py calls this, so the types stay there) at its field."""
    if c.prefer is None:
        return []
    where = ("compute", "prefer")
    if not c.prefer:
        return [problem(where, "prefer needs at least one {instance_type, count}, or leave it out")]
    out = []
    if c.spot:
        out.append(problem(("compute", "spot"), "SageMaker runs a fallback list (InstancePreferences) on "
                                  "on-demand capacity or training plans, never managed spot: remove compute.spot "
                                  "or compute.prefer"))
    # Each preference names its own type and count: a second source for them would leave one unused.
    for name, instead in (("instance_type", "instance_type"), ("nodes", "count")):
        if name in c.model_fields_set:
            out.append(problem(("compute", name), f"compute.prefer gives each choice its own {instead}: "
                                      f"remove compute.{name}"))
    if c.training_plan is not None:
        out.append(problem(("compute", "training_plan"), "with compute.prefer a training plan belongs to "
                                  "the preference whose instance type it reserves: move it to "
                                  "compute.prefer[i].training_plan"))
    seen: dict[str, int] = {}
    for index, choice in enumerate(c.prefer):
        if choice.instance_type in seen:
            out.append(problem(where + (index, "instance_type"),
                                      f"{choice.instance_type} is already choice {seen[choice.instance_type] + 1}: "
                                      "an instance type may appear only once in the list"))
        seen.setdefault(choice.instance_type, index)
    return out
