"""The CreateTrainingJob request a Plan leads to, built without the SageMaker SDK (validate, plan).

It holds every field the spec decides, as the SDK (v2, through smtrain.sagemaker) renders it:
the hyperparameters JSON-encoded, with the sagemaker_* ones the SDK adds for the strategy; the
environment (the spec's and smtrain's SMTRAIN_* variables: Plan.environment), tags, resources,
stopping condition, output, checkpoints, TensorBoard output, channels (with the code channel the SDK adds under network
isolation), VPC, image, role, the Enable* flags, the metric definitions, retries, KMS keys, a training
plan, and what the SDK cannot render (compute.prefer's InstancePreferences, MaxPendingTimeInSeconds:
with_capacity() adds them to the SDK's request too). It leaves out what the SDK alone decides and the
spec cannot break (the image URI of a version its own table knows, ProfilerConfig,
EnableSageMakerMetricsTimeSeries); the image is there when the spec gives it or smtrain's table renders it
(Plan.image_uri, smtrain.plan.tf_image_choice). Two
values exist only at submit time: the job name's time and suffix and the bundle's sha256; the
preview puts templates of the same length in their place. A test holds the preview equal to the
SDK's rendering, field by field, so the two cannot drift apart.
"""

from __future__ import annotations

import functools
import importlib.resources
import json
import re
from collections.abc import Sequence
from typing import Any, Protocol

from smtrain.plan.catalog import InstanceType
from smtrain.spec.model import ComputeSpec, Spec
from smtrain.spec.yaml_source import SourceMap

# new_job_name() (smtrain.bundle.request) adds "-<UTC yyyymmdd-HHMMSS>-<4 hex>" to the spec's name.
JOB_NAME_SUFFIX = "-yyyymmdd-HHMMSS-xxxx"
# The bundle's key: <output>/source/<sha256>/sourcedir.tar.gz (smtrain.bundle.build.s3_key_for).
_SOURCE_TEMPLATE = "{output}/source/" + "0" * 64 + "/sourcedir.tar.gz"
CHECKPOINT_LOCAL_PATH = "/opt/ml/checkpoints"
# Where the bundled entrypoint and smtrain_tf.fit write TensorBoard event files in the container (chief
# only): <SM_OUTPUT_DIR>/tensorboard. SageMaker uploads that directory while the job runs.
TENSORBOARD_LOCAL_PATH = "/opt/ml/output/tensorboard"
# What SageMaker adds under TensorBoardOutputConfig.S3OutputPath (the SDK's
# Estimator.latest_job_tensorboard_artifacts_path builds the same path).
TENSORBOARD_S3_FOLDER = "tensorboard-output"
# The SDK's defaults that reach the request: container_log_level=logging.INFO, the input mode, and
# the model_dir of MPI jobs (sagemaker/tensorflow/estimator.py, _default_s3_path).
_CONTAINER_LOG_LEVEL = 20
_INPUT_MODE = "File"
_MPI_MODEL_DIR = "/opt/ml/model"
# With network isolation the SDK hands the code over as an input channel of its own and points the
# container there (EstimatorBase: code_channel_name, CONTAINER_CODE_CHANNEL_SOURCEDIR_PATH).
CODE_CHANNEL = "code"
_CODE_CHANNEL_SOURCEDIR = "/opt/ml/input/data/code/sourcedir.tar.gz"


class PlanLike(Protocol):
    """What the preview reads of a Plan (smtrain.plan.build imports this module: it cannot import Plan)."""

    spec: Spec
    region: str
    instance: InstanceType
    nodes: int
    image_uri: str | None
    entry_point: str
    distribution: dict[str, Any] | None
    hyperparameters: dict[str, Any]
    environment: dict[str, str]  # the container's: the spec's, then smtrain's SMTRAIN_* variables
    metrics: tuple[str, ...]  # the model's declared metrics beyond loss and accuracy (declared_metrics.py)
    source: SourceMap | None  # positions of the spec's fields, for messages


def job_name_template(prefix: str) -> str:
    """A stand-in for the job name smtrain will make, of the same length."""
    return prefix + JOB_NAME_SUFFIX


def source_uri_template(output: str) -> str:
    """A stand-in for the bundle's S3 URI, of the same length."""
    return _SOURCE_TEMPLATE.format(output=output.rstrip("/"))


def volume_size_gb(compute: ComputeSpec) -> int:
    """VolumeSizeInGB: the spec's bytes in whole GB (10^9), at least 1."""
    return max(1, compute.volume_size // 10**9)


def instance_preferences(compute: ComputeSpec) -> list[dict[str, Any]] | None:
    """ResourceConfig.InstancePreferences of compute.prefer, in order, each with its own InstanceCount (the
    API takes a count per preference or one for the job, never both: smtrain always gives it per preference)."""
    if not compute.prefer:
        return None
    out = []
    for choice in compute.prefer:
        entry: dict[str, Any] = {"InstanceType": choice.instance_type, "InstanceCount": choice.count}
        if choice.training_plan:
            entry["TrainingPlanArns"] = [choice.training_plan]
        out.append(entry)
    return out


def with_capacity(request: dict[str, Any], preferences: list[dict[str, Any]] | None,
                  max_pending: int | None) -> dict[str, Any]:
    """What the SageMaker SDK v2 cannot render, added to a request it rendered (and to the preview): the
    fallback list in place of InstanceType and InstanceCount, and StoppingCondition.MaxPendingTimeInSeconds."""
    if preferences:
        resources = request["ResourceConfig"]
        resources.pop("InstanceType", None)
        resources.pop("InstanceCount", None)
        resources["InstancePreferences"] = [dict(p) for p in preferences]
    if max_pending is not None:
        request.setdefault("StoppingCondition", {})["MaxPendingTimeInSeconds"] = max_pending
    return request


def max_wait_seconds(compute: ComputeSpec) -> int | None:
    """MaxWaitTimeInSeconds: spot only; max_wait, else twice max_run."""
    return (compute.max_wait or 2 * compute.max_run) if compute.spot else None


@functools.lru_cache(maxsize=1)
def _shipped_definitions() -> tuple[dict[str, str], ...]:
    text = importlib.resources.files("smtrain_tf").joinpath("metric_definitions.json").read_text(encoding="utf-8")
    return tuple(json.loads(text))


def metric_definitions(declared: Sequence[str] = ()) -> tuple[dict[str, str], ...]:
    """The MetricDefinitions of a job: those of every job (smtrain_tf ships them as JSON), then a train and
    a validation definition for each metric the model declares (smtrain.plan.declared_metrics).

    The bundled entrypoint, smtrain_tf.fit and a wrapped script's fit print the lines they read; a
    script that prints none of them costs nothing, as its job simply has no metrics. Each name is
    matched after a space, so ` mae=` never matches inside `val_mae=`.
    """
    extra = []
    for name in declared:
        extra += [{"Name": f"train:{name}", "Regex": f" {name}=([0-9.eE+-]+)"},
                  {"Name": f"validation:{name}", "Regex": f" val_{name}=([0-9.eE+-]+)"}]
    return _shipped_definitions() + tuple(extra)


def tensorboard_s3_path(spec: Spec) -> str | None:
    """TensorBoardOutputConfig.S3OutputPath: the spec's `tensorboard`, else <output>/tensorboard for an s3://
    output; None when turned off (`tensorboard: false`) or when the output is a place on this machine."""
    if spec.tensorboard is False:
        return None
    if isinstance(spec.tensorboard, str):
        return spec.tensorboard
    return f"{spec.output.rstrip('/')}/tensorboard" if spec.output.startswith("s3://") else None


def tensorboard_files_uri(s3_output_path: str, job_name: str) -> str:
    """The S3 prefix a job's event files land under: <S3OutputPath>/<job>/tensorboard-output/."""
    return f"{s3_output_path.rstrip('/')}/{job_name}/{TENSORBOARD_S3_FOLDER}/"


def _s3_join(*parts: str) -> str:
    # The SDK's s3_path_join: one slash between parts, repeated slashes dropped (s3:// kept).
    scheme, _, rest = "/".join(parts).partition("://")
    return f"{scheme}://{re.sub('/+', '/', rest).strip('/')}"


def _distribution_hyperparameters(distribution: dict[str, Any] | None, instance_type: str) -> dict[str, Any]:
    """What the SDK's Framework._distribution_configuration adds for each `distribution` dict smtrain makes."""
    d = distribution or {}
    out: dict[str, Any] = {}
    if "parameter_server" in d:
        out["sagemaker_parameter_server_enabled"] = d["parameter_server"].get("enabled", False)
    if "mpi" in d:
        mpi = d["mpi"]
        out["sagemaker_mpi_enabled"] = mpi.get("enabled", False)
        if mpi.get("processes_per_host"):
            out["sagemaker_mpi_num_of_processes_per_host"] = mpi["processes_per_host"]
        out["sagemaker_mpi_custom_mpi_options"] = mpi.get("custom_mpi_options", "")
    if "smdistributed" in d:
        ddp = d["smdistributed"].get("dataparallel", {})
        out["sagemaker_distributed_dataparallel_enabled"] = ddp.get("enabled", False)
        out["sagemaker_instance_type"] = instance_type
        if ddp.get("enabled"):
            out["sagemaker_distributed_dataparallel_custom_mpi_options"] = ddp.get("custom_mpi_options", "")
    if "multi_worker_mirrored_strategy" in d:
        out["sagemaker_multi_worker_mirrored_strategy_enabled"] = d["multi_worker_mirrored_strategy"].get(
            "enabled", False)
    return out


def sdk_hyperparameters(plan: PlanLike, job_name: str, source_uri: str) -> dict[str, Any]:
    """The hyperparameters the SDK adds to the entry point's (values before JSON encoding)."""
    output = plan.spec.output.rstrip("/")
    added: dict[str, Any] = {
        "sagemaker_submit_directory": _CODE_CHANNEL_SOURCEDIR if plan.spec.network.isolation else source_uri,
        "sagemaker_program": plan.entry_point,
        "sagemaker_container_log_level": _CONTAINER_LOG_LEVEL,
        "sagemaker_job_name": job_name,
        "sagemaker_region": plan.region,
    }
    added.update(_distribution_hyperparameters(plan.distribution, plan.instance.name))
    mpi = bool(added.get("sagemaker_mpi_enabled"))
    added["model_dir"] = _MPI_MODEL_DIR if mpi else _s3_join(output, job_name, "model")
    return added


def _channel(name: str, uri: str, mode: str | None, distribution: str | None) -> dict[str, Any]:
    channel: dict[str, Any] = {"ChannelName": name, "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": distribution or "FullyReplicated"}}}
    if mode is not None:
        channel["InputMode"] = mode
    return channel


def preview_request(plan: PlanLike, job_name: str | None = None, source_uri: str | None = None) -> dict[str, Any]:
    """The CreateTrainingJob request of `plan`, without the SDK; templates stand in for what submit decides."""
    spec, c = plan.spec, plan.spec.compute
    name = job_name or job_name_template(spec.name)
    source = source_uri or source_uri_template(spec.output)
    hyperparameters = {**plan.hyperparameters, **sdk_hyperparameters(plan, name, source)}
    algorithm: dict[str, Any] = {"TrainingInputMode": _INPUT_MODE}
    if plan.image_uri:
        algorithm["TrainingImage"] = plan.image_uri
    algorithm["MetricDefinitions"] = [dict(m) for m in metric_definitions(plan.metrics)]
    resources: dict[str, Any] = {"InstanceType": plan.instance.name, "InstanceCount": plan.nodes,
                                 "VolumeSizeInGB": volume_size_gb(c)}
    if c.keep_alive:
        resources["KeepAlivePeriodInSeconds"] = c.keep_alive
    if c.volume_kms_key:
        resources["VolumeKmsKeyId"] = c.volume_kms_key
    if c.training_plan:
        resources["TrainingPlanArn"] = c.training_plan
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": c.max_run}
    request: dict[str, Any] = {
        "TrainingJobName": name,
        "RoleArn": spec.role,
        "AlgorithmSpecification": algorithm,
        # The SDK JSON-encodes every value (EstimatorBase._json_encode_hyperparameters).
        "HyperParameters": {str(k): json.dumps(v) for k, v in hyperparameters.items()},
        "ResourceConfig": resources,
        "StoppingCondition": stopping,
        "OutputDataConfig": {"S3OutputPath": spec.output.rstrip("/")},
    }
    if spec.output_kms_key:
        request["OutputDataConfig"]["KmsKeyId"] = spec.output_kms_key
    if c.max_retry_attempts is not None:
        request["RetryStrategy"] = {"MaximumRetryAttempts": c.max_retry_attempts}
    if c.spot:
        request["EnableManagedSpotTraining"] = True
        stopping["MaxWaitTimeInSeconds"] = max_wait_seconds(c)
    if spec.checkpoints:
        request["CheckpointConfig"] = {"S3Uri": spec.checkpoints, "LocalPath": CHECKPOINT_LOCAL_PATH}
    tensorboard = tensorboard_s3_path(spec)
    if tensorboard:
        request["TensorBoardOutputConfig"] = {"S3OutputPath": tensorboard, "LocalPath": TENSORBOARD_LOCAL_PATH}
    channels = [_channel(n, ch.uri, ch.mode, ch.distribution) for n, ch in spec.inputs.items()]
    if spec.network.isolation:
        channels.append(_channel(CODE_CHANNEL, source, None, None))
    if channels:
        request["InputDataConfig"] = channels
    if spec.network.subnets:
        request["VpcConfig"] = {"Subnets": list(spec.network.subnets),
                                "SecurityGroupIds": list(spec.network.security_groups)}
    if spec.network.isolation:
        request["EnableNetworkIsolation"] = True
    if spec.network.encrypt_inter_container_traffic:
        request["EnableInterContainerTrafficEncryption"] = True
    if plan.environment:
        request["Environment"] = dict(plan.environment)
    if spec.tags:
        request["Tags"] = [{"Key": k, "Value": str(v)} for k, v in spec.tags.items()]
    return with_capacity(request, instance_preferences(c), c.max_pending)
