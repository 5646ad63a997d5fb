"""The spec's `tuning:` section: what a hyperparameter tuning job searches, and the rules its ranges follow.

A range's key names what it tunes: `training.<field>` (a field of the bundled entrypoint, which gets it
as the hyperparameter of the same name) or `hyperparameters.<name>` (passed through as it is). Each
bound and each categorical value must pass the tuned field's own rules (a learning rate above 0, a
whole batch size, an optimizer smtrain knows), so no trial can fail on a value the spec would refuse.
The objective's metric is checked in the plan stage, against the metric definitions the job has.
`trial_overrides()` turns one trial's values into `--set` expressions for load_spec().
"""

from __future__ import annotations

import math
import re
import sys
from collections.abc import Mapping
from typing import Annotated, Any, Literal, Protocol, get_args, get_origin

from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, WithJsonSchema

from smtrain.spec.fields import AS_WRITTEN, LINE_CHARS, HyperValue, Line, duration, whole
from smtrain.spec.problems import Path_, Problem, brief
from smtrain.spec.units import LARGEST

STRATEGIES = ("bayesian", "random", "hyperband", "grid")
SCALINGS = ("auto", "linear", "logarithmic", "reverse_logarithmic")
# botocore's model: each of Integer/Continuous/CategoricalParameterRanges holds at most 30, and the API
# reference (ParameterRanges) says the sum over all three may not exceed that either.
MAX_RANGES = 30
MAX_VALUES = 30  # ParameterValues: 1-30 values per categorical range
# HyperParameterTuningMaxRuntimeInSeconds
MAX_TUNING_RUNTIME = 15768000
# Metric names whose value gets better as it falls: their goal defaults to minimize.
_LOWER_IS_BETTER = ("loss", "mae", "mse", "rmse", "mape", "error")
SECTIONS = ("training", "hyperparameters")
_LARGEST_FLOAT = sys.float_info.max

_NUMBER_TEXT = r"\s*[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\s*"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _bound(value: object) -> int | float:
    """A finite number kept as written: 5 stays whole (an integer range), 5.0 and 1e-3 are real."""
    if isinstance(value, str) and re.fullmatch(_NUMBER_TEXT, value):
        text = value.strip()
        value = int(text) if re.fullmatch(r"[+-]?[0-9]+", text) else float(text)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{brief(value)} is not a number")
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"{brief(value)} is not a finite number")
    return value


Bound = Annotated[int | float, PlainValidator(_bound),
                  WithJsonSchema({"anyOf": [{"type": "number"},
                                            {"type": "string", "pattern": f"^{_NUMBER_TEXT}$"}]})]


def _range_key(value: object) -> str:
    if not isinstance(value, str):
        raise ValueError(f"{brief(value)} is not a range key: write training.<field> or hyperparameters.<name>")
    section, dot, name = value.partition(".")
    if section not in SECTIONS or not dot or not name:
        raise ValueError(f"{brief(value)} is not a range key: write training.<field> (such as "
                         "training.learning_rate) or hyperparameters.<name>")
    if "." in name or not re.fullmatch(f"{LINE_CHARS}+", name) or name.startswith("sagemaker_"):
        raise ValueError(f"{brief(value)}: the name after {section}. is one line without dots, not "
                         "starting with sagemaker_")
    return value


RangeKey = Annotated[str, PlainValidator(_range_key),
                     WithJsonSchema({"type": "string", "pattern": r"^(training|hyperparameters)\.[^.]+$"})]


class RangeSpec(_Model):
    """One tuned value: a continuous or integer range (min, max) or categorical values."""

    min: Bound | None = Field(None, description="lowest value (with max)")
    max: Bound | None = Field(None, description="highest value (with min)")
    values: tuple[HyperValue, ...] | None = Field(None, description="categorical: the values to try (1-30)")
    type: Literal["continuous", "integer"] | None = Field(
        None, description="for min/max: default integer for a whole-number field or whole bounds, else continuous")
    scaling: Literal[SCALINGS] = Field(  # type: ignore[valid-type]
        "auto", description="for min/max: auto, linear, logarithmic or reverse_logarithmic (AWS's ScalingType)")

    @property
    def categorical(self) -> bool:
        return self.values is not None


class TuningSpec(_Model):
    """A hyperparameter tuning job over this training job (`smtrain tune`)."""

    objective: Line = Field(description="the metric to optimise: a MetricDefinitions name of the job, "
                            "such as validation:accuracy")
    goal: Literal["maximize", "minimize"] | None = Field(
        None, description="default: minimize for names ending in loss, mae, mse, rmse, mape or error, else maximize")
    strategy: Literal[STRATEGIES] = Field("bayesian", description="bayesian, random, hyperband or grid")  # type: ignore[valid-type]
    max_jobs: Annotated[int, whole(1)] | None = Field(
        None, description="training jobs in all; default 10 (grid: the number of combinations)")
    max_parallel_jobs: Annotated[int, whole(1)] = Field(1, description="training jobs at once, at most max_jobs")
    max_runtime: Annotated[int, duration(120, MAX_TUNING_RUNTIME)] | None = Field(
        None, description="the whole tuning job's time limit (MaxRuntimeInSeconds), e.g. 12h")
    early_stopping: Annotated[Literal["off", "auto"], AS_WRITTEN] = Field(
        "off", description="auto: SageMaker stops trials that are unlikely to beat the best (not with hyperband)")
    ranges: dict[RangeKey, RangeSpec] = Field(
        description="training.<field> or hyperparameters.<name> -> {min, max[, type, scaling]} or {values: [...]}")

    def objective_goal(self) -> str:
        """maximize or minimize: as written, else from the metric's name."""
        if self.goal is not None:
            return self.goal
        return "minimize" if self.objective.lower().endswith(_LOWER_IS_BETTER) else "maximize"


DEFAULT_MAX_JOBS = 10
# compute fields smtrain renders into a training job only (InstancePreferences, InstanceGroups, TrainingPlanArn,
# MaxPendingTimeInSeconds): a tuning job's trials would silently lack them, so they are refused there.
_NOT_FOR_TUNING = ("prefer", "training_plan", "max_pending", "remote_debug", "infra_check", "instance_groups")
# The same for the spec's own fields a trial's definition (HyperParameterTrainingJobDefinition) has no place for.
_NOT_FOR_TUNING_SPEC = ("model_package", "session_tag_chaining")


def range_name(key: str) -> str:
    """The hyperparameter a range sets: `training.learning_rate` -> learning_rate."""
    return key.partition(".")[2]


class _Loaded(Protocol):
    """What the checks read of a LoadedSpec (model.py imports this module: it cannot import LoadedSpec)."""

    @property
    def spec(self) -> Any: ...

    def problem(self, path: Path_, message: str) -> Problem: ...


def _base_types(annotation: Any) -> set[Any]:
    """The plain types a field's annotation allows, None aside (Annotated and unions unwrapped)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _base_types(args[0])
    if args and origin is not Literal:
        return set().union(*(_base_types(a) for a in args if a is not type(None)))
    return {annotation}


def _field_kind(annotation: Any) -> str:
    """integer, number, or choice (text, a word list, a flag): what min/max can mean for a training field."""
    types_ = _base_types(annotation)
    if types_ == {int}:
        return "integer"
    if types_ <= {int, float}:
        return "number"
    return "choice"


def _field_error(training_model: type[BaseModel], field: str, value: object) -> str | None:
    """What the training field's own rules say of `value` (None: accepted)."""
    try:
        training_model.model_validate({field: value})
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        message = re.sub(r"^(Value error|Assertion failed), ", "", err["msg"])
        if err["type"] in ("literal_error", "enum"):
            message = f"{message}, got {value!r}"
        return message
    return None


def range_type(tuning_range: RangeSpec, key: str, training_model: type[BaseModel] | None = None) -> str:
    """categorical, integer or continuous: as written, else the tuned field's type, else the bounds'."""
    if tuning_range.categorical:
        return "categorical"
    if tuning_range.type is not None:
        return tuning_range.type
    section, name = key.partition(".")[::2]
    if section == "training" and training_model is not None and name in training_model.model_fields:
        kind = _field_kind(training_model.model_fields[name].annotation)
        if kind in ("integer", "number"):
            return "integer" if kind == "integer" else "continuous"
    whole_bounds = all(isinstance(b, int) for b in (tuning_range.min, tuning_range.max))
    return "integer" if whole_bounds else "continuous"


def _range_problems(loaded: _Loaded, key: str, tuning_range: RangeSpec, tuning: TuningSpec) -> list[Problem]:
    spec = loaded.spec
    where: Path_ = ("tuning", "ranges", key)
    out: list[Problem] = []
    section, name = key.partition(".")[::2]
    training_model = type(spec.training)
    if section == "training":
        if name not in training_model.model_fields:
            known = ", ".join(training_model.model_fields)
            return [loaded.problem(where, f"training has no field '{name}' (fields: {known})")]
        if spec.code.entry_point is not None:
            return [loaded.problem(where, f"training.{name} reaches the bundled entrypoint only; your script "
                                   f"(code.entry_point) reads its settings from hyperparameters: tune "
                                   f"hyperparameters.<name> instead")]
    elif spec.code.entry_point is None and name in training_model.model_fields:
        return [loaded.problem(where, f"'{name}' is a training field: tune training.{name}")]
    if tuning_range.categorical:
        for extra in ("min", "max", "type"):
            if extra in tuning_range.model_fields_set:
                out.append(loaded.problem(where + (extra,), "a range has either values (categorical) or "
                                          "min and max, not both"))
        if "scaling" in tuning_range.model_fields_set:
            out.append(loaded.problem(where + ("scaling",), "scaling applies to min/max ranges only"))
        values = tuning_range.values or ()
        if not 1 <= len(values) <= MAX_VALUES:
            out.append(loaded.problem(where + ("values",), f"give 1 to {MAX_VALUES} values (AWS's limit), "
                                      f"not {len(values)}"))
        texts = [str(v) for v in values]
        for i, value in enumerate(values):
            if texts.index(str(value)) != i:
                out.append(loaded.problem(where + ("values", i), f"{value!r} is listed twice"))
            elif section == "training":
                error = _field_error(training_model, name, value)
                if error and isinstance(value, bool):
                    error += " (YAML reads on/off and yes/no as true/false: quote them, \"on\")"
                if error:
                    out.append(loaded.problem(where + ("values", i), f"training.{name}: {error}"))
        if tuning.strategy == "hyperband" and name == "epochs":
            out.append(loaded.problem(where, "hyperband decides each trial's epochs itself (up to "
                                      "training.epochs): do not tune epochs"))
        return out
    for bound in ("min", "max"):
        if getattr(tuning_range, bound) is None:
            out.append(loaded.problem(where, f"give {bound} (with min and max) or values (categorical)"))
    if out:
        return out
    low, high = tuning_range.min, tuning_range.max
    assert low is not None and high is not None
    kind = range_type(tuning_range, key, training_model)
    if section == "training":
        field_kind = _field_kind(training_model.model_fields[name].annotation)
        if field_kind == "choice":
            return [loaded.problem(where, f"training.{name} is not a number: give its choices as values: [...]")]
        if field_kind == "integer" and kind == "continuous":
            out.append(loaded.problem(where + ("type",), f"training.{name} takes whole numbers: "
                                      "use type: integer"))
        for bound, value in (("min", low), ("max", high)):
            error = _field_error(training_model, name, value)
            if error:
                out.append(loaded.problem(where + (bound,), f"training.{name}: {error}"))
    unrepresentable = _unrepresentable(loaded, where, kind, low, high, {p.path[-1] for p in out})
    if unrepresentable:
        return out + unrepresentable
    if kind == "integer":
        reported = {p.path[-1] for p in out}
        for bound, value in (("min", low), ("max", high)):
            if bound not in reported and not float(value).is_integer():
                out.append(loaded.problem(where + (bound,), f"{brief(value)} is not a whole number (type: integer)"))
    if low >= high:
        out.append(loaded.problem(where + ("max",), f"max ({high}) must be more than min ({low})"))
    if tuning_range.scaling in ("logarithmic", "reverse_logarithmic") and low <= 0:
        out.append(loaded.problem(where + ("min",), f"{tuning_range.scaling} scaling needs min > 0, not {low}"))
    if tuning_range.scaling == "reverse_logarithmic":
        if kind == "integer":
            out.append(loaded.problem(where + ("scaling",), "reverse_logarithmic applies to continuous ranges only"))
        elif high >= 1:
            out.append(loaded.problem(where + ("max",), f"reverse_logarithmic scaling needs max < 1, not {high}"))
    if tuning.strategy == "hyperband" and name == "epochs":
        out.append(loaded.problem(where, "hyperband decides each trial's epochs itself (up to "
                                  "training.epochs): do not tune epochs"))
    return out


def _unrepresentable(loaded: _Loaded, where: Path_, kind: str, low: int | float, high: int | float,
                     reported: set[str | int]) -> list[Problem]:
    """Bounds no trial can be drawn between: a whole bound past 2^53 - 1, a real one past a float, or a real
    range whose width overflows a float (-1e308..1e308 would draw its max for every trial)."""
    out: list[Problem] = []
    for bound, value in (("min", low), ("max", high)):
        if bound in reported:
            continue
        if kind == "integer" and abs(value) > LARGEST:
            # AWS documents IntegerParameterRange's MinValue/MaxValue as strings of at most 256 characters and
            # no numeric limit; its searches (and the local one) draw in floats, and the hyperparameter reaches
            # the script as JSON, where 2^53 - 1 is the largest whole number every reader keeps exactly.
            out.append(loaded.problem(where + (bound,), f"{brief(value)} is beyond what an integer range can "
                                      f"draw: keep whole bounds within ±{LARGEST} (2^53 - 1)"))
        elif kind == "continuous" and isinstance(value, int) and abs(value) > _LARGEST_FLOAT:
            out.append(loaded.problem(where + (bound,), f"{brief(value)} is beyond the largest float "
                                      f"({_LARGEST_FLOAT:.6g})"))
    if out or kind != "continuous" or max(abs(low), abs(high)) > _LARGEST_FLOAT:
        return out  # (a bound the field's own rules refused is reported already)
    if not math.isfinite(float(high) - float(low)):
        out.append(loaded.problem(where + ("max",), f"the range {low:g}..{high:g} is wider than the largest "
                                  f"float ({_LARGEST_FLOAT:.6g}): no value could be drawn evenly from it"))
    return out


def grid_size(tuning: TuningSpec) -> int:
    """How many trials a grid search runs: every combination of the categorical values."""
    return math.prod(len(r.values or ()) for r in tuning.ranges.values())


def max_jobs(tuning: TuningSpec) -> int:
    """MaxNumberOfTrainingJobs: as written, else the grid's size, else DEFAULT_MAX_JOBS."""
    if tuning.max_jobs is not None:
        return tuning.max_jobs
    return grid_size(tuning) if tuning.strategy == "grid" else DEFAULT_MAX_JOBS


def tuning_problems(loaded: _Loaded) -> list[Problem]:
    """Every rule of `tuning:` that the spec alone decides (the objective's metric: the plan's)."""
    tuning: TuningSpec | None = loaded.spec.tuning
    if tuning is None:
        return []
    out: list[Problem] = []
    if not tuning.ranges:
        out.append(loaded.problem(("tuning", "ranges"), "give at least one range to tune"))
    if len(tuning.ranges) > MAX_RANGES:
        out.append(loaded.problem(("tuning", "ranges"), f"at most {MAX_RANGES} ranges (AWS's limit), "
                                  f"not {len(tuning.ranges)}"))
    names: dict[str, str] = {}
    for key, tuning_range in tuning.ranges.items():
        name = range_name(key)
        if name in names:
            out.append(loaded.problem(("tuning", "ranges", key), f"{key} and {names[name]} both set the "
                                      f"hyperparameter '{name}'"))
        names[name] = key
        out += _range_problems(loaded, key, tuning_range, tuning)
    if tuning.strategy == "grid":
        numeric = [k for k, r in tuning.ranges.items() if not r.categorical]
        for key in numeric:
            out.append(loaded.problem(("tuning", "ranges", key), "grid search takes categorical ranges only "
                                      "(values: [...])"))
        if not numeric and tuning.max_jobs is not None and tuning.max_jobs != grid_size(tuning):
            out.append(loaded.problem(("tuning", "max_jobs"), f"grid search runs every combination "
                                      f"({grid_size(tuning)}): leave max_jobs out or set it to that"))
    if tuning.strategy == "hyperband" and tuning.early_stopping != "off":
        out.append(loaded.problem(("tuning", "early_stopping"), "hyperband stops trials early by itself: "
                                  "leave early_stopping off"))
    for path in [("compute", n) for n in _NOT_FOR_TUNING] + [(n,) for n in _NOT_FOR_TUNING_SPEC]:
        owner = loaded.spec.compute if len(path) == 2 else loaded.spec
        if getattr(owner, path[-1], None) not in (None, False):
            out.append(loaded.problem(path, f"{'.'.join(path)} does not apply to a tuning job: smtrain sends it with "
                                      "training jobs only; remove it (or the tuning: section)"))
    grid_broken = tuning.strategy == "grid" and any(not r.categorical for r in tuning.ranges.values())
    if tuning.max_parallel_jobs > max_jobs(tuning) and not grid_broken:
        out.append(loaded.problem(("tuning", "max_parallel_jobs"), f"max_parallel_jobs "
                                  f"({tuning.max_parallel_jobs}) is more than max_jobs ({max_jobs(tuning)})"))
    return out


def _override_text(value: object) -> str:
    """A value as `--set` reads it back: numbers in Python's shortest form, flags as true/false."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**53:
        return repr(value)  # 5.0 stays real: an integer field refuses it only when it is not whole
    return str(value)


def trial_overrides(tuning: TuningSpec, assignment: Mapping[str, object]) -> list[str]:
    """`--set` expressions that give one trial its values, for load_spec(path, overrides=...).

    `assignment` maps range keys (`training.learning_rate`, `hyperparameters.dropout`) to the trial's
    values; a key the tuning section has no range for is an error (KeyError), so a typo cannot
    silently train with the spec's own value.
    """
    unknown = sorted(set(assignment) - set(tuning.ranges))
    if unknown:
        raise KeyError(f"no range for {', '.join(unknown)} in tuning.ranges")
    return [f"{key}={_override_text(value)}" for key, value in assignment.items()]
