"""The container contract: what SageMaker's TensorFlow container tells the program.

Pure Python (no TensorFlow), so a broken contract fails in well under a second.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from . import hyperparameters as hp_table
from .errors import ConfigurationError, DataError
from .failure import output_dir as failure_output_dir

TRAIN_CHANNEL = "train"
VALIDATION_CHANNEL = "validation"
# Flags the SageMaker Python SDK turns into framework parameters (SM_FRAMEWORK_PARAMS).
MWMS_FLAG = "sagemaker_multi_worker_mirrored_strategy_enabled"
PS_FLAG = "sagemaker_parameter_server_enabled"
MPI_FLAG = "sagemaker_mpi_enabled"
SMDDP_FLAG = "sagemaker_distributed_dataparallel_enabled"


@dataclass(frozen=True)
class Contract:
    base_dir: str
    model_dir: str
    output_dir: str
    output_data_dir: str
    checkpoint_dir: str
    tensorboard_dir: Optional[str]  # None: off
    channels: Dict[str, str]
    hosts: List[str]
    current_host: str
    num_gpus: Optional[int]
    num_cpus: Optional[int]
    framework_params: Dict[str, Any]
    tf_config: Optional[Dict[str, Any]]
    hyperparameters: hp_table.Parsed
    under_mpi: bool
    # The instance this host runs on. With a fallback list (compute.prefer) it is the one SageMaker
    # picked, known only now; the strategy follows from the hosts, GPUs and TF_CONFIG found here.
    instance_type: Optional[str] = None

    def hp(self, name: str) -> Any:
        return self.hyperparameters.values[name]

    def flag(self, name: str) -> bool:
        """A SageMaker framework flag, wherever it arrived (framework params, SM_HPS or arguments)."""
        for source in (self.framework_params, self.hyperparameters.extras):
            if name in source:
                try:
                    return hp_table.parse_bool(str(source[name]))
                except ValueError:
                    raise ConfigurationError(f"{name}={source[name]!r}: expected true or false") from None
        return False


def _json_env(environ: Mapping[str, str], name: str, kind: type, default: Any) -> Any:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = json.loads(raw)
    except ValueError as exc:
        raise ConfigurationError(f"{name} is not valid JSON ({exc})") from None
    if not isinstance(value, kind):
        raise ConfigurationError(f"{name} must be a JSON {kind.__name__}, got {type(value).__name__}")
    return value


def _int_env(environ: Mapping[str, str], name: str) -> Optional[int]:
    raw = environ.get(name)
    if raw is None or raw.strip() == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConfigurationError(f"{name}={raw!r} is not a whole number") from None


def _channels(environ: Mapping[str, str], base_dir: str) -> Dict[str, str]:
    names = _json_env(environ, "SM_CHANNELS", list, None)
    channels: Dict[str, str] = {}
    if names is None:
        # Outside the toolkit: SM_CHANNEL_* alone, else the directories SageMaker would mount.
        for key, value in environ.items():
            if key.startswith("SM_CHANNEL_") and value:
                channels[key[len("SM_CHANNEL_"):].lower()] = value
        data_dir = os.path.join(base_dir, "input", "data")
        if not channels and os.path.isdir(data_dir):
            for name in sorted(os.listdir(data_dir)):
                if os.path.isdir(os.path.join(data_dir, name)):
                    channels[name] = os.path.join(data_dir, name)
        return channels
    for name in names:
        path = environ.get("SM_CHANNEL_" + str(name).upper())
        channels[str(name)] = path or os.path.join(base_dir, "input", "data", str(name))
    return channels


def _tf_config(environ: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    config = _json_env(environ, "TF_CONFIG", dict, None)
    if config is None:
        return None
    cluster = config.get("cluster")
    if not isinstance(cluster, dict) or not cluster:
        raise ConfigurationError("TF_CONFIG has no 'cluster' mapping of job name to addresses")
    for job, addresses in cluster.items():
        if not isinstance(addresses, list) or not all(isinstance(a, str) and ":" in a for a in addresses):
            raise ConfigurationError(f"TF_CONFIG cluster job '{job}' must be a list of 'host:port' strings")
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task:
        raise ConfigurationError("TF_CONFIG has no 'task' with a 'type' and an 'index'")
    task_type, index = task["type"], task.get("index", 0)
    if task_type not in cluster:
        raise ConfigurationError(f"TF_CONFIG task type '{task_type}' is not a job of its cluster")
    if not isinstance(index, int) or not 0 <= index < len(cluster[task_type]):
        raise ConfigurationError(f"TF_CONFIG task index {index!r} is out of range for job '{task_type}'")
    return config


def _under_mpi(environ: Mapping[str, str]) -> bool:
    return any(k in environ for k in ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MV2_COMM_WORLD_SIZE"))


def _instance_type(environ: Mapping[str, str], base_dir: str) -> Optional[str]:
    """SM_CURRENT_INSTANCE_TYPE (sagemaker-training exports resourceconfig.json's current_instance_type
    under that name), else the file itself; None when neither says (a run outside the toolkit)."""
    named = (environ.get("SM_CURRENT_INSTANCE_TYPE") or "").strip()
    if named:
        return named
    try:
        with open(os.path.join(base_dir, "input", "config", "resourceconfig.json"), encoding="utf-8") as handle:
            found = json.load(handle).get("current_instance_type")
    except (OSError, ValueError, AttributeError):
        return None
    return found if isinstance(found, str) and found else None


def _tensorboard_dir(given: str, output: str) -> Optional[str]:
    """/opt/ml/output/tensorboard: the LocalPath SageMaker uploads for a TensorBoardOutputConfig."""
    if given.strip().lower() in ("off", "none", "false"):
        return None
    if "://" in given:
        raise ConfigurationError(f"tensorboard_dir must be a local directory (SageMaker uploads it to S3), got {given}")
    return given or os.path.join(output, "tensorboard")


def read(argv: Sequence[str], environ: Optional[Mapping[str, str]] = None, own_script: bool = False) -> Contract:
    """Read and check the contract; raise ConfigurationError/DataError with a readable reason.

    own_script: the process runs a script of the user's own (smtrain_tf's public functions, the
    wrap), whose arguments and SM_HPS are the user's; the table then comes from SMTRAIN_* only.
    """
    env = dict(os.environ if environ is None else environ)
    hps = hp_table.parse(argv, env.get("SM_HPS"), env, own_script=own_script)
    base_dir = env.get("SAGEMAKER_BASE_DIR") or "/opt/ml"
    hosts = _json_env(env, "SM_HOSTS", list, None)
    current = env.get("SM_CURRENT_HOST")
    if hosts is None:
        hosts = [current or "algo-1"]
    if not hosts or not all(isinstance(h, str) and h for h in hosts):
        raise ConfigurationError("SM_HOSTS must be a non-empty JSON list of host names")
    current = current or hosts[0]
    if current not in hosts:
        raise ConfigurationError(f"SM_CURRENT_HOST '{current}' is not one of SM_HOSTS {hosts}")
    output = failure_output_dir(env)
    checkpoint_dir = hps["checkpoint_dir"] or os.path.join(base_dir, "checkpoints")
    if "://" in checkpoint_dir:
        raise ConfigurationError(f"checkpoint_dir must be a local directory (SageMaker syncs it to S3), "
                                 f"got {checkpoint_dir}")
    return Contract(
        base_dir=base_dir,
        # The `--model_dir s3://...` argument the SDK adds is ignored on purpose: artifacts go to
        # SM_MODEL_DIR, which SageMaker uploads itself.
        model_dir=env.get("SM_MODEL_DIR") or os.path.join(base_dir, "model"),
        output_dir=output,
        output_data_dir=env.get("SM_OUTPUT_DATA_DIR") or os.path.join(output, "data"),
        checkpoint_dir=checkpoint_dir,
        tensorboard_dir=_tensorboard_dir(hps["tensorboard_dir"], output),
        channels=_channels(env, base_dir),
        hosts=list(hosts),
        current_host=current,
        num_gpus=_int_env(env, "SM_NUM_GPUS"),
        num_cpus=_int_env(env, "SM_NUM_CPUS"),
        framework_params=_json_env(env, "SM_FRAMEWORK_PARAMS", dict, {}),
        tf_config=_tf_config(env),
        hyperparameters=hps,
        under_mpi=_under_mpi(env),
        instance_type=_instance_type(env, base_dir),
    )


def require_writable(contract: Contract) -> None:
    """Find out now, not after hours of training, that an output directory cannot be written."""
    for what, path in (("model directory (SM_MODEL_DIR)", contract.model_dir),
                       ("checkpoint directory", contract.checkpoint_dir)):
        try:
            os.makedirs(path, exist_ok=True)
        except OSError as exc:
            raise ConfigurationError(f"the {what} {path} cannot be created ({exc.strerror})") from None
        if not os.access(path, os.W_OK | os.X_OK):
            raise ConfigurationError(f"the {what} {path} is not writable")


def require_channels(contract: Contract) -> None:
    """The train channel must exist as a directory; validation is optional but must exist if named."""
    if contract.hp("data") != "channels":
        return  # generated, or a data hook's to read (it is given the channels there are)
    if TRAIN_CHANNEL not in contract.channels:
        named = ", ".join(sorted(contract.channels)) or "none"
        raise DataError(f"no '{TRAIN_CHANNEL}' channel (channels given: {named}); add an input named "
                        f"'{TRAIN_CHANNEL}' or set data=synthetic")
    for name in (TRAIN_CHANNEL, VALIDATION_CHANNEL):
        path = contract.channels.get(name)
        if path is not None and not os.path.isdir(path):
            raise DataError(f"channel '{name}' directory {path} does not exist")
