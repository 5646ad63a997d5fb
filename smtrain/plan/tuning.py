"""Spec + Plan -> TuningPlan: the hyperparameter tuning job over a planned training job, nothing sent.

Every trial is the planned training job with the tuned hyperparameters changed, so the tuning plan
holds the training Plan and adds what CreateHyperParameterTuningJob decides: the objective (checked
against the job's MetricDefinitions, with the regex SageMaker will read it with), the strategy, the
limits, the ranges as AWS takes them, and the static hyperparameters (the training job's, less the
tuned ones). The request and its limits are the render stage's (smtrain.render.tuning_request and
tuning_limits).
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from smtrain_tf.scaling import scaled_learning_rate

from smtrain.plan import program
from smtrain.plan.build import Plan
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.spec.model import LoadedSpec
from smtrain.spec.problems import Problem, SpecError
from smtrain.spec.tuning import RangeSpec, TuningSpec, max_jobs, range_name, range_type

OPERATION = "CreateHyperParameterTuningJob"
# HyperParameterTuningJobName: at most 32 characters (botocore's model), against 63 for a training job.
TUNING_NAME_MAX = 32
_TIME_FORMAT = "%y%m%d-%H%M%S"  # 13 characters after the prefix's hyphen
NAME_PREFIX_MAX = TUNING_NAME_MAX - 1 - len("yymmdd-HHMMSS")
TUNING_NAME_TEMPLATE_SUFFIX = "-yymmdd-HHMMSS"
# AWS's strategy and enum spellings for the spec's words.
STRATEGIES = {"bayesian": "Bayesian", "random": "Random", "hyperband": "Hyperband", "grid": "Grid"}
SCALING_TYPES = {"auto": "Auto", "linear": "Linear", "logarithmic": "Logarithmic",
                 "reverse_logarithmic": "ReverseLogarithmic"}
# Per the API reference (automatic-model-tuning-define-ranges): up to 100 hyperparameters in all,
# static and tuned together.
MAX_HYPERPARAMETERS = 100


def tuning_name_prefix(spec_name: str) -> str:
    """The spec's name cut to fit a tuning job name with its time (no trailing hyphen)."""
    return spec_name[:NAME_PREFIX_MAX].rstrip("-")


def new_tuning_job_name(spec_name: str, now: dt.datetime | None = None) -> str:
    """<name, cut to 18>-<UTC yymmdd-HHMMSS>: at most 32 characters, as SageMaker requires."""
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{tuning_name_prefix(spec_name)}-{now.astimezone(dt.timezone.utc):{_TIME_FORMAT}}"


@dataclass(frozen=True)
class TunedRange:
    """One range as AWS takes it: the hyperparameter's name, its kind, and bounds or values as text."""

    key: str  # the spec's range key, training.learning_rate
    name: str  # the hyperparameter, learning_rate
    kind: str  # continuous | integer | categorical
    min: int | float | None = None
    max: int | float | None = None
    scaling: str | None = None  # AWS's ScalingType (continuous and integer ranges)
    values: tuple[Any, ...] = ()

    def value_texts(self) -> list[str]:
        """The categorical values as text, flags as true/false (the entrypoint reads either case)."""
        return [("true" if v else "false") if isinstance(v, bool) else str(v) for v in self.values]

    def aws(self) -> dict[str, Any]:
        """The range as ParameterRanges lists it. Categorical values as the SDK's CategoricalParameter
        sends them for a framework estimator (as_json_range): JSON text, so adam travels as "adam" and
        32 as "32", which the container's toolkit hands the program as the text 32."""
        if self.kind == "categorical":
            return {"Name": self.name, "Values": [json.dumps(v) for v in self.value_texts()]}
        return {"Name": self.name, "MinValue": str(self.min), "MaxValue": str(self.max), "ScalingType": self.scaling}

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {"field": self.key, "name": self.name, "type": self.kind}
        if self.kind == "categorical":
            out["values"] = list(self.values)
        else:
            out.update(min=self.min, max=self.max, scaling=self.scaling)
        return out


@dataclass(frozen=True)
class TuningPlan:
    plan: Plan  # the training job every trial runs, tuned values aside
    tuning: TuningSpec
    strategy: str  # AWS's: Bayesian | Random | Hyperband | Grid
    objective_metric: str
    objective_type: str  # Maximize | Minimize
    objective_regex: str  # the MetricDefinitions regex SageMaker reads the objective with
    max_jobs: int
    max_parallel_jobs: int
    max_runtime: int | None
    early_stopping: str  # Off | Auto
    ranges: tuple[TunedRange, ...]
    static_hyperparameters: dict[str, Any]  # the training job's, less the tuned ones
    hyperband: dict[str, int] | None = None  # {"MinResource": 1, "MaxResource": epochs}
    notes: list[str] = field(default_factory=list)  # what a tuned value means for the trials

    @property
    def name_prefix(self) -> str:
        return tuning_name_prefix(self.plan.spec.name)

    def parallel_trials(self) -> Plan:
        """The training plan as the account's quota sees the tuning job: max_parallel_jobs trials at once, so
        each choice's instances times that (for the Service Quotas check before the upload)."""
        import dataclasses

        n = self.max_parallel_jobs
        choices = tuple(dataclasses.replace(c, nodes=c.nodes * n) for c in getattr(self.plan, "choices", ()))
        return dataclasses.replace(self.plan, nodes=self.plan.nodes * n, choices=choices)

    def parameter_ranges(self) -> dict[str, list[dict[str, Any]]]:
        """ParameterRanges as the request carries them."""
        lists = {"continuous": "ContinuousParameterRanges", "integer": "IntegerParameterRanges",
                 "categorical": "CategoricalParameterRanges"}
        out: dict[str, list[dict[str, Any]]] = {name: [] for name in lists.values()}
        for r in self.ranges:
            out[lists[r.kind]].append(r.aws())
        return out

    def resource_limits(self) -> dict[str, int]:
        limits = {"MaxNumberOfTrainingJobs": self.max_jobs, "MaxParallelTrainingJobs": self.max_parallel_jobs}
        if self.max_runtime is not None:
            limits["MaxRuntimeInSeconds"] = self.max_runtime
        return limits

    def summary(self) -> dict[str, Any]:
        """The tuning job's part of `smtrain plan --output json` and `tune --dry-run` (README documents the keys)."""
        return {
            "name_prefix": self.name_prefix,
            "strategy": self.strategy,
            "objective": {"metric": self.objective_metric, "type": self.objective_type, "regex": self.objective_regex},
            "max_jobs": self.max_jobs,
            "max_parallel_jobs": self.max_parallel_jobs,
            "max_runtime_seconds": self.max_runtime,
            "early_stopping": self.early_stopping,
            "hyperband": self.hyperband,
            "ranges": [r.summary() for r in self.ranges],
            "static_hyperparameters": self.static_hyperparameters,
            "notes": list(self.notes),
        }


def _tuned_range(key: str, r: RangeSpec, training_model: type) -> TunedRange:
    kind = range_type(r, key, training_model)
    if kind == "categorical":
        return TunedRange(key, range_name(key), kind, values=tuple(r.values or ()))
    low, high = r.min, r.max
    if kind == "integer":
        low, high = int(low or 0), int(high or 0)
    return TunedRange(key, range_name(key), kind, low, high, SCALING_TYPES[r.scaling])


def _objective(loaded: LoadedSpec, tuning: TuningSpec, plan: Plan) -> tuple[str, list[Problem]]:
    definitions = metric_definitions(plan.metrics)
    regex = next((d["Regex"] for d in definitions if d["Name"] == tuning.objective), None)
    if regex is not None:
        return regex, []
    git = getattr(plan, "git", None)
    if git is not None and git.commit is None:
        return "", []  # validate left code.git unfetched: the metrics its code declares are unknown yet
    names = ", ".join(d["Name"] for d in definitions)
    hint = ""
    if ":" not in tuning.objective:
        hint = f" (metric names carry their phase: validation:{tuning.objective} or train:{tuning.objective})"
    return "", [loaded.problem(("tuning", "objective"), f"no metric definition of this job produces "
                               f"{tuning.objective!r}{hint}; it has: {names} (a metric your model reports "
                               "beyond these: name it in `metrics:`)")]


def _notes(tuned: dict[str, TunedRange], plan: Plan) -> list[str]:
    """What a tuned training field means for the trials: the bundled entrypoint scales some of them."""
    notes = []
    spec = plan.spec
    steps = spec.training.gradient_accumulation_steps
    units = plan.replicas * (steps or 1)
    over = f"{plan.replicas} replicas" + (f" x {steps} accumulated steps" if steps else "")
    if "training.learning_rate" in tuned and program.kind(spec) == program.BUNDLED:
        r = tuned["training.learning_rate"]
        if "training.lr_scaling" in tuned:
            notes.append("training.learning_rate is tuned as the rate for one replica; each trial scales it by "
                         f"its own lr_scaling over {over}")
        else:
            factor = scaled_learning_rate(1.0, spec.training.lr_scaling, units)
            shown = (f"{r.min:g}-{r.max:g}" if r.kind != "categorical"
                     else ", ".join(f"{float(v):g}" for v in r.values))
            notes.append(f"training.learning_rate is tuned as the rate for one replica: each trial trains with it "
                         f"x {factor:g} ({spec.training.lr_scaling} scaling over {over}), so {shown} "
                         f"train at {_scaled(r, factor)}")
    if "training.batch_size_per_replica" in tuned and program.kind(spec) == program.BUNDLED:
        notes.append(f"training.batch_size_per_replica is per replica: a trial's global batch is it x "
                     f"{plan.replicas} replicas")
    if plan.tensorboard()["s3_output_path"]:
        notes.append("trials upload no TensorBoard event files: CreateHyperParameterTuningJob has no "
                     "TensorBoardOutputConfig (metrics reach CloudWatch through the metric definitions)")
    return notes


def _scaled(r: TunedRange, factor: float) -> str:
    if r.kind == "categorical":
        return ", ".join(f"{float(v) * factor:g}" for v in r.values)
    return f"{float(r.min or 0) * factor:g}-{float(r.max or 0) * factor:g}"


def _hyperband(loaded: LoadedSpec, tuning: TuningSpec, plan: Plan) -> tuple[dict[str, int] | None, list[Problem]]:
    """Hyperband's resource is epochs: from 1 up to the job's epochs."""
    if tuning.strategy != "hyperband":
        return None, []
    spec = plan.spec
    if program.kind(spec) == program.BUNDLED:
        return {"MinResource": 1, "MaxResource": spec.training.epochs}, []
    epochs = spec.hyperparameters.get("epochs")
    try:
        most = int(str(epochs))
    except ValueError:
        most = 0
    if most < 1:
        return None, [loaded.problem(("tuning", "strategy"), "hyperband needs the number of epochs it may give a "
                                     "trial: set hyperparameters.epochs (your script's own, a whole number), "
                                     "and have the script report the objective each epoch")]
    return {"MinResource": 1, "MaxResource": most}, []


def build_tuning_plan(loaded: LoadedSpec, plan: Plan) -> TuningPlan:
    """The tuning job over `plan`; raise SpecError (file:line) if the spec has none or it cannot run."""
    tp, problems = tuning_plan_with_problems(loaded, plan)
    if problems:
        raise SpecError(problems)
    return tp


def tuning_plan_with_problems(loaded: LoadedSpec, plan: Plan) -> tuple[TuningPlan, list[Problem]]:
    """The tuning job over `plan` and what is wrong with it; raise SpecError if the spec has no tuning."""
    tuning = loaded.spec.tuning
    if tuning is None:
        raise SpecError([loaded.problem(("tuning",), "this spec has no tuning: section (see the docs, "
                                        "\"Hyperparameter tuning\")")])
    regex, problems = _objective(loaded, tuning, plan)
    hyperband, more = _hyperband(loaded, tuning, plan)
    problems += more
    training_model = type(loaded.spec.training)
    ranges = tuple(_tuned_range(key, r, training_model) for key, r in tuning.ranges.items())
    tuned = {r.key: r for r in ranges}
    static = {k: v for k, v in plan.hyperparameters.items() if k not in {r.name for r in ranges}}
    tp = TuningPlan(
        plan=plan, tuning=tuning, strategy=STRATEGIES[tuning.strategy], objective_metric=tuning.objective,
        objective_type=tuning.objective_goal().capitalize(), objective_regex=regex, max_jobs=max_jobs(tuning),
        max_parallel_jobs=tuning.max_parallel_jobs, max_runtime=tuning.max_runtime,
        early_stopping=tuning.early_stopping.capitalize(), ranges=ranges, static_hyperparameters=static,
        hyperband=hyperband, notes=_notes(tuned, plan))
    return tp, problems
