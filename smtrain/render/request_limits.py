"""CreateTrainingJob's limits, checked on a request and reported at the spec field that set the value.

validate and plan check the request preview (training_request.preview_request); the dry run and submit
check the request they send. Both go through request_problems(), so both name the same fields: each
request path is traced back to the spec path that produced it (HyperParameters.epochs to
training.epochs, ResourceConfig.KeepAlivePeriodInSeconds to compute.keep_alive, a channel's S3Uri
to inputs.<name>.uri, a whole map's size to the map's own field), located through the spec's
SourceMap.

The capacity, retry and key fields are SageMaker's alone: a local run notes that it ignores them
(sagemaker_only_notes). Inputs and an output on this machine are for `submit --local` only: their S3 checks are left to
the "valid for --local only" verdict (local_only_fields) instead of refusing the spec.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from smtrain.plan.build import Plan
from smtrain.plan.program import field_of_variable
from smtrain.render.service_model import OPERATION, Violation, check_request
from smtrain.render.training_request import preview_request
from smtrain.spec.model import Spec, TrainingSpec
from smtrain.spec.problems import Path_, Problem, dotted
from smtrain.spec.tracking import is_arn

# Request members -> the spec field that decides them; the longest matching prefix wins.
_FIELDS: dict[tuple[str, ...], Path_] = {
    ("TrainingJobName",): ("name",),
    ("RoleArn",): ("role",),
    ("AlgorithmSpecification", "TrainingImage"): ("tensorflow", "image_uri"),
    ("AlgorithmSpecification", "MetricDefinitions"): ("code", "entry_point"),
    ("ResourceConfig", "InstanceType"): ("compute", "instance_type"),
    ("ResourceConfig", "InstanceCount"): ("compute", "nodes"),
    ("ResourceConfig", "VolumeSizeInGB"): ("compute", "volume_size"),
    ("ResourceConfig", "KeepAlivePeriodInSeconds"): ("compute", "keep_alive"),
    ("ResourceConfig", "VolumeKmsKeyId"): ("compute", "volume_kms_key"),
    ("ResourceConfig", "TrainingPlanArn"): ("compute", "training_plan"),
    ("ResourceConfig", "InstancePreferences"): ("compute", "prefer"),
    ("ResourceConfig", "InstanceGroups"): ("compute", "instance_groups"),
    ("StoppingCondition", "MaxPendingTimeInSeconds"): ("compute", "max_pending"),
    ("RetryStrategy",): ("compute", "max_retry_attempts"),
    ("OutputDataConfig", "KmsKeyId"): ("output_kms_key",),
    ("StoppingCondition", "MaxRuntimeInSeconds"): ("compute", "max_run"),
    ("StoppingCondition", "MaxWaitTimeInSeconds"): ("compute", "max_wait"),
    ("EnableManagedSpotTraining",): ("compute", "spot"),
    ("OutputDataConfig",): ("output",),
    ("CheckpointConfig",): ("checkpoints",),
    ("TensorBoardOutputConfig",): ("tensorboard",),
    ("VpcConfig",): ("network",),
    ("VpcConfig", "Subnets"): ("network", "subnets"),
    ("VpcConfig", "SecurityGroupIds"): ("network", "security_groups"),
    ("EnableNetworkIsolation",): ("network", "isolation"),
    ("EnableInterContainerTrafficEncryption",): ("network", "encrypt_inter_container_traffic"),
    ("HyperParameters",): ("hyperparameters",),
    ("Environment",): ("environment",),
    ("Tags",): ("tags",),
    ("InputDataConfig",): ("inputs",),
    ("MlflowConfig",): ("tracking", "mlflow"),
    ("MlflowConfig", "MlflowExperimentName"): ("tracking", "experiment"),
    ("MlflowConfig", "MlflowRunName"): ("tracking", "run"),
    ("ExperimentConfig",): ("tracking", "sagemaker_experiment"),
    ("ExperimentConfig", "ExperimentName"): ("tracking", "sagemaker_experiment", "experiment"),
    ("ExperimentConfig", "TrialName"): ("tracking", "sagemaker_experiment", "trial"),
    ("ExperimentConfig", "RunName"): ("tracking", "sagemaker_experiment", "run"),
}
# Inside one channel: request member -> the field of inputs.<name>.
_CHANNEL_FIELDS: dict[tuple[str, ...], Path_] = {
    ("ChannelName",): (),
    ("InputMode",): ("mode",),
    ("DataSource", "S3DataSource", "S3Uri"): ("uri",),
    ("DataSource", "S3DataSource", "S3DataDistributionType"): ("distribution",),
    ("DataSource", "S3DataSource", "InstanceGroupNames"): ("instance_groups",),
    ("DataSource", "FileSystemDataSource", "FileSystemId"): ("file_system", "id"),
    ("DataSource", "FileSystemDataSource", "DirectoryPath"): ("file_system", "directory"),
    ("DataSource", "FileSystemDataSource"): ("file_system",),
}
# Inside one of compute.prefer's InstancePreferences: request member -> the field of compute.prefer[i].
_PREFERENCE_FIELDS: dict[tuple[str, ...], Path_] = {
    ("InstanceType",): ("instance_type",),
    ("InstanceCount",): ("count",),
    ("TrainingPlanArns",): ("training_plan",),
}
# Inside one of compute.instance_groups' InstanceGroups: request member -> the field of compute.instance_groups[i].
_GROUP_FIELDS: dict[tuple[str, ...], Path_] = {
    ("InstanceGroupName",): ("name",),
    ("InstanceType",): ("instance_type",),
    ("InstanceCount",): ("count",),
}
# The hyperparameters the TensorFlow contract adds (sagemaker_*, model_dir), and the spec field each value comes from.
_CONTRACT_HYPERPARAMETERS: dict[str, Path_] = {
    "sagemaker_submit_directory": ("output",),
    "model_dir": ("output",),
    "sagemaker_program": ("code", "entry_point"),
    "sagemaker_job_name": ("name",),
    "sagemaker_region": ("region",),
    "sagemaker_container_log_level": (),
    "sagemaker_mpi_custom_mpi_options": ("distribution", "mpi_options"),
    "sagemaker_distributed_dataparallel_custom_mpi_options": ("distribution", "mpi_options"),
    "sagemaker_mpi_num_of_processes_per_host": ("distribution", "processes_per_host"),
    "sagemaker_instance_type": ("compute", "instance_type"),
    "sagemaker_distribution_instance_groups": ("distribution", "instance_groups"),
}


def _longest(table: Mapping[tuple[str, ...], Path_], path: Path_) -> tuple[Path_, int] | None:
    """The table's entry for the longest prefix of `path`, and that prefix's length."""
    for n in range(len(path), 0, -1):
        key = tuple(path[:n])
        if key in table:
            return table[key], n
    return None


def _hyperparameter_field(name: str, spec: Spec) -> Path_:
    if name in spec.hyperparameters:  # first: an own script may take a training field's name (epochs)
        return ("hyperparameters", name)
    if name in TrainingSpec.model_fields:
        return ("training", name)
    if name in _CONTRACT_HYPERPARAMETERS:
        return _CONTRACT_HYPERPARAMETERS[name]
    return ("distribution", "strategy") if name.startswith("sagemaker_") else ("hyperparameters",)


def spec_field(path: Path_, request: Mapping[str, Any], spec: Spec) -> Path_:
    """The spec field that produced the value at request `path` (() when the spec did not)."""
    head = path[0] if path else None
    if len(path) >= 2 and head == "HyperParameters":
        return _hyperparameter_field(str(path[1]), spec)
    if len(path) >= 2 and head == "Environment":
        return field_of_variable(spec, str(path[1]))
    if len(path) >= 2 and head == "Tags" and isinstance(path[1], int):
        tags = request.get("Tags") or []
        key = tags[path[1]].get("Key") if path[1] < len(tags) and isinstance(tags[path[1]], Mapping) else None
        return ("tags", key) if isinstance(key, str) else ("tags",)
    if len(path) >= 2 and head == "InputDataConfig" and isinstance(path[1], int):
        channels = request.get("InputDataConfig") or []
        channel = channels[path[1]] if path[1] < len(channels) else None
        name = channel.get("ChannelName") if isinstance(channel, Mapping) else None
        if not isinstance(name, str):
            return ("inputs",)
        if name == spec.model_channel and spec.model_uri is not None and name not in spec.inputs:
            return ("model_uri",) if path[2:] else ("model_channel",)
        if name not in spec.inputs:  # the code channel (network isolation): the bundle under output
            return ("output",) if path[2:] else ("inputs",)
        inner = _longest(_CHANNEL_FIELDS, path[2:])
        return ("inputs", name) + (inner[0] if inner else ())
    if len(path) >= 3 and path[:2] == ("ResourceConfig", "InstancePreferences") and isinstance(path[2], int):
        inner = _longest(_PREFERENCE_FIELDS, path[3:])
        return ("compute", "prefer", path[2]) + (inner[0] if inner else ())
    if len(path) >= 3 and path[:2] == ("ResourceConfig", "InstanceGroups") and isinstance(path[2], int):
        inner = _longest(_GROUP_FIELDS, path[3:])
        return ("compute", "instance_groups", path[2]) + (inner[0] if inner else ())
    if len(path) >= 3 and path[:2] == ("VpcConfig", "Subnets"):
        return ("network", "subnets", path[2])
    if len(path) >= 3 and path[:2] == ("VpcConfig", "SecurityGroupIds"):
        return ("network", "security_groups", path[2])
    if head == "TensorBoardOutputConfig" and spec.tensorboard is None:
        return ("output",)  # the default place, <output>/tensorboard: the output decides it
    found = _longest(_FIELDS, path)
    return found[0] if found else ()


def local_only_fields(spec: Spec) -> list[Path_]:
    """The fields that name a place on this machine (a path or file://): usable by `submit --local` only."""
    fields: list[Path_] = [("inputs", name, "uri") for name, ch in spec.inputs.items()
                           if ch.uri is not None and not ch.uri.startswith("s3://")]
    if spec.model_uri is not None and not spec.model_uri.startswith("s3://"):
        fields.append(("model_uri",))
    if not spec.output.startswith("s3://"):
        fields.append(("output",))
    return fields


# What SageMaker alone does with a field: a local run (`submit --local`) leaves it aside, with a note.
_SAGEMAKER_ONLY: dict[Path_, str] = {
    ("compute", "prefer"): "SageMaker's fallback list: a local run runs choice 1",
    ("compute", "training_plan"): "reserved SageMaker capacity",
    ("compute", "max_pending"): "how long SageMaker waits for capacity",
    ("compute", "max_retry_attempts"): "SageMaker's retries after an internal error",
    ("compute", "volume_kms_key"): "the key of SageMaker's EBS volume",
    ("output_kms_key",): "the key SageMaker encrypts its S3 archives with",
    ("compute", "remote_debug"): "a shell on SageMaker's hosts through SSM: here each host is a process",
    ("compute", "infra_check"): "SageMaker's check of its instances before the job",
    ("session_tag_chaining",): "the role's session tags, passed on by SageMaker",
    ("model_package",): "SageMaker's model registry",
    ("tracking", "sagemaker_experiment"): "SageMaker Experiments' trial component of the job",
    ("checkpoint_local_path",): "the directory of SageMaker's container synced with checkpoints: here each host "
                                "keeps checkpoints in its own checkpoints/ directory",
}


def sagemaker_only_notes(spec: Spec) -> list[str]:
    """One note per SageMaker-only capacity, retry or key field the spec sets, for a local run."""
    notes = []
    for path, what in _SAGEMAKER_ONLY.items():
        node: Any = spec
        for part in path:
            node = getattr(node, str(part), None)
        if node:
            notes.append(f"{dotted(path)} ({what}) applies on SageMaker only; this local run ignores it")
    if is_arn(spec.tracking.mlflow):
        notes.append("tracking.mlflow (SageMaker-managed MLflow, MlflowConfig) applies on SageMaker only; this local "
                     "run ignores it (with a tracking URI, --set tracking.mlflow=http://HOST:PORT, it logs the same "
                     "run there)")
    if not spec.output_compression:
        notes.append("output_compression: false (SageMaker uploads the model and output as files) applies on "
                     "SageMaker only; this local run packs model.tar.gz and output.tar.gz as before")
    return notes


def _value_at(request: Mapping[str, Any], path: Path_) -> Any:
    node: Any = request
    for part in path:
        try:
            node = node[part]
        except (KeyError, IndexError, TypeError):
            return None
    return node


def _within(field: Path_, fields: list[Path_]) -> bool:
    return any(field[:len(f)] == f for f in fields)


def _message(v: Violation, request: Mapping[str, Any], spec: Spec) -> str:
    where = dotted(v.path)
    note = ""
    if v.path == ("HyperParameters",):
        # The contract's own hyperparameters count against the limit too: say how many there are.
        added = [k for k in request.get("HyperParameters", {}) if _hyperparameter_field(k, spec)[:1]
                 not in (("training",), ("hyperparameters",))]
        note = f"; {len(added)} of them are added by smtrain for SageMaker's TensorFlow contract"
    return f"{v.message}{note} ({where} in {OPERATION})"


def request_problems(plan: Plan, request: Mapping[str, Any]) -> list[Problem]:
    """Every CreateTrainingJob limit `request` breaks, each at the spec field (and file:line:column) behind it."""
    spec = plan.spec
    local = local_only_fields(spec)
    problems = []
    for v in check_request(request):
        field = spec_field(v.path, request, spec)
        if field and _within(field, local):
            continue  # reported as "valid for --local only" by validate
        # A whole map or list (its size) is shown at its key, where it starts; a value at the value.
        at_key = v.at_key or isinstance(_value_at(request, v.path), (Mapping, list, tuple))
        location = plan.source.locate(field, at_key=at_key) if plan.source is not None else None
        problems.append(Problem(field, _message(v, request, spec), location))
    return problems


def preview_problems(plan: Plan) -> list[Problem]:
    """request_problems() of the request preview: what validate and plan refuse before a bundle exists."""
    return request_problems(plan, preview_request(plan))


def local_only_problems(plan: Plan) -> list[Problem]:
    """The local_only_fields() of the plan's spec as notes at their file:line:column (validate shows them)."""
    return [Problem(path, "a place on this machine: only `submit --local` can use it (SageMaker reads s3:// URIs)",
                    plan.source.locate(path) if plan.source is not None else None)
            for path in local_only_fields(plan.spec)]
