"""The container contract of one SageMaker training host, computed here for local runs.

What a training process inside SageMaker's TensorFlow container is given: the /opt/ml tree, the
three config files SageMaker writes into it, and the environment the container toolkits
(sagemaker-training 5.1 and sagemaker-tensorflow-training 20.4, as the TF 2.21 training image carries them)
export before they start the entry point. The toolkit is not a dependency of smtrain: this module computes
the same values from the same config files, and tests/local/test_conformance.py checks them against the
toolkit's own ``Environment``.

Paths are those of the host's directory (``SAGEMAKER_BASE_DIR``) instead of /opt/ml.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smtrain.plan.launch import hyperparameter_args

# The instance group SageMaker names a job without heterogeneous clusters.
INSTANCE_GROUP = "homogeneousCluster"
# The TensorFlow training images set this; the toolkit reports it as SM_FRAMEWORK_MODULE.
TF_FRAMEWORK_MODULE = "sagemaker_tensorflow_container.training:main"
LOG_LEVEL_INFO = 20
# Hyperparameters the toolkit keeps for itself (sagemaker_training.params.SAGEMAKER_HYPERPARAMETERS);
# every other sagemaker_* one is a "framework parameter".
TOOLKIT_HYPERPARAMETERS = (
    "sagemaker_program", "sagemaker_submit_directory", "sagemaker_enable_cloudwatch_metrics",
    "sagemaker_region", "sagemaker_container_log_level", "sagemaker_job_name", "default_user_module_name",
    "_tuning_objective_metric", "sagemaker_s3_output",
)
# Framework flags that put the current instance group into the distribution (toolkit 4.8 and 5.1).
_DISTRIBUTION_FLAGS = (
    "sagemaker_mpi_enabled", "sagemaker_parameter_server_enabled", "sagemaker_distributed_dataparallel_enabled",
    "sagemaker_pytorch_ddp_enabled", "sagemaker_pytorch_xla_multi_worker_enabled",
    "sagemaker_multi_worker_mirrored_strategy_enabled", "sagemaker_torch_distributed_enabled",
)
CONTAINER_BASE = "/opt/ml"
# Variables of this machine's environment that would tell a host process about some other job, or
# set smtrain_tf's settings (SMTRAIN_<NAME>) that on SageMaker come from the request's Environment alone.
_SCRUBBED_PREFIXES = ("SM_", "SAGEMAKER_", "OMPI_", "PMI_", "PMIX_", "SMTRAIN_")
_SCRUBBED_NAMES = frozenset({"TF_CONFIG", "TRAINING_JOB_NAME", "TRAINING_JOB_ARN", "CURRENT_HOST"})


@dataclass(frozen=True)
class HostLayout:
    """One host's /opt/ml, rooted at `base`."""

    base: Path

    @property
    def config_dir(self) -> Path:
        return self.base / "input" / "config"

    @property
    def data_dir(self) -> Path:
        return self.base / "input" / "data"

    @property
    def code_dir(self) -> Path:
        return self.base / "code"

    @property
    def model_dir(self) -> Path:
        return self.base / "model"

    @property
    def output_dir(self) -> Path:
        return self.base / "output"

    @property
    def output_data_dir(self) -> Path:
        return self.base / "output" / "data"

    @property
    def checkpoints_dir(self) -> Path:
        return self.base / "checkpoints"

    @property
    def tensorboard_dir(self) -> Path:
        """Where the chief's program writes TensorBoard event files: <SM_OUTPUT_DIR>/tensorboard, the place
        SageMaker uploads under TensorBoardOutputConfig (smtrain.render.training_request.TENSORBOARD_LOCAL_PATH)."""
        return self.output_dir / "tensorboard"

    @property
    def failure_file(self) -> Path:
        return self.output_dir / "failure"

    def channel(self, name: str) -> Path:
        return self.data_dir / name

    def create(self) -> None:
        for path in (self.config_dir, self.data_dir, self.code_dir, self.model_dir, self.output_data_dir,
                     self.checkpoints_dir):
            path.mkdir(parents=True, exist_ok=True)

    def rebase(self, value: str) -> str:
        """A container path (/opt/ml/...) as the same place in this host's directory."""
        if value == CONTAINER_BASE or value.startswith(CONTAINER_BASE + "/"):
            return str(self.base) + value[len(CONTAINER_BASE):]
        return value


def resource_config(hosts: Sequence[str], current: str, instance_type: str, interface: str) -> dict[str, Any]:
    """resourceconfig.json as SageMaker writes it for a job of one instance group."""
    return {
        "current_host": current,
        "current_instance_type": instance_type,
        "current_group_name": INSTANCE_GROUP,
        "hosts": list(hosts),
        "instance_groups": [{"instance_group_name": INSTANCE_GROUP, "instance_type": instance_type,
                             "hosts": list(hosts)}],
        "network_interface_name": interface,
    }


def input_data_config(request: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """inputdataconfig.json from a CreateTrainingJob request: per channel its mode and distribution."""
    default_mode = request.get("AlgorithmSpecification", {}).get("TrainingInputMode", "File")
    config: dict[str, dict[str, str]] = {}
    for channel in request.get("InputDataConfig", []):
        s3 = channel.get("DataSource", {}).get("S3DataSource", {})
        entry = {}
        if channel.get("ContentType"):
            entry["ContentType"] = channel["ContentType"]
        entry["TrainingInputMode"] = channel.get("InputMode") or default_mode
        entry["S3DistributionType"] = s3.get("S3DataDistributionType", "FullyReplicated")
        entry["RecordWrapperType"] = channel.get("RecordWrapperType", "None")
        if channel.get("CompressionType"):
            entry["CompressionType"] = channel["CompressionType"]
        config[channel["ChannelName"]] = entry
    return config


def decode_hyperparameters(encoded: Mapping[str, str]) -> dict[str, Any]:
    """hyperparameters.json values are JSON text; the toolkit decodes each, keeping undecodable text."""
    decoded = {}
    for name, value in encoded.items():
        try:
            decoded[name] = json.loads(value)
        except (TypeError, ValueError):
            decoded[name] = value
    return decoded


def split_hyperparameters(decoded: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the user's hyperparameters, SageMaker's sagemaker_* ones), as the toolkit splits them."""
    sagemaker = {k: v for k, v in decoded.items() if k in TOOLKIT_HYPERPARAMETERS or k.startswith("sagemaker_")}
    return {k: v for k, v in decoded.items() if k not in sagemaker}, sagemaker


def count_gpus() -> int:
    """GPUs the way the toolkit counts them: lines of `nvidia-smi --list-gpus`, 0 without it."""
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        out = subprocess.run(["nvidia-smi", "--list-gpus"], capture_output=True, text=True, timeout=30, check=True)
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in out.stdout.splitlines() if line.startswith("GPU "))


@dataclass(frozen=True)
class Machine:
    """What the toolkit measures on the host rather than reads from a file."""

    num_gpus: int
    num_cpus: int
    smddprun: bool
    smddpmprun: bool

    @classmethod
    def here(cls) -> Machine:
        return cls(num_gpus=count_gpus(), num_cpus=os.cpu_count() or 1,
                   smddprun=shutil.which("smddprun") is not None, smddpmprun=shutil.which("smddpmprun") is not None)


def _env_value(value: Any) -> str:
    # sagemaker_training.mapping.to_env_vars: text as is, None empty, anything else compact sorted JSON.
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def toolkit_environment(layout: HostLayout, hyperparameters: Mapping[str, str], resources: Mapping[str, Any],
                        channels: Mapping[str, Any], machine: Machine, *, job_name: str | None,
                        framework_module: str | None = TF_FRAMEWORK_MODULE) -> dict[str, str]:
    """The SM_* variables the toolkit exports for the entry point on this host.

    `hyperparameters` is hyperparameters.json (JSON-encoded values), `resources` resourceconfig.json
    and `channels` inputdataconfig.json; `job_name` is TRAINING_JOB_NAME, which SageMaker sets.
    """
    user, sagemaker = split_hyperparameters(decode_hyperparameters(hyperparameters))
    framework_params = {k: v for k, v in sagemaker.items() if k not in TOOLKIT_HYPERPARAMETERS}
    hosts = list(resources["hosts"])
    current = resources["current_host"]
    group = resources.get("current_group_name", INSTANCE_GROUP)
    groups_config = list(resources.get("instance_groups", []))
    groups = [g["instance_group_name"] for g in groups_config]
    groups_dict = {g["instance_group_name"]: g for g in groups_config}
    group_hosts = next((g["hosts"] for g in groups_config if g["instance_group_name"] == group), [])
    enabled = any(framework_params.get(flag, False) for flag in _DISTRIBUTION_FLAGS)
    distribution_groups = framework_params.get("sagemaker_distribution_instance_groups", [group] if enabled else [])
    if groups_config:
        distribution_hosts = [h for g in groups_config if g["instance_group_name"] in distribution_groups
                              for h in g["hosts"]]
    else:
        distribution_hosts = list(hosts)
    master = distribution_hosts[0] if distribution_hosts else hosts[0]
    program = sagemaker.get("sagemaker_program")
    module_name = str(program)
    module_name = module_name[:-3] if module_name.endswith(".py") else module_name
    instance_type = resources.get("current_instance_type", "local")
    channel_dirs = {name: str(layout.channel(name)) for name in channels}
    paths = {
        "input_dir": str(layout.base / "input"),
        "input_config_dir": str(layout.config_dir),
        "output_dir": str(layout.output_dir),
        "output_data_dir": str(layout.output_data_dir),
        "output_intermediate_dir": str(layout.output_dir / "intermediate"),
        "model_dir": str(layout.model_dir),
    }
    training_env: dict[str, Any] = {
        **paths,
        "additional_framework_parameters": framework_params,
        "channel_input_dirs": channel_dirs,
        "current_host": current,
        "current_instance_group": group,
        "current_instance_group_hosts": group_hosts,
        "current_instance_type": instance_type,
        "distribution_hosts": distribution_hosts,
        "distribution_instance_groups": distribution_groups,
        "framework_module": framework_module,
        "hosts": hosts,
        "hyperparameters": user,
        "input_data_config": dict(channels),
        "instance_groups": groups,
        "instance_groups_dict": groups_dict,
        "is_hetero": len(groups) > 1,
        "is_master": current == master,
        # The toolkit reads SM_HP_MP_PARAMETERS from its own environment, where it is never set.
        "is_modelparallel_enabled": None,
        "is_smddpmprun_installed": machine.smddpmprun,
        "is_smddprun_installed": machine.smddprun,
        "job_name": job_name,
        "log_level": sagemaker.get("sagemaker_container_log_level", LOG_LEVEL_INFO),
        "master_hostname": master,
        "module_dir": str(sagemaker.get("sagemaker_submit_directory", layout.code_dir)),
        "module_name": module_name,
        "network_interface_name": resources.get("network_interface_name", "eth0"),
        "num_cpus": machine.num_cpus,
        "num_gpus": machine.num_gpus,
        # The toolkit asks neuron-ls, absent outside Trainium/Inferentia hosts (trn2.48xlarge is assumed 64).
        "num_neurons": 64 if "trn2.48xlarge" in instance_type else 0,
        "resource_config": dict(resources),
        # Toolkit 5.1: the hosts' capacity units, which resourceconfig.json has only on GB200 UltraServers.
        "topology": list(resources.get("topology", [])),
        "user_entry_point": program,
    }
    env: dict[str, Any] = {
        "hosts": hosts,
        "network_interface_name": training_env["network_interface_name"],
        "hps": user,
        "user_entry_point": program,
        "framework_params": framework_params,
        "resource_config": training_env["resource_config"],
        "input_data_config": training_env["input_data_config"],
        "output_data_dir": paths["output_data_dir"],
        "channels": sorted(channel_dirs),
        "current_host": current,
        "current_instance_type": instance_type,
        "current_instance_group": group,
        "current_instance_group_hosts": group_hosts,
        "instance_groups": groups,
        "instance_groups_dict": groups_dict,
        "distribution_instance_groups": distribution_groups,
        "is_hetero": training_env["is_hetero"],
        "module_name": module_name,
        "log_level": training_env["log_level"],
        "framework_module": framework_module,
        "input_dir": paths["input_dir"],
        "input_config_dir": paths["input_config_dir"],
        "output_dir": paths["output_dir"],
        "num_cpus": machine.num_cpus,
        "num_gpus": machine.num_gpus,
        "num_neurons": training_env["num_neurons"],
        "model_dir": paths["model_dir"],
        "module_dir": training_env["module_dir"],
        "training_env": training_env,
        "user_args": user_arguments(hyperparameters),
        "output_intermediate_dir": paths["output_intermediate_dir"],
    }
    if training_env["topology"]:  # SM_TOPOLOGY, only where there is one (toolkit 5.1)
        env["topology"] = training_env["topology"]
    env.update({f"channel_{name}": path for name, path in channel_dirs.items()})
    env.update({f"hp_{name}": value for name, value in user.items()})
    return {f"SM_{key.upper()}": _env_value(value) for key, value in env.items()}


def user_arguments(hyperparameters: Mapping[str, str]) -> list[str]:
    """The entry point's command-line arguments: the user's hyperparameters as `--name value`."""
    user, _ = split_hyperparameters(decode_hyperparameters(hyperparameters))
    return hyperparameter_args(user)


def process_environment(base: Mapping[str, str], toolkit_env: Mapping[str, str], container_env: Mapping[str, str],
                        layout: HostLayout, *, job_name: str, region: str | None,
                        tf_config: Mapping[str, Any] | None) -> dict[str, str]:
    """The whole environment of an entry-point process on this host.

    `base` is this machine's environment, less anything that would tell the process about another
    job; then the request's Environment, what SageMaker and the toolkit set, and TF_CONFIG.
    """
    env = {k: v for k, v in base.items() if not k.startswith(_SCRUBBED_PREFIXES) and k not in _SCRUBBED_NAMES}
    env.update(container_env)
    env.setdefault("PYTHONUNBUFFERED", "TRUE")  # as the TensorFlow training images set it
    env.update(toolkit_env)
    env.update({
        "SAGEMAKER_BASE_DIR": str(layout.base),
        "SAGEMAKER_TRAINING_MODULE": TF_FRAMEWORK_MODULE,
        "TRAINING_JOB_NAME": job_name,
        # Environment() exports these three into the toolkit's process, and so to its children.
        "CURRENT_HOST": toolkit_env["SM_CURRENT_HOST"],
        "SAGEMAKER_JOB_NAME": job_name,
        "SAGEMAKER_REGION": region or "",
        # sagemaker_tensorflow_container.s3_utils.configure sets these before it starts the entry point
        # (S3_REGION there is the region of model_dir's bucket; here the job's, without asking S3).
        "S3_REGION": region or "",
        "TF_CPP_MIN_LOG_LEVEL": "1",
        "S3_USE_HTTPS": "1",
    })
    # The toolkit puts the code directory first on the path (it runs the entry point from there).
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(layout.code_dir), base.get("PYTHONPATH", "")) if p)
    if tf_config is not None:
        env["TF_CONFIG"] = json.dumps(tf_config)
    return env


def write_config_files(layout: HostLayout, hyperparameters: Mapping[str, str], resources: Mapping[str, Any],
                       channels: Mapping[str, Any]) -> None:
    """input/config/{hyperparameters,resourceconfig,inputdataconfig}.json, as SageMaker writes them."""
    layout.config_dir.mkdir(parents=True, exist_ok=True)
    for name, content in (("hyperparameters.json", hyperparameters), ("resourceconfig.json", resources),
                          ("inputdataconfig.json", channels)):
        (layout.config_dir / name).write_text(json.dumps(content), encoding="utf-8")
