"""The CreateTrainingJob request of a Plan and its bundle, rendered by smtrain's own code: what `submit
--dry-run` shows, what `submit` sends unchanged, and what a local run lays out under the container contract.

Every field follows what the SageMaker Python SDK v2's TensorFlow estimator sends for the same job (a test
renders every example spec through v2 as the oracle and compares field by field): the hyperparameters
JSON-encoded, with the sagemaker_* ones the SageMaker TensorFlow toolkit reads for the strategy; the image
(Plan.image_uri: smtrain's registry data); the environment (the spec's and smtrain's SMTRAIN_* variables:
Plan.environment), tags, resources, stopping condition, output, checkpoints, TensorBoard output, channels (with
the code channel under network isolation), VPC, role, the Enable* flags, the metric definitions and their time
series, retries, KMS keys, a training plan, the profiler turned off (with no Debugger hook: see README, "The
SageMaker SDK"). v2 cannot render compute.prefer's InstancePreferences or MaxPendingTimeInSeconds: smtrain
does.

preview_request() gives the same request before a bundle exists (validate, plan): the job name's time and
suffix and the bundle's sha256 are templates of the same length.
"""

from __future__ import annotations

import json
import posixpath
import re
from typing import Any

from smtrain.plan.build import Plan
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.plan.distribution import version_tuple
from smtrain.plan.job_places import (
    CHECKPOINT_LOCAL_PATH,
    TENSORBOARD_LOCAL_PATH,
    job_name_template,
    source_uri_template,
    tensorboard_s3_path,
)
from smtrain.spec.model import ComputeSpec, FileSystemSpec
from smtrain.spec.tracking import is_arn

OPERATION = "CreateTrainingJob"
# What the TensorFlow contract takes by default: log level logging.INFO, the input mode, and the model_dir of
# MPI jobs (the SDK's TensorFlow estimator sends the same: _default_s3_path).
_CONTAINER_LOG_LEVEL = 20
_INPUT_MODE = "File"
_MPI_MODEL_DIR = "/opt/ml/model"
# With network isolation the code goes in as an input channel of its own and the container is pointed there
# (the SDK's code_channel_name and CONTAINER_CODE_CHANNEL_SOURCEDIR_PATH).
CODE_CHANNEL = "code"
MODEL_CONTENT_TYPE = "application/x-sagemaker-model"  # model_uri's channel, as SDK v2 sends it
_CODE_CHANNEL_SOURCEDIR = "/opt/ml/input/data/code/sourcedir.tar.gz"
# SageMaker's metric time series, for TensorFlow 1.15 and later (as the SDK's TensorFlow estimator turns it on).
_METRICS_TIME_SERIES_FROM = (1, 15)


def volume_size_gb(compute: ComputeSpec) -> int:
    """VolumeSizeInGB: the spec's bytes in whole GB (10^9); the spec holds the size to at least 1GB."""
    return compute.volume_size // 10**9


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


def max_wait_seconds(compute: ComputeSpec) -> int | None:
    """MaxWaitTimeInSeconds: spot only; max_wait, else twice max_run."""
    return (compute.max_wait or 2 * compute.max_run) if compute.spot else None


def _join(*parts: str) -> str:
    """Parts joined by one slash, repeated slashes dropped, the scheme's kept (the SDK's s3_path_join); a place
    on this machine (a local run's output) joined as a path."""
    whole = "/".join(parts)
    if "://" not in whole:
        return posixpath.normpath(whole)
    scheme, _, rest = whole.partition("://")
    return f"{scheme}://{re.sub('/+', '/', rest).strip('/')}"


def _distribution_hyperparameters(distribution: dict[str, Any] | None, instance_type: str | None) -> dict[str, Any]:
    """What the SDK's Framework._distribution_configuration adds for each `distribution` dict smtrain makes."""
    d = distribution or {}
    out: dict[str, Any] = {}
    if "instance_groups" in d:
        out["sagemaker_distribution_instance_groups"] = list(d["instance_groups"])
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


def contract_hyperparameters(plan: Plan, job_name: str, source_uri: str, output: str) -> dict[str, Any]:
    """The sagemaker_* hyperparameters the SageMaker TensorFlow toolkit reads, and model_dir (values before JSON
    encoding): the program, its code, the log level, the job, the region, the strategy's switches."""
    added: dict[str, Any] = {
        "sagemaker_submit_directory": _CODE_CHANNEL_SOURCEDIR if plan.spec.network.isolation else source_uri,
        "sagemaker_program": plan.entry_point,
        "sagemaker_container_log_level": _CONTAINER_LOG_LEVEL,
        "sagemaker_job_name": job_name,
        "sagemaker_region": plan.region,
    }
    # A heterogeneous cluster has no one instance type: SDK v2 sends its instance_type, None, for smddp.
    added.update(_distribution_hyperparameters(plan.distribution,
                                               None if plan.instance_groups else plan.instance.name))
    mpi = bool(added.get("sagemaker_mpi_enabled"))
    added["model_dir"] = _MPI_MODEL_DIR if mpi else _join(output, job_name, "model")
    return added


def _file_system_channel(name: str, fs: FileSystemSpec) -> dict[str, Any]:
    """A mounted EFS or FSx for Lustre channel, as SDK v2's FileSystemInput renders it (no InputMode: File)."""
    return {"ChannelName": name, "DataSource": {"FileSystemDataSource": {
        "FileSystemId": fs.id, "FileSystemType": fs.type, "DirectoryPath": fs.directory,
        "FileSystemAccessMode": fs.access_mode}}}


def _channel(name: str, uri: str, mode: str | None, distribution: str | None,
             groups: tuple[str, ...] | None = None) -> dict[str, Any]:
    channel: dict[str, Any] = {"ChannelName": name, "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": uri, "S3DataDistributionType": distribution or "FullyReplicated"}}}
    if groups:
        channel["DataSource"]["S3DataSource"]["InstanceGroupNames"] = list(groups)
    if mode is not None:
        channel["InputMode"] = mode
    return channel


def render_training_request(plan: Plan, job_name: str, source_uri: str, *, output: str | None = None,
                            capacity: bool = True) -> dict[str, Any]:
    """The CreateTrainingJob request of `plan`: its job named `job_name`, its bundle at `source_uri`.

    output: where the job's output goes, when not the spec's (a local run's directory, as an absolute path).
    capacity=False: the first instance choice alone, without compute.prefer's list or MaxPendingTimeInSeconds
    (a local run is that choice).
    """
    spec, c = plan.spec, plan.spec.compute
    out = (output or spec.output).rstrip("/")
    hyperparameters = {**plan.hyperparameters, **contract_hyperparameters(plan, job_name, source_uri, out)}
    algorithm: dict[str, Any] = {"TrainingInputMode": _INPUT_MODE}
    if plan.image_uri:
        algorithm["TrainingImage"] = plan.image_uri
    algorithm["MetricDefinitions"] = [dict(m) for m in metric_definitions(plan.metrics)]
    if plan.framework_version and version_tuple(plan.framework_version) >= _METRICS_TIME_SERIES_FROM:
        algorithm["EnableSageMakerMetricsTimeSeries"] = True
    resources: dict[str, Any] = {"InstanceType": plan.instance.name, "InstanceCount": plan.nodes,
                                 "VolumeSizeInGB": volume_size_gb(c)}
    if c.keep_alive:
        resources["KeepAlivePeriodInSeconds"] = c.keep_alive
    if c.volume_kms_key:
        resources["VolumeKmsKeyId"] = c.volume_kms_key
    if c.training_plan:
        resources["TrainingPlanArn"] = c.training_plan
    if c.instance_groups:
        # The API takes the groups in place of InstanceType and InstanceCount, never beside them.
        del resources["InstanceType"], resources["InstanceCount"]
        resources["InstanceGroups"] = [{"InstanceGroupName": g.name, "InstanceType": g.instance_type,
                                        "InstanceCount": g.count} for g in c.instance_groups]
    preferences = instance_preferences(c) if capacity else None
    if preferences:
        # The API takes the fallback list in place of InstanceType and InstanceCount, never beside them.
        del resources["InstanceType"], resources["InstanceCount"]
        resources["InstancePreferences"] = preferences
    stopping: dict[str, Any] = {"MaxRuntimeInSeconds": c.max_run}
    request: dict[str, Any] = {
        "TrainingJobName": job_name,
        "RoleArn": spec.role,
        "AlgorithmSpecification": algorithm,
        # Every value JSON-encoded: the toolkit json.loads each one (and falls back to the raw text).
        "HyperParameters": {str(k): json.dumps(v) for k, v in hyperparameters.items()},
        "ResourceConfig": resources,
        "StoppingCondition": stopping,
        "OutputDataConfig": {"S3OutputPath": out},
    }
    if spec.output_kms_key:
        request["OutputDataConfig"]["KmsKeyId"] = spec.output_kms_key
    if not spec.output_compression:
        request["OutputDataConfig"]["CompressionType"] = "NONE"
    if c.max_retry_attempts is not None:
        request["RetryStrategy"] = {"MaximumRetryAttempts": c.max_retry_attempts}
    if c.spot:
        request["EnableManagedSpotTraining"] = True
        stopping["MaxWaitTimeInSeconds"] = max_wait_seconds(c)
    if capacity and c.max_pending is not None:
        stopping["MaxPendingTimeInSeconds"] = c.max_pending
    if spec.checkpoints:
        request["CheckpointConfig"] = {"S3Uri": spec.checkpoints,
                                       "LocalPath": spec.checkpoint_local_path or CHECKPOINT_LOCAL_PATH}
    tensorboard = tensorboard_s3_path(spec)
    if tensorboard:
        request["TensorBoardOutputConfig"] = {"S3OutputPath": tensorboard, "LocalPath": TENSORBOARD_LOCAL_PATH}
    channels = [_file_system_channel(n, ch.file_system) if ch.file_system is not None else
                _channel(n, str(ch.uri), ch.mode, ch.distribution, ch.instance_groups) for n, ch in spec.inputs.items()]
    if spec.model_uri is not None:
        # As SDK v2 adds model_uri's channel (sagemaker/job.py): after the inputs, files, the model content type.
        model = _channel(spec.model_channel, spec.model_uri, "File", None)
        model["ContentType"] = MODEL_CONTENT_TYPE
        channels.append(model)
    if spec.network.isolation:
        channels.append(_channel(CODE_CHANNEL, source_uri, None, None))
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
    # No Debugger hook, and the profiler off: left on, SageMaker adds a hook that saves tensors and a profiler
    # that collects system metrics to S3, extra writes in a loop smtrain instruments itself (README).
    request["ProfilerConfig"] = {"DisableProfiler": True}
    if spec.tags:
        request["Tags"] = [{"Key": k, "Value": str(v)} for k, v in spec.tags.items()]
    if c.remote_debug:
        request["RemoteDebugConfig"] = {"EnableRemoteDebug": True}
    if c.infra_check:
        request["InfraCheckConfig"] = {"EnableInfraCheck": True}
    if spec.session_tag_chaining:
        request["SessionChainingConfig"] = {"EnableSessionTagChaining": True}
    tracking = spec.tracking
    if is_arn(tracking.mlflow):
        # SageMaker-managed MLflow (a tracking URI reaches the job as MLflow's variables: Plan.environment).
        request["MlflowConfig"] = {"MlflowResourceArn": tracking.mlflow}
        if tracking.experiment:
            request["MlflowConfig"]["MlflowExperimentName"] = tracking.experiment
        if tracking.run:
            request["MlflowConfig"]["MlflowRunName"] = tracking.run
    if tracking.sagemaker_experiment:
        # As SDK v2's fit(experiment_config=...) sends it.
        experiment = tracking.sagemaker_experiment
        request["ExperimentConfig"] = {key: value for key, value in (
            ("ExperimentName", experiment.experiment), ("TrialName", experiment.trial),
            ("RunName", experiment.run)) if value}
    if spec.model_package:
        request["ModelPackageConfig"] = {"ModelPackageGroupArn": spec.model_package.group}
        if spec.model_package.source:
            request["ModelPackageConfig"]["SourceModelPackageArn"] = spec.model_package.source
    return request


def preview_request(plan: Plan, job_name: str | None = None, source_uri: str | None = None) -> dict[str, Any]:
    """The request of `plan` before its bundle exists: templates stand in for what submit decides."""
    return render_training_request(plan, job_name or job_name_template(plan.spec.name),
                                   source_uri or source_uri_template(plan.spec.output))
