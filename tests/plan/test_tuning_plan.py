"""The tuning plan: the objective against the job's metric definitions, ranges as AWS takes them, the
static hyperparameters, what a tuned learning rate means, the tuning job's name. No SDK, no AWS."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest

from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.tuning import TUNING_NAME_MAX, new_tuning_job_name
from smtrain.render.checked_plan import checked_plan
from smtrain.render.tuning_limits import checked_tuning_plan
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.spec.inprocess import run
from tests.support.specfiles import BASE_TEXT, write_spec

TUNING = {"objective": "validation:accuracy", "max_jobs": 6, "max_parallel_jobs": 2,
          "ranges": {"training.learning_rate": {"min": 0.0001, "max": 0.01, "scaling": "logarithmic"},
                     "training.batch_size_per_replica": {"values": [32, 64]},
                     "training.epochs": {"min": 2, "max": 6}}}


def _plan(tmp_path: Path, changes: dict[str, Any] | None = None, tuning: dict[str, Any] | None = None) -> Any:
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge"}, **(changes or {}),
                                 "tuning": {**TUNING, **(tuning or {})}})
    loaded = load_spec(spec)
    return checked_tuning_plan(loaded, checked_plan(loaded, load_catalog(None, None)))


def test_ranges_limits_and_static_hyperparameters(tmp_path: Path) -> None:
    tp = _plan(tmp_path)
    assert (tp.strategy, tp.objective_type, tp.max_jobs, tp.max_parallel_jobs, tp.early_stopping) == (
        "Bayesian", "Maximize", 6, 2, "Off")
    assert tp.objective_regex == "val_accuracy=([0-9.eE+-]+)"
    assert tp.parameter_ranges() == {
        "ContinuousParameterRanges": [{"Name": "learning_rate", "MinValue": "0.0001", "MaxValue": "0.01",
                                       "ScalingType": "Logarithmic"}],
        "IntegerParameterRanges": [{"Name": "epochs", "MinValue": "2", "MaxValue": "6", "ScalingType": "Auto"}],
        "CategoricalParameterRanges": [{"Name": "batch_size_per_replica", "Values": ['"32"', '"64"']}]}
    assert tp.resource_limits() == {"MaxNumberOfTrainingJobs": 6, "MaxParallelTrainingJobs": 2}
    assert not {"learning_rate", "batch_size_per_replica", "epochs"} & set(tp.static_hyperparameters)
    assert tp.static_hyperparameters["optimizer"] == "adam"
    assert tp.hyperband is None


def test_a_tuned_learning_rate_is_the_one_replica_rate(tmp_path: Path) -> None:
    # ml.g5.12xlarge: 4 GPUs, mirrored: 4 replicas, linear scaling.
    tp = _plan(tmp_path)
    assert tp.plan.replicas == 4
    [rate] = [n for n in tp.notes if n.startswith("training.learning_rate")]
    assert "x 4 (linear scaling over 4 replicas), so 0.0001-0.01 train at 0.0004-0.04" in rate
    assert any("global batch is it x 4 replicas" in n for n in tp.notes)
    tp = _plan(tmp_path, {"training": {"lr_scaling": "none"}})
    assert "x 1 (none scaling" in next(n for n in tp.notes if n.startswith("training.learning_rate"))
    tp = _plan(tmp_path, tuning={"ranges": {"training.learning_rate": {"values": [0.001, 0.002]}}})
    [rate] = [n for n in tp.notes if n.startswith("training.learning_rate")]
    assert rate.endswith("so 0.001, 0.002 train at 0.004, 0.008")


def test_the_objective_must_be_a_metric_the_job_defines(tmp_path: Path) -> None:
    spec = tmp_path / "job.yaml"
    spec.write_text(BASE_TEXT + "tuning:\n  objective: validation:mae\n  ranges:\n"
                    "    training.epochs: {min: 2, max: 4}\n")
    result = run("validate", str(spec))
    assert result.code == 2
    line = BASE_TEXT.count("\n") + 2
    assert re.search(rf"error: {re.escape(str(spec))}:{line}:14: tuning.objective: no metric definition of this "
                     r"job produces 'validation:mae'; it has: train:loss, train:accuracy, validation:loss, "
                     r"validation:accuracy", result.stderr), result.stderr
    # The model's declared metrics add their definitions: then it is one.
    spec.write_text(BASE_TEXT + "metrics: [mae]\ntuning:\n  objective: validation:mae\n  ranges:\n"
                    "    training.epochs: {min: 2, max: 4}\n")
    assert run("validate", str(spec)).code == 0
    spec.write_text(BASE_TEXT + "tuning:\n  objective: accuracy\n  ranges:\n    training.epochs: {min: 2, max: 4}\n")
    assert "metric names carry their phase: validation:accuracy or train:accuracy" in run(
        "validate", str(spec)).stderr


def test_hyperband_gives_epochs_as_the_resource(tmp_path: Path) -> None:
    tp = _plan(tmp_path, {"training": {"epochs": 12}},
               {"strategy": "hyperband", "ranges": {"training.learning_rate": {"min": 0.001, "max": 0.1}}})
    assert tp.hyperband == {"MinResource": 1, "MaxResource": 12}
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    with pytest.raises(SpecError, match="hyperband needs the number of epochs") as caught:
        _plan(tmp_path, {"code": {"source_dir": "code", "entry_point": "train.py"}},
              {"strategy": "hyperband", "ranges": {"hyperparameters.lr": {"min": 0.001, "max": 0.1}}})
    assert caught.value.problems[0].path == ("tuning", "strategy")
    tp = _plan(tmp_path, {"code": {"source_dir": "code", "entry_point": "train.py"}, "hyperparameters": {"epochs": 7}},
               {"strategy": "hyperband", "ranges": {"hyperparameters.lr": {"min": 0.001, "max": 0.1}}})
    assert tp.hyperband == {"MinResource": 1, "MaxResource": 7}


def test_botocore_limits_reach_the_spec_field(tmp_path: Path) -> None:
    many = {f"h{i}": i for i in range(90)}  # with the SDK's own, within CreateTrainingJob's 100
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    with pytest.raises(SpecError) as caught:
        _plan(tmp_path, {"code": {"source_dir": "code", "entry_point": "train.py"}, "hyperparameters": many},
              {"ranges": {f"hyperparameters.t{i}": {"min": 1, "max": 2} for i in range(12)}})
    messages = [p.render() for p in caught.value.problems]
    assert any("102 hyperparameters, static and tuned together: SageMaker takes at most 100" in m
               for m in messages), messages


def test_the_tuning_job_name_fits_32_characters() -> None:
    now = dt.datetime(2026, 11, 23, 9, 5, 7, tzinfo=dt.timezone.utc)
    assert new_tuning_job_name("mnist", now) == "mnist-261123-090507"
    long = new_tuning_job_name("a-very-long-job-name-prefix-of-forty-two-c", now)
    assert len(long) == TUNING_NAME_MAX and long == "a-very-long-job-na-261123-090507"
    assert new_tuning_job_name("abcdefghijklmnopq-rest", now) == "abcdefghijklmnopq-261123-090507"  # no "--"


def test_plan_shows_the_tuning_section(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, {"tuning": TUNING})
    result = run("plan", str(spec), "-o", "json")
    assert result.code == 0, result.output
    tuning = json.loads(result.stdout)["tuning"]
    assert set(tuning) == {"name_prefix", "strategy", "objective", "max_jobs", "max_parallel_jobs",
                           "max_runtime_seconds", "early_stopping", "hyperband", "ranges", "static_hyperparameters",
                           "notes"}
    assert tuning["ranges"][0] == {"field": "training.learning_rate", "name": "learning_rate", "type": "continuous",
                                   "min": 0.0001, "max": 0.01, "scaling": "Logarithmic"}
    text = run("plan", str(spec))
    assert "Tuning:" in text.stdout and "range         training.batch_size_per_replica: one of 32, 64" in text.stdout
    plain = run("plan", str(write_spec(tmp_path, {}, name="plain.yaml")), "-o", "json")
    assert "tuning" not in json.loads(plain.stdout)


def test_a_trial_s_definition_keeps_what_the_tuning_api_has_fields_for(tmp_path: Path) -> None:
    from smtrain.render.tuning_request import render_tuning_request

    source = f"s3://my-bucket/out/source/{'0f' * 32}/sourcedir.tar.gz"
    definition = render_tuning_request(_plan(tmp_path), "tune-defaults", source)["TrainingJobDefinition"]
    # HyperParameterTrainingJobDefinition has no metrics-time-series switch: the training request's is left out.
    assert set(definition["AlgorithmSpecification"]) == {"TrainingImage", "TrainingInputMode", "MetricDefinitions"}
    assert definition["AlgorithmSpecification"]["TrainingInputMode"] == "File"
    assert definition["HyperParameterTuningResourceConfig"] == {"InstanceCount": 1, "InstanceType": "ml.g5.12xlarge",
                                                                "VolumeSizeInGB": 30}
    assert definition["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
