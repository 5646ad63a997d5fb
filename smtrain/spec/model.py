"""The job spec: YAML file -> validated, typed Spec, or every problem with its file:line:column.

The pydantic models below are the user-facing contract; `smtrain schema` prints their JSON Schema.
"""

from __future__ import annotations

import copy
import difflib
import os
import re
import types
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, WithJsonSchema

from smtrain.aws import default_region
from smtrain.redact import mask_text, remember
from smtrain.spec import patterns
from smtrain.spec.capacity import capacity_problems
from smtrain.spec.fields import (
    AS_WRITTEN,
    LINE_CHARS,
    MAX_RUN_LIMIT,
    TAG_KEY_SCHEMA,
    DataUri,
    Flag,
    HyperValue,
    Line,
    ProcessesPerHost,
    S3Uri,
    S3UriOrOff,
    Size,
    TagValue,
    Text,
    checked,
    duration,
    is_line,
    mapping_key,
    real,
    tag_text,
    whole,
)
from smtrain.spec.instance_groups import instance_group_problems
from smtrain.spec.notebook import NotebookError, is_notebook, notebook_script
from smtrain.spec.problems import Path_, Problem, SpecError, brief
from smtrain.spec.spec_file import read_spec_text
from smtrain.spec.tracking import tracking_problems
from smtrain.spec.tuning import TuningSpec, tuning_problems
from smtrain.spec.units import format_duration
from smtrain.spec.yaml_source import MAX_VALUES, SourceMap, load_yaml

__all__ = ["MAX_RUN_LIMIT", "LoadedSpec", "Spec", "SpecReading", "apply_overrides", "json_schema", "load_spec",
           "read_spec"]

MAX_LEARNING_RATE = 1000.0

STRATEGIES = ("auto", "none", "mirrored", "multi_worker_mirrored", "parameter_server", "horovod", "smddp")

ChannelName = Annotated[str, mapping_key("a channel name", patterns.CHANNEL.matches,
                          "1-64 letters, digits, '.', '-' or '_', not . or ..", patterns.CHANNEL.json_schema())]
EnvName = Annotated[str, mapping_key("an environment variable name", patterns.ENV_NAME.matches,
                      "letters, digits and _, not starting with a digit", patterns.ENV_NAME.json_schema())]
TagKey = Annotated[str, mapping_key("a tag key",
                                     lambda k: 1 <= len(k) <= 128 and tag_text(k) and not k.lower().startswith("aws:"),
                     "1-128 letters, digits, spaces or _.:/=+-@, not starting with aws:", TAG_KEY_SCHEMA)]
# model_dir is the TensorFlow contract's own: every job's request sets it (an s3:// URI, or /opt/ml/model for MPI).
HyperName = Annotated[str, mapping_key("a hyperparameter name",
                        lambda k: bool(k) and not k.startswith("sagemaker_") and k != "model_dir" and is_line(k),
                        "one line, not starting with sagemaker_ and not model_dir (SageMaker's own names)",
                        {"type": "string", "minLength": 1,
                         "pattern": patterns.whole_text(f"(?!sagemaker_|model_dir$){LINE_CHARS}+")})]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TensorFlowSpec(_Model):
    # Unquoted, YAML reads 2.10 as a number: the loader takes the text as written, so may an editor.
    version: Annotated[str, checked("a version", patterns.TF_VERSION, 'such as "2.19"'), AS_WRITTEN,
                       WithJsonSchema({"anyOf": [patterns.TF_VERSION.json_schema(), {"type": "number"}]})] | None = Field(
        None, description="SageMaker TensorFlow training image version, e.g. \"2.21\"; default: the newest image "
        "AWS still patches (the docs' \"TensorFlow versions and images\")")
    python: Annotated[str, checked("a Python tag", patterns.PYTHON_TAG, "such as py310 or py312")] | None = Field(
        None, description="py310, py312, ...; inferred from version when omitted")
    keras: Literal[2, 3] | None = Field(
        None, description="the Keras the code runs on: 2 runs a script written for Keras 2 as written on a 2.16+ "
        "image (tf_keras under TF_USE_LEGACY_KERAS=1, tf-keras matched to the image's TensorFlow added to the "
        "job's requirements); default: the image's own (Keras 3 from TensorFlow 2.16, Keras 2 before)")
    image_uri: Annotated[str, checked("an image reference", patterns.IMAGE_URI,
                                      "write registry/repository[:tag][@sha256:digest], "
                       "such as 123456789012.dkr.ecr.us-east-1.amazonaws.com/my-image:1.0")] | None = Field(
        None, description="a training image URI to use instead of SageMaker's")


KmsKey = Annotated[str, checked("a KMS key", patterns.KMS_KEY, "a key id, key ARN, alias/NAME or alias ARN")]
TrainingPlan = Annotated[str, checked("a training plan ARN", patterns.TRAINING_PLAN,
                       "write arn:aws:sagemaker:REGION:ACCOUNT:training-plan/NAME")]


class PreferSpec(_Model):
    """One entry of compute.prefer: an instance type and how many of it (ResourceConfig.InstancePreferences)."""

    instance_type: Line = Field(description="an ml.* instance type of the catalog")
    count: Annotated[int, whole(1, 100)] = Field(1, description="instances of this type if it is the one that runs")
    training_plan: TrainingPlan | None = Field(
        None, description="a training plan reserving this type (the preference's TrainingPlanArns)")


InstanceGroupName = Annotated[str, checked("an instance group name", patterns.INSTANCE_GROUP, "1-64 characters on one line")]


class InstanceGroupSpec(_Model):
    """One group of a heterogeneous cluster (ResourceConfig.InstanceGroups): its name, type and count."""

    name: InstanceGroupName = Field(description="the group's name: SM_CURRENT_INSTANCE_GROUP on its hosts")
    instance_type: Line = Field(description="an ml.* instance type of the catalog")
    count: Annotated[int, whole(1, 100)] = Field(1, description="instances of this type")


class ComputeSpec(_Model):
    instance_type: Line = Field("auto", description='"auto" or an ml.* instance type')
    gpu: Line | None = Field(None, description="for auto: GPU model wanted (A100, H100, V100, T4, A10G, L4, L40S, ...)")
    gpus_per_node: Annotated[int, whole(1)] = Field(1, description="for auto: at least this many GPUs per node")
    min_gpu_memory: Size | None = Field(None, description="for auto: memory per GPU, e.g. 40GB")
    nodes: Annotated[int, whole(1, 100)] = Field(1, description="number of instances")
    volume_size: Size = Field("30GB", validate_default=True, description="EBS volume per instance")
    spot: Flag = Field(False, description="managed spot training")
    max_run: Annotated[int, duration(1, MAX_RUN_LIMIT)] = Field("1d", validate_default=True,
                                                                description="MaxRuntimeInSeconds")
    max_wait: Annotated[int, duration(1, MAX_RUN_LIMIT)] | None = Field(
        None, description="spot only: MaxWaitTimeInSeconds, >= max_run; default 2 x max_run")
    keep_alive: Annotated[int, duration()] = Field(0, description="warm-pool keep-alive period")
    allow_cpu: Flag = Field(False, description="let a job on a GPU instance run when TensorFlow sees no GPU "
                            "(by default it fails at once, naming the likely cause)")
    prefer: tuple[PreferSpec, ...] | None = Field(
        None, description="ordered fallback list of {instance_type, count}: SageMaker runs the first with "
        "capacity (InstancePreferences); instead of instance_type and nodes, not with spot")
    instance_groups: tuple[InstanceGroupSpec, ...] | None = Field(
        None, description="a heterogeneous cluster: up to 5 {name, instance_type, count} (ResourceConfig."
        "InstanceGroups), instead of instance_type and nodes; your own script runs on every host and reads "
        "SM_CURRENT_INSTANCE_GROUP (SDK v2's instance_groups)")
    training_plan: TrainingPlan | None = Field(None, description="ResourceConfig.TrainingPlanArn: reserved capacity")
    max_pending: Annotated[int, duration(1800, 2419200)] | None = Field(
        None, description="MaxPendingTimeInSeconds: how long the job may wait for capacity (30m to 28d)")
    max_retry_attempts: Annotated[int, whole(1, 30)] | None = Field(
        None, description="RetryStrategy.MaximumRetryAttempts: retries after an internal server error")
    volume_kms_key: KmsKey | None = Field(None, description="ResourceConfig.VolumeKmsKeyId: encrypts the EBS volume")
    infra_check: Flag = Field(False, description="InfraCheckConfig: SageMaker checks the instances' GPUs and "
                              "network before the job starts (SDK v2's enable_infra_check)")
    remote_debug: Flag = Field(False, description="RemoteDebugConfig: a shell on a running host through SSM, "
                               "`smtrain debug JOB` (SDK v2's enable_remote_debug)")


class ModelPackageSpec(_Model):
    """Where SageMaker registers the trained model (ModelPackageConfig)."""

    group: Annotated[str, checked("a model package group ARN", patterns.MODEL_PACKAGE_GROUP,
                   "write arn:aws:sagemaker:REGION:ACCOUNT:model-package-group/NAME")] = Field(
        description="the model package group the model is registered in (ModelPackageGroupArn)")
    source: Annotated[str, checked("a model package ARN", patterns.MODEL_PACKAGE,
                    "write arn:aws:sagemaker:REGION:ACCOUNT:model-package/NAME/VERSION")] | None = Field(
        None, description="the model package this one derives from (SourceModelPackageArn)")


ExperimentName = Annotated[str, checked("an experiment entity name", patterns.EXPERIMENT_ENTITY,
                         "1-120 letters, digits and inner hyphens")]
MlflowName = Annotated[str, checked("an MLflow name", patterns.MLFLOW_NAME, "1-256 characters on one line")]


class SageMakerExperimentSpec(_Model):
    """SageMaker Experiments (ExperimentConfig): where the job's trial component is filed."""

    experiment: ExperimentName = Field(description="an existing experiment (ExperimentName)")
    trial: ExperimentName | None = Field(None, description="an existing trial of it (TrialName); default: SageMaker "
                                         "makes one")
    run: ExperimentName | None = Field(None, description="the run's name (RunName)")


class TrackingSpec(_Model):
    """Where the job's runs are tracked: MLflow (SageMaker-managed or any server), SageMaker Experiments."""

    mlflow: Line | None = Field(
        None, description="a SageMaker MLflow tracking server's or app's ARN (MlflowConfig), or a tracking URI "
        "(http(s)://, file:, databricks); the job gets it as MLFLOW_TRACKING_URI and its chief logs one run")
    experiment: MlflowName | None = Field(
        None, description="the MLflow experiment (MlflowExperimentName; MLFLOW_EXPERIMENT_NAME for a URI)")
    run: MlflowName | None = Field(None, description="the MLflow run's name (MlflowRunName for an ARN); default: "
                                   "the job's name")
    sagemaker_experiment: SageMakerExperimentSpec | None = Field(
        None, description="{experiment, trial, run}: SageMaker Experiments (ExperimentConfig; SDK v2's "
        "fit(experiment_config=...))")


class DistributionSpec(_Model):
    strategy: Literal[STRATEGIES] = Field(  # type: ignore[valid-type]
        "auto", description="auto (none for one GPU, mirrored for one node, multi_worker_mirrored for several), "
        "none, mirrored, multi_worker_mirrored, parameter_server, horovod or smddp")
    processes_per_host: ProcessesPerHost = Field("auto", description="horovod/smddp: default = GPUs per node")
    mpi_options: Line = Field("", description="extra mpirun options (horovod/smddp)")
    instance_groups: tuple[InstanceGroupName, ...] | None = Field(
        None, description="horovod/smddp on a heterogeneous cluster: the one group of compute.instance_groups "
        "mpirun spans (SDK v2's distribution instance_groups); the other groups run the script once per host")


class TrainingSpec(_Model):
    """Hyperparameters of the bundled entrypoint (entrypoints/README.md documents each)."""

    model: Line = Field("mlp", description="mlp, cnn, resnet50, or module:function in your source_dir")
    epochs: Annotated[int, whole(1)] = Field(10, description="passes over the training data")
    batch_size_per_replica: Annotated[int, whole(1)] = Field(64, description="examples per replica per step; the global "
                                                             "batch is "
                                             "this x replicas")
    # Bounded so the scaled rate (x replicas) stays finite; a larger base rate is a typo.
    learning_rate: Annotated[float, real(above=0, maximum=MAX_LEARNING_RATE)] = Field(
        0.001, description="for one replica; scaled by lr_scaling")
    lr_scaling: Literal["none", "linear", "sqrt"] = Field(
        "linear", description="how learning_rate grows with the replicas: none, linear (x replicas) or sqrt "
        "(x sqrt(replicas)); a wrapped script: none unless set")
    warmup_epochs: Annotated[float, real(minimum=0)] = Field(
        0.0, description="linear warm-up to the full rate over this many epochs")
    optimizer: Literal["adam", "sgd"] = Field("adam", description="the bundled entrypoint's optimizer")
    mixed_precision: Literal["auto", "on", "off"] = Field(
        "auto", description="auto: on when every GPU has compute capability >= 7.0, off on CPU; on; off")
    xla: Flag = Field(False, description="jit-compile the forward pass and its gradient")
    steps_per_execution: Annotated[int, whole(1)] | None = Field(None, description="training steps per tf.function call "
                                                 "(the entrypoint's default: 20)")
    checkpoint_every_steps: Annotated[int, whole(0)] | None = Field(None, description="also checkpoint every N steps "
                                                                    "(0 or unset: "
                                                    "at epoch ends only)")
    data: Annotated[str, checked("a data source", patterns.DATA_SOURCE,
                                 "write channels, synthetic, or module:function (a data "
                  "hook in code.source_dir returning tf.data datasets)")] = Field(
        "channels", description="channels, synthetic, or module:function in your source_dir returning unbatched "
        "tf.data datasets of (features, labels)")
    data_format: Literal["auto", "npz", "tfrecord", "csv"] = Field(
        "auto", description="how channel files are read: auto (by file extension), npz, tfrecord or csv")
    seed: Annotated[int, whole(0)] | None = Field(None, description="random seed of initial weights and shuffling "
                                  "(the entrypoint's default: 42)")
    gradient_accumulation_steps: Annotated[int, whole(1)] | None = Field(
        None, description="average the gradients of N micro-batches per optimizer step: effective batch = "
        "batch_size_per_replica x replicas x N (own scripts: smtrain_tf.fit and wrapped scripts)")


class FileSystemSpec(_Model):
    """An EFS or FSx for Lustre file system SageMaker mounts as a channel (FileSystemDataSource)."""

    id: Annotated[str, checked("a file system id", patterns.FILE_SYSTEM_ID, "such as fs-0123456789abcdef0")] = Field(
        description="the file system's id")
    type: Literal["EFS", "FSxLustre"] = Field(description="EFS or FSxLustre")
    directory: Annotated[str, checked("a directory path", patterns.ABSOLUTE_PATH, "an absolute path in the file system, "
                       "such as /fsx/data (FSx for Lustre: /MOUNTNAME/...)")] = Field(
        description="the directory in the file system that the channel holds")
    access_mode: Literal["ro", "rw"] = Field("ro", description="ro (default) or rw")


class ChannelSpec(_Model):
    uri: DataUri | None = Field(None, description="the data: s3://, or a place here for --local")
    file_system: FileSystemSpec | None = Field(
        None, description="instead of uri: an EFS or FSx for Lustre file system (SDK v2's FileSystemInput); "
        "needs network.subnets and security_groups")
    mode: Literal["File", "FastFile", "Pipe"] | None = Field(None, description="SageMaker's input mode for this "
                                                             "channel (TrainingInputMode); default File")
    distribution: Literal["FullyReplicated", "ShardedByS3Key"] | None = Field(
        None, description="S3DataDistributionType: every host gets all objects (FullyReplicated, the default) "
        "or a share of them (ShardedByS3Key)")
    instance_groups: tuple[InstanceGroupName, ...] | None = Field(
        None, description="with compute.instance_groups: the groups whose hosts get this channel "
        "(S3DataSource.InstanceGroupNames); default: every host")


class GitSpec(_Model):
    """Code from a git repository, cloned here first and bundled as a source_dir (smtrain.plan.git_source)."""

    repository: Line = Field(description="a git URL (https://, ssh://, git@host:path, file://) or a local path "
                             "relative to this file")
    branch: Annotated[str, checked("a branch name", patterns.GIT_BRANCH, "a git branch name, such as main")] | None = Field(
        None, description="the branch to take (its newest commit, resolved once per run); default: the "
                          "repository's default branch")
    # Unquoted, YAML reads 1234567 as a number: the loader takes the text as written.
    commit: Annotated[str, checked("a commit", patterns.GIT_COMMIT, "7 to 40 hex digits"), AS_WRITTEN,
                      WithJsonSchema({"anyOf": [patterns.GIT_COMMIT.json_schema(), {"type": "integer"}]})] | None = Field(
        None, description="the exact commit (7-40 hex digits) instead of a branch")
    directory: Line | None = Field(None, description="the code's directory inside the repository; default: its root")


class CodeSpec(_Model):
    source_dir: Line | None = Field(None, description="your code, relative to this file")
    git: GitSpec | None = Field(None, description="your code from a git repository, instead of source_dir")
    entry_point: Line | None = Field(None, description="a script in source_dir (or code.git's directory); "
                                     "default: the bundled entrypoint")
    wrap: Flag = Field(False, description="run entry_point unchanged inside the strategy smtrain picks "
                       "(Mirrored, MultiWorkerMirrored); its model.fit is Keras's own, mended where Keras 3 fails there")
    wrap_batch: Literal["per_replica", "global"] = Field(
        "per_replica", description="with wrap: per_replica multiplies the script's batch_size by the replicas "
        "(each GPU does the work it did alone); global keeps it as written")
    wrap_tuning: Flag = Field(True, description="with wrap: Keras's fit runs several steps per tf.function call "
                              "(steps_per_execution; the same steps and weights, at a hand-written loop's speed); "
                              "false leaves fit as the script compiled it")
    requirements: Line | None = Field(None, description="requirements file, relative to source_dir")
    dependencies: tuple[Line, ...] = Field((), description="more directories of code, relative to this file, each "
                                           "shipped at the bundle's root under its own name, importable by the "
                                           "job's code (SDK v2's dependencies)")
    use_gitignore: Flag = Field(True, description="leave out what .gitignore ignores")
    allow_secrets: tuple[Line, ...] = Field((), description="gitignore-style patterns of secret-looking files to allow")
    max_bundle_size: Size = Field("100MB", validate_default=True, description="largest sourcedir.tar.gz accepted")


class NetworkSpec(_Model):
    subnets: tuple[Annotated[str, checked("a subnet id", patterns.SUBNET, "such as subnet-0abc1234")], ...] = Field(
        (), description="VpcConfig.Subnets: the job runs in your VPC")
    security_groups: tuple[Annotated[str, checked("a security group id", patterns.SECURITY_GROUP,
                                                  "such as sg-0abc1234")], ...] = Field(
        (), description="VpcConfig.SecurityGroupIds, with subnets")
    isolation: Flag = Field(False, description="EnableNetworkIsolation: the container gets no network")
    encrypt_inter_container_traffic: Flag = Field(False, description="EnableInterContainerTrafficEncryption: "
                                                  "traffic between the hosts is encrypted")


class Spec(_Model):
    """A training job."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="smtrain job spec")

    name: Annotated[str, checked("a job name prefix", patterns.NAME,
                                 "up to 42 letters, digits and hyphens (the job name adds 21 "
                  "characters within SageMaker's 63), starting and ending with a letter or digit")] = Field(
        description="the job name's prefix: smtrain adds a timestamp")
    role: Annotated[str, checked("an IAM role ARN", patterns.ROLE,
                                 "write the full ARN, arn:aws:iam::123456789012:role/NAME")] = Field(
        description="the IAM role SageMaker runs the job as (its full ARN)")
    region: Annotated[str, checked("an AWS region", patterns.REGION, "such as us-east-1")] | None = Field(
        None, description="default: AWS_REGION, AWS_DEFAULT_REGION or ~/.aws/config")
    tensorflow: TensorFlowSpec = Field(default_factory=TensorFlowSpec, description="the TensorFlow training image")
    compute: ComputeSpec = Field(default_factory=ComputeSpec, description="instances, nodes, spot, time limits")
    distribution: DistributionSpec = Field(default_factory=DistributionSpec, description="the distribution strategy")
    training: TrainingSpec = Field(default_factory=TrainingSpec, description="the bundled entrypoint's "
                                   "hyperparameters")
    code: CodeSpec = Field(default_factory=CodeSpec, description="your code, bundled next to the entrypoint")
    inputs: dict[ChannelName, ChannelSpec] = Field(default_factory=dict, description="channel name -> URI or {uri, mode}")
    output: DataUri = Field(description="where model, output and code go (s3://, or local for --local)")
    output_kms_key: KmsKey | None = Field(None, description="OutputDataConfig.KmsKeyId: encrypts the model "
                                          "and output archives SageMaker writes to output")
    model_uri: DataUri | None = Field(None, description="a model to start from (incremental training): the job "
                                      "gets it in the channel model_channel, SM_CHANNEL_MODEL (SDK v2's model_uri); "
                                      "s3://, or a place here for --local")
    model_channel: ChannelName = Field("model", description="the channel of model_uri (SDK v2's model_channel_name)")
    output_compression: Flag = Field(True, description="false: SageMaker uploads the model and output files "
                                     "uncompressed, not as model.tar.gz (OutputDataConfig.CompressionType NONE; "
                                     "SDK v2's disable_output_compression)")
    model_package: ModelPackageSpec | None = Field(None, description="register the trained model in the model "
                                                   "registry (ModelPackageConfig)")
    session_tag_chaining: Flag = Field(False, description="SessionChainingConfig: the role's session tags pass on "
                                       "to the sessions the job opens (SDK v2's enable_session_tag_chaining)")
    checkpoints: S3Uri | None = Field(None, description="checkpoint S3 URI; required when compute.spot is true")
    checkpoint_local_path: Annotated[str, checked("an absolute path", patterns.ABSOLUTE_PATH,
                                                  "a directory in the container, such "
                                   "as /opt/ml/checkpoints")] | None = Field(
        None, description="with checkpoints: the container's directory SageMaker syncs with it (CheckpointConfig."
        "LocalPath; SDK v2's checkpoint_local_path); default /opt/ml/checkpoints")
    tensorboard: S3UriOrOff | None = Field(
        None, description="where SageMaker keeps the job's TensorBoard event files (an S3 URI: its "
        "TensorBoardOutputConfig; they land under <uri>/<job>/tensorboard-output/), or false for none; default "
        "<output>/tensorboard when output is s3://")
    metrics: tuple[Annotated[str, checked("a metric name", patterns.METRIC_NAME, "letters, digits and _, as the metric line "
                           "names it (mae, val_ is added for validation)")], ...] = Field(
        (), description="metrics your model reports beyond loss and accuracy (e.g. mae), for the job's "
        "MetricDefinitions; those compiled in a model hook or script with literal names are found without it")
    hyperparameters: dict[HyperName, HyperValue] = Field(default_factory=dict, description="passed through as they are")
    environment: dict[EnvName, Text] = Field(default_factory=dict, description="the container's environment "
                                             "(secret-looking values are masked in output)")
    tags: dict[TagKey, TagValue] = Field(default_factory=dict, description="the job's AWS tags")
    network: NetworkSpec = Field(default_factory=NetworkSpec, description="VPC, isolation and encryption")
    tracking: TrackingSpec = Field(default_factory=TrackingSpec, description="MLflow and SageMaker Experiments")
    tuning: TuningSpec | None = Field(None, description="a hyperparameter tuning job over this job (smtrain tune)")


@dataclass(frozen=True)
class LoadedSpec:
    """A valid spec with what it was read from: positions for later messages, the base for relative paths."""

    spec: Spec
    source: SourceMap
    base_dir: Path

    @property
    def region(self) -> str | None:
        """The spec's region, else the default one (AWS_REGION, AWS_DEFAULT_REGION, ~/.aws/config); None: none."""
        return self.spec.region or default_region()

    def path(self, relative: str) -> Path:
        """A path the spec names, relative to the spec file's directory, made absolute."""
        return (self.base_dir / relative).resolve()

    def problem(self, path: Path_, message: str) -> Problem:
        """A Problem at a field of this spec, with the file, line and column it was written at."""
        return Problem(path, message, self.source.locate(path))

    def __repr__(self) -> str:  # short, and masked: a notebook shows it
        return mask_text(f"<LoadedSpec {self.spec.name} from {self.source.source}>")


def _normalise(data: dict[str, Any]) -> None:
    """Shorthands the schema allows: `train: s3://...` for a channel; version numbers left unquoted."""
    inputs = data.get("inputs")
    if isinstance(inputs, dict):
        for name, value in inputs.items():
            if isinstance(value, str):
                inputs[name] = {"uri": value}


def _wants_text(annotation: Any) -> bool:
    """Whether YAML's typing would surprise in this field: a choice of words (`on`, `off`), or a
    field marked AS_WRITTEN (a version, an environment value). Other text fields keep YAML's type,
    as an editor reading the file sees it (`name: 123` is a number there, and refused)."""
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return AS_WRITTEN in args[1:] or _wants_text(args[0])
    if origin in (Union, types.UnionType):
        return all(_wants_text(a) for a in args if a is not type(None))
    if origin is Literal:
        return all(isinstance(a, str) for a in args)
    return False


def _as_written(annotation: Any, value: Any, path: Path_, smap: SourceMap) -> Any:
    """YAML reads `version: 2.10` as the float 2.1 and `mixed_precision: on` as true: in such fields
    take the text as written instead."""
    origin, args = get_origin(annotation), get_args(annotation)
    model, keyed = _submodel(annotation)
    if model is not None:
        if not keyed:
            members = [(path, value)]
        else:
            members = [(path + (k,), v) for k, v in value.items()] if isinstance(value, dict) else []
        for where, item in members:
            if isinstance(item, dict):
                for name, field in model.model_fields.items():
                    if name in item:
                        item[name] = _as_written(field.annotation, item[name], where + (name,), smap)
        return value
    if origin is dict and isinstance(value, dict) and len(args) == 2:
        return {k: _as_written(args[1], v, path + (k,), smap) for k, v in value.items()}
    if origin is tuple and isinstance(value, list) and args:
        return [_as_written(args[0], v, path + (i,), smap) for i, v in enumerate(value)]
    if isinstance(value, (bool, int, float)) and path in smap.raw and _wants_text(annotation):
        return smap.raw[path]
    return value


def _submodel(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds, and whether it sits behind a mapping key (dict[str, Model])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    args = getattr(annotation, "__args__", ())
    if getattr(annotation, "__origin__", None) is dict and len(args) == 2:
        inner, _ = _submodel(args[1])
        return inner, True
    if getattr(annotation, "__origin__", None) is tuple and len(args) == 2 and args[1] is Ellipsis:
        # A list of models (compute.prefer): an index leads to each one, as a key does in a mapping.
        inner, _ = _submodel(args[0])
        return inner, True
    if isinstance(annotation, types.UnionType) and type(None) in args and len(args) == 2:
        # An optional section (`tuning: TuningSpec | None`) holds its model like a required one.
        return _submodel(next(a for a in args if a is not type(None)))
    return None, False


def _fields_for(loc: tuple[str | int, ...]) -> list[str]:
    """Field names of the model that a pydantic error location points into."""
    model: type[BaseModel] | None = Spec
    parts = list(loc)
    while parts and model is not None:
        field = model.model_fields.get(parts.pop(0)) if isinstance(parts[0], str) else None
        if field is None:
            return []
        model, keyed = _submodel(field.annotation)
        if keyed:
            if not parts:
                return []
            parts.pop(0)
    return list(model.model_fields) if model is not None else []


def _problems_from(error: ValidationError, smap: SourceMap) -> list[Problem]:
    problems = []
    for err in error.errors(include_url=False):
        loc = tuple(part for part in err["loc"] if part != "[key]")  # a mapping key's own error
        kind = err["type"]
        if kind == "extra_forbidden":
            known = _fields_for(loc[:-1])
            close = difflib.get_close_matches(str(loc[-1]), known, n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else (
                f" (known fields: {', '.join(known)})" if known else "")
            if loc[:1] == ("training",) and len(loc) == 2:
                # training: holds the fields smtrain itself reads; everything else goes to the entry
                # point as it is, from hyperparameters:.
                hint += "; a setting for the entry point goes under hyperparameters: instead"
            problems.append(Problem(loc, f"unknown field {brief(str(loc[-1]))}{hint}", smap.locate(loc, at_key=True)))
        elif kind == "missing":
            problems.append(Problem(loc, "required field is missing", smap.locate(loc[:-1])))
        else:
            message = re.sub(r"^(Value error|Assertion failed), ", "", err["msg"])
            if kind in ("literal_error", "enum"):
                message = f"{message}, got {err.get('input')!r}"
            problems.append(Problem(loc, message, smap.locate(loc, at_key="[key]" in err["loc"])))
    return problems


def _check(loaded: LoadedSpec) -> list[Problem]:
    """Rules that tie several fields together; the plan checks the ones that need the catalog."""
    spec, out = loaded.spec, []
    c = spec.compute
    # Neither tensorflow.version nor image_uri: the plan picks the newest image AWS still patches.
    if c.spot and spec.checkpoints is None:
        out.append(loaded.problem(("compute", "spot"), "spot training needs `checkpoints: s3://...` so that an "
                                  "interrupted job resumes instead of starting over"))
    if spec.checkpoint_local_path is not None and spec.checkpoints is None:
        out.append(loaded.problem(("checkpoint_local_path",), "checkpoint_local_path is the directory SageMaker syncs "
                                  "with `checkpoints`: set checkpoints: s3://... too (or remove it)"))
    if c.max_wait is not None and not c.spot:
        out.append(loaded.problem(("compute", "max_wait"), "max_wait applies only to spot training: "
                                  "set compute.spot: true or remove max_wait"))
    if c.spot and c.max_wait is None and 2 * c.max_run > MAX_RUN_LIMIT:
        out.append(loaded.problem(("compute", "max_run"), f"spot training waits 2 x max_run by default "
                                  f"({format_duration(2 * c.max_run)}), over SageMaker's limit of 28 days: set "
                                  "compute.max_wait (from max_run up to 28d)"))
    if c.spot and c.max_wait is not None and c.max_wait < c.max_run:
        out.append(loaded.problem(("compute", "max_wait"), f"max_wait ({c.max_wait}s) must be at least "
                                  f"max_run ({c.max_run}s): it includes the time spent waiting for spot capacity"))
    if c.volume_size < 10**9:
        out.append(loaded.problem(("compute", "volume_size"), "a training volume needs at least 1GB"))
    if bool(spec.network.subnets) != bool(spec.network.security_groups):
        out.append(loaded.problem(("network",), "give both subnets and security_groups (a VPC needs both), "
                                  "or neither"))
    out += _channel_problems(loaded)
    code = spec.code
    if code.entry_point is None:
        # Only the bundled entrypoint reads training:; an own script takes any name (epochs included).
        clash = sorted(set(spec.hyperparameters) & set(TrainingSpec.model_fields))
        for key in clash:
            out.append(loaded.problem(("hyperparameters", key), f"'{key}' is a training field: set training.{key}"))
    out += _wrap_problems(loaded)
    out += capacity_problems(spec.compute, loaded.problem)
    out += instance_group_problems(spec, loaded.problem)
    out += tracking_problems(spec, loaded.problem)
    out += tuning_problems(loaded)
    if code.source_dir is not None:
        src = loaded.path(code.source_dir)
        if not src.is_dir():
            out.append(loaded.problem(("code", "source_dir"), f"directory not found: {code.source_dir}"))
        else:
            out += code_file_problems(loaded, src, "source_dir")
    elif code.git is None and (code.entry_point or code.requirements):
        field = "entry_point" if code.entry_point else "requirements"
        out.append(loaded.problem(("code", field), "needs code.source_dir (or code.git)"))
    out += _git_problems(loaded)
    no_code = code.source_dir is None and code.git is None
    if "/" not in spec.training.model and ":" in spec.training.model and no_code:
        out.append(loaded.problem(("training", "model"), "a module:function model lives in your code: "
                                  "set code.source_dir (or code.git)"))
    if ":" in spec.training.data and no_code:
        out.append(loaded.problem(("training", "data"), "a module:function data hook lives in your code: "
                                  "set code.source_dir (or code.git)"))
    return out


def _channel_problems(loaded: LoadedSpec) -> list[Problem]:
    """A channel is a uri or a file system; a file system is mounted (File mode, whole) inside the job's VPC;
    model_uri's channel is a channel of its own."""
    spec, out = loaded.spec, []
    if spec.model_uri is not None and spec.model_channel in spec.inputs:
        out.append(loaded.problem(("model_channel",), f"inputs has a channel named {spec.model_channel} too: name "
                                  "model_uri's channel otherwise (model_channel) or rename the input"))
    for name, channel in spec.inputs.items():
        if (channel.uri is None) == (channel.file_system is None):
            out.append(loaded.problem(("inputs", name), "give the channel a uri or a file_system (one of them)"))
        elif channel.file_system is not None:
            if channel.mode not in (None, "File"):
                out.append(loaded.problem(("inputs", name, "mode"), f"a file system channel is mounted in the "
                                          f"container: File mode only, not {channel.mode}"))
            if channel.distribution is not None:
                out.append(loaded.problem(("inputs", name, "distribution"), "a file system channel is mounted "
                                          "whole on every host: distribution is for s3:// channels"))
            if not spec.network.subnets:
                out.append(loaded.problem(("inputs", name, "file_system"), "SageMaker mounts a file system inside "
                                          "the job's VPC: set network.subnets and network.security_groups (the "
                                          "file system's)"))
    return out


def code_file_problems(loaded: LoadedSpec, src: Path, where: str) -> list[Problem]:
    """code.entry_point and code.requirements must be files in the code directory `src` (named `where`)."""
    code, out = loaded.spec.code, []
    if code.entry_point and not _within(src, code.entry_point):
        # SageMaker runs the entry point from the unpacked bundle: it is one of the code directory's files.
        out.append(loaded.problem(("code", "entry_point"), f"{code.entry_point} is not inside {where}: the entry "
                                  f"point is a file of the code directory, named relative to it (a link to "
                                  "outside it does not count)"))
    elif code.entry_point and not (src / code.entry_point).is_file():
        out.append(loaded.problem(("code", "entry_point"), f"{code.entry_point} not found in {where}"))
    elif code.entry_point and is_notebook(code.entry_point):
        # The job runs the script made from the notebook: what cannot become one is the spec's problem, at
        # the notebook's cell and line (smtrain.spec.notebook).
        try:
            notebook_script(src / code.entry_point, code.entry_point)
        except NotebookError as exc:
            out += [loaded.problem(("code", "entry_point"), message) for message in exc.messages()]
    if code.requirements and not (src / code.requirements).is_file():
        out.append(loaded.problem(("code", "requirements"), f"{code.requirements} not found in {where}"))
    return out


def _within(root: Path, name: str) -> bool:
    """Whether `name` (relative to `root`) is a path inside `root`, after links: not absolute, no `..` out."""
    if os.path.isabs(name):
        return False
    real_root = os.path.realpath(root)
    real = os.path.realpath(root / name)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def _git_problems(loaded: LoadedSpec) -> list[Problem]:
    """code.git's own rules; what needs the repository is checked when the plan clones it."""
    code = loaded.spec.code
    git, out = code.git, []
    if git is None:
        return out
    if code.source_dir is not None:
        out.append(loaded.problem(("code", "git"), "give code.source_dir or code.git, not both"))
    if git.branch is not None and git.commit is not None:
        out.append(loaded.problem(("code", "git", "commit"), "give code.git.branch or code.git.commit, not both "
                                  "(a commit is exact; a branch is resolved to its newest commit)"))
    if git.directory is not None:
        parts = Path(git.directory).parts
        if Path(git.directory).is_absolute() or ".." in parts or "\\" in git.directory:
            out.append(loaded.problem(("code", "git", "directory"), "write a directory inside the repository, "
                                      "relative to its root, such as training/src"))
    return out


# Strategies whose script must be written for them (Horovod's optimizer, smddp's, a coordinator):
# no wrap can supply that.
NOT_WRAPPABLE = ("horovod", "smddp", "parameter_server")


def _wrap_problems(loaded: LoadedSpec) -> list[Problem]:
    spec, out = loaded.spec, []
    code = spec.code
    if code.wrap and code.entry_point is None:
        out.append(loaded.problem(("code", "wrap"), "wrap runs your own script unchanged: set code.entry_point "
                                  "(a script in code.source_dir)"))
    for name in ("wrap_batch", "wrap_tuning"):
        if name in code.model_fields_set and not code.wrap:
            out.append(loaded.problem(("code", name), f"{name} applies only to a wrapped script: "
                                      f"set code.wrap: true or remove {name}"))
    strategy = spec.distribution.strategy
    if code.wrap and strategy in NOT_WRAPPABLE:
        out.append(loaded.problem(("distribution", "strategy"), f"a wrapped script cannot run under {strategy}: "
                                  "it needs code changes; use smtrain_tf.fit (see the docs' \"Your own script\") "
                                  "or multi_worker_mirrored/mirrored"))
    return out


def _set_path(data: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = data
    for part in path[:-1]:
        child = node.get(part)
        if not isinstance(child, dict):
            child = node[part] = {}
        node = child
    node[path[-1]] = value


def _override_value(text: str) -> Any:
    """--set values stay text for scalar fields (the schema types them); YAML for lists and mappings."""
    stripped = text.strip()
    if stripped in ("null", "~"):
        return None
    if stripped[:1] in ("[", "{"):
        try:
            return yaml.safe_load(stripped)
        except yaml.YAMLError:
            return text
    return text


# An override: `--set`'s text "FIELD=VALUE", or (the Python API's) a field and its value as Python gives it.
Override = str | tuple[str, Any]


def apply_overrides(data: dict[str, Any], smap: SourceMap, overrides: Sequence[Override]) -> list[Problem]:
    problems = []
    for item in overrides:
        # Where a problem says the value came from: quoted short (a 10 KB value is not echoed whole).
        if isinstance(item, str):
            key, sep, text = item.partition("=")
            value, shown = _override_value(text), f"--set {_short(key, 80)}={_short(text, 80)}"
        else:  # a value given as it is: a string stays a string ("null" too), a list a list
            key, value = item
            sep, shown = "=", f"overrides[{brief(key, 80)}] = {brief(value, 80)}"
            value = plain(value)
        path = tuple(p for p in key.strip().split("."))
        if not sep or not all(path):
            problems.append(Problem((), f"--set {brief(item, 80)}: write FIELD.PATH=VALUE, such as compute.nodes=4"
                                    if isinstance(item, str) else f"{shown}: name a field by its dotted path, such "
                                    "as compute.nodes"))
            continue
        if path[0] == "inputs" and len(path) == 2:
            _set_path(data, path, {"uri": value} if isinstance(value, str) else value)
        else:
            _set_path(data, path, value)
        smap.overridden[path] = shown
    return problems


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[: limit - 5]}...{text[-2:]}"


def plain(value: Any) -> Any:
    """A Python value as YAML would have read it: mappings as dicts, tuples as lists, paths as text."""
    if isinstance(value, Mapping):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def _remember_secrets(data: object) -> None:
    """Register the secret-looking environment and hyperparameter values with smtrain.redact before
    anything can fail: every later message, problem or traceback then masks them."""
    for section in ("environment", "hyperparameters"):
        remember(data.get(section) if isinstance(data, dict) else None)


def _read_data(file: Path, overrides: Sequence[Override], env: Mapping[str, str] | None
               ) -> tuple[Any, SourceMap, list[Problem]]:
    return _read_text(read_spec_text(file), str(file), overrides, env)


def _read_text(text: str, source: str, overrides: Sequence[Override], env: Mapping[str, str] | None,
               *, positions: bool = True) -> tuple[Any, SourceMap, list[Problem]]:
    data, smap, problems = load_yaml(text, source, os.environ if env is None else env, positions=positions)
    _remember_secrets(data)
    set_problems = apply_overrides(data, smap, overrides)
    _remember_secrets(data)
    # A value set on the command line replaces the file's, and with it the file's problem there.
    problems = [p for p in problems if not any(p.path[: len(s)] == s for s in smap.overridden)] + set_problems
    _normalise(data)
    data = _as_written(Spec, data, (), smap)
    return data, smap, problems + _surprising_numbers(data, smap)


def _surprising_numbers(data: Any, smap: SourceMap) -> list[Problem]:
    """A number YAML 1.1 read as another than a person would, where a field takes it as a number (a field
    taken as written got the text back, which is what the person wrote)."""
    found = []
    for path, message in smap.surprises.items():
        value: Any = data
        for key in path:
            value = value.get(key) if isinstance(value, dict) else (
                value[key] if isinstance(value, list) and isinstance(key, int) and key < len(value) else None)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and path not in smap.overridden:
            found.append(Problem(path, message, smap.locate(path)))
            smap.unreadable.add(path)
    return found


def load_spec(path: str | os.PathLike[str], overrides: Sequence[Override] = (),
              env: Mapping[str, str] | None = None) -> LoadedSpec:
    """Read, interpolate, override and validate a job spec; raise SpecError listing every problem."""
    file = Path(path)
    data, smap, problems = _read_data(file, overrides, env)
    return _validated(data, smap, problems, file.resolve().parent)


def _validated(data: Any, smap: SourceMap, problems: list[Problem], base_dir: Path) -> LoadedSpec:
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(problems + [p for p in _problems_from(exc, smap) if not smap.explained(p.path)]) from None
    loaded = LoadedSpec(spec, smap, base_dir)
    problems += _check(loaded)
    if problems:
        raise SpecError(problems)
    return loaded


def load_spec_data(data: Mapping[str, Any], base_dir: Path, overrides: Sequence[Override] = (),
                   env: Mapping[str, str] | None = None) -> LoadedSpec:
    """load_spec for a spec given as a mapping (the Python API): the same reading (${VAR}, units, values typed
    as the schema says), relative paths from `base_dir`, problems named by field path (no file, no line)."""
    if _more_values_than(data, MAX_VALUES):  # before it is written out as YAML, which a huge mapping makes slow
        raise SpecError([Problem((), f"the spec holds more than {MAX_VALUES} values: a job spec has about 100")])
    try:
        text = yaml.safe_dump(plain(data), sort_keys=False, allow_unicode=True)
    except yaml.YAMLError as exc:
        raise SpecError([Problem((), f"the spec holds a value YAML cannot write: {exc}")]) from None
    data_, smap, problems = _read_text(text, "<dict>", overrides, env, positions=False)
    return _validated(data_, smap, problems, Path(base_dir).resolve())


def _more_values_than(data: Any, limit: int) -> bool:
    """Whether `data` holds more than `limit` values (mappings' keys and values, lists' items), counted as the
    YAML reader counts its nodes, without walking further than the limit."""
    count, pending = 0, [data]
    while pending:
        item = pending.pop()
        count += 1
        if count > limit:
            return True
        if isinstance(item, Mapping):
            count += len(item)  # the keys
            if count > limit:
                return True
            pending.extend(item.values())
        elif isinstance(item, (list, tuple)):
            if count + len(item) > limit:
                return True
            pending.extend(item)
    return False


@dataclass(frozen=True)
class SpecReading:
    """A spec read for `validate`, which reports every problem in one run (README): the problems of its
    fields, and the Spec the rest of the checks can read.

    A field that is unknown (a typo of a field name) is left out, which changes nothing else: the Spec is
    the file's. A value that is refused is replaced by the field's default, a stand-in: the cross-field
    rules still run but say nothing in that section, and `defaulted` tells the later checks (plan, code)
    that they would judge a spec the user did not write.
    """

    loaded: LoadedSpec | None  # None: not even a stand-in Spec (a required field missing or refused)
    problems: list[Problem]
    defaulted: tuple[Path_, ...] = ()


def _drop(data: Any, loc: tuple[Any, ...]) -> tuple[Any, ...] | None:
    """Remove the deepest item of `data` that `loc` (a pydantic error location) reaches; its path, or None."""
    node, parent, key, path = data, None, None, []
    for part in loc:
        if isinstance(node, dict) and part in node:
            parent, key, node = node, part, node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            parent, key, node = node, part, node[part]
        else:
            break  # a type tag of a union, or the end of what was written
        path.append(part)
    if parent is None or isinstance(parent, list):
        return None  # the whole document, or an item of a list (which would shift the others)
    del parent[key]
    return tuple(path)


def read_spec(path: str | os.PathLike[str], overrides: Sequence[Override] = (),
              env: Mapping[str, str] | None = None) -> SpecReading:
    """load_spec for `validate`: every problem it can find, and a Spec for the checks that follow where
    one can be made (SpecReading). A file that cannot be read at all raises SpecError, as in load_spec."""
    file = Path(path)
    data, smap, problems = _read_data(file, overrides, env)
    defaulted: list[Path_] = []
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        problems += [p for p in _problems_from(exc, smap) if not smap.explained(p.path)]
        if not isinstance(data, dict):
            return SpecReading(None, problems)
        stand_in = copy.deepcopy(data)
        for err in exc.errors(include_url=False):
            dropped = _drop(stand_in, tuple(err["loc"]))
            if dropped is not None and err["type"] != "extra_forbidden":
                defaulted.append(dropped)
        try:
            spec = Spec.model_validate(stand_in)
        except ValidationError:
            return SpecReading(None, problems)
    loaded = LoadedSpec(spec, smap, file.resolve().parent)
    sections = {p[:1] for p in defaulted}
    problems += [p for p in _check(loaded) if p.path[:1] not in sections]
    return SpecReading(loaded, problems, tuple(defaulted))


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the job spec, for editors: the rules the loader applies (smtrain.spec.schema)."""
    from smtrain.spec.schema import editor_schema

    return editor_schema(Spec)
