"""The spec's `tuning:` section: every rule, each refusal at the file:line:column of its field.

`validate` runs in this process (tests/spec/inprocess.py); the objective's check (which needs the
plan's metric definitions) is in tests/plan/test_tuning_plan.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from smtrain.spec.tuning import grid_size, max_jobs, range_type, trial_overrides
from tests.spec.inprocess import run
from tests.support.specfiles import BASE_TEXT

BASE_LINES = BASE_TEXT.count("\n")  # the tuning section starts on the next line


def _write(tmp_path: Path, tuning: str, extra: str = "") -> Path:
    spec = tmp_path / "job.yaml"
    spec.write_text(BASE_TEXT + extra + "tuning:\n" + tuning)
    return spec


def _errors(tmp_path: Path, tuning: str, extra: str = "") -> list[str]:
    spec = _write(tmp_path, tuning, extra)
    result = run("validate", str(spec))
    assert result.code == 2, result.output
    prefix = f"error: {spec}:"
    lines = [line[len(prefix):] for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert all(result.stderr.count(prefix) == len(lines) for _ in [0]), result.stderr
    return lines


GOOD = """\
  objective: validation:accuracy
  ranges:
    training.learning_rate: {min: 0.0001, max: 0.01, scaling: logarithmic}
"""


def test_a_good_section_is_valid_and_typed(tmp_path: Path) -> None:
    spec = _write(tmp_path, GOOD + "    training.batch_size_per_replica: {values: [32, 64]}\n"
                  "    training.epochs: {min: 2, max: 8}\n  early_stopping: off\n")
    result = run("validate", str(spec))
    assert result.code == 0, result.output
    tuning = load_spec(spec).spec.tuning
    assert tuning is not None
    assert tuning.early_stopping == "off"  # YAML's `off` taken as written, not as false
    assert tuning.strategy == "bayesian" and tuning.max_parallel_jobs == 1 and max_jobs(tuning) == 10
    assert tuning.objective_goal() == "maximize"
    training = type(load_spec(spec).spec.training)
    assert [range_type(r, k, training) for k, r in tuning.ranges.items()] == ["continuous", "categorical", "integer"]


@pytest.mark.parametrize(("objective", "goal"), [("validation:loss", "minimize"), ("train:mae", "minimize"),
                                                 ("validation:rmse", "minimize"), ("validation:auc", "maximize")])
def test_the_goal_follows_the_metric_name(objective: str, goal: str, tmp_path: Path) -> None:
    spec = _write(tmp_path, GOOD.replace("validation:accuracy", objective))
    tuning = load_spec(spec).spec.tuning
    assert tuning is not None and tuning.objective_goal() == goal


# (the tuning section's text, the expected problem's line within it, its field, words of its message)
CASES = [
    ("    training.learning_rate: {min: 0, max: 0.01}\n", 3, "tuning.ranges['training.learning_rate'].min",
     "training.learning_rate: 0: must be more than 0"),
    ("    training.batch_size_per_replica: {values: [32, 0.5]}\n", 3,
     "tuning.ranges['training.batch_size_per_replica'].values[1]", "0.5 is not a whole number"),
    ("    training.optimizer: {values: [adam, adagrad]}\n", 3, "tuning.ranges['training.optimizer'].values[1]",
     "Input should be 'adam' or 'sgd', got 'adagrad'"),
    ("    training.learning_rate: {min: 0.01, max: 0.001}\n", 3, "tuning.ranges['training.learning_rate'].max",
     "max (0.001) must be more than min (0.01)"),
    ("    hyperparameters.dropout: {min: -0.1, max: 0.5, scaling: logarithmic}\n", 3,
     "tuning.ranges['hyperparameters.dropout'].min", "logarithmic scaling needs min > 0"),
    ("    hyperparameters.momentum: {min: 0.5, max: 1.5, scaling: reverse_logarithmic}\n", 3,
     "tuning.ranges['hyperparameters.momentum'].max", "reverse_logarithmic scaling needs max < 1"),
    ("    training.epochs: {min: 2.5, max: 8}\n", 3, "tuning.ranges['training.epochs'].min",
     "2.5 is not a whole number"),
    ("    training.epochs: {min: 2, max: 8, type: continuous}\n", 3, "tuning.ranges['training.epochs'].type",
     "takes whole numbers: use type: integer"),
    ("    training.optimizer: {min: 1, max: 2}\n", 3, "tuning.ranges['training.optimizer']",
     "training.optimizer is not a number: give its choices as values"),
    ("    training.bogus: {min: 1, max: 2}\n", 3, "tuning.ranges['training.bogus']", "training has no field 'bogus'"),
    ("    epochs: {min: 1, max: 2}\n", 3, "tuning.ranges.epochs", "is not a range key: write training.<field>"),
    ("    hyperparameters.epochs: {min: 1, max: 9}\n", 3, "tuning.ranges['hyperparameters.epochs']",
     "'epochs' is a training field: tune training.epochs"),
    ("    training.epochs: {min: 1}\n", 3, "tuning.ranges['training.epochs']", "give max"),
    ("    training.epochs: {values: [1, 2], min: 1}\n", 3, "tuning.ranges['training.epochs'].min",
     "either values (categorical) or min and max"),
    ("    training.epochs: {values: [2, 2]}\n", 3, "tuning.ranges['training.epochs'].values[1]", "listed twice"),
    ("    training.epochs: {values: []}\n", 3, "tuning.ranges['training.epochs'].values", "give 1 to 30 values"),
    ("    training.epochs: {min: 1, max: 2, scale: linear}\n", 3, "tuning.ranges['training.epochs'].scale",
     "unknown field 'scale' (did you mean 'scaling'?)"),
]


@pytest.mark.parametrize(("ranges", "line", "field", "words"), CASES)
def test_each_range_rule_at_its_line(tmp_path: Path, ranges: str, line: int, field: str, words: str) -> None:
    errors = _errors(tmp_path, "  objective: validation:accuracy\n  ranges:\n" + ranges)
    assert len(errors) == 1, errors
    where, _, message = errors[0].partition(": ")
    assert where.split(":")[0] == str(BASE_LINES + 1 + line), errors[0]
    assert message.startswith(field + ": "), errors[0]
    assert words in message, errors[0]


SECTION_CASES = [
    ("  strategy: grid\n", "tuning.ranges['training.learning_rate']", "grid search takes categorical ranges only"),
    ("  strategy: hyperband\n  early_stopping: auto\n", "tuning.early_stopping", "hyperband stops trials early"),
    ("  max_jobs: 2\n  max_parallel_jobs: 3\n", "tuning.max_parallel_jobs", "is more than max_jobs (2)"),
    ("  strategy: annealing\n", "tuning.strategy", "Input should be 'bayesian', 'random', 'hyperband' or 'grid'"),
    ("  max_runtime: 1m\n", "tuning.max_runtime", "must be at least 120 seconds"),
    ("  early_stopping: yes\n", "tuning.early_stopping", "Input should be 'off' or 'auto'"),
    ("  goal: biggest\n", "tuning.goal", "Input should be 'maximize' or 'minimize'"),
]


@pytest.mark.parametrize(("more", "field", "words"), SECTION_CASES)
def test_section_rules(tmp_path: Path, more: str, field: str, words: str) -> None:
    errors = _errors(tmp_path, GOOD + more)
    assert len(errors) == 1, errors
    assert f" {field}: " in errors[0] and words in errors[0], errors[0]


def test_grid_and_hyperband_rules(tmp_path: Path) -> None:
    grid = "  objective: validation:accuracy\n  strategy: grid\n  ranges:\n" \
           "    training.epochs: {values: [2, 4, 8]}\n    training.optimizer: {values: [adam, sgd]}\n"
    spec = _write(tmp_path, grid)
    tuning = load_spec(spec).spec.tuning
    assert tuning is not None and grid_size(tuning) == 6 and max_jobs(tuning) == 6
    errors = _errors(tmp_path, grid + "  max_jobs: 4\n")
    assert len(errors) == 1 and "grid search runs every combination (6)" in errors[0]
    errors = _errors(tmp_path, GOOD.replace("ranges:", "strategy: hyperband\n  ranges:")
                     + "    training.epochs: {min: 2, max: 9}\n")
    assert len(errors) == 1 and "hyperband decides each trial's epochs itself" in errors[0]


def test_own_scripts_tune_hyperparameters_not_training_fields(tmp_path: Path) -> None:
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    own = "code:\n  source_dir: code\n  entry_point: train.py\n"
    errors = _errors(tmp_path, GOOD, extra=own)
    assert len(errors) == 1 and "reaches the bundled entrypoint only" in errors[0]
    spec = _write(tmp_path, "  objective: validation:accuracy\n  ranges:\n    hyperparameters.epochs: {min: 1, max: 9}\n",
                  extra=own)
    assert run("validate", str(spec)).code == 0  # an own script may call its own setting epochs


@pytest.mark.parametrize("field", ["prefer:\n    - {instance_type: ml.g5.xlarge, count: 1}", "max_pending: 1h",
                                   "training_plan: arn:aws:sagemaker:us-east-1:123456789012:training-plan/p"])
def test_capacity_fields_smtrain_adds_to_training_jobs_only_are_refused(tmp_path: Path, field: str) -> None:
    name = field.partition(":")[0]
    errors = _errors(tmp_path, GOOD, extra=f"compute:\n  {field}\n")
    assert any(f" compute.{name}: compute.{name} does not apply to a tuning job" in e for e in errors), errors


def test_too_many_ranges(tmp_path: Path) -> None:
    ranges = "".join(f"    hyperparameters.h{i}: {{min: 1, max: 2}}\n" for i in range(31))
    errors = _errors(tmp_path, "  objective: validation:accuracy\n  ranges:\n" + ranges)
    assert len(errors) == 1 and "at most 30 ranges (AWS's limit), not 31" in errors[0]


def test_trial_overrides_make_one_trials_spec(tmp_path: Path) -> None:
    spec = _write(tmp_path, GOOD + "    training.optimizer: {values: [adam, sgd]}\n"
                  "    hyperparameters.dropout: {min: 0.1, max: 0.5}\n    training.xla: {values: [true, false]}\n")
    tuning = load_spec(spec).spec.tuning
    assert tuning is not None
    assignment = {"training.learning_rate": 0.003, "training.optimizer": "sgd", "hyperparameters.dropout": 0.25,
                  "training.xla": True}
    overrides = trial_overrides(tuning, assignment)
    assert overrides == ["training.learning_rate=0.003", "training.optimizer=sgd", "hyperparameters.dropout=0.25",
                         "training.xla=true"]
    trial = load_spec(spec, [*overrides, "tuning=null"]).spec
    assert trial.tuning is None
    assert (trial.training.learning_rate, trial.training.optimizer, trial.training.xla) == (0.003, "sgd", True)
    assert trial.hyperparameters == {"dropout": "0.25"}
    with pytest.raises(KeyError, match="training.epochs"):
        trial_overrides(tuning, {"training.epochs": 3})


def test_a_trial_value_the_field_refuses_is_a_spec_error(tmp_path: Path) -> None:
    spec = _write(tmp_path, GOOD)
    tuning = load_spec(spec).spec.tuning
    assert tuning is not None
    with pytest.raises(SpecError, match="must be more than 0"):
        load_spec(spec, trial_overrides(tuning, {"training.learning_rate": -1.0}))


_HUGE = "1" + "0" * 400  # 10^400: past a float
# (a range, its field, words of the one problem): bounds no trial can be drawn between
UNREPRESENTABLE = [
    (f"hyperparameters.units: {{min: 1, max: {_HUGE}}}", "max", "beyond what an integer range can draw"),
    (f"hyperparameters.units: {{min: -{_HUGE}, max: 1}}", "min", "within ±9007199254740991 (2^53 - 1)"),
    ("hyperparameters.units: {min: 1, max: 9007199254740992}", "max", "beyond what an integer range can draw"),
    ("hyperparameters.units: {min: 1.0, max: 1.0e+20, type: integer}", "max", "beyond what an integer range"),
    ("hyperparameters.units: {min: 1, max: 100000000000000000000000000000, scaling: logarithmic}", "max",
     "beyond what an integer range can draw"),
    (f"hyperparameters.dropout: {{min: 0.5, max: {_HUGE}}}", "max", "beyond the largest float"),
    (f"hyperparameters.dropout: {{min: 0, max: {_HUGE}, type: continuous}}", "max", "beyond the largest float"),
    ("hyperparameters.dropout: {min: -1e308, max: 1e308}", "max", "wider than the largest float"),
    ("hyperparameters.dropout: {min: -1.7e308, max: 0.2e308}", "max", "wider than the largest float"),
    ("hyperparameters.dropout: {min: 0, max: .inf}", "max", "not a finite number"),
    ("hyperparameters.dropout: {min: .nan, max: 1.0}", "min", "not a finite number"),
    ("hyperparameters.dropout: {min: -0.0, max: 0.0}", "max", "must be more than min"),
    (f"training.learning_rate: {{min: 0.5, max: {_HUGE}}}", "max", "training.learning_rate: "),
]


@pytest.mark.parametrize(("ranges", "field", "words"), UNREPRESENTABLE)
def test_bounds_past_what_a_trial_can_draw_are_refused_at_their_field(tmp_path: Path, ranges: str, field: str,
                                                                      words: str) -> None:
    errors = _errors(tmp_path, "  objective: validation:accuracy\n  ranges:\n    " + ranges + "\n")
    assert len(errors) == 1, errors
    key = ranges.partition(":")[0]
    assert f": tuning.ranges['{key}'].{field}: " in errors[0] and words in errors[0], errors[0]
    assert errors[0].startswith(f"{BASE_LINES + 4}:") and len(errors[0]) < 300, errors[0]


@pytest.mark.parametrize("ranges", ["hyperparameters.units: {min: -9007199254740991, max: 9007199254740991}",
                                    "hyperparameters.dropout: {min: 1e307, max: 1e308}",
                                    "hyperparameters.dropout: {min: -8e307, max: 8e307}",
                                    "hyperparameters.dropout: {min: 1.0e-320, max: 1.0e-319, scaling: logarithmic}"])
def test_extreme_bounds_that_can_be_drawn_are_valid_and_drawn_across_the_range(tmp_path: Path, ranges: str) -> None:
    import random

    from smtrain.local.trial_sampling import draw
    from smtrain.plan.tuning import _tuned_range

    spec = _write(tmp_path, "  objective: validation:accuracy\n  ranges:\n    " + ranges + "\n")
    result = run("validate", str(spec))
    assert result.code == 0, result.output
    loaded = load_spec(spec).spec
    assert loaded.tuning is not None
    ((key, spec_range),) = loaded.tuning.ranges.items()
    tuned = _tuned_range(key, spec_range, type(loaded.training))
    rng = random.Random(7)
    drawn = [draw(tuned, rng) for _ in range(20)]
    assert all(tuned.min <= value <= tuned.max for value in drawn), drawn  # type: ignore[operator]
    assert len(set(drawn)) > 10, drawn  # not one bound every time


@pytest.mark.parametrize("changes, field", [
    ({"compute": {"remote_debug": True}}, "compute.remote_debug"),
    ({"compute": {"infra_check": True}}, "compute.infra_check"),
    ({"session_tag_chaining": True}, "session_tag_chaining"),
    ({"model_package": {"group": "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/m"}}, "model_package"),
])
def test_what_a_trial_has_no_place_for_is_refused_with_tuning(tmp_path, changes, field):
    from tests.support.specfiles import write_spec

    tuned = {"tuning": {"objective": "validation:accuracy", "max_jobs": 2,
                        "ranges": {"training.epochs": {"min": 1, "max": 3}}}}
    with pytest.raises(SpecError) as caught:
        load_spec(write_spec(tmp_path, {**tuned, **changes}), env={})
    assert [p.render() for p in caught.value.problems if field in p.render()] != [], caught.value.problems
    assert f"{field} does not apply to a tuning job" in str(caught.value)
