"""The SageMaker backend: estimator construction and the offline CreateTrainingJob rendering.

Everything here is offline. The network proof runs in a fresh subprocess with no AWS
configuration at all and both guards of ``netguard`` installed before anything is imported, so
nothing this pytest process did earlier (imports, cached sessions, credentials) can mask a call.
"""

from __future__ import annotations

import dataclasses
import json
import os
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from smtrain.plan.tf_versions import default_py_version, known_tf_versions, tf_py_versions
from smtrain.sagemaker.estimator import (
    EstimatorSpec,
    build_estimator,
    make_session,
    render_request,
)
from tests.support import ROOT, netguard

REPO_ROOT = ROOT

ROLE = "arn:aws:iam::111122223333:role/smtrain-test-role"
SOURCE = "s3://smtrain-test-bucket/jobs/source/0f3a9c/sourcedir.tar.gz"
JOB = "smtrain-test-job-0001"


def make_spec(**changes: object) -> EstimatorSpec:
    """A realistic multi-worker GPU job; tests change what they look at."""
    base = EstimatorSpec(
        region="us-west-2",
        role=ROLE,
        entry_point="smtrain_entry.py",
        source_dir=SOURCE,
        instance_type="ml.g5.12xlarge",
        instance_count=2,
        framework_version="2.19",
        py_version="py312",
        image_uri=None,
        distribution={"multi_worker_mirrored_strategy": {"enabled": True}},
        hyperparameters={"epochs": 3, "learning_rate": 0.001, "optimizer": "adam", "shuffle": True},
        output_path="s3://smtrain-test-bucket/jobs/output",
        code_location="s3://smtrain-test-bucket/jobs/code",
        volume_size_gb=100,
        max_run=4 * 3600,
        use_spot=False,
        max_wait=None,
        checkpoint_s3_uri=None,
        checkpoint_local_path=None,
        keep_alive_seconds=None,
        subnets=(),
        security_group_ids=(),
        network_isolation=False,
        encrypt_inter_container_traffic=False,
        environment={},
        tags={},
        metric_definitions=(
            {"Name": "train:loss", "Regex": r"loss: ([0-9.]+)"},
            {"Name": "train:accuracy", "Regex": r"accuracy: ([0-9.]+)"},
        ),
        inputs={"train": {"uri": "s3://smtrain-test-bucket/data/train", "mode": "File"}},
    )
    return dataclasses.replace(base, **changes)


def hp(request: dict, name: str) -> object:
    """A hyperparameter as the container will read it (the SDK JSON-encodes every value)."""
    return json.loads(request["HyperParameters"][name])


# --------------------------------------------------------------------------------------------
# No network, no credentials: a clean subprocess with both guards
# --------------------------------------------------------------------------------------------

RUNNER = textwrap.dedent(
    """
    import json, logging, sys
    spec_json, out_path, repo_root = sys.argv[1:4]
    sys.path.insert(0, repo_root)
    from tests.support import netguard

    root = logging.getLogger()
    before = (list(root.handlers), root.level, sys.excepthook)
    with netguard.offline() as attempts:
        from smtrain.sagemaker.estimator import EstimatorSpec, render_request
        kw = json.loads(spec_json)
        for name in ("subnets", "security_group_ids", "metric_definitions"):
            kw[name] = tuple(kw[name])
        spec = EstimatorSpec(**kw)
        error = None
        try:
            first = render_request(spec, "smtrain-test-job-0001")
            second = render_request(spec, "smtrain-test-job-0001")
        except Exception as exc:  # reported, not raised: the parent shows it
            error = repr(exc)
    result = {"error": error, "attempts": list(attempts)}
    if error is None:
        result.update(
            request=first,
            same=first == second,
            sagemaker_imported="sagemaker" in sys.modules,
            host_untouched=(list(root.handlers), root.level, sys.excepthook) == before,
        )
    with open(out_path, "w") as fh:
        json.dump(result, fh)
    """
)


def offline_env(home: Path) -> dict[str, str]:
    """This environment without any AWS or SageMaker configuration and with an empty HOME."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("AWS_", "SAGEMAKER_", "BOTO_", "MLFLOW_")) and k != "PYTHONPATH"
    }
    env.update(
        HOME=str(home),
        XDG_CONFIG_HOME=str(home / ".config"),
        AWS_SHARED_CREDENTIALS_FILE=str(home / "no-such-dir" / "credentials"),
        AWS_CONFIG_FILE=str(home / "no-such-dir" / "config"),
    )
    return env


def run_offline(spec: EstimatorSpec, tmp_path: Path) -> tuple[dict, subprocess.CompletedProcess]:
    home = tmp_path / "home"
    home.mkdir()
    runner = tmp_path / "runner.py"
    runner.write_text(RUNNER)
    out = tmp_path / "result.json"
    proc = subprocess.run(
        [sys.executable, str(runner), json.dumps(dataclasses.asdict(spec)), str(out), str(REPO_ROOT)],
        env=offline_env(home),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text()), proc


def test_render_needs_no_network_and_no_credentials(tmp_path: Path) -> None:
    spec = make_spec(
        use_spot=True,
        max_wait=8 * 3600,
        checkpoint_s3_uri="s3://b/ckpt",
        tags={"team": "ml"},
        environment={"TF_CPP_MIN_LOG_LEVEL": "1"},
        network_isolation=True,
    )
    result, proc = run_offline(spec, tmp_path)
    assert result["error"] is None, result
    assert result["attempts"] == []
    assert result["sagemaker_imported"]
    assert result["same"]
    # The SDK's import must not leave a root logging handler, rich's excepthook, or print.
    assert result["host_untouched"]
    assert proc.stdout == ""
    assert "INFO" not in proc.stderr and "Traceback" not in proc.stderr, proc.stderr
    # No credentials, no AWS config, another HOME and cwd: still the very same request.
    assert result["request"] == render_request(spec, JOB)
    # Timings belong to `make bench` (bench/run.py), not to assertions here.


def test_guards_do_refuse(tmp_path: Path) -> None:
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
            "sts", region_name="us-east-1", config=Config(signature_version=UNSIGNED, retries={"max_attempts": 0})
        )
        with pytest.raises(netguard.NetworkBlocked):
            client.get_caller_identity()
    layers = [layer for layer, _ in attempts]
    assert layers.count("socket") == 3
    assert any(layer == "botocore" and "sts." in d for layer, d in attempts)
    # Restored afterwards.
    assert socket.create_connection.__module__ == "socket"


def test_dry_run_session_cannot_send() -> None:
    session = make_session("eu-west-1", dry_run=True)
    with netguard.socket_guard() as attempts:
        with pytest.raises(Exception) as info:
            session.boto_session.client("sts").get_caller_identity()
    assert "credentials" in str(info.value).lower() or "dry run" in str(info.value)
    assert not attempts


# --------------------------------------------------------------------------------------------
# The request is a valid CreateTrainingJob input
# --------------------------------------------------------------------------------------------

SPECS = {
    "mwms": make_spec(),
    "parameter_server": make_spec(distribution={"parameter_server": {"enabled": True}}),
    "horovod": make_spec(
        instance_type="ml.p4d.24xlarge",
        distribution={"mpi": {"enabled": True, "processes_per_host": 8, "custom_mpi_options": "-x NCCL_DEBUG=WARN"}},
    ),
    "smddp": make_spec(
        instance_type="ml.p4d.24xlarge",
        framework_version="2.11",
        py_version="py39",
        distribution={"smdistributed": {"dataparallel": {"enabled": True, "custom_mpi_options": "-verbose"}}},
    ),
    "single": make_spec(instance_count=1, distribution=None, instance_type="ml.g5.xlarge"),
    "everything": make_spec(
        use_spot=True,
        max_wait=6 * 3600,
        checkpoint_s3_uri="s3://b/ckpt",
        checkpoint_local_path="/opt/ml/checkpoints/run",
        keep_alive_seconds=900,
        subnets=("subnet-0abc", "subnet-0def"),
        security_group_ids=("sg-0123",),
        network_isolation=True,
        encrypt_inter_container_traffic=True,
        environment={"NCCL_DEBUG": "WARN"},
        tags={"project": "vision", "owner": "ml-team"},
        container_log_level=10,
        inputs={
            "train": {"uri": "s3://b/train", "mode": "FastFile", "distribution": "ShardedByS3Key"},
            "eval": {"uri": "s3://b/eval", "mode": "Pipe"},
            "vocab": {"uri": "s3://b/vocab", "mode": None},
        },
    ),
    "image_override": make_spec(
        framework_version="2.21", py_version="py312", image_uri="registry.example.invalid/tf:2.21-gpu"
    ),
}


@pytest.fixture(scope="module")
def create_training_job_shape():
    import botocore.session

    model = botocore.session.get_session().get_service_model("sagemaker")
    return model.operation_model("CreateTrainingJob").input_shape


@pytest.mark.parametrize("name", sorted(SPECS))
def test_request_passes_botocore_validation(name: str, create_training_job_shape) -> None:
    from botocore.validate import ParamValidator

    request = render_request(SPECS[name], JOB)
    report = ParamValidator().validate(request, create_training_job_shape)
    assert not report.has_errors(), report.generate_report()


# --------------------------------------------------------------------------------------------
# Content
# --------------------------------------------------------------------------------------------


def test_core_fields() -> None:
    r = render_request(make_spec(), JOB)
    assert r["TrainingJobName"] == JOB
    assert r["RoleArn"] == ROLE
    algo = r["AlgorithmSpecification"]
    # The SDK's GPU image for the version, region and instance (the registry itself is the SDK's business).
    assert algo["TrainingImage"].endswith("/tensorflow-training:2.19-gpu-py312")
    assert ".us-west-2." in algo["TrainingImage"]
    assert algo["TrainingInputMode"] == "File"
    assert algo["MetricDefinitions"] == [
        {"Name": "train:loss", "Regex": r"loss: ([0-9.]+)"},
        {"Name": "train:accuracy", "Regex": r"accuracy: ([0-9.]+)"},
    ]
    assert r["ResourceConfig"] == {"InstanceType": "ml.g5.12xlarge", "InstanceCount": 2, "VolumeSizeInGB": 100}
    assert r["StoppingCondition"] == {"MaxRuntimeInSeconds": 4 * 3600}
    assert r["OutputDataConfig"] == {"S3OutputPath": "s3://smtrain-test-bucket/jobs/output"}
    # Debugger hook off, profiler off; nothing else the user did not ask for.
    assert "DebugHookConfig" not in r and "DebugRuleConfigurations" not in r
    assert r["ProfilerConfig"] == {"DisableProfiler": True}
    assert "ProfilerRuleConfigurations" not in r
    for absent in (
        "VpcConfig",
        "EnableManagedSpotTraining",
        "CheckpointConfig",
        "Tags",
        "Environment",
        "EnableNetworkIsolation",
        "EnableInterContainerTrafficEncryption",
    ):
        assert absent not in r, absent


def test_hyperparameters_are_json_encoded_with_the_sdk_ones() -> None:
    r = render_request(make_spec(), JOB)
    raw = r["HyperParameters"]
    assert raw["sagemaker_program"] == '"smtrain_entry.py"'
    assert raw["sagemaker_submit_directory"] == json.dumps(SOURCE)
    assert raw["optimizer"] == '"adam"' and raw["epochs"] == "3" and raw["shuffle"] == "true"
    assert hp(r, "learning_rate") == 0.001
    assert hp(r, "sagemaker_job_name") == JOB
    assert hp(r, "sagemaker_region") == "us-west-2"
    assert hp(r, "sagemaker_container_log_level") == 20
    assert hp(r, "model_dir") == f"s3://smtrain-test-bucket/jobs/output/{JOB}/model"
    assert all(isinstance(v, str) for v in raw.values())


def test_other_entry_point() -> None:
    r = render_request(make_spec(entry_point="train.py"), JOB)
    assert hp(r, "sagemaker_program") == "train.py"


def test_distribution_flags_per_strategy() -> None:
    mwms = render_request(SPECS["mwms"], JOB)
    assert hp(mwms, "sagemaker_multi_worker_mirrored_strategy_enabled") is True
    assert "sagemaker_parameter_server_enabled" not in mwms["HyperParameters"]
    assert "sagemaker_mpi_enabled" not in mwms["HyperParameters"]

    ps = render_request(SPECS["parameter_server"], JOB)
    assert hp(ps, "sagemaker_parameter_server_enabled") is True
    assert "sagemaker_multi_worker_mirrored_strategy_enabled" not in ps["HyperParameters"]

    mpi = render_request(SPECS["horovod"], JOB)
    assert hp(mpi, "sagemaker_mpi_enabled") is True
    assert hp(mpi, "sagemaker_mpi_num_of_processes_per_host") == 8
    assert hp(mpi, "sagemaker_mpi_custom_mpi_options") == "-x NCCL_DEBUG=WARN"
    # Under MPI the SDK points model_dir at the local model directory.
    assert hp(mpi, "model_dir") == "/opt/ml/model"

    ddp = render_request(SPECS["smddp"], JOB)
    assert hp(ddp, "sagemaker_distributed_dataparallel_enabled") is True
    assert hp(ddp, "sagemaker_distributed_dataparallel_custom_mpi_options") == "-verbose"
    assert hp(ddp, "sagemaker_instance_type") == "ml.p4d.24xlarge"
    assert ddp["AlgorithmSpecification"]["TrainingImage"].endswith("tensorflow-training:2.11-gpu-py39")

    single = render_request(SPECS["single"], JOB)
    assert not [k for k in single["HyperParameters"] if k.endswith("_enabled")]


def test_everything_switched_on() -> None:
    r = render_request(SPECS["everything"], JOB)
    assert r["EnableManagedSpotTraining"] is True
    assert r["StoppingCondition"] == {"MaxRuntimeInSeconds": 4 * 3600, "MaxWaitTimeInSeconds": 6 * 3600}
    assert r["CheckpointConfig"] == {"S3Uri": "s3://b/ckpt", "LocalPath": "/opt/ml/checkpoints/run"}
    assert r["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 900
    assert r["VpcConfig"] == {"Subnets": ["subnet-0abc", "subnet-0def"], "SecurityGroupIds": ["sg-0123"]}
    assert r["EnableNetworkIsolation"] is True
    assert r["EnableInterContainerTrafficEncryption"] is True
    assert r["Environment"] == {"NCCL_DEBUG": "WARN"}
    assert r["Tags"] == [{"Key": "project", "Value": "vision"}, {"Key": "owner", "Value": "ml-team"}]
    assert hp(r, "sagemaker_container_log_level") == 10

    channels = {c["ChannelName"]: c for c in r["InputDataConfig"]}
    s3 = {name: c["DataSource"]["S3DataSource"] for name, c in channels.items()}
    assert channels["train"]["InputMode"] == "FastFile"
    assert s3["train"] == {"S3DataType": "S3Prefix", "S3Uri": "s3://b/train", "S3DataDistributionType": "ShardedByS3Key"}
    assert channels["eval"]["InputMode"] == "Pipe"
    assert s3["eval"]["S3DataDistributionType"] == "FullyReplicated"
    assert "InputMode" not in channels["vocab"]  # falls back to the job's File mode
    # Network isolation: the container cannot fetch the bundle, so the SDK adds it as a channel
    # and points the submit directory at the channel's local copy.
    assert s3["code"]["S3Uri"] == SOURCE
    assert hp(r, "sagemaker_submit_directory") == "/opt/ml/input/data/code/sourcedir.tar.gz"


def test_optional_settings_are_left_out_when_unset() -> None:
    r = render_request(make_spec(checkpoint_local_path="/opt/ml/checkpoints/x", keep_alive_seconds=0), JOB)
    assert "CheckpointConfig" not in r  # a local path alone means nothing to SageMaker
    assert "KeepAlivePeriodInSeconds" not in r["ResourceConfig"]
    r = render_request(make_spec(checkpoint_s3_uri="s3://b/ckpt"), JOB)
    assert r["CheckpointConfig"] == {"S3Uri": "s3://b/ckpt"}  # container default /opt/ml/checkpoints
    r = render_request(make_spec(inputs={}), JOB)
    assert "InputDataConfig" not in r


def test_tensorboard_output_config_goes_out_as_given_with_the_debugger_still_off() -> None:
    r = render_request(make_spec(tensorboard_s3_uri="s3://b/tb", tensorboard_local_path="/opt/ml/output/tensorboard"),
                       JOB)
    assert r["TensorBoardOutputConfig"] == {"S3OutputPath": "s3://b/tb", "LocalPath": "/opt/ml/output/tensorboard"}
    assert "DebugHookConfig" not in r  # TensorBoard output needs no Debugger hook
    assert "TensorBoardOutputConfig" not in render_request(make_spec(), JOB)


def test_cpu_instance_gets_the_cpu_image() -> None:
    r = render_request(make_spec(instance_type="ml.c5.4xlarge", distribution=None, instance_count=1), JOB)
    assert r["AlgorithmSpecification"]["TrainingImage"].endswith("tensorflow-training:2.19-cpu-py312")


def test_default_py_version_is_filled_in() -> None:
    r = render_request(make_spec(framework_version="2.16", py_version=None), JOB)
    assert r["AlgorithmSpecification"]["TrainingImage"].endswith("tensorflow-training:2.16-gpu-py310")


# --------------------------------------------------------------------------------------------
# Determinism
# --------------------------------------------------------------------------------------------


def test_same_spec_same_request_and_spec_untouched() -> None:
    spec = SPECS["everything"]
    snapshot = json.dumps(dataclasses.asdict(spec), sort_keys=True)
    first = render_request(spec, JOB)
    second = render_request(spec, JOB)
    assert first == second
    assert json.dumps(first, sort_keys=True) == json.dumps(second, sort_keys=True)
    # The SDK adds sagemaker_* keys to the hyperparameters dict it is given: not to the spec's.
    assert json.dumps(dataclasses.asdict(spec), sort_keys=True) == snapshot
    # Only the job name (and what embeds it) changes with the job name.
    other = json.dumps(render_request(spec, "another-job"))
    assert other == json.dumps(first).replace(JOB, "another-job")


# --------------------------------------------------------------------------------------------
# Versions and images
# --------------------------------------------------------------------------------------------


def test_image_uri_with_a_newer_version() -> None:
    r = render_request(SPECS["image_override"], JOB)
    assert r["AlgorithmSpecification"]["TrainingImage"] == SPECS["image_override"].image_uri
    assert hp(r, "sagemaker_multi_worker_mirrored_strategy_enabled") is True


def test_unknown_version_without_image_is_a_clear_error() -> None:
    with pytest.raises(ValueError) as info:
        render_request(make_spec(framework_version="9.9", py_version="py312"), JOB)
    message = str(info.value)
    assert "9.9" in message and "image_uri" in message and "2.19" in message


def test_unknown_python_version_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="py310"):
        render_request(make_spec(framework_version="2.18", py_version="py312"), JOB)


def test_sdk_rejections_come_back_as_value_errors() -> None:
    # SMDDP on TF 2.19: the SDK refuses (it supports TF <= 2.11 only).
    with pytest.raises(ValueError, match="SageMaker SDK rejected"):
        render_request(dataclasses.replace(SPECS["smddp"], framework_version="2.19", py_version="py312"), JOB)
    # A region the SDK has no TensorFlow image in.
    with pytest.raises(ValueError, match="SageMaker SDK rejected"):
        render_request(make_spec(region="xx-nowhere-1"), JOB)


@pytest.mark.parametrize(
    "changes, fragment",
    [
        ({"use_spot": True}, "max_wait"),
        ({"use_spot": True, "max_wait": 60}, "at least max_run"),
        ({"max_wait": 9 * 3600}, "spot"),
        ({"hyperparameters": {"sagemaker_program": "x.py"}}, "reserved"),
        ({"hyperparameters": {"model_dir": "s3://x"}}, "reserved"),
        ({"subnets": ("subnet-1",)}, "security_group_ids"),
        ({"source_dir": "./src"}, "source_dir"),
        ({"output_path": "local/out"}, "output_path"),
        ({"role": "SageMakerRole"}, "ARN"),
        ({"inputs": {"train": {"uri": "s3://b/t", "mdoe": "File"}}}, "unknown keys"),
        ({"inputs": {"train": {"uri": "s3://b/t", "mode": "Stream"}}}, "mode"),
        ({"framework_version": None, "image_uri": "x/y:z"}, "framework_version"),
    ],
)
def test_spec_mistakes_are_value_errors(changes: dict, fragment: str) -> None:
    with pytest.raises(ValueError, match=fragment):
        render_request(make_spec(**changes), JOB)


@pytest.mark.parametrize("name", ["", "-lead", "has_underscore", "x" * 64, "trailing-"])
def test_bad_job_names(name: str) -> None:
    with pytest.raises(ValueError, match="job name"):
        render_request(make_spec(), name)


def test_known_tf_versions() -> None:
    versions = known_tf_versions()
    assert {"2.19", "2.11", "2.19.0", "2.11.0"} <= set(versions)
    assert "9.9" not in versions and "2.21" not in versions
    pys = tf_py_versions()
    assert pys["2.19"] == ["py312"] and pys["2.18"] == ["py310"] and pys["2.16"] == ["py310"]
    assert default_py_version("2.11") == "py39"
    assert default_py_version("1.15") == "py37"  # newest of py3, py36, py37
    assert default_py_version("9.9") is None


def test_version_helpers_do_not_import_the_sdk(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "import smtrain.sagemaker.estimator\n"
        "from smtrain.plan.tf_versions import known_tf_versions, tf_py_versions, default_py_version\n"
        "assert '2.19' in known_tf_versions() and tf_py_versions()['2.11'] == ['py39']\n"
        "assert default_py_version('2.19') == 'py312'\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in ('sagemaker', 'boto3', 'botocore'))\n"
        "print(','.join(heavy))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=offline_env(tmp_path),
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == ""


def test_build_estimator_for_a_real_session_shape() -> None:
    """The lead's submit path: the same builder, a non-dry-run session, nothing sent here."""
    import boto3
    import botocore.session
    from botocore.credentials import CredentialResolver

    core = botocore.session.Session()
    # No credential providers: the test never sends, and must not probe for credentials either.
    core.register_component("credential_provider", CredentialResolver(providers=[]))
    boto = boto3.Session(botocore_session=core, region_name="us-west-2")
    with netguard.offline() as attempts:
        session = make_session("us-west-2", dry_run=False, boto_session=boto)
        estimator = build_estimator(make_spec(), session)
    assert not attempts
    assert not hasattr(session, "captured")
    assert estimator.training_image_uri().endswith("tensorflow-training:2.19-gpu-py312")
    with pytest.raises(ValueError, match="region"):
        make_session("eu-west-1", dry_run=False, boto_session=boto)
