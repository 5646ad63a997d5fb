"""An existing training job (DescribeTrainingJob, its tags, its code archive) as the SDK v2 estimator arguments that
would make it again, for `smtrain import --job`: any tool's job becomes a spec (smtrain.spec.sdk_arguments).

The code archive the job ran (sagemaker_submit_directory) is downloaded and unpacked into a directory here, which
the spec names as code.source_dir: smtrain bundles code from a directory, never from someone else's archive.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from smtrain import exit_codes
from smtrain.aws import api_errors, boto_session
from smtrain.bundle.entrypoint import ENTRY_MODULE, WRAP_MODULE, entrypoint_parts
from smtrain.bundle.job_requirements import split_added
from smtrain.bundle.model import REQUIREMENTS_NAME
from smtrain.errors import UserError
from smtrain.plan import tracking
from smtrain.plan.job_places import TENSORBOARD_LOCAL_PATH
from smtrain.render.training_request import MODEL_CONTENT_TYPE
from smtrain.sagemaker.backend import SageMakerBackend
from smtrain.spec.launcher import Arg, Launcher, SdkObject
from smtrain.spec.model import TrainingSpec

__all__ = ["described_launcher", "job_arguments"]

# SageMaker's and the SDK's own hyperparameters, read into estimator arguments rather than kept as the user's.
_STRATEGY_KEYS = {
    "sagemaker_multi_worker_mirrored_strategy_enabled": "multi_worker_mirrored_strategy",
    "sagemaker_parameter_server_enabled": "parameter_server",
}
_DROPPED = ("sagemaker_job_name", "sagemaker_region", "sagemaker_estimator_class_name", "sagemaker_estimator_module",
            "sagemaker_submit_directory", "sagemaker_program", "sagemaker_container_log_level")
# <base>-YYYY-MM-DD-HH-MM-SS-mmm (the SDK's names) or <base>-YYYYMMDD-HHMMSS-xxxx (smtrain's).
_NAME_SUFFIX = re.compile(r"-(?:\d{4}-\d{2}-\d{2}-\d{2}-\d{2}-\d{2}-\d{3}|\d{8}-\d{6}-[0-9a-f]{4})$")


# DescribeTrainingJob's members read above, and those that describe the job's run rather than its request.
_READ = frozenset({
    "TrainingJobName", "HyperParameters", "AlgorithmSpecification", "RoleArn", "InputDataConfig", "OutputDataConfig",
    "ResourceConfig", "VpcConfig", "StoppingCondition", "EnableNetworkIsolation", "EnableInterContainerTrafficEncryption",
    "EnableManagedSpotTraining", "CheckpointConfig", "DebugHookConfig", "DebugRuleConfigurations",
    "TensorBoardOutputConfig", "ProfilerConfig", "Environment", "RetryStrategy", "RemoteDebugConfig",
    "InfraCheckConfig", "ModelPackageConfig", "MlflowConfig", "ExperimentConfig"})
_NOT_THE_REQUEST = frozenset({
    "TrainingJobArn", "TuningJobArn", "LabelingJobArn", "AutoMLJobArn", "ModelArtifacts", "TrainingJobStatus",
    "SecondaryStatus", "FailureReason", "CreationTime", "TrainingStartTime", "TrainingEndTime", "LastModifiedTime",
    "SecondaryStatusTransitions", "FinalMetricDataList", "TrainingTimeInSeconds", "BillableTimeInSeconds",
    "BillableTokenCount", "DebugRuleEvaluationStatuses", "ProfilerRuleEvaluationStatuses", "ProfilingStatus",
    "WarmPoolStatus", "ResponseMetadata", "OutputModelPackageArn", "ProgressInfo", "MlflowDetails",
    "ProfilerRuleConfigurations"})


def _decoded(text: str) -> Any:
    """A hyperparameter as the SDK wrote it (JSON text); text that is not JSON as it is."""
    try:
        return json.loads(text)
    except (TypeError, ValueError):
        return text


def _channel(channel: dict[str, Any]) -> Any:
    source = channel.get("DataSource", {})
    if "FileSystemDataSource" in source:
        fs = source["FileSystemDataSource"]
        arguments = {"file_system_id": fs.get("FileSystemId"), "file_system_type": fs.get("FileSystemType"),
                     "directory_path": fs.get("DirectoryPath"),
                     "file_system_access_mode": fs.get("FileSystemAccessMode", "ro")}
        if channel.get("ContentType"):
            arguments["content_type"] = channel["ContentType"]
        if channel.get("InputMode") not in (None, "File"):
            arguments["input_mode"] = channel["InputMode"]
        return SdkObject("FileSystemInput", arguments)
    s3 = source.get("S3DataSource", {})
    arguments: dict[str, Any] = {"s3_data": s3.get("S3Uri"), "distribution": s3.get("S3DataDistributionType"),
                                 "input_mode": channel.get("InputMode")}
    if s3.get("S3DataType", "S3Prefix") != "S3Prefix":
        arguments["s3_data_type"] = s3["S3DataType"]
    for key, name in (("ContentType", "content_type"), ("CompressionType", "compression"),
                      ("RecordWrapperType", "record_wrapping"), ("ShuffleConfig", "shuffle_config")):
        if channel.get(key) not in (None, "None"):
            arguments[name] = channel[key]
    if s3.get("InstanceGroupNames"):
        arguments["instance_groups"] = list(s3["InstanceGroupNames"])
    if s3.get("AttributeNames"):
        arguments["attribute_names"] = s3["AttributeNames"]
    return SdkObject("TrainingInput", arguments)


# What smtrain itself sends for a spec's fields (smtrain.plan.program): read back into those fields, so that a
# job smtrain made imports into the spec that made it, not into a script run by hand.
_SMTRAIN_VARIABLES = {"SMTRAIN_LR_SCALING": "training.lr_scaling", "SMTRAIN_WRAP_BATCH": "code.wrap_batch",
                      "SMTRAIN_GRADIENT_ACCUMULATION_STEPS": "training.gradient_accumulation_steps",
                      "SMTRAIN_SEED": "training.seed"}


def _smtrain_settings(hps: dict[str, Any], environment: dict[str, str]) -> dict[str, Any]:
    """{dotted spec field: value} of a job smtrain made, taken out of `hps` and `environment` (both changed)."""
    program = hps.get("sagemaker_program")
    out: dict[str, Any] = {}
    if program == f"{ENTRY_MODULE}.py":  # the bundled entrypoint: the spec's training fields as hyperparameters
        out["code.entry_point"] = None
        for name in list(hps):
            if name in TrainingSpec.model_fields:
                out[f"training.{name}"] = hps.pop(name)
    elif program == f"{WRAP_MODULE}.py" and "SMTRAIN_WRAP_SCRIPT" in environment:
        out["code.entry_point"] = environment.pop("SMTRAIN_WRAP_SCRIPT")
        out["code.wrap"] = True
        out["code.wrap_tuning"] = environment.pop("SMTRAIN_WRAP_TUNING", "on") == "on"
    for variable, field in _SMTRAIN_VARIABLES.items():
        if variable in environment:
            value = environment.pop(variable)
            out[field] = int(value) if value.isdigit() else value
    if environment.pop("SMTRAIN_ALLOW_CPU", None) == "true":
        out["compute.allow_cpu"] = True
    if environment.pop("TF_USE_LEGACY_KERAS", None) == "1":
        out["tensorflow.keras"] = 2
    environment.pop("SMTRAIN_CHECKPOINT_DIR", None)  # checkpoint_local_path, read from CheckpointConfig
    tracked = environment.pop(tracking.SETTINGS, None)
    if tracked is not None:  # tracking.mlflow: MLflow's two variables are smtrain's then (smtrain.plan.tracking)
        for variable, field in (("MLFLOW_TRACKING_URI", "tracking.mlflow"),
                                ("MLFLOW_EXPERIMENT_NAME", "tracking.experiment")):
            if variable in environment:
                out[field] = environment.pop(variable)
        try:
            run = json.loads(tracked).get("run")
        except (ValueError, AttributeError):
            run = None  # not smtrain's JSON: no run name to carry
        if isinstance(run, str) and run:
            out["tracking.run"] = run
    return out


def _code_channel(d: dict[str, Any]) -> dict[str, Any] | None:
    """Under network isolation the SDK (and smtrain) hand the code over as a channel named code, and
    sagemaker_submit_directory names the file in the container: that channel is the code, not data."""
    if not d.get("EnableNetworkIsolation"):
        return None
    return next((c for c in d.get("InputDataConfig") or [] if c.get("ChannelName") == "code"), None)


def code_uri(d: dict[str, Any]) -> str | None:
    """Where the code archive the job ran is in S3, if it names one."""
    submitted = _decoded((d.get("HyperParameters") or {}).get("sagemaker_submit_directory", "null"))
    if isinstance(submitted, str) and submitted.startswith("s3://"):
        return submitted
    channel = _code_channel(d)
    uri = (channel or {}).get("DataSource", {}).get("S3DataSource", {}).get("S3Uri")
    return uri if isinstance(uri, str) and uri.endswith(".tar.gz") else None


def job_arguments(d: dict[str, Any], tags: list[dict[str, str]], code_dir: str | None) -> tuple[dict[str, Any], Any]:
    """(estimator arguments, fit()'s inputs) of the described job `d`; `code_dir`: where its code was unpacked."""
    algorithm = d.get("AlgorithmSpecification", {})
    resources = d.get("ResourceConfig", {})
    stopping = d.get("StoppingCondition", {})
    output = d.get("OutputDataConfig", {})
    hps = {k: _decoded(v) for k, v in (d.get("HyperParameters") or {}).items()}
    args: dict[str, Any] = {"role": d.get("RoleArn"), "image_uri": algorithm.get("TrainingImage"),
                            "instance_type": resources.get("InstanceType"),
                            "instance_count": resources.get("InstanceCount"),
                            "volume_size": resources.get("VolumeSizeInGB"),
                            "max_run": stopping.get("MaxRuntimeInSeconds"),
                            "output_path": output.get("S3OutputPath")}
    # The name less the SDK's or smtrain's time suffix (a name of another tool's: whole); the import names one
    # that is no spec name.
    args["base_job_name"] = _NAME_SUFFIX.sub("", d.get("TrainingJobName", ""))
    if algorithm.get("TrainingInputMode") not in (None, "File"):
        args["input_mode"] = algorithm["TrainingInputMode"]
    for key, name in (("VolumeKmsKeyId", "volume_kms_key"), ("KeepAlivePeriodInSeconds", "keep_alive_period_in_seconds"),
                      ("TrainingPlanArn", "training_plan")):
        if resources.get(key):
            args[name] = resources[key]
    if resources.get("InstanceGroups"):  # as SDK v2's InstanceGroup objects give them
        args["instance_groups"] = [SdkObject("InstanceGroup", {
            "instance_group_name": g.get("InstanceGroupName"), "instance_type": g.get("InstanceType"),
            "instance_count": g.get("InstanceCount")}) for g in resources["InstanceGroups"]]
    if d.get("EnableManagedSpotTraining"):
        args["use_spot_instances"] = True
        args["max_wait"] = stopping.get("MaxWaitTimeInSeconds")
    if output.get("KmsKeyId"):
        args["output_kms_key"] = output["KmsKeyId"]
    if output.get("CompressionType") == "NONE":
        args["disable_output_compression"] = True
    for key, member, name in (("RemoteDebugConfig", "EnableRemoteDebug", "enable_remote_debug"),
                              ("InfraCheckConfig", "EnableInfraCheck", "enable_infra_check"),
                              ("SessionChainingConfig", "EnableSessionTagChaining", "enable_session_tag_chaining")):
        if (d.get(key) or {}).get(member):
            args[name] = True
    if d.get("ModelPackageConfig"):
        args["model_package_config"] = d["ModelPackageConfig"]
    if d.get("MlflowConfig"):
        args["mlflow_config"] = d["MlflowConfig"]
    if d.get("ExperimentConfig"):  # SDK v2 takes it in fit(), as experiment_config
        args["experiment_config"] = {k: v for k, v in d["ExperimentConfig"].items() if v}
    checkpoint = d.get("CheckpointConfig") or {}
    if checkpoint.get("S3Uri"):
        args["checkpoint_s3_uri"] = checkpoint["S3Uri"]
        if checkpoint.get("LocalPath"):
            args["checkpoint_local_path"] = checkpoint["LocalPath"]
    vpc = d.get("VpcConfig") or {}
    if vpc:
        args["subnets"], args["security_group_ids"] = vpc.get("Subnets", []), vpc.get("SecurityGroupIds", [])
    for key, name in (("EnableNetworkIsolation", "enable_network_isolation"),
                      ("EnableInterContainerTrafficEncryption", "encrypt_inter_container_traffic")):
        if d.get(key):
            args[name] = True
    environment = dict(d.get("Environment") or {})
    settings = _smtrain_settings(hps, environment)
    if settings:
        args["smtrain_settings"] = settings
    if environment:
        args["environment"] = environment
    if (d.get("RetryStrategy") or {}).get("MaximumRetryAttempts"):
        args["max_retry_attempts"] = d["RetryStrategy"]["MaximumRetryAttempts"]
    board = d.get("TensorBoardOutputConfig") or {}
    if board.get("S3OutputPath"):
        local = board.get("LocalPath")
        args["tensorboard_output_config"] = SdkObject("TensorBoardOutputConfig", {
            "s3_output_path": board["S3OutputPath"],
            # smtrain's own place: the same as left unsaid, for a job smtrain made.
            "container_local_output_path": None if local in (None, TENSORBOARD_LOCAL_PATH) else local})
    if stopping.get("MaxPendingTimeInSeconds"):
        args["max_pending"] = stopping["MaxPendingTimeInSeconds"]
    for key, name in (("ContainerEntrypoint", "container_entry_point"), ("ContainerArguments", "container_arguments")):
        if algorithm.get(key):
            args[name] = algorithm[key]
    if algorithm.get("TrainingImageConfig"):
        args["training_repository_access_mode"] = algorithm["TrainingImageConfig"].get("TrainingRepositoryAccessMode")
    if algorithm.get("EnableSageMakerMetricsTimeSeries") is False:
        args["enable_sagemaker_metrics"] = False
    if d.get("ProfilerConfig") and not d["ProfilerConfig"].get("DisableProfiler"):
        args["profiler_config"] = d["ProfilerConfig"]
    for key, name in (("DebugHookConfig", "debugger_hook_config"), ("DebugRuleConfigurations", "rules")):
        if d.get(key):
            args[name] = d[key]
    if algorithm.get("MetricDefinitions"):
        args["metric_definitions"] = algorithm["MetricDefinitions"]
    own_tags = [t for t in tags if not t.get("Key", "").startswith("aws:")]
    if own_tags:
        args["tags"] = own_tags
    args["entry_point"] = settings.pop("code.entry_point", hps.get("sagemaker_program"))
    if code_dir is not None:
        args["source_dir"] = code_dir
    if hps.get("sagemaker_container_log_level") not in (None, 20):
        args["container_log_level"] = hps["sagemaker_container_log_level"]
    distribution: dict[str, Any] = {}
    for key, strategy in _STRATEGY_KEYS.items():
        if hps.pop(key, False) is True:
            distribution[strategy] = {"enabled": True}
    if hps.pop("sagemaker_mpi_enabled", False) is True:
        mpi: dict[str, Any] = {"enabled": True}
        if "sagemaker_mpi_num_of_processes_per_host" in hps:
            mpi["processes_per_host"] = hps.pop("sagemaker_mpi_num_of_processes_per_host")
        if "sagemaker_mpi_custom_mpi_options" in hps:
            mpi["custom_mpi_options"] = hps.pop("sagemaker_mpi_custom_mpi_options")
        distribution["mpi"] = mpi
    if hps.pop("sagemaker_distributed_dataparallel_enabled", False) is True:
        options = hps.pop("sagemaker_distributed_dataparallel_custom_mpi_options", "")
        hps.pop("sagemaker_instance_type", None)  # the SDK's own, from the instance type (null for a cluster)
        distribution["smdistributed"] = {"dataparallel": {"enabled": True, "custom_mpi_options": options}}
    groups = hps.pop("sagemaker_distribution_instance_groups", None)
    if distribution and groups:
        distribution["instance_groups"] = groups
    if distribution:
        args["distribution"] = distribution
    model_dir = hps.pop("model_dir", None)
    # The SDK's (and smtrain's) own: <output>/<job>/model, or /opt/ml/model under MPI.
    own = f"{str(args['output_path']).rstrip('/')}/{d.get('TrainingJobName')}/model"
    if model_dir not in (None, "/opt/ml/model", own):
        args["model_dir"] = model_dir
    user = {k: v for k, v in hps.items() if k not in _DROPPED}
    if user:
        args["hyperparameters"] = user
    code = _code_channel(d)
    channels = [c for c in d.get("InputDataConfig") or [] if c is not code]
    # model_uri's channel, as SDK v2 (and smtrain) make it: the model content type, one S3 source.
    model = next((c for c in channels if c.get("ContentType") == MODEL_CONTENT_TYPE
                  and "S3DataSource" in c.get("DataSource", {})), None)
    if model is not None:
        args["model_uri"] = model["DataSource"]["S3DataSource"]["S3Uri"]
        args["model_channel_name"] = model["ChannelName"]
    inputs = {c["ChannelName"]: _channel(c) for c in channels if c is not model}
    unread = sorted(k for k in d if k not in _READ and k not in _NOT_THE_REQUEST)
    if unread:
        args["unread_fields"] = unread
    return {k: v for k, v in args.items() if v is not None}, (inputs or None)


def smtrain_files() -> tuple[str, ...]:
    """The top-level names of smtrain's own entry point files in a bundle it made."""
    return tuple(part.name for part in entrypoint_parts())


def _unpack(s3: Any, uri: str, target: Path) -> None:
    """The code archive at `uri` unpacked into `target` (a new directory), or nothing left behind."""
    bucket, _, key = uri.removeprefix("s3://").partition("/")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=target.parent, prefix=".smtrain-import-") as tmp:
            _fetch(s3, uri, bucket, key, Path(tmp), target)
    except OSError as exc:  # this machine's side: a full disk, a file-size limit, a directory not writable
        raise UserError(f"cannot write the job's code into {target}: {exc.strerror or exc}", exit_codes.USAGE) from None


def _fetch(s3: Any, uri: str, bucket: str, key: str, tmp: Path, target: Path) -> None:
    """Download and unpack in `tmp`, then move the unpacked code to `target` in one step."""
    archive = tmp / "sourcedir.tar.gz"
    with api_errors(f"download the job's code {uri}"):
        s3.download_file(bucket, key, str(archive))
    unpacked = tmp / "code"
    if not hasattr(tarfile, "data_filter"):  # Python before 3.10.12 / 3.11.4: no safe extraction
        raise UserError("this Python cannot unpack an archive safely (tarfile's data filter came with 3.10.12 and "
                        "3.11.4): run smtrain on a newer Python, or download the code yourself", exit_codes.USAGE)
    try:
        with tarfile.open(archive, "r:*") as tar:
            tar.extractall(unpacked, filter="data")
    except tarfile.TarError as exc:
        raise UserError(f"cannot unpack the job's code {uri}: {exc}", exit_codes.API) from None
    # A job smtrain made carries smtrain's own entry point files: smtrain bundles them again, never from here.
    for name in smtrain_files():
        place = unpacked / name
        if place.is_dir() and not place.is_symlink():
            shutil.rmtree(place)
        elif place.exists() or place.is_symlink():
            place.unlink()
    _drop_added_requirements(unpacked / REQUIREMENTS_NAME)
    os.replace(unpacked, target)


def _drop_added_requirements(path: Path) -> None:
    """The lines smtrain added to requirements.txt (tf-keras, the MLflow client) come back from the spec: the file
    keeps the user's lines, and goes when it held smtrain's alone."""
    if not path.is_file() or path.is_symlink():
        return
    own, added = split_added(path.read_text(encoding="utf-8", errors="replace"))
    if not added:
        return
    if own.strip():
        path.write_text(own, encoding="utf-8")
    else:
        path.unlink()


def described_launcher(name: str, region: str, code_dir: Path | None, shown_code_dir: str) -> Launcher:
    """The training job `name` as a Launcher (the same mapping a launcher's code gets); its code unpacked into
    `code_dir` (which must not exist yet) and named `shown_code_dir` in the spec; None: the code is not fetched."""
    backend = SageMakerBackend(region)
    d = backend.description(name)
    with api_errors(f"list the tags of training job {name}"):
        tags = backend._sagemaker.list_tags(ResourceArn=d["TrainingJobArn"]).get("Tags", [])
    archive = code_uri(d)
    fetched = None
    if code_dir is not None and archive is not None:
        _unpack(boto_session(region).client("s3"), archive, code_dir)
        fetched = shown_code_dir
    args, inputs = job_arguments(d, tags, fetched)
    if fetched is None and archive is not None and "entry_point" in args:
        args["source_dir"] = archive  # named by the import as an archive to download
    where = f"training job {name}"
    return Launcher("TensorFlow", 0, {k: Arg(v, 0) for k, v in args.items()},
                    Arg(inputs, 0) if inputs else None, None, lambda _line: where)
