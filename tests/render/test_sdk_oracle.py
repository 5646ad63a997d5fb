"""The oracle: smtrain's own renderer against the SageMaker Python SDK v2, which renders the same job offline.

Every example spec in configs/, the varied specs below and every tuning spec are rendered both ways; the
requests must be equal field by field but the differences README documents ("The SageMaker SDK"):
- v2 cannot render compute.prefer's InstancePreferences or StoppingCondition.MaxPendingTimeInSeconds;
- v2's tuner adds sagemaker_estimator_class_name and sagemaker_estimator_module, for its own attach().
The preview (validate, plan) is the same renderer with templates, so its verdict on limits is the dry run's.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from smtrain.bundle.request import make_request, new_job_name
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.job_places import job_name_template, source_uri_template
from smtrain.plan.tuning import build_tuning_plan
from smtrain.render import checked_plan
from smtrain.render.request_limits import request_problems
from smtrain.render.training_request import preview_request, render_training_request
from smtrain.render.tuning_request import render_tuning_request
from smtrain.sagemaker import submit as submission
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support import ROOT, sdk_oracle
from tests.support.cli_runner import no_result, smtrain
from tests.support.moto_server import BUCKET, MotoServer, live_spec
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
JOB = "oracle-job-20260101-000000-abcd"
TUNING_JOB = "oracle-tune-260101-000000"
# The SDK v2 tuner's own static hyperparameters (for its attach()): documented, never sent by smtrain.
SDK_CLASS_METADATA = ("sagemaker_estimator_class_name", "sagemaker_estimator_module")


def differences(ours: Any, sdk: Any, path: str = "") -> list[str]:
    """Every place the two requests differ: keys on either side only, values, list lengths and items."""
    if isinstance(ours, dict) and isinstance(sdk, dict):
        out = [f"{path}.{k}: only smtrain's" for k in ours if k not in sdk]
        out += [f"{path}.{k}: only the SDK's" for k in sdk if k not in ours]
        return out + [d for k in ours if k in sdk for d in differences(ours[k], sdk[k], f"{path}.{k}")]
    if isinstance(ours, list) and isinstance(sdk, list):
        if len(ours) != len(sdk):
            return [f"{path}: {len(ours)} items != the SDK's {len(sdk)}"]
        return [d for i, (a, b) in enumerate(zip(ours, sdk, strict=True)) for d in differences(a, b, f"{path}[{i}]")]
    return [] if ours == sdk else [f"{path}: smtrain {ours!r} != SDK {sdk!r}"]


def as_v2_renders_it(request: dict[str, Any]) -> dict[str, Any]:
    """smtrain's training request less what v2 cannot render: the first choice of a fallback list in its place,
    no MaxPendingTimeInSeconds, no ModelPackageConfig (README documents them)."""
    out = copy.deepcopy(request)
    resources = out["ResourceConfig"]
    preferences = resources.pop("InstancePreferences", None)
    if preferences:
        first = preferences[0]
        resources["InstanceType"], resources["InstanceCount"] = first["InstanceType"], first["InstanceCount"]
    out["StoppingCondition"].pop("MaxPendingTimeInSeconds", None)
    out.pop("ModelPackageConfig", None)  # the API's since SDK v2's last TensorFlow estimator: v2 has no argument
    out.pop("MlflowConfig", None)  # SageMaker-managed MLflow: no argument of SDK v2's TensorFlow estimator
    return out


def s3_twin(config: Path, tmp_path: Path) -> Path:
    """The config with s3:// places for local ones (local-demo), written next to its original's code."""
    data = yaml.safe_load(config.read_text())
    data["output"] = data["output"] if str(data["output"]).startswith("s3://") else "s3://my-bucket/out"
    data["inputs"] = {name: (uri if str(uri).startswith("s3://") else f"s3://my-bucket/{name}")
                      for name, uri in data.get("inputs", {}).items()}
    path = tmp_path / config.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    for item in ("src", "code"):  # configs that bring code name it relative to themselves
        if (config.parent / item).exists():
            (tmp_path / item).symlink_to(config.parent / item)
    return path


VARIED: dict[str, dict[str, Any]] = {
    "plain": {"compute": {"instance_type": "ml.g5.xlarge"}},
    "everything": {
        "compute": {"instance_type": "ml.g5.12xlarge", "spot": True, "max_run": "6h", "max_wait": "9h",
                    "keep_alive": "30m", "volume_size": "150GiB"},
        "checkpoints": "s3://my-bucket/ck", "environment": {"NCCL_DEBUG": "WARN", "A_B": "x y"},
        "tags": {"team": "ml", "cost center": "été 42"},
        "network": {"subnets": ["subnet-0abc1234", "subnet-0abc1235"], "security_groups": ["sg-0abc1234"],
                    "isolation": True, "encrypt_inter_container_traffic": True},
        "inputs": {"train": {"uri": "s3://my-bucket/train", "mode": "FastFile", "distribution": "ShardedByS3Key"},
                   "eval": {"uri": "s3://my-bucket/eval", "mode": "File"}, "extra": "s3://my-bucket/x"},
        "hyperparameters": {"note": "héllo \"q\" \\ 😀", "rate": 1e-5, "flag": True, "n": 3},
        "training": {"seed": 7, "steps_per_execution": 4},
    },
    "horovod": {"tensorflow": {"version": "2.12"}, "compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2},
                "distribution": {"strategy": "horovod", "processes_per_host": 2, "mpi_options": "-x NCCL_DEBUG=INFO"}},
    "smddp": {"tensorflow": {"version": "2.11"}, "compute": {"instance_type": "ml.p4d.24xlarge", "nodes": 2},
              "distribution": {"strategy": "smddp", "mpi_options": "-x A=1"}},
    "parameter_server": {"compute": {"instance_type": "ml.g5.2xlarge", "nodes": 3},
                         "distribution": {"strategy": "parameter_server"}},
    "mwms": {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2}},
    "own_image": {"tensorflow": {"version": "2.21", "image_uri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/tf:2.21"},
                  "compute": {"instance_type": "ml.g5.xlarge"}},
    "slashes": {"compute": {"instance_type": "ml.g5.xlarge"}, "output": "s3://my-bucket//a//b/"},
    "own_code": {"compute": {"instance_type": "ml.g5.xlarge"}, "code": {"source_dir": "src", "entry_point": "train.py"},
                 "inputs": {"stream": {"uri": "s3://my-bucket/stream", "mode": "Pipe"}}},
    "own_code_settings": {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2, "allow_cpu": True},
                          "code": {"source_dir": "src", "entry_point": "train.py"},
                          "training": {"epochs": 3, "gradient_accumulation_steps": 2},
                          "hyperparameters": {"epochs": 2, "learning_rate": 0.1}, "environment": {"A": "1"}},
    "wrapped": {"compute": {"instance_type": "ml.g5.12xlarge"},
                "code": {"source_dir": "src", "entry_point": "train.py", "wrap": True, "wrap_batch": "global"},
                "training": {"lr_scaling": "sqrt"}, "hyperparameters": {"epochs": 2}, "environment": {"A": "1"}},
    "bundled_accumulating": {"compute": {"instance_type": "ml.g5.12xlarge", "allow_cpu": True},
                             "training": {"gradient_accumulation_steps": 4}},
    "tensorboard_own": {"compute": {"instance_type": "ml.g5.xlarge"}, "tensorboard": "s3://my-bucket/tb/"},
    "tensorboard_off": {"compute": {"instance_type": "ml.g5.xlarge"}, "tensorboard": False},
    # No local NVMe on p3.2xlarge: a volume key is allowed there.
    "keys_retries_plan": {"compute": {"instance_type": "ml.p3.2xlarge", "max_retry_attempts": 3,
                                      "volume_kms_key": "arn:aws:kms:us-east-1:123456789012:key/abc",
                                      "training_plan": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p3"},
                          "output_kms_key": "arn:aws:kms:us-east-1:123456789012:key/def"},
    "old_tf": {"tensorflow": {"version": "2.13"}, "compute": {"instance_type": "ml.g5.xlarge"}},
    "file_systems": {"compute": {"instance_type": "ml.g5.xlarge"},
                     "network": {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"]},
                     "inputs": {"lustre": {"file_system": {"id": "fs-0123456789abcdef0", "type": "FSxLustre",
                                                           "directory": "/abcdefgh/data"}},
                                "efs": {"file_system": {"id": "fs-0abc1234", "type": "EFS", "directory": "/data",
                                                        "access_mode": "rw"}},
                                "s3": "s3://my-bucket/x"}},
    "own_checkpoint_place": {"compute": {"instance_type": "ml.g5.xlarge", "spot": True},
                             "checkpoints": "s3://my-bucket/ck", "checkpoint_local_path": "/opt/ml/my-checkpoints"},
    "own_checkpoint_place_own_script": {"compute": {"instance_type": "ml.g5.xlarge"},
                                        "code": {"source_dir": "src", "entry_point": "train.py"},
                                        "checkpoints": "s3://my-bucket/ck", "checkpoint_local_path": "/checkpoints/"},
    "incremental": {"compute": {"instance_type": "ml.g5.xlarge"}, "model_uri": "s3://my-bucket/models/m.tar.gz",
                    "model_channel": "previous", "inputs": {"train": "s3://my-bucket/train"}},
    "incremental_isolated": {"compute": {"instance_type": "ml.g5.xlarge"}, "model_uri": "s3://my-bucket/models/",
                             "network": {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"],
                                         "isolation": True}},
    "switches_and_registry": {"compute": {"instance_type": "ml.g5.xlarge", "remote_debug": True, "infra_check": True},
                              "output_compression": False, "session_tag_chaining": True,
                              "model_package": {
                                  "group": "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/mnist",
                                  "source": "arn:aws:sagemaker:us-east-1:123456789012:model-package/base/3"}},
    # Heterogeneous clusters as SageMaker's examples write them: a CPU group feeding a GPU group, horovod or
    # smddp on the GPU group, a channel for one group only; and groups with no strategy at all.
    "instance_groups_horovod": {"tensorflow": {"version": "2.12"},
                                "compute": {"instance_groups": [
                                    {"name": "data_group", "instance_type": "ml.c5.18xlarge", "count": 2},
                                    {"name": "dnn_group", "instance_type": "ml.g5.12xlarge", "count": 2}]},
                                "code": {"source_dir": "src", "entry_point": "train.py"},
                                "distribution": {"strategy": "horovod", "instance_groups": ["dnn_group"]},
                                "inputs": {"train": {"uri": "s3://my-bucket/train", "instance_groups": ["data_group"]},
                                           "all": "s3://my-bucket/all"}},
    "instance_groups_smddp": {"tensorflow": {"version": "2.11"},
                              "compute": {"instance_groups": [
                                  {"name": "dnn", "instance_type": "ml.p4d.24xlarge", "count": 2}]},
                              "code": {"source_dir": "src", "entry_point": "train.py"},
                              "distribution": {"strategy": "smddp"}},
    "instance_groups_none": {"compute": {"instance_groups": [
                                 {"name": "cpu", "instance_type": "ml.c5.xlarge"},
                                 {"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 3}]},
                             "code": {"source_dir": "src", "entry_point": "train.py"}},
    # MLflow: an ARN is MlflowConfig (smtrain's documented addition: v2 has no argument), a URI MLflow's own
    # variables; SageMaker Experiments as v2's fit(experiment_config=...) sends it.
    "tracking_arn": {"compute": {"instance_type": "ml.g5.xlarge"},
                     "tracking": {"mlflow": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team",
                                  "experiment": "mnist", "run": "first",
                                  "sagemaker_experiment": {"experiment": "mnist-exp", "trial": "t1", "run": "r1"}}},
    "tracking_uri": {"compute": {"instance_type": "ml.g5.xlarge"},
                     "tracking": {"mlflow": "https://mlflow.example.com", "experiment": "mnist",
                                  "sagemaker_experiment": {"experiment": "mnist-exp"}}},
    "other_region": {"region": "eu-central-1", "compute": {"instance_type": "ml.g5.xlarge"},
                     "tensorflow": {"version": "2.19"}},
}


def assert_smtrain_renders_what_the_sdk_does(spec_path: Path) -> dict[str, Any]:
    plan = checked_plan.checked_plan(load_spec(spec_path, env={}), CATALOG)
    request = make_request(plan, JOB)
    ours = render_training_request(plan, JOB, request.source_uri)
    sdk = sdk_oracle.render_request(sdk_oracle.estimator_spec(request), JOB)
    assert differences(as_v2_renders_it(ours), sdk) == []
    # The preview is the same request, templates aside.
    assert preview_request(plan, JOB, request.source_uri) == ours
    return ours


def assert_smtrain_tunes_as_the_sdk_does(spec_path: Path) -> dict[str, Any]:
    loaded = load_spec(spec_path, env={})
    tp = build_tuning_plan(loaded, checked_plan.checked_plan(loaded, CATALOG))
    request = make_request(tp.plan, TUNING_JOB)
    ours = render_tuning_request(tp, TUNING_JOB, request.source_uri)
    sdk = sdk_oracle.render_tuning_request(tp, sdk_oracle.estimator_spec(request), TUNING_JOB)
    static = sdk["TrainingJobDefinition"]["StaticHyperParameters"]
    assert [static.pop(k) for k in SDK_CLASS_METADATA] == ['"TensorFlow"', '"sagemaker.tensorflow.estimator"']
    assert differences(ours, sdk) == []
    return ours


CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_smtrain_renders_every_config_as_the_sdk_does(config, tmp_path):
    ours = assert_smtrain_renders_what_the_sdk_does(s3_twin(config, tmp_path))
    assert ours["AlgorithmSpecification"]["TrainingImage"]


@pytest.mark.parametrize("config", [c for c in CONFIGS if "tuning:" in c.read_text()], ids=lambda p: p.name)
def test_smtrain_tunes_every_tuning_config_as_the_sdk_does(config, tmp_path):
    assert_smtrain_tunes_as_the_sdk_does(s3_twin(config, tmp_path))


@pytest.mark.parametrize("name", sorted(VARIED))
def test_smtrain_renders_varied_specs_as_the_sdk_does(name, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    ours = assert_smtrain_renders_what_the_sdk_does(write_spec(tmp_path, VARIED[name]))
    if name == "tensorboard_off":
        assert "TensorBoardOutputConfig" not in ours
    if name.startswith("own_checkpoint_place"):
        place = VARIED[name]["checkpoint_local_path"]
        assert ours["CheckpointConfig"]["LocalPath"] == place and ours["Environment"]["SMTRAIN_CHECKPOINT_DIR"] == place
    if name == "switches_and_registry":
        assert {k: ours[k] for k in ("RemoteDebugConfig", "InfraCheckConfig", "SessionChainingConfig",
                                     "ModelPackageConfig")} == {
            "RemoteDebugConfig": {"EnableRemoteDebug": True}, "InfraCheckConfig": {"EnableInfraCheck": True},
            "SessionChainingConfig": {"EnableSessionTagChaining": True},
            "ModelPackageConfig": {
                "ModelPackageGroupArn": "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/mnist",
                "SourceModelPackageArn": "arn:aws:sagemaker:us-east-1:123456789012:model-package/base/3"}}
        assert ours["OutputDataConfig"]["CompressionType"] == "NONE"
    if name.startswith("instance_groups"):
        assert "InstanceType" not in ours["ResourceConfig"] and ours["ResourceConfig"]["InstanceGroups"]
    if name == "instance_groups_horovod":
        assert json.loads(ours["HyperParameters"]["sagemaker_distribution_instance_groups"]) == ["dnn_group"]
        assert ours["InputDataConfig"][0]["DataSource"]["S3DataSource"]["InstanceGroupNames"] == ["data_group"]
    if name == "tracking_arn":
        assert ours["MlflowConfig"] == {
            "MlflowResourceArn": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team",
            "MlflowExperimentName": "mnist", "MlflowRunName": "first"}
        assert ours["ExperimentConfig"] == {"ExperimentName": "mnist-exp", "TrialName": "t1", "RunName": "r1"}
        # The ARN is also MLflow's tracking URI in the job (through sagemaker-mlflow), for the chief's run.
        assert {k: v for k, v in ours["Environment"].items() if k.startswith("MLFLOW_")} == {
            "MLFLOW_TRACKING_URI": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team",
            "MLFLOW_EXPERIMENT_NAME": "mnist"}
    if name == "tracking_uri":
        assert "MlflowConfig" not in ours and ours["ExperimentConfig"] == {"ExperimentName": "mnist-exp"}
        assert {k: v for k, v in ours["Environment"].items() if k.startswith("MLFLOW_")} == {
            "MLFLOW_TRACKING_URI": "https://mlflow.example.com", "MLFLOW_EXPERIMENT_NAME": "mnist"}
    if name == "keys_retries_plan":
        assert ours["RetryStrategy"] == {"MaximumRetryAttempts": 3}
        assert {"VolumeKmsKeyId", "TrainingPlanArn"} <= set(ours["ResourceConfig"])
        assert "KmsKeyId" in ours["OutputDataConfig"]
    if name == "everything":
        assert {"CheckpointConfig", "TensorBoardOutputConfig", "VpcConfig", "Environment", "Tags", "InputDataConfig",
                "EnableManagedSpotTraining", "EnableNetworkIsolation",
                "EnableInterContainerTrafficEncryption"} <= set(ours)
        assert ours["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800


# Tuning specs as the tests and README write them: every strategy, every kind of range, and the training
# job's settings that reach a trial's definition.
TUNED: dict[str, dict[str, Any]] = {
    "bayesian": {"tuning": {"objective": "validation:accuracy", "max_jobs": 4, "max_parallel_jobs": 2,
                            "ranges": {"training.learning_rate": {"min": 0.0001, "max": 0.01, "scaling": "logarithmic"},
                                       "training.batch_size_per_replica": {"values": [32, 64]},
                                       "training.epochs": {"min": 2, "max": 6}}}},
    "random_early_stopping": {"tuning": {"objective": "validation:loss", "strategy": "random", "max_jobs": 3,
                                         "early_stopping": "auto", "max_runtime": "2h",
                                         "ranges": {"training.optimizer": {"values": ["adam", "sgd"]}}}},
    "grid": {"tuning": {"objective": "validation:accuracy", "strategy": "grid",
                        "ranges": {"training.batch_size_per_replica": {"values": [32, 64, 128]}}}},
    "hyperband": {"training": {"epochs": 8},
                  "tuning": {"objective": "validation:accuracy", "strategy": "hyperband", "max_jobs": 6,
                             "ranges": {"training.learning_rate": {"min": 0.001, "max": 0.1}}}},
    "settings": {"compute": {"instance_type": "ml.p3.8xlarge", "spot": True, "max_run": "2h", "max_wait": "4h",
                             "max_retry_attempts": 2, "volume_kms_key": "arn:aws:kms:us-east-1:123456789012:key/abc"},
                 "checkpoints": "s3://my-bucket/ck", "environment": {"NCCL_DEBUG": "WARN"},
                 "tags": {"team": "ml"}, "output_kms_key": "arn:aws:kms:us-east-1:123456789012:key/def",
                 "network": {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"],
                             "isolation": True, "encrypt_inter_container_traffic": True},
                 "inputs": {"train": {"uri": "s3://my-bucket/train", "mode": "FastFile"}},
                 "tuning": {"objective": "validation:accuracy", "max_jobs": 2,
                            "ranges": {"training.learning_rate": {"min": 0.001, "max": 0.1}}}},
    "own_script": {"code": {"source_dir": "src", "entry_point": "train.py"},
                   "hyperparameters": {"learning-rate": 0.1, "epochs": 3},
                   "tuning": {"objective": "validation:accuracy", "max_jobs": 2,
                              "ranges": {"hyperparameters.learning-rate": {"min": 0.001, "max": 0.1}}}},
}


@pytest.mark.parametrize("name", sorted(TUNED))
def test_smtrain_tunes_varied_specs_as_the_sdk_does(name, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('val_accuracy=0.5')\n")
    changes = {"compute": {"instance_type": "ml.g5.xlarge"}, **TUNED[name]}
    ours = assert_smtrain_tunes_as_the_sdk_does(write_spec(tmp_path, changes))
    if name == "settings":
        definition = ours["TrainingJobDefinition"]
        assert {"CheckpointConfig", "VpcConfig", "Environment", "EnableManagedSpotTraining", "RetryStrategy",
                "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption"} <= set(definition)


def test_a_wrapped_job_runs_the_wrap_from_a_bundle_holding_it_its_package_and_the_script(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    plan = checked_plan.checked_plan(load_spec(write_spec(tmp_path, VARIED["wrapped"]), env={}), CATALOG)
    request = make_request(plan, JOB)
    hps = {k: json.loads(v) for k, v in render_training_request(plan, JOB, request.source_uri)[
        "HyperParameters"].items()}
    assert hps["sagemaker_program"] == "smtrain_wrap.py"
    assert {"smtrain_wrap.py", "smtrain_entry.py", "smtrain_tf/__init__.py", "train.py"} <= \
        {f.path for f in request.bundle.files}


def test_a_fallback_list_is_what_v2_cannot_render(tmp_path):
    # The documented difference, shown to be one: smtrain sends the list where v2 sends the first choice.
    spec = write_spec(tmp_path, {"compute": {"prefer": [{"instance_type": "ml.g5.xlarge"},
                                                        {"instance_type": "ml.g5.2xlarge", "count": 1}],
                                             "max_pending": "2h"}})
    ours = assert_smtrain_renders_what_the_sdk_does(spec)
    assert [p["InstanceType"] for p in ours["ResourceConfig"]["InstancePreferences"]] == ["ml.g5.xlarge",
                                                                                         "ml.g5.2xlarge"]
    assert "InstanceType" not in ours["ResourceConfig"]
    assert ours["StoppingCondition"]["MaxPendingTimeInSeconds"] == 7200


def test_the_comparison_sees_a_difference(tmp_path):
    # The check itself: one changed value, one missing field, one extra list item are all reported.
    plan = checked_plan.checked_plan(load_spec(write_spec(tmp_path, VARIED["plain"]), env={}), CATALOG)
    ours = render_training_request(plan, JOB, make_request(plan, JOB).source_uri)
    other = copy.deepcopy(ours)
    other["ResourceConfig"]["VolumeSizeInGB"] += 1
    del other["ProfilerConfig"]
    other["AlgorithmSpecification"]["MetricDefinitions"].append({"Name": "x", "Regex": "x"})
    assert len(differences(ours, other)) == 3


def test_templates_have_the_length_of_what_submit_makes(tmp_path):
    plan = build_plan(load_spec(write_spec(tmp_path, VARIED["plain"]), env={}), CATALOG)
    assert len(job_name_template(plan.spec.name)) == len(new_job_name(plan.spec.name))
    real = make_request(plan).source_uri
    assert re.sub("[0-9a-f]{64}", "0" * 64, real) == source_uri_template(plan.spec.output)


# --- the same verdict on specs built to hit limits ----------------------------------------------------

CORPUS: dict[str, tuple[dict[str, Any], set[str]]] = {
    "too_many_hyperparameters": ({"hyperparameters": {f"h{i}": i for i in range(90)}}, {"hyperparameters"}),
    "keep_alive_over_max": ({"compute": {"keep_alive": 21601}}, {"compute.keep_alive"}),
    "too_many_variables": ({"environment": {f"V{i}": "1" for i in range(101)}}, {"environment"}),
    "long_variable": ({"environment": {"LONG": "v" * 513}}, {"environment.LONG"}),
    "too_many_tags": ({"tags": {f"t{i}": "v" for i in range(51)}}, {"tags"}),
    "long_hyperparameter": ({"hyperparameters": {"note": "n" * 2499}}, {"hyperparameters.note"}),
    "long_input_uri": ({"inputs": {"train": "s3://my-bucket/" + "d" * 1010}}, {"inputs.train.uri"}),
    "too_many_channels": ({"inputs": {f"c{i}": f"s3://my-bucket/{i}" for i in range(21)}}, {"inputs"}),
    "long_image": ({"tensorflow": {"image_uri": "registry.example/" + "i" * 250}}, {"tensorflow.image_uri"}),
    "long_tensorboard": ({"tensorboard": "s3://my-bucket/" + "t" * 1010}, {"tensorboard"}),
    # <output>/tensorboard, the default, outgrows SageMaker's limit where the output itself fits.
    "long_default_tensorboard": ({"output": "s3://my-bucket/" + "o" * 1000}, {"output"}),
    "too_many_subnets": ({"network": {"subnets": [f"subnet-{i:08x}" for i in range(17)],
                                      "security_groups": ["sg-0abc1234"]}}, {"network.subnets"}),
}


def corpus_spec(tmp_path: Path, name: str) -> Path:
    changes = {"compute": {"instance_type": "ml.g5.xlarge", **CORPUS[name][0].get("compute", {})}}
    return write_spec(tmp_path, {**CORPUS[name][0], **changes}, name=f"{name}.yaml")


def fields_in(stderr: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^error: \S+:\d+:\d+: (\S+): ", stderr, re.M)}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_validate_and_the_dry_run_refuse_alike(name, tmp_path):
    spec = corpus_spec(tmp_path, name)
    validate = smtrain("validate", str(spec))
    dry = smtrain("submit", str(spec), "--dry-run", "-o", "json")
    assert (validate.returncode, dry.returncode) == (2, 2), validate.stderr + dry.stderr
    assert fields_in(validate.stderr) == fields_in(dry.stderr) == CORPUS[name][1]
    assert no_result(dry.stdout) and "Traceback" not in validate.stderr + dry.stderr


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_rendered_request_alone_reaches_the_preview_s_verdict(name, tmp_path):
    plan = build_plan(load_spec(corpus_spec(tmp_path, name), env={}), CATALOG)
    expected = request_problems(plan, preview_request(plan))
    with pytest.raises(SpecError) as info:
        submission.dry_run(plan, "limits-job")
    assert {".".join(map(str, p.path)) for p in info.value.problems} == CORPUS[name][1]
    assert [(p.path, p.location) for p in info.value.problems] == [(p.path, p.location) for p in expected]


@pytest.mark.slow
def test_submit_refuses_before_uploading_or_creating(aws: MotoServer, tmp_path, monkeypatch):
    for key, value in aws.env(tmp_path).items():
        monkeypatch.setenv(key, value)
    plan = build_plan(load_spec(live_spec(tmp_path, {"compute": {"keep_alive": 21601}}), env={}), CATALOG)
    with pytest.raises(SpecError) as info:
        submission.submit(plan, "never-sent")
    assert [p.path for p in info.value.problems] == [("compute", "keep_alive")]
    assert aws.jobs() == [] and aws.client("s3").list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
