"""What reaches the program: an own script gets exactly its hyperparameters, smtrain's settings go to the
container environment, training fields it never gets are warned about, and `plan` shows only what applies."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from smtrain.cli.render import plan_text
from smtrain.plan.build import Plan, build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.render.checked_plan import checked_plan
from smtrain.render.request_limits import preview_problems
from smtrain.render.training_request import preview_request
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.specfiles import BASE_TEXT, merged

CATALOG = load_catalog()
OWN = {"code": {"source_dir": "src", "entry_point": "train.py"}}
WRAPPED = {"code": {"source_dir": "src", "entry_point": "train.py", "wrap": True}}


def spec_path(tmp_path: Path, changes: dict[str, Any]) -> Path:
    """BASE_TEXT's lines first (positions below count on them), then the changes' sections."""
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    data = merged(yaml.safe_load(BASE_TEXT), changes)
    extra = {k: v for k, v in data.items() if k not in yaml.safe_load(BASE_TEXT) or k in ("inputs",)}
    base = {k: v for k, v in data.items() if k not in extra}
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(base, sort_keys=False) + yaml.safe_dump(extra, sort_keys=False))
    return path


def plan_for(tmp_path: Path, changes: dict[str, Any]) -> Plan:
    """The plan every command starts from: build_plan, and its request's limits (checked_plan)."""
    return checked_plan(load_spec(spec_path(tmp_path, changes), env={}), CATALOG)


def refused(tmp_path: Path, changes: dict[str, Any]) -> list[str]:
    with pytest.raises(SpecError) as info:
        plan_for(tmp_path, changes)
    return [p.render() for p in info.value.problems]


def line_of(path: Path, text: str) -> int:
    return next(i for i, line in enumerate(path.read_text().splitlines(), 1) if text in line)


# --- hyperparameters -------------------------------------------------------------------------------

def test_an_own_script_receives_exactly_the_specs_hyperparameters(tmp_path):
    plan = plan_for(tmp_path, {**OWN, "training": {"epochs": 3, "lr_scaling": "sqrt", "seed": 4},
                               "hyperparameters": {"epochs": 2, "batch-size": 16}})
    assert plan.hyperparameters == {"epochs": 2, "batch-size": 16}
    assert plan.entry_point == "train.py" and plan.kind == "own" and plan.script == "train.py"
    assert plan.launch[0].command == ["python", "train.py", "--batch-size", "16", "--epochs", "2"]


def test_an_own_script_without_hyperparameters_receives_none(tmp_path):
    plan = plan_for(tmp_path, OWN)
    assert plan.hyperparameters == {} and plan.launch[0].command == ["python", "train.py"]
    request = preview_request(plan)
    assert {k for k in request["HyperParameters"] if not k.startswith("sagemaker_")} == {"model_dir"}


def test_the_bundled_entrypoint_still_gets_the_training_fields(tmp_path):
    plan = plan_for(tmp_path, {"hyperparameters": {"hidden_units": "64"}})
    assert plan.kind == "bundled" and plan.entry_point == "smtrain_entry.py" and plan.script is None
    assert plan.hyperparameters["epochs"] == 10 and plan.hyperparameters["hidden_units"] == "64"
    assert "gradient_accumulation_steps" not in plan.hyperparameters  # unset: the entrypoint's default


def test_the_bundled_entrypoint_gets_gradient_accumulation_steps_as_a_hyperparameter(tmp_path):
    plan = plan_for(tmp_path, {"training": {"gradient_accumulation_steps": 4}})
    assert plan.hyperparameters["gradient_accumulation_steps"] == 4
    assert "SMTRAIN_GRADIENT_ACCUMULATION_STEPS" not in plan.environment


# --- warnings for training fields an own script never gets ------------------------------------------

def test_training_fields_set_for_an_own_script_are_warned_about_at_their_line(tmp_path):
    path = spec_path(tmp_path, {**OWN, "training": {"epochs": 3, "batch_size_per_replica": 8,
                                                    "gradient_accumulation_steps": 2}})
    plan = build_plan(load_spec(path, env={}), CATALOG)
    warned = {w.path: w.render() for w in plan.warnings}
    assert set(warned) == {("training", "epochs"), ("training", "batch_size_per_replica")}
    assert warned[("training", "epochs")] == (
        f"{path}:{line_of(path, 'epochs: 3')}:11: training.epochs: training.epochs applies to the bundled "
        "entrypoint only; pass your script's own settings under hyperparameters:")


def test_no_warning_for_training_fields_left_at_their_defaults(tmp_path):
    assert plan_for(tmp_path, OWN).warnings == []
    assert plan_for(tmp_path, {**WRAPPED, "training": {"lr_scaling": "linear"}}).warnings == []


def test_training_seed_reaches_wrapped_and_own_scripts_as_smtrain_seed(tmp_path):
    # The wrap seeds every worker with it, smtrain_tf.fit shuffles with it, and check seeds its runs with it.
    for code in (WRAPPED, OWN):
        plan = plan_for(tmp_path, {**code, "training": {"seed": 0}})
        assert plan.warnings == [] and plan.smtrain_environment["SMTRAIN_SEED"] == "0", plan.smtrain_environment
        assert "seed" not in plan.hyperparameters
    # Unset: no variable (the container's default, 42); the bundled entrypoint gets it as a hyperparameter.
    assert "SMTRAIN_SEED" not in plan_for(tmp_path, WRAPPED).environment
    bundled = plan_for(tmp_path, {"training": {"seed": 7}})
    assert bundled.hyperparameters["seed"] == 7 and "SMTRAIN_SEED" not in bundled.environment


def test_lr_scaling_applies_to_wrapped_scripts_only(tmp_path):
    [warning] = plan_for(tmp_path, {**OWN, "training": {"lr_scaling": "linear"}}).warnings
    assert warning.path == ("training", "lr_scaling") and "wrapped scripts (code.wrap) only" in warning.message


# --- the environment ---------------------------------------------------------------------------------

def test_a_wrapped_job_tells_the_wrap_through_the_environment(tmp_path):
    plan = plan_for(tmp_path, {**WRAPPED, "environment": {"A": "1", "NCCL_DEBUG": "WARN"}})
    assert plan.entry_point == "smtrain_wrap.py" and plan.kind == "wrapped" and plan.script == "train.py"
    # The spec's variables first, then smtrain's.
    assert list(plan.environment.items()) == [("A", "1"), ("NCCL_DEBUG", "WARN"), ("SMTRAIN_WRAP_SCRIPT", "train.py"),
                                              ("SMTRAIN_WRAP_BATCH", "per_replica"), ("SMTRAIN_WRAP_TUNING", "on")]
    assert plan.smtrain_environment == {"SMTRAIN_WRAP_SCRIPT": "train.py", "SMTRAIN_WRAP_BATCH": "per_replica",
                                        "SMTRAIN_WRAP_TUNING": "on"}
    assert preview_request(plan)["Environment"] == plan.environment


def test_every_smtrain_variable_and_when_it_is_set(tmp_path):
    plan = plan_for(tmp_path, {"code": {**WRAPPED["code"], "wrap_batch": "global"}, "compute": {"allow_cpu": True},
                               "training": {"lr_scaling": "sqrt", "gradient_accumulation_steps": 3}})
    assert plan.environment == {"SMTRAIN_WRAP_SCRIPT": "train.py", "SMTRAIN_WRAP_BATCH": "global",
                                "SMTRAIN_WRAP_TUNING": "on", "SMTRAIN_LR_SCALING": "sqrt", "SMTRAIN_ALLOW_CPU": "true",
                                "SMTRAIN_GRADIENT_ACCUMULATION_STEPS": "3"}
    untuned = plan_for(tmp_path, {"code": {**WRAPPED["code"], "wrap_tuning": False}})
    assert untuned.environment == {"SMTRAIN_WRAP_SCRIPT": "train.py", "SMTRAIN_WRAP_BATCH": "per_replica",
                                   "SMTRAIN_WRAP_TUNING": "off"}
    assert "wrap fit      Keras's own fit as your script compiles it (code.wrap_tuning: false)" in plan_text(untuned)
    own = plan_for(tmp_path, {**OWN, "training": {"gradient_accumulation_steps": 3}})
    assert own.environment == {"SMTRAIN_GRADIENT_ACCUMULATION_STEPS": "3"}
    bundled = plan_for(tmp_path, {"compute": {"allow_cpu": True}})
    assert bundled.environment == {"SMTRAIN_ALLOW_CPU": "true"}
    assert plan_for(tmp_path, {}).environment == {} and "Environment" not in preview_request(plan_for(tmp_path, {}))


def test_a_spec_variable_smtrain_sets_for_the_job_is_refused_at_its_line(tmp_path):
    changes = {**WRAPPED, "environment": {"SMTRAIN_WRAP_BATCH": "global", "SMTRAIN_CPU_REPLICAS": "2"}}
    path = spec_path(tmp_path, changes)
    out = refused(tmp_path, changes)
    assert out == [f"{path}:{line_of(path, 'SMTRAIN_WRAP_BATCH')}:23: environment.SMTRAIN_WRAP_BATCH: smtrain sets "
                   "SMTRAIN_WRAP_BATCH for this job (from code.wrap_batch): remove it from environment:"]
    # The tuning's variable too, though its value is the default: the plan would say one thing, the job another.
    changes = {**WRAPPED, "environment": {"SMTRAIN_WRAP_TUNING": "off"}}
    path = spec_path(tmp_path, changes)
    assert refused(tmp_path, changes)[0].startswith(
        f"{path}:{line_of(path, 'SMTRAIN_WRAP_TUNING')}:24: environment.SMTRAIN_WRAP_TUNING: smtrain sets "
        "SMTRAIN_WRAP_TUNING for this job (from code.wrap_tuning)")
    # One smtrain does not set for this job is the user's to give (SMTRAIN_CPU_REPLICAS: tests, local runs).
    plan = plan_for(tmp_path, {**OWN, "environment": {"SMTRAIN_WRAP_BATCH": "global", "SMTRAIN_CPU_REPLICAS": "2"}})
    assert plan.environment == {"SMTRAIN_WRAP_BATCH": "global", "SMTRAIN_CPU_REPLICAS": "2"}


def test_a_limit_broken_by_an_smtrain_variable_is_reported_at_the_field_behind_it(tmp_path):
    # Environment values hold at most 512 characters: SMTRAIN_WRAP_SCRIPT carries code.entry_point.
    script = "/".join(["d" * 200, "e" * 200, "f" * 120]) + ".py"
    (tmp_path / "src" / Path(script).parent).mkdir(parents=True)
    (tmp_path / "src" / script).write_text("")
    changes = {"code": {"source_dir": "src", "entry_point": script, "wrap": True}}
    out = refused(tmp_path, changes)
    assert len(out) == 1 and ": code.entry_point: " in out[0] and "Environment.SMTRAIN_WRAP_SCRIPT" in out[0]
    assert out[0].startswith(f"{tmp_path / 'job.yaml'}:{line_of(tmp_path / 'job.yaml', 'entry_point')}:")


# --- the request ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("changes", [{}, OWN, WRAPPED], ids=["bundled", "own", "wrapped"])
def test_every_job_sends_the_metric_definitions(tmp_path, changes):
    # The bundled entrypoint, smtrain_tf.fit and a wrapped fit print the lines they read.
    algorithm = preview_request(plan_for(tmp_path, changes))["AlgorithmSpecification"]
    assert algorithm["MetricDefinitions"] == [dict(m) for m in metric_definitions()]


def test_the_wrapped_request_runs_the_wrap_with_the_scripts_hyperparameters(tmp_path):
    plan = plan_for(tmp_path, {**WRAPPED, "hyperparameters": {"epochs": 2}})
    hps = preview_request(plan)["HyperParameters"]
    assert json.loads(hps["sagemaker_program"]) == "smtrain_wrap.py"
    assert {k for k in hps if not k.startswith("sagemaker_")} == {"epochs", "model_dir"}
    assert preview_problems(plan) == []


# --- the maths, and what `plan` shows -----------------------------------------------------------------

def test_gradient_accumulation_scales_the_batch_and_the_rate_on_the_effective_batch(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge"},
                               "training": {"batch_size_per_replica": 8, "gradient_accumulation_steps": 4,
                                            "learning_rate": 0.01, "lr_scaling": "linear"}})
    assert (plan.replicas, plan.global_batch, plan.effective_batch) == (4, 32, 128)
    assert plan.scaled_learning_rate == pytest.approx(0.16)  # 16 x one replica's batch
    summary = plan.summary()
    assert summary["batch"] == {"per_replica": 8, "global": 32, "gradient_accumulation_steps": 4, "effective": 128}
    assert summary["learning_rate"]["scaled"] == pytest.approx(0.16)
    text = plan_text(plan)
    assert "8 per replica x 4 replicas = 32 per micro-batch; x 4 accumulated steps -> 128 effective" in text
    assert "0.01 -> 0.16 (linear scaling on the effective batch, 16 x one replica's batch)" in text


def test_without_accumulation_the_effective_batch_is_the_global_one(tmp_path):
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge"},
                               "training": {"batch_size_per_replica": 8, "lr_scaling": "sqrt"}})
    assert (plan.global_batch, plan.effective_batch, plan.gradient_accumulation_steps) == (32, 32, None)
    assert plan.scaled_learning_rate == pytest.approx(0.002)
    assert "8 per replica -> 32 global" in plan_text(plan)


def test_plan_shows_no_batch_maths_for_an_own_script(tmp_path):
    plan = plan_for(tmp_path, {**OWN, "compute": {"instance_type": "ml.g5.xlarge", "nodes": 2},
                               "training": {"gradient_accumulation_steps": 2}})
    assert (plan.batch_per_replica, plan.global_batch, plan.learning_rate, plan.scaled_learning_rate) == (None,) * 4
    summary = json.loads(json.dumps(plan.summary()))
    assert summary["batch"] is None and summary["learning_rate"] is None and summary["wrap"] is None
    assert summary["program"] == {"kind": "own", "script": "train.py", "strategy_told": plan.strategy_told,
                                  "environment": {"SMTRAIN_GRADIENT_ACCUMULATION_STEPS": "2"}}
    assert "TF_CONFIG names the 2 workers" in plan.strategy_told
    text = plan_text(plan)
    assert "  batch " not in text and "learning rate" not in text
    assert "  program       train.py (your script)" in text and "  replicas      2" in text
    assert "SMTRAIN_GRADIENT_ACCUMULATION_STEPS=2" in text and "strategy told TF_CONFIG" in text


@pytest.mark.parametrize("strategy, instance, nodes, needle", [
    ("none", "ml.g5.12xlarge", 1, "one device"),
    ("horovod", "ml.g5.12xlarge", 1, "mpirun starts 4 process(es) per host (below), one GPU each; hvd.init()"),
    ("smddp", "ml.p4d.24xlarge", 1, "mpirun starts 8 process(es) per host (below), one GPU each; "
                                    "smdistributed.dataparallel.init()"),
    ("mirrored", "ml.g5.12xlarge", 1, "SM_NUM_GPUS=4"),
    ("multi_worker_mirrored", "ml.g5.12xlarge", 2, "TF_CONFIG names the 2 workers (below)"),
    ("parameter_server", "ml.g5.12xlarge", 2, "TF_CONFIG names the master, workers and parameter servers"),
])
def test_what_an_own_scripts_strategy_is_told(tmp_path, strategy, instance, nodes, needle):
    plan = plan_for(tmp_path, {**OWN, "tensorflow": {"version": "2.11" if strategy == "smddp" else "2.12"},
                               "compute": {"instance_type": instance, "nodes": nodes},
                               "distribution": {"strategy": strategy}})
    assert needle in plan.strategy_told


def test_plan_shows_what_the_wrap_does(tmp_path):
    plan = plan_for(tmp_path, {**WRAPPED, "compute": {"instance_type": "ml.g5.12xlarge"}})
    assert plan.strategy == "mirrored" and plan.batch_per_replica is None
    assert plan.wrap.summary() == {"script": "train.py", "batch": "per_replica", "batch_factor": 4,
                                   "lr_scaling": None, "lr_factor": 1.0, "tuning": True}
    text = plan_text(plan)
    assert "smtrain_wrap.py runs your train.py unchanged inside the strategy" in text
    assert "batch: your batch_size x 4 replicas (code.wrap_batch: per_replica)" in text
    assert "learning rate: as your script sets it (training.lr_scaling not set)" in text
    assert "the wrap builds MirroredStrategy" in text
    # 4 replicas under Mirrored: Keras's fit, tuned, with the wrap's repairs of Keras 3 there.
    assert ("wrap fit      Keras's own fit runs several steps per call (code.wrap_tuning), unless your script sets "
            "steps_per_execution or a callback acts on every batch; Keras 3 mended where it fails with several "
            "replicas (keras-team/keras#20585, #19246)") in text
    assert "SMTRAIN_WRAP_SCRIPT=train.py SMTRAIN_WRAP_BATCH=per_replica SMTRAIN_WRAP_TUNING=on" in text
    one_gpu = plan_text(plan_for(tmp_path, {**WRAPPED, "compute": {"instance_type": "ml.g5.xlarge"}}))
    assert "wrap fit      Keras's own fit runs several steps per call (code.wrap_tuning)" in one_gpu
    assert "mended" not in one_gpu  # one device: Keras's fit as it is
    hosts = plan_text(plan_for(tmp_path, {**WRAPPED, "compute": {"instance_type": "ml.g5.xlarge", "nodes": 2}}))
    assert "wrap fit      Keras's own fit runs several steps per call" in hosts and "Keras 3 mended" in hosts
    assert plan.summary()["entry_point"] == "smtrain_wrap.py" and plan.summary()["program"]["script"] == "train.py"


def test_plan_shows_the_wraps_rate_rule_and_a_global_batch(tmp_path):
    plan = plan_for(tmp_path, {"code": {**WRAPPED["code"], "wrap_batch": "global"},
                               "compute": {"instance_type": "ml.g5.12xlarge"}, "training": {"lr_scaling": "linear"}})
    assert (plan.wrap.batch_factor, plan.wrap.lr_scaling, plan.wrap.lr_factor) == (1, "linear", 4.0)
    text = plan_text(plan)
    assert "batch: your batch_size as written (code.wrap_batch: global); learning rate: x 4 (linear scaling)" in text


# --- the SDK's image table ---------------------------------------------------------------------------------

def test_a_region_without_the_sdks_image_is_refused_at_the_region(tmp_path):
    out = refused(tmp_path, {"region": "eu-west-9", "tensorflow": {"version": "2.19"}})
    assert len(out) == 1 and f"{tmp_path / 'job.yaml'}:3:9: region: the SageMaker SDK's table has no TensorFlow " \
        "2.19 py312 training image in eu-west-9" in out[0] and "us-east-1" in out[0]
    # An image of one's own needs no entry in the SDK's table.
    assert plan_for(tmp_path, {"region": "eu-west-9", "tensorflow": {"image_uri": "registry.example/tf:1"}})


def test_the_defaults_a_minimal_spec_renders_are_pinned(tmp_path):
    """Written here, not computed (the SDK oracle compares with smtrain's own computed defaults, so a default
    halved by mistake would pass it): what a spec of name, role, region, version, one input and output sends."""
    request = preview_request(plan_for(tmp_path, {}))
    assert request["ResourceConfig"] == {"InstanceType": "ml.g4dn.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30}
    assert request["StoppingCondition"] == {"MaxRuntimeInSeconds": 86400}
    assert request["AlgorithmSpecification"]["TrainingInputMode"] == "File"
    assert request["InputDataConfig"] == [{"ChannelName": "train", "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": "s3://my-bucket/train", "S3DataDistributionType": "FullyReplicated"}}}]
    assert request["ProfilerConfig"] == {"DisableProfiler": True}
    hps = request["HyperParameters"]
    assert {k: hps[k] for k in ("epochs", "batch_size_per_replica", "learning_rate", "lr_scaling", "warmup_epochs",
                                "optimizer", "mixed_precision", "sagemaker_container_log_level")} == {
        "epochs": "10", "batch_size_per_replica": "64", "learning_rate": "0.001", "lr_scaling": '"linear"',
        "warmup_epochs": "0", "optimizer": '"adam"', "mixed_precision": '"auto"', "sagemaker_container_log_level": "20"}
    assert "EnableManagedSpotTraining" not in request and "CheckpointConfig" not in request


def test_the_plan_tells_mixed_precision_on_the_gpu_for_the_bundled_entrypoint_only(tmp_path):
    bundled = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}})
    assert bundled.summary()["instance"]["mixed_precision"] is not None
    own = plan_for(tmp_path, {**OWN, "compute": {"instance_type": "ml.g5.xlarge"}})
    assert own.summary()["instance"]["mixed_precision"] is None  # the script decides its own
