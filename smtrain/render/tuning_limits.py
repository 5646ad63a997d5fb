"""A CreateHyperParameterTuningJob request's limits (botocore's model, and AWS's 100 hyperparameters in all),
each at the spec field behind it; the tuning plan's own part checked before any request (validate, plan)."""

from __future__ import annotations

from typing import Any

from smtrain.plan.build import Plan
from smtrain.plan.tuning import MAX_HYPERPARAMETERS, TuningPlan, tuning_plan_with_problems
from smtrain.render.request_limits import spec_field
from smtrain.render.service_model import Violation, check_request, service_model
from smtrain.spec.model import LoadedSpec
from smtrain.spec.problems import Path_, Problem, SpecError, dotted

OPERATION = "CreateHyperParameterTuningJob"

_TUNING_FIELDS: dict[tuple[str, ...], Path_] = {
    ("HyperParameterTuningJobName",): ("name",),
    ("HyperParameterTuningJobConfig", "ResourceLimits", "MaxNumberOfTrainingJobs"): ("tuning", "max_jobs"),
    ("HyperParameterTuningJobConfig", "ResourceLimits", "MaxParallelTrainingJobs"): ("tuning", "max_parallel_jobs"),
    ("HyperParameterTuningJobConfig", "ResourceLimits", "MaxRuntimeInSeconds"): ("tuning", "max_runtime"),
    ("HyperParameterTuningJobConfig", "ParameterRanges"): ("tuning", "ranges"),
    ("HyperParameterTuningJobConfig", "HyperParameterTuningJobObjective"): ("tuning", "objective"),
    ("HyperParameterTuningJobConfig", "Strategy"): ("tuning", "strategy"),
    ("HyperParameterTuningJobConfig", "StrategyConfig"): ("tuning", "strategy"),
    ("HyperParameterTuningJobConfig", "TrainingJobEarlyStoppingType"): ("tuning", "early_stopping"),
    ("HyperParameterTuningJobConfig",): ("tuning",),
    ("Tags",): ("tags",),
}
# A trial's definition -> the CreateTrainingJob member it stands for (request_limits maps those to the spec).
_DEFINITION_AS_TRAINING = {"StaticHyperParameters": "HyperParameters", "HyperParameterTuningResourceConfig":
                           "ResourceConfig"}


def tuning_spec_field(path: Path_, request: dict[str, Any], plan: Plan) -> Path_:
    """The spec field behind the value at `path` of a CreateHyperParameterTuningJob request."""
    if len(path) >= 2 and path[0] == "TrainingJobDefinition":
        head = _DEFINITION_AS_TRAINING.get(str(path[1]), str(path[1]))
        as_training = (head, *path[2:])
        definition = request.get("TrainingJobDefinition") or {}
        training_view = {_DEFINITION_AS_TRAINING.get(k, k): v for k, v in definition.items()}
        return spec_field(as_training, training_view, plan.spec)
    if len(path) >= 2 and path[0] == "Tags":
        return spec_field(path, request, plan.spec)
    for n in range(len(path), 0, -1):
        if tuple(path[:n]) in _TUNING_FIELDS:
            return _TUNING_FIELDS[tuple(path[:n])]
    return ()


def violation_problems(violations: list[Violation], request: dict[str, Any], plan: Plan) -> list[Problem]:
    """Each broken limit at the spec field behind it, with its file:line:column."""
    problems = []
    for v in violations:
        where = tuning_spec_field(v.path, request, plan)
        location = plan.source.locate(where, at_key=v.at_key) if plan.source is not None else None
        problems.append(Problem(where, f"{v.message} ({dotted(v.path)} in {OPERATION})", location))
    return problems


def _total_problems(plan: Plan, total: int) -> list[Problem]:
    if total <= MAX_HYPERPARAMETERS:
        return []
    where = ("tuning", "ranges")
    return [Problem(where, f"{total} hyperparameters, static and tuned together: SageMaker takes at most "
                    f"{MAX_HYPERPARAMETERS} (SageMaker's TensorFlow contract adds some of its own)",
                    plan.source.locate(where, at_key=True) if plan.source else None)]


def request_problems(plan: Plan, request: dict[str, Any]) -> list[Problem]:
    """Every CreateHyperParameterTuningJob limit of botocore's model that `request` breaks, and the documented
    100 hyperparameters in all (static, the contract's among them, and tuned)."""
    problems = violation_problems(check_request(request, OPERATION), request, plan)
    static = (request.get("TrainingJobDefinition") or {}).get("StaticHyperParameters") or {}
    ranges = (request.get("HyperParameterTuningJobConfig") or {}).get("ParameterRanges") or {}
    return problems + _total_problems(plan, len(static) + sum(len(r) for r in ranges.values()))


def plan_problems(tp: TuningPlan) -> list[Problem]:
    """The parts of the request the tuning plan decides, against botocore's shapes (validate and plan)."""
    model = service_model()
    config_path = ("HyperParameterTuningJobConfig",)
    violations = [Violation(config_path + ("ParameterRanges",) + v.path, v.message, v.at_key)
                  for v in model.check(tp.parameter_ranges(), "ParameterRanges")]
    violations += [Violation(config_path + ("ResourceLimits",) + v.path, v.message, v.at_key)
                   for v in model.check(tp.resource_limits(), "ResourceLimits")]
    request = {"TrainingJobDefinition": {"StaticHyperParameters": tp.static_hyperparameters}}
    problems = violation_problems(violations, request, tp.plan)
    return problems + _total_problems(tp.plan, len(tp.static_hyperparameters) + len(tp.ranges))


def checked_tuning_plan(loaded: LoadedSpec, plan: Plan) -> TuningPlan:
    """The tuning job over `plan`, its own part within botocore's limits; raise SpecError (file:line) if not."""
    tp, problems = tuning_plan_with_problems(loaded, plan)
    problems += plan_problems(tp)
    if problems:
        raise SpecError(problems)
    return tp
