"""smtrain's own CreateTrainingJob renderer (smtrain.render.training_request): what the request holds for each
kind of job, that botocore takes it as CreateTrainingJob's input, that it is a pure function of the plan, that
bad job names are refused before it, and that rendering it (the dry run) needs no network, no credentials, no
boto3 and no SageMaker SDK.

Field-by-field equality with what SDK v2 renders for the same job is tests/render/test_sdk_oracle.py's; these
tests pin the values themselves. (They replace tests/sagemaker/test_estimator.py, which tested the SDK path.)
"""

from __future__ import annotations

import copy
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.plan.build import Plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.render.checked_plan import checked_plan
from smtrain.render.training_request import preview_request, render_training_request
from smtrain.sagemaker import submit as submission
from smtrain.sagemaker.create import TRAINING, TUNING
from smtrain.spec.model import load_spec
from tests.support import ROOT, netguard
from tests.support.specfiles import BASE, merged

CATALOG = load_catalog()
JOB = "smtrain-test-job-0001"
SOURCE = f"s3://my-bucket/out/source/{'0f' * 32}/sourcedir.tar.gz"
ROLE = BASE["role"]
# What smtrain adds for the SageMaker TensorFlow toolkit to every job, whatever the strategy.
TOOLKIT_KEYS = {"sagemaker_submit_directory", "sagemaker_program", "sagemaker_container_log_level",
                "sagemaker_job_name", "sagemaker_region", "model_dir"}
OWN = {"source_dir": "src", "entry_point": "train.py"}


def spec_file(directory: Path, changes: dict[str, Any], *, drop: tuple[str, ...] = ()) -> Path:
    """BASE with `changes` (and without the top-level keys in `drop`), beside a small script in src/."""
    (directory / "src").mkdir(exist_ok=True)
    (directory / "src" / "train.py").write_text("print('train')\n")
    data = {k: v for k, v in merged(BASE, changes).items() if k not in drop}
    path = directory / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def plan_of(directory: Path, changes: dict[str, Any], *, drop: tuple[str, ...] = ()) -> Plan:
    return checked_plan(load_spec(spec_file(directory, changes, drop=drop), env={}), CATALOG)


def render(plan: Plan, job: str = JOB, **options: Any) -> dict[str, Any]:
    return render_training_request(plan, job, SOURCE, **options)


def hp(request: dict[str, Any], name: str) -> Any:
    """A hyperparameter as the container reads it (every value is sent JSON-encoded)."""
    return json.loads(request["HyperParameters"][name])


def strategy_flags(request: dict[str, Any]) -> dict[str, Any]:
    """The sagemaker_* hyperparameters of the strategy: those beyond the ones every job gets."""
    return {k: hp(request, k) for k in request["HyperParameters"] if k.startswith("sagemaker_")
            and k not in TOOLKIT_KEYS}


SPECS: dict[str, dict[str, Any]] = {
    "single": {"compute": {"instance_type": "ml.g5.xlarge"}},
    "mirrored": {"compute": {"instance_type": "ml.g5.12xlarge"}},
    "mwms": {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2}},
    "parameter_server": {"compute": {"instance_type": "ml.g5.2xlarge", "nodes": 3},
                         "distribution": {"strategy": "parameter_server"}},
    "horovod": {"tensorflow": {"version": "2.12"}, "compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2},
                "distribution": {"strategy": "horovod", "processes_per_host": 2, "mpi_options": "-x NCCL_DEBUG=WARN"}},
    "smddp": {"tensorflow": {"version": "2.11"}, "compute": {"instance_type": "ml.p4d.24xlarge", "nodes": 2},
              "distribution": {"strategy": "smddp", "mpi_options": "-verbose"}},
    "own_script": {"compute": {"instance_type": "ml.g5.xlarge"}, "code": OWN,
                   "hyperparameters": {"epochs": 3, "learning_rate": 0.001, "optimizer": "adam", "shuffle": True}},
    "everything": {
        "compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2, "spot": True, "max_run": "4h", "max_wait": "6h",
                    "keep_alive": "15m", "volume_size": "100GB", "max_retry_attempts": 2},
        "checkpoints": "s3://my-bucket/ck", "tensorboard": "s3://my-bucket/tb", "output_kms_key": "alias/out",
        "environment": {"NCCL_DEBUG": "WARN"}, "tags": {"project": "vision", "owner": "ml-team"},
        "network": {"subnets": ["subnet-0abc1234", "subnet-0def5678"], "security_groups": ["sg-0123abcd"],
                    "isolation": True, "encrypt_inter_container_traffic": True},
        "inputs": {"train": {"uri": "s3://my-bucket/train", "mode": "FastFile", "distribution": "ShardedByS3Key"},
                   "eval": {"uri": "s3://my-bucket/eval", "mode": "File"}, "vocab": "s3://my-bucket/vocab"},
    },
    "own_image": {"tensorflow": {"version": "2.21", "image_uri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/tf:2.21"},
                  "compute": {"instance_type": "ml.g5.xlarge"}},
    "fallback_list": {"compute": {"prefer": [{"instance_type": "ml.g5.12xlarge", "count": 2},
                                             {"instance_type": "ml.g5.xlarge"}], "max_pending": "2h"}},
}


# --- what the request holds ------------------------------------------------------------------------------

def test_spot_waits_twice_max_run_unless_max_wait_is_given(tmp_path: Path) -> None:
    spot = {"compute": {"instance_type": "ml.g5.xlarge", "spot": True, "max_run": "3h"},
            "checkpoints": "s3://my-bucket/ck"}
    assert render(plan_of(tmp_path, spot))["StoppingCondition"] == {"MaxRuntimeInSeconds": 10800,
                                                                    "MaxWaitTimeInSeconds": 21600}
    given = merged(spot, {"compute": {"max_wait": "4h"}})
    assert render(plan_of(tmp_path, given))["StoppingCondition"]["MaxWaitTimeInSeconds"] == 14400


@pytest.mark.parametrize("size, gb", [("1GB", 1), ("1999MB", 1), ("2GB", 2), ("1TB", 1000)])
def test_the_volume_is_the_size_in_whole_gb(tmp_path: Path, size: str, gb: int) -> None:
    plan = plan_of(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "volume_size": size}})
    assert render(plan)["ResourceConfig"]["VolumeSizeInGB"] == gb


@pytest.mark.parametrize("version, series", [("1.14", False), ("1.15", True), ("2.21", True)])
def test_metric_time_series_are_on_from_tensorflow_1_15_as_the_sdk_turns_them_on(tmp_path: Path, version: str,
                                                                                  series: bool) -> None:
    plan = plan_of(tmp_path, {"tensorflow": {"version": version}, "code": OWN,
                              "compute": {"instance_type": "ml.g5.xlarge"}})
    assert render(plan)["AlgorithmSpecification"].get("EnableSageMakerMetricsTimeSeries") is (True if series else None)

def test_core_fields(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, SPECS["mwms"])
    r = render(plan)
    assert set(r) == {"TrainingJobName", "RoleArn", "AlgorithmSpecification", "HyperParameters", "ResourceConfig",
                      "StoppingCondition", "OutputDataConfig", "TensorBoardOutputConfig", "InputDataConfig",
                      "ProfilerConfig"}  # nothing the spec did not ask for
    assert r["TrainingJobName"] == JOB and r["RoleArn"] == ROLE
    algorithm = r["AlgorithmSpecification"]
    assert algorithm["TrainingImage"] == plan.image_uri and "/tensorflow-training:" in algorithm["TrainingImage"]
    assert algorithm["TrainingInputMode"] == "File"
    assert algorithm["MetricDefinitions"] == [dict(m) for m in metric_definitions(plan.metrics)]
    assert algorithm["MetricDefinitions"] and algorithm["EnableSageMakerMetricsTimeSeries"] is True
    assert r["ResourceConfig"] == {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}
    assert r["StoppingCondition"] == {"MaxRuntimeInSeconds": 24 * 3600}
    assert r["OutputDataConfig"] == {"S3OutputPath": "s3://my-bucket/out"}
    assert r["InputDataConfig"] == [{"ChannelName": "train", "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": "s3://my-bucket/train", "S3DataDistributionType": "FullyReplicated"}}}]
    # The profiler off and no Debugger hook or rules (README, "The SageMaker SDK").
    assert r["ProfilerConfig"] == {"DisableProfiler": True}


def test_hyperparameters_are_json_encoded_with_the_toolkit_s_own(tmp_path: Path) -> None:
    r = render(plan_of(tmp_path, SPECS["own_script"]))
    raw = r["HyperParameters"]
    assert all(isinstance(v, str) for v in raw.values())
    # An own script receives exactly the spec's hyperparameters, then what the toolkit reads.
    assert list(raw)[:4] == ["epochs", "learning_rate", "optimizer", "shuffle"]
    assert set(raw) == {"epochs", "learning_rate", "optimizer", "shuffle"} | TOOLKIT_KEYS
    assert (raw["epochs"], raw["optimizer"], raw["shuffle"]) == ("3", '"adam"', "true")
    assert hp(r, "learning_rate") == 0.001
    assert raw["sagemaker_program"] == '"train.py"' and raw["sagemaker_submit_directory"] == json.dumps(SOURCE)
    assert hp(r, "sagemaker_job_name") == JOB and hp(r, "sagemaker_region") == "us-east-1"
    assert hp(r, "sagemaker_container_log_level") == 20  # logging.INFO
    assert hp(r, "model_dir") == f"s3://my-bucket/out/{JOB}/model"


def test_the_bundled_entrypoint_gets_the_plan_s_hyperparameters_and_any_text_round_trips(tmp_path: Path) -> None:
    note = 'héllo "q" \\ 😀'
    plan = plan_of(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "hyperparameters": {"note": note}})
    r = render(plan)
    assert hp(r, "sagemaker_program") == "smtrain_entry.py"
    assert {k: hp(r, k) for k in r["HyperParameters"] if k not in TOOLKIT_KEYS} == plan.hyperparameters
    assert hp(r, "note") == note


@pytest.mark.parametrize(("name", "flags"), [
    ("single", {}),
    ("mirrored", {}),  # one host: the entrypoint builds MirroredStrategy, the toolkit runs it as it is
    ("mwms", {"sagemaker_multi_worker_mirrored_strategy_enabled": True}),
    ("parameter_server", {"sagemaker_parameter_server_enabled": True}),
    ("horovod", {"sagemaker_mpi_enabled": True, "sagemaker_mpi_num_of_processes_per_host": 2,
                 "sagemaker_mpi_custom_mpi_options": "-x NCCL_DEBUG=WARN"}),
    ("smddp", {"sagemaker_distributed_dataparallel_enabled": True, "sagemaker_instance_type": "ml.p4d.24xlarge",
               "sagemaker_distributed_dataparallel_custom_mpi_options": "-verbose"}),
])
def test_distribution_flags_per_strategy(tmp_path: Path, name: str, flags: dict[str, Any]) -> None:
    r = render(plan_of(tmp_path, SPECS[name]))
    assert strategy_flags(r) == flags
    # Under MPI the toolkit's model_dir is the container's model directory; otherwise an S3 place per job.
    assert hp(r, "model_dir") == ("/opt/ml/model" if name == "horovod" else f"s3://my-bucket/out/{JOB}/model")


def test_everything_switched_on(tmp_path: Path) -> None:
    r = render(plan_of(tmp_path, SPECS["everything"]))
    assert r["EnableManagedSpotTraining"] is True
    assert r["StoppingCondition"] == {"MaxRuntimeInSeconds": 4 * 3600, "MaxWaitTimeInSeconds": 6 * 3600}
    assert r["ResourceConfig"] == {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100,
                                   "KeepAlivePeriodInSeconds": 900}
    assert r["RetryStrategy"] == {"MaximumRetryAttempts": 2}
    assert r["OutputDataConfig"] == {"S3OutputPath": "s3://my-bucket/out", "KmsKeyId": "alias/out"}
    assert r["CheckpointConfig"] == {"S3Uri": "s3://my-bucket/ck", "LocalPath": "/opt/ml/checkpoints"}
    assert r["TensorBoardOutputConfig"] == {"S3OutputPath": "s3://my-bucket/tb", "LocalPath": "/opt/ml/output/tensorboard"}
    assert r["VpcConfig"] == {"Subnets": ["subnet-0abc1234", "subnet-0def5678"], "SecurityGroupIds": ["sg-0123abcd"]}
    assert r["EnableNetworkIsolation"] is True and r["EnableInterContainerTrafficEncryption"] is True
    assert r["Environment"] == {"NCCL_DEBUG": "WARN"}
    assert r["Tags"] == [{"Key": "project", "Value": "vision"}, {"Key": "owner", "Value": "ml-team"}]

    channels = {c["ChannelName"]: c for c in r["InputDataConfig"]}
    assert list(channels) == ["train", "eval", "vocab", "code"]
    s3 = {name: c["DataSource"]["S3DataSource"] for name, c in channels.items()}
    assert channels["train"]["InputMode"] == "FastFile"
    assert s3["train"] == {"S3DataType": "S3Prefix", "S3Uri": "s3://my-bucket/train",
                           "S3DataDistributionType": "ShardedByS3Key"}
    assert channels["eval"]["InputMode"] == "File" and s3["eval"]["S3DataDistributionType"] == "FullyReplicated"
    assert "InputMode" not in channels["vocab"]  # the job's File mode
    # Network isolation: the container cannot fetch the bundle, so it comes in as a channel of its own and the
    # toolkit is pointed at that channel's copy.
    assert s3["code"]["S3Uri"] == SOURCE and "InputMode" not in channels["code"]
    assert hp(r, "sagemaker_submit_directory") == "/opt/ml/input/data/code/sourcedir.tar.gz"


def test_optional_settings_are_left_out_when_unset(tmp_path: Path) -> None:
    changes = {"compute": {"instance_type": "ml.g5.xlarge"}, "training": {"data": "synthetic"}, "tensorboard": False}
    r = render(plan_of(tmp_path, changes, drop=("inputs",)))
    assert set(r) == {"TrainingJobName", "RoleArn", "AlgorithmSpecification", "HyperParameters", "ResourceConfig",
                      "StoppingCondition", "OutputDataConfig", "ProfilerConfig"}
    assert set(r["ResourceConfig"]) == {"InstanceType", "InstanceCount", "VolumeSizeInGB"}
    assert set(r["StoppingCondition"]) == {"MaxRuntimeInSeconds"} and set(r["OutputDataConfig"]) == {"S3OutputPath"}


def test_tensorboard_output_goes_beside_the_output_unless_given_or_off(tmp_path: Path) -> None:
    here = {"S3OutputPath": "s3://my-bucket/out/tensorboard", "LocalPath": "/opt/ml/output/tensorboard"}
    plain = {"compute": {"instance_type": "ml.g5.xlarge"}}
    assert render(plan_of(tmp_path, plain))["TensorBoardOutputConfig"] == here
    own = render(plan_of(tmp_path, {**plain, "tensorboard": "s3://my-bucket/tb/"}))
    assert own["TensorBoardOutputConfig"] == {**here, "S3OutputPath": "s3://my-bucket/tb/"}
    assert "DebugHookConfig" not in own  # TensorBoard output needs no Debugger hook
    assert "TensorBoardOutputConfig" not in render(plan_of(tmp_path, {**plain, "tensorboard": False}))


def test_an_image_given_in_the_spec_is_the_one_sent(tmp_path: Path) -> None:
    r = render(plan_of(tmp_path, SPECS["own_image"]))
    assert r["AlgorithmSpecification"]["TrainingImage"] == SPECS["own_image"]["tensorflow"]["image_uri"]


def test_a_fallback_list_replaces_the_instance_and_choice_one_stands_alone(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, SPECS["fallback_list"])
    r = render(plan)
    assert r["ResourceConfig"] == {"VolumeSizeInGB": 30, "InstancePreferences": [
        {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2}, {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1}]}
    assert r["StoppingCondition"]["MaxPendingTimeInSeconds"] == 7200
    # capacity=False (a local run, a tuning trial): the first choice, as the plan's instance.
    first = render(plan, capacity=False)
    assert first["ResourceConfig"] == {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2, "VolumeSizeInGB": 30}
    assert "MaxPendingTimeInSeconds" not in first["StoppingCondition"]
    assert {k: v for k, v in first.items() if k not in ("ResourceConfig", "StoppingCondition")} == \
        {k: v for k, v in r.items() if k not in ("ResourceConfig", "StoppingCondition")}


def test_places_are_joined_as_the_toolkit_expects(tmp_path: Path) -> None:
    slashes = render(plan_of(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                        "output": "s3://my-bucket//a//b/"}))
    assert slashes["OutputDataConfig"] == {"S3OutputPath": "s3://my-bucket//a//b"}
    assert hp(slashes, "model_dir") == f"s3://my-bucket/a/b/{JOB}/model"
    # A local run's output, a directory on this machine: joined as a path.
    local = render(plan_of(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}), output=str(tmp_path / "out/"))
    assert local["OutputDataConfig"] == {"S3OutputPath": str(tmp_path / "out")}
    assert hp(local, "model_dir") == str(tmp_path / "out" / JOB / "model")


# --- a pure function of the plan -------------------------------------------------------------------------

def test_same_plan_same_request_and_the_plan_untouched(tmp_path: Path) -> None:
    plan = plan_of(tmp_path, SPECS["everything"])
    before = copy.deepcopy((plan.hyperparameters, plan.environment, plan.distribution, plan.spec.model_dump()))
    first = render(plan)
    kept = copy.deepcopy(first)
    assert render(plan) == first
    # A request is a value of its own: changing one changes neither the plan nor the next request.
    first["HyperParameters"]["epochs"] = "99"
    first["Environment"]["NCCL_DEBUG"] = "INFO"
    first["Tags"].append({"Key": "x", "Value": "y"})
    first["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] = "s3://elsewhere"
    assert render(plan) == kept
    assert (plan.hyperparameters, plan.environment, plan.distribution, plan.spec.model_dump()) == before
    # Only the job name, and what holds it, changes with the job name.
    assert json.dumps(render(plan, "another-job")) == json.dumps(kept).replace(JOB, "another-job")


# --- botocore's model ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def create_training_job_shape() -> Any:
    import botocore.session

    return botocore.session.get_session().get_service_model("sagemaker").operation_model(
        "CreateTrainingJob").input_shape


@pytest.mark.parametrize("name", sorted(SPECS))
def test_the_request_passes_botocore_validation(tmp_path: Path, name: str, create_training_job_shape: Any) -> None:
    from botocore.validate import ParamValidator

    plan = plan_of(tmp_path, SPECS[name])
    for request in (render(plan), preview_request(plan)):  # the dry run's, and the one validate checks
        report = ParamValidator().validate(request, create_training_job_shape)
        assert not report.has_errors(), report.generate_report()


# --- job names -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["", "-lead", "has_underscore", "x" * 64, "trailing-", "with space", "job\n"])
def test_bad_job_names_are_usage_errors_before_anything_is_rendered(tmp_path: Path, name: str) -> None:
    with pytest.raises(UserError) as info:
        TRAINING.check_name(name)
    assert info.value.code == exit_codes.USAGE and repr(name) in str(info.value)
    if name:  # an empty name is no name: prepare makes one (the CLI refuses an empty --job-name itself)
        with pytest.raises(UserError):
            submission.prepare(plan_of(tmp_path, SPECS["single"]), name)


@pytest.mark.parametrize("name", ["a", "x" * 63, "Job-1-a", "0-9"])
def test_good_job_names_pass(name: str) -> None:
    TRAINING.check_name(name)


@pytest.mark.parametrize(("name", "ok"), [("x" * 32, True), ("x" * 33, False), ("a-b", True), ("a_b", False)])
def test_tuning_job_names_have_their_own_limit(name: str, ok: bool) -> None:
    if ok:
        TUNING.check_name(name)
    else:
        with pytest.raises(UserError, match="invalid tuning job name .*1-32 letters"):
            TUNING.check_name(name)


# --- no network, no credentials, no SDK: a clean subprocess with both guards ------------------------------

RUNNER = textwrap.dedent("""
    import json, logging, sys
    spec_path, out_path, repo_root = sys.argv[1:4]
    sys.path.insert(0, repo_root)
    from tests.support import netguard

    root = logging.getLogger()
    before = (list(root.handlers), root.level, sys.excepthook)
    with netguard.offline() as attempts:
        already = set(sys.modules)  # the guards' own imports (botocore) aside
        from smtrain.plan.catalog_files import load_catalog
        from smtrain.render.checked_plan import checked_plan
        from smtrain.sagemaker.submit import dry_run
        from smtrain.spec.model import load_spec
        plan = checked_plan(load_spec(spec_path, env={}), load_catalog())
        first = dry_run(plan, "smtrain-test-job-0001")
        second = dry_run(plan, "smtrain-test-job-0001")
    heavy = ("sagemaker", "sagemaker_core", "boto3", "botocore", "tensorflow")
    result = {
        "attempts": list(attempts), "request": first["request"], "same": first == second,
        "imported": sorted({m.split(".")[0] for m in set(sys.modules) - already if m.split(".")[0] in heavy}),
        "host_untouched": (list(root.handlers), root.level, sys.excepthook) == before,
    }
    with open(out_path, "w") as fh:
        json.dump(result, fh)
""")


def offline_env(home: Path) -> dict[str, str]:
    """This environment without any AWS or SageMaker configuration and with an empty HOME."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("AWS_", "SAGEMAKER_", "BOTO_", "MLFLOW_")) and k != "PYTHONPATH"}
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"),
               AWS_SHARED_CREDENTIALS_FILE=str(home / "no-such-dir" / "credentials"),
               AWS_CONFIG_FILE=str(home / "no-such-dir" / "config"))
    return env


def test_rendering_needs_no_network_no_credentials_and_no_sdk(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, SPECS["everything"])
    (tmp_path / "home").mkdir()
    runner, out = tmp_path / "runner.py", tmp_path / "result.json"
    runner.write_text(RUNNER)
    proc = subprocess.run([sys.executable, str(runner), str(spec), str(out), str(ROOT)], env=offline_env(
        tmp_path / "home"), cwd=tmp_path, capture_output=True, text=True, timeout=180)
    assert proc.returncode == 0, proc.stderr
    assert (proc.stdout, proc.stderr) == ("", "")
    result = json.loads(out.read_text())
    assert result["attempts"] == [] and result["same"] and result["host_untouched"]
    assert result["imported"] == []  # the dry run imports neither boto3 nor the SDK (issue 23)
    # No credentials, no AWS config, another HOME and cwd: still the very same request as here.
    plan = checked_plan(load_spec(spec, env={}), CATALOG)
    assert result["request"] == submission.dry_run(plan, JOB)["request"]


def test_guards_do_refuse() -> None:
    """The proof above is only as good as the guards: check they bite."""
    import botocore.session
    from botocore import UNSIGNED
    from botocore.config import Config

    with netguard.offline() as attempts:
        with pytest.raises(netguard.NetworkBlocked):
            socket.create_connection(("example.com", 443), timeout=1)
        with pytest.raises(netguard.NetworkBlocked):
            socket.getaddrinfo("example.com", 443)
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        with pytest.raises(netguard.NetworkBlocked):
            sock.connect(("192.0.2.1", 80))
        sock.close()
        client = botocore.session.get_session().create_client(
            "sts", region_name="us-east-1", config=Config(signature_version=UNSIGNED, retries={"max_attempts": 0}))
        with pytest.raises(netguard.NetworkBlocked):
            client.get_caller_identity()
    layers = [layer for layer, _ in attempts]
    assert layers.count("socket") == 3
    assert any(layer == "botocore" and "sts." in d for layer, d in attempts)
    assert socket.create_connection.__module__ == "socket"  # restored afterwards


def test_the_oracle_s_offline_session_cannot_send() -> None:
    # The oracle (tests/support/sdk_oracle.py) renders through the SDK offline: its session has no credentials
    # and refuses any request, so an oracle comparison can never reach AWS.
    from tests.support.sdk_oracle import make_session

    session = make_session("eu-west-1")
    with netguard.socket_guard() as attempts:
        with pytest.raises(Exception) as info:
            session.boto_session.client("sts").get_caller_identity()
    assert "credentials" in str(info.value).lower() or "dry run" in str(info.value)
    assert not attempts
