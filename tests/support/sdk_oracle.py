"""The test oracle: the SageMaker Python SDK v2 renders the same job offline, to hold smtrain's own renderer
(smtrain.render) equal to it field by field but the differences README documents ("The SageMaker SDK").

This was smtrain's send path until smtrain rendered its requests itself, kept as the oracle: the SDK's
TensorFlow estimator and HyperparameterTuner configured from a Request as smtrain configured them (no Debugger
hook, the profiler off, no SDK config files, no telemetry), their requests taken at the SDK's own
``Session._intercept_create_request`` seam (the one ``PipelineSession`` uses) by a session that never sends:
no credentials, and a botocore handler that refuses any request. The SDK picks the image of every version its
table knows; smtrain's own pick is what is compared with it.

``sagemaker`` is imported inside functions, quietly (its config logger, its logging.basicConfig, its rich
traceback hook are undone).
"""

from __future__ import annotations

import contextlib
import copy
import functools
import logging
import os
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from smtrain.bundle.request import Request
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.plan.job_places import CHECKPOINT_LOCAL_PATH, TENSORBOARD_LOCAL_PATH, tensorboard_s3_path
from smtrain.plan.tuning import TuningPlan
from smtrain.render.training_request import max_wait_seconds, volume_size_gb
from smtrain.spec.patterns import JOB_NAME

if TYPE_CHECKING:  # pragma: no cover - typing only, never imported at run time
    import boto3
    import sagemaker
    from sagemaker.inputs import TrainingInput
    from sagemaker.tensorflow import TensorFlow
    from sagemaker.tuner import HyperparameterTuner

__all__ = [
    "EstimatorSpec",
    "build_estimator",
    "estimator_spec",
    "make_session",
    "render_request",
    "render_tuning_request",
]

# The bundled entry point inside smtrain's own source bundle.
DEFAULT_ENTRY_POINT = "smtrain_entry.py"

# CreateTrainingJob's own rule for TrainingJobName (botocore checks only its length).

_INPUT_MODES = ("File", "FastFile", "Pipe")
_INPUT_DISTRIBUTIONS = ("FullyReplicated", "ShardedByS3Key")
_INPUT_KEYS = frozenset({"uri", "mode", "distribution", "file_system", "instance_groups"})


@dataclass(frozen=True)
class EstimatorSpec:
    """Everything the SageMaker estimator needs, as plain data (no SDK types)."""

    region: str
    role: str
    entry_point: str
    source_dir: str  # s3://.../sourcedir.tar.gz
    instance_type: str
    instance_count: int
    framework_version: str | None  # e.g. "2.19"
    py_version: str | None  # e.g. "py312"
    image_uri: str | None
    distribution: dict | None  # the SDK's distribution dict
    hyperparameters: dict[str, object]  # user-visible ones (the SDK adds sagemaker_* ones)
    output_path: str  # s3://bucket/prefix
    code_location: str  # s3://bucket/prefix (where code would go)
    volume_size_gb: int
    max_run: int  # seconds
    use_spot: bool
    max_wait: int | None
    checkpoint_s3_uri: str | None
    checkpoint_local_path: str | None
    keep_alive_seconds: int | None
    subnets: tuple[str, ...]
    security_group_ids: tuple[str, ...]
    network_isolation: bool
    encrypt_inter_container_traffic: bool
    environment: dict[str, str]
    tags: dict[str, str]
    metric_definitions: tuple[dict, ...]
    # channel -> {"uri": "s3://...", "mode": "File"|"FastFile"|"Pipe"|None,
    #             "distribution"?: "FullyReplicated"|"ShardedByS3Key"}
    inputs: dict[str, dict]
    container_log_level: int | None = None
    # TensorBoardOutputConfig: SageMaker uploads tensorboard_local_path (in the container) to
    # <tensorboard_s3_uri>/<job>/tensorboard-output/ while the job runs.
    tensorboard_s3_uri: str | None = None
    tensorboard_local_path: str | None = None
    # Rendered by the SDK: RetryStrategy, OutputDataConfig.KmsKeyId, ResourceConfig.VolumeKmsKeyId and
    # .TrainingPlanArn.
    max_retry_attempts: int | None = None
    output_kms_key: str | None = None
    volume_kms_key: str | None = None
    training_plan: str | None = None
    # RemoteDebugConfig, InfraCheckConfig, OutputDataConfig.CompressionType NONE, SessionChainingConfig.
    enable_remote_debug: bool = False
    enable_infra_check: bool = False
    disable_output_compression: bool = False
    enable_session_tag_chaining: bool = False
    model_uri: str | None = None
    model_channel_name: str = "model"
    # A heterogeneous cluster: (name, instance type, count) per group, in place of instance_type and
    # instance_count (both None then); `distribution`'s "instance_groups" holds group names.
    instance_groups: tuple[tuple[str, str, int], ...] | None = None
    # fit(experiment_config=...): SageMaker Experiments' ExperimentName, TrialName, RunName.
    experiment_config: dict[str, str] | None = None


# --------------------------------------------------------------------------------------------
# TensorFlow versions known to the installed SDK (no sagemaker import)
# --------------------------------------------------------------------------------------------


# --------------------------------------------------------------------------------------------
# Importing the SDK quietly and without side trips to the network
# --------------------------------------------------------------------------------------------

_sdk_lock = threading.Lock()
_sdk_ready = False


def _no_telemetry(*_args: object, **_kwargs: object) -> None:
    """Stand-in for the SDK's telemetry sender: smtrain sends no usage beacons."""
    return None


def _import_sdk() -> None:
    """Import ``sagemaker`` once, quietly, with its telemetry beacon switched off."""
    global _sdk_ready
    if _sdk_ready:
        return
    with _sdk_lock:
        if _sdk_ready:
            return
        os.environ.setdefault("SAGEMAKER_SUPPRESS_V2_WARNING", "1")
        # The SDK's config logger defaults itself to INFO on a stdout handler (only when its level
        # is unset, see sagemaker/config/config_utils.py) and the import builds a JumpStart
        # session that logs "Not applying SDK defaults ..." lines: they would pollute --output json.
        logging.getLogger("sagemaker.config").setLevel(logging.WARNING)
        # That import-time session also resolves credentials; off EC2 the IMDS probe costs about
        # a second. Disable IMDS for the import only: a real submit on EC2 may need it afterwards.
        added_imds_flag = "AWS_EC2_METADATA_DISABLED" not in os.environ
        root = logging.getLogger()
        root_handlers, root_level = list(root.handlers), root.level
        excepthook = sys.excepthook
        if added_imds_flag:
            os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
        try:
            import sagemaker  # noqa: F401

            # fit() imports this lazily; import it here so its side effect is undone below.
            import sagemaker.experiments._run_context  # noqa: F401
            import sagemaker.inputs  # noqa: F401
            import sagemaker.tensorflow  # noqa: F401
            import sagemaker.utils as sm_utils
            from sagemaker.telemetry import telemetry_logging
        finally:
            if added_imds_flag:
                os.environ.pop("AWS_EC2_METADATA_DISABLED", None)
            # sagemaker/experiments/_metrics.py runs logging.basicConfig(level=INFO) at import,
            # which would print every SDK INFO line on stderr, and sagemaker_core installs rich's
            # traceback hook: the host process keeps its own logging and excepthook.
            root.handlers[:] = root_handlers
            root.setLevel(root_level)
            sys.excepthook = excepthook
        # fit() is wrapped by telemetry_logging._telemetry_emitter, which after the call runs
        # _send_telemetry_request: STS GetCallerIdentity plus requests.get() with no timeout.
        # The wrapper looks the sender up as a module global, so replacing it here disables the
        # beacon for every decorated SDK call. Opting out through sagemaker_config instead makes
        # each config look-up re-validate a JSON schema (seconds per render).
        telemetry_logging._send_telemetry_request = _no_telemetry
        # image_uris.retrieve() asks utils._botocore_resolver() for the ECR domain, and that
        # parses botocore's endpoints.json afresh on every call (~0.2 s). The data is static for
        # the life of the process, so keep the first resolver.
        sm_utils._botocore_resolver = functools.lru_cache(maxsize=1)(sm_utils._botocore_resolver)
        _sdk_ready = True


def _no_sdk_defaults(*_args: object, **_kwargs: object) -> dict:
    return {}


_initialize_lock = threading.Lock()


@functools.lru_cache(maxsize=1)
def _dry_run_session_class() -> type:
    """The session class that captures requests instead of sending them, defined after the SDK's import."""
    _import_sdk()
    import sagemaker
    import sagemaker.session as sm_session

    class DryRunSession(sagemaker.Session):
        """Captures CreateTrainingJob (and the tuning create) instead of sending it, ignoring the SDK's config files.

        Session.train() builds the request, then hands it and a `create` callback to
        _intercept_create_request; not calling `create` is the whole dry run. A config.yaml under /etc/xdg or
        ~/.config would add tags, VPC, KMS keys or environment to the SDK's request: Session._initialize loads
        those files whenever it is given an empty config, so the loader is swapped out for that call.
        """

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            self.captured: list[tuple[str | None, dict]] = []
            super().__init__(*args, **kwargs)

        def _initialize(self, *args: Any, **kwargs: Any) -> None:
            with _initialize_lock:
                original = sm_session.load_sagemaker_config
                sm_session.load_sagemaker_config = _no_sdk_defaults
                try:
                    super()._initialize(*args, **kwargs)
                finally:
                    sm_session.load_sagemaker_config = original

        def _intercept_create_request(self, request: dict, create: Any, func_name: str | None = None) -> None:
            # A copy: the SDK keeps references to parts of the request in the estimator.
            self.captured.append((func_name, copy.deepcopy(request)))
            return None

        # fit(wait=False) never waits; these guard the paths that force a wait anyway.
        def wait_for_job(self, job: str, poll: int = 5) -> dict:
            raise RuntimeError(f"dry run: training job {job!r} was never created")

        def logs_for_job(self, job_name: str, *args: Any, **kwargs: Any) -> None:
            raise RuntimeError(f"dry run: training job {job_name!r} was never created")

    return DryRunSession


def _refuse_to_send(request: Any = None, **kwargs: Any) -> None:
    """botocore before-send handler of the dry-run session: a dry run never reaches AWS."""
    event = kwargs.get("event_name", "an AWS request")
    url = getattr(request, "url", "")
    raise RuntimeError(f"dry run: refusing to send {event} {url}".rstrip())


@functools.cache
def _offline_boto_session(region: str) -> boto3.Session:
    """A boto3 session that has no credentials and cannot send anything (one per region).

    An empty credential resolver means no provider chain runs (no IMDS probe, no SSO refresh,
    no credential_process); the before-send handler stops any request that still gets built.
    Kept for the process: its loader caches endpoints and service models, which otherwise cost
    about a second per render to parse again. (A botocore session cannot be shared by two boto3
    sessions: boto3 would register its S3 injections twice.)
    """
    import boto3
    import botocore.session
    from botocore.credentials import CredentialResolver

    core = botocore.session.Session()
    core.register_component("credential_provider", CredentialResolver(providers=[]))
    core.register("before-send", _refuse_to_send)
    return _reusing_clients(boto3.Session)(botocore_session=core, region_name=region)


@functools.cache
def _reusing_clients(session_class: type) -> type:
    """A boto3 Session class that builds each distinct client once.

    For the offline session only: the SDK builds about seven clients per render (~40 ms each), and
    a client that never sends holds nothing that changes between renders.
    """

    class ReusingClients(session_class):  # type: ignore[misc, valid-type]
        _clients: dict[str, Any]

        def client(self, *args: Any, **kwargs: Any) -> Any:
            config = kwargs.get("config")
            options = sorted(getattr(config, "_user_provided_options", {}).items()) if config else None
            key = repr((args, sorted((k, v) for k, v in kwargs.items() if k != "config"), options))
            cache = self.__dict__.setdefault("_clients", {})
            if key not in cache:
                cache[key] = super().client(*args, **kwargs)
            return cache[key]

    return ReusingClients


def make_session(region: str) -> sagemaker.Session:
    """A SageMaker session for `region` that records every create in ``session.captured`` and sends nothing: it
    has no credentials and refuses any AWS request."""
    return _dry_run_session_class()(boto_session=_offline_boto_session(region))


# --------------------------------------------------------------------------------------------
# Estimator
# --------------------------------------------------------------------------------------------


def _check_spec(spec: EstimatorSpec) -> None:
    """Reject settings the SDK would silently drop, overwrite, or send for AWS to refuse."""
    if not spec.source_dir.startswith("s3://") or not spec.source_dir.endswith(".tar.gz"):
        # A local directory would make the SDK tar and upload it itself (and name the key after
        # the job); smtrain uploads its own content-addressed bundle first.
        raise ValueError(f"source_dir must be the s3:// URI of a .tar.gz, got {spec.source_dir!r}")
    for name in ("output_path", "code_location"):
        # Without them the SDK calls default_bucket(): STS plus S3 CreateBucket.
        if not str(getattr(spec, name)).startswith("s3://"):
            raise ValueError(f"{name} must be an s3:// URI, got {getattr(spec, name)!r}")
    if not (spec.role.startswith("arn:") and ":role/" in spec.role):
        # Session.expand_role passes anything containing "/" through and sends the rest to
        # IAM GetRole.
        raise ValueError(f"role must be a full IAM role ARN, got {spec.role!r}")
    reserved = sorted(k for k in spec.hyperparameters if k.startswith("sagemaker_") or k == "model_dir")
    if reserved:
        raise ValueError(f"hyperparameters {reserved} are reserved: the SageMaker SDK sets them")
    if bool(spec.subnets) != bool(spec.security_group_ids):
        # The SDK drops a VPC config that has only one half, and the job would run outside it.
        raise ValueError("a VPC needs both subnets and security_group_ids")
    if spec.use_spot:
        if spec.max_wait is None:
            raise ValueError("spot training needs max_wait (seconds)")
        if spec.max_wait < spec.max_run:
            raise ValueError(f"max_wait ({spec.max_wait}s) must be at least max_run ({spec.max_run}s)")
    elif spec.max_wait is not None:
        raise ValueError("max_wait applies to spot training only (use_spot is false)")
    for channel, cfg in spec.inputs.items():
        unknown = sorted(set(cfg) - _INPUT_KEYS)
        if unknown:
            raise ValueError(f"input channel {channel!r}: unknown keys {unknown}")
        if cfg.get("file_system"):
            continue  # a FileSystemInput: the SDK checks its type and access mode
        if not str(cfg.get("uri", "")).startswith("s3://"):
            raise ValueError(f"input channel {channel!r}: uri must be an s3:// URI")
        if cfg.get("mode") not in (None, *_INPUT_MODES):
            raise ValueError(f"input channel {channel!r}: mode must be one of {_INPUT_MODES}")
        if cfg.get("distribution") not in (None, *_INPUT_DISTRIBUTIONS):
            raise ValueError(f"input channel {channel!r}: distribution must be one of {_INPUT_DISTRIBUTIONS}")
    if spec.distribution and "multi_worker_mirrored_strategy" in spec.distribution:
        if spec.framework_version is None:
            # The SDK compares framework_version with 2.9 and crashes on None.
            raise ValueError("multi_worker_mirrored_strategy needs framework_version (>= 2.9)")


def _sdk_table() -> dict:
    """The SDK's own TensorFlow training table (versions, aliases, Python versions, registries)."""
    _import_sdk()
    from sagemaker import image_uris

    return image_uris.config_for_framework("tensorflow")["training"]


def tf_py_versions() -> dict[str, list[str]]:
    """Versions the SDK has a training image for (full and short spellings) -> their Python versions."""
    table = _sdk_table()
    full = {v: list(cfg.get("py_versions") or ()) for v, cfg in table["versions"].items()}
    return {**full, **{alias: full[target] for alias, target in table.get("version_aliases", {}).items()
                       if target in full}}


def default_py_version(version: str) -> str | None:
    pys = tf_py_versions().get(version)
    return max(pys, key=lambda p: (len(p), p)) if pys else None


def _resolve_py_version(spec: EstimatorSpec) -> str | None:
    """The py_version to give the SDK; raises ValueError where it could not find an image."""
    if spec.image_uri:
        return spec.py_version
    versions = tf_py_versions()
    if spec.framework_version is None:
        raise ValueError("framework_version is required unless image_uri is given")
    if spec.framework_version not in versions:
        newest = [v for v in versions if v.count(".") == 1][-5:]
        raise ValueError(
            f"TensorFlow {spec.framework_version} has no training image in the installed SageMaker "
            f"SDK (newest known: {', '.join(newest)}). Use a known version, or give image_uri "
            f"(a TensorFlow training image, e.g. a newer AWS Deep Learning Container) together "
            f"with framework_version."
        )
    known_py = versions[spec.framework_version]
    if spec.py_version is None:
        return default_py_version(spec.framework_version)
    if spec.py_version not in known_py:
        raise ValueError(
            f"TensorFlow {spec.framework_version} training images exist for {', '.join(known_py)}, not {spec.py_version}"
        )
    return spec.py_version


def training_inputs(spec: EstimatorSpec) -> dict[str, TrainingInput] | None:
    """The spec's channels as SDK TrainingInputs (None when there are none), for ``fit()``."""
    _import_sdk()
    from sagemaker.inputs import FileSystemInput, TrainingInput

    if not spec.inputs:
        return None
    return {
        channel: FileSystemInput(**cfg["file_system"]) if cfg.get("file_system") else TrainingInput(
            s3_data=cfg["uri"],
            input_mode=cfg.get("mode"),
            distribution=cfg.get("distribution"),  # None -> the SDK's FullyReplicated
            instance_groups=list(cfg["instance_groups"]) if cfg.get("instance_groups") else None,
        )
        for channel, cfg in spec.inputs.items()
    }


def build_estimator(spec: EstimatorSpec, session: sagemaker.Session) -> TensorFlow:
    """The SDK TensorFlow estimator for `spec`, bound to `session` (dry-run or real).

    Raises ValueError for settings the SDK rejects, with the reason.
    """
    _check_spec(spec)
    py_version = _resolve_py_version(spec)
    _import_sdk()
    from sagemaker.tensorflow import TensorFlow

    kwargs: dict[str, Any] = {
        "entry_point": spec.entry_point,
        # An s3:// source_dir: fw_utils.tar_and_upload_dir returns it as the submit directory
        # and uploads nothing.
        "source_dir": spec.source_dir,
        "role": spec.role,
        "instance_type": spec.instance_type,
        "instance_count": spec.instance_count,
        "framework_version": spec.framework_version,
        "py_version": py_version,
        "image_uri": spec.image_uri,
        "distribution": copy.deepcopy(spec.distribution) if spec.distribution else None,
        # The SDK keeps this dict and adds sagemaker_* keys to it: never hand it the spec's own.
        "hyperparameters": dict(spec.hyperparameters),
        "output_path": spec.output_path,
        "code_location": spec.code_location,
        "volume_size": spec.volume_size_gb,
        "max_run": spec.max_run,
        "use_spot_instances": spec.use_spot,
        "max_wait": spec.max_wait if spec.use_spot else None,
        "subnets": list(spec.subnets) or None,
        "security_group_ids": list(spec.security_group_ids) or None,
        "enable_network_isolation": spec.network_isolation,
        "encrypt_inter_container_traffic": spec.encrypt_inter_container_traffic,
        "environment": dict(spec.environment) or None,
        "tags": [{"Key": k, "Value": str(v)} for k, v in spec.tags.items()] or None,
        "metric_definitions": [dict(m) for m in spec.metric_definitions] or None,
        # No Debugger hook and no profiler. Left on, the SDK adds DebugHookConfig (the container's
        # smdebug hook saves tensors under output_path) and a ProfilerConfig that collects system
        # metrics to S3: extra writes and an extra hook in a training loop smtrain instruments
        # itself. With them off the request carries only ProfilerConfig {"DisableProfiler": true}.
        "debugger_hook_config": False,
        "disable_profiler": True,
        "sagemaker_session": session,
    }
    if spec.checkpoint_s3_uri:
        kwargs["checkpoint_s3_uri"] = spec.checkpoint_s3_uri
        # LocalPath only makes sense with an S3 URI (the SDK drops it otherwise); left out, the
        # container uses /opt/ml/checkpoints.
        if spec.checkpoint_local_path:
            kwargs["checkpoint_local_path"] = spec.checkpoint_local_path
    if spec.tensorboard_s3_uri:
        # Independent of the Debugger hook (off above): the SDK sends it as it is.
        from sagemaker.debugger import TensorBoardOutputConfig

        kwargs["tensorboard_output_config"] = TensorBoardOutputConfig(
            s3_output_path=spec.tensorboard_s3_uri, container_local_output_path=spec.tensorboard_local_path)
    if spec.keep_alive_seconds and spec.keep_alive_seconds > 0:
        kwargs["keep_alive_period_in_seconds"] = spec.keep_alive_seconds
    if spec.container_log_level is not None:
        kwargs["container_log_level"] = spec.container_log_level
    for name in ("max_retry_attempts", "output_kms_key", "volume_kms_key", "training_plan"):
        if getattr(spec, name) is not None:
            kwargs[name] = getattr(spec, name)
    for name in ("enable_remote_debug", "enable_infra_check", "disable_output_compression",
                 "enable_session_tag_chaining"):
        if getattr(spec, name):
            kwargs[name] = True
    if spec.model_uri:
        kwargs["model_uri"] = spec.model_uri
        kwargs["model_channel_name"] = spec.model_channel_name
    if spec.instance_groups:
        from sagemaker.instance_group import InstanceGroup

        groups = {name: InstanceGroup(name, kind, count) for name, kind, count in spec.instance_groups}
        kwargs["instance_groups"] = list(groups.values())
        if kwargs["distribution"] and "instance_groups" in kwargs["distribution"]:
            # SDK v2 takes the InstanceGroup objects themselves there, and sends their names.
            kwargs["distribution"]["instance_groups"] = [groups[n] for n in kwargs["distribution"]["instance_groups"]]

    try:
        with _default_boto_session(session.boto_session):
            estimator = TensorFlow(**kwargs)
        # Resolve the image now (offline, from the SDK's table) so a bad version, region or
        # instance type fails here rather than halfway through fit().
        estimator.training_image_uri()
    except ValueError as exc:
        raise ValueError(f"SageMaker SDK rejected the estimator: {exc}") from exc
    return estimator


# --------------------------------------------------------------------------------------------
# Dry run
# --------------------------------------------------------------------------------------------


_default_session_lock = threading.Lock()


@contextlib.contextmanager
def _default_boto_session(boto_session: boto3.Session) -> Iterator[None]:
    """Make `boto_session` boto3's default session for the duration of the block.

    EstimatorBase.__init__ builds a TensorBoardApp whose constructor calls boto3.client(), i.e.
    boto3's default session: that resolves credentials through the full default chain (IMDS
    probe, SSO, credential_process) even for a dry run. Pointing the default at the estimator's
    own session keeps one set of credentials, and none at all in a dry run.
    """
    import boto3

    with _default_session_lock:
        saved = boto3.DEFAULT_SESSION
        boto3.DEFAULT_SESSION = boto_session
        try:
            yield
        finally:
            boto3.DEFAULT_SESSION = saved


@contextlib.contextmanager
def _env_var_hidden(name: str) -> Iterator[None]:
    saved = os.environ.pop(name, None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ[name] = saved


def validate_job_name(job_name: str) -> None:
    """Raise ValueError unless `job_name` is a valid SageMaker training job name."""
    if not JOB_NAME.matches(job_name):
        raise ValueError(
            f"invalid training job name {job_name!r}: 1-63 letters, digits and hyphens, "
            "starting and ending with a letter or digit"
        )


def render_request(spec: EstimatorSpec, job_name: str) -> dict:
    """The exact keyword arguments the SDK would pass to CreateTrainingJob, computed offline.

    Runs estimator.fit() against a session that captures the request
    instead of sending it. Needs no credentials and opens no connection.
    """
    validate_job_name(job_name)
    session = make_session(spec.region)
    start_training(build_estimator(spec, session), spec, job_name)
    requests = [req for name, req in session.captured if name == "train"]
    if len(requests) != 1:
        raise RuntimeError(f"expected one CreateTrainingJob request, captured {len(requests)}")
    return requests[0]


def start_training(estimator: TensorFlow, spec: EstimatorSpec, job_name: str) -> None:
    """``estimator.fit()`` without waiting: the dry-run session captures the request."""
    validate_job_name(job_name)
    # With MLFLOW_TRACKING_URI set and network isolation on, fit() forces wait=True and then
    # contacts MLflow; smtrain follows jobs itself.
    with _env_var_hidden("MLFLOW_TRACKING_URI"):
        try:
            estimator.fit(training_inputs(spec), wait=False, logs=False, job_name=job_name,
                          experiment_config=dict(spec.experiment_config) if spec.experiment_config else None)
        except ValueError as exc:
            raise ValueError(f"SageMaker SDK rejected the job: {exc}") from exc


# --------------------------------------------------------------------------------------------
# From a Request, as smtrain configured the SDK
# --------------------------------------------------------------------------------------------


def estimator_spec(request: Request) -> Any:
    """The SDK-neutral description of the TensorFlow estimator (see backends.sagemaker)."""
    plan, spec = request.plan, request.plan.spec
    output = spec.output.rstrip("/")
    c = spec.compute
    tensorboard = tensorboard_s3_path(spec)
    return EstimatorSpec(
        region=plan.region,
        role=spec.role,
        entry_point=plan.entry_point,
        source_dir=request.source_uri,
        instance_type=None if c.instance_groups else plan.instance.name,
        instance_count=None if c.instance_groups else plan.nodes,
        framework_version=plan.framework_version,
        py_version=plan.py_version,
        # The SDK picks the image of a version it knows: that pick is what smtrain's own is compared with.
        image_uri=spec.tensorflow.image_uri or (None if plan.framework_version in tf_py_versions() else plan.image_uri),
        distribution=plan.distribution,
        hyperparameters=dict(plan.hyperparameters),
        output_path=output,
        code_location=output,
        volume_size_gb=volume_size_gb(c),
        max_run=c.max_run,
        use_spot=c.spot,
        max_wait=max_wait_seconds(c),
        checkpoint_s3_uri=spec.checkpoints,
        checkpoint_local_path=(spec.checkpoint_local_path or CHECKPOINT_LOCAL_PATH) if spec.checkpoints else None,
        keep_alive_seconds=c.keep_alive or None,
        subnets=spec.network.subnets,
        security_group_ids=spec.network.security_groups,
        network_isolation=spec.network.isolation,
        encrypt_inter_container_traffic=spec.network.encrypt_inter_container_traffic,
        environment=dict(plan.environment),  # the spec's, then smtrain's SMTRAIN_* variables
        tags=dict(spec.tags),
        metric_definitions=metric_definitions(plan.metrics),
        inputs={name: {"uri": ch.uri, "mode": ch.mode, "distribution": ch.distribution,
                       "instance_groups": ch.instance_groups, "file_system": None if
                       ch.file_system is None else {
                           "file_system_id": ch.file_system.id, "file_system_type": ch.file_system.type,
                           "directory_path": ch.file_system.directory,
                           "file_system_access_mode": ch.file_system.access_mode}}
                for name, ch in spec.inputs.items()},
        tensorboard_s3_uri=tensorboard,
        tensorboard_local_path=TENSORBOARD_LOCAL_PATH if tensorboard else None,
        max_retry_attempts=c.max_retry_attempts,
        output_kms_key=spec.output_kms_key,
        volume_kms_key=c.volume_kms_key,
        training_plan=c.training_plan,
        enable_remote_debug=c.remote_debug,
        enable_infra_check=c.infra_check,
        disable_output_compression=not spec.output_compression,
        enable_session_tag_chaining=spec.session_tag_chaining,
        model_uri=spec.model_uri,
        model_channel_name=spec.model_channel,
        instance_groups=tuple((g.name, g.instance_type, g.count) for g in c.instance_groups)
        if c.instance_groups else None,
        experiment_config=None if spec.tracking.sagemaker_experiment is None else {
            key: value for key, value in (("ExperimentName", spec.tracking.sagemaker_experiment.experiment),
                                          ("TrialName", spec.tracking.sagemaker_experiment.trial),
                                          ("RunName", spec.tracking.sagemaker_experiment.run)) if value},
    )


def build_tuner(tp: TuningPlan, spec: EstimatorSpec, session: sagemaker.Session) -> HyperparameterTuner:
    """The SDK's HyperparameterTuner over build_estimator(spec, session)."""
    estimator = build_estimator(spec, session)
    from sagemaker.parameter import CategoricalParameter, ContinuousParameter, IntegerParameter
    from sagemaker.tuner import HyperbandStrategyConfig, HyperparameterTuner, StrategyConfig

    ranges: dict[str, Any] = {}
    for r in tp.ranges:
        if r.kind == "categorical":
            ranges[r.name] = CategoricalParameter(r.value_texts())
        elif r.kind == "integer":
            ranges[r.name] = IntegerParameter(r.min, r.max, scaling_type=r.scaling)
        else:
            ranges[r.name] = ContinuousParameter(r.min, r.max, scaling_type=r.scaling)
    strategy_config = None
    if tp.hyperband is not None:
        strategy_config = StrategyConfig(HyperbandStrategyConfig(
            max_resource=tp.hyperband["MaxResource"], min_resource=tp.hyperband["MinResource"]))
    return HyperparameterTuner(
        estimator,
        objective_metric_name=tp.objective_metric,
        hyperparameter_ranges=ranges,
        # The tuner sends its own metric definitions, not the estimator's: the same list.
        metric_definitions=[dict(m) for m in spec.metric_definitions],
        strategy=tp.strategy,
        objective_type=tp.objective_type,
        max_jobs=tp.max_jobs,
        max_parallel_jobs=tp.max_parallel_jobs,
        max_runtime_in_seconds=tp.max_runtime,
        strategy_config=strategy_config,
        early_stopping_type=tp.early_stopping,
    )


def start_tuning(tuner: HyperparameterTuner, spec: EstimatorSpec, name: str) -> None:
    """``tuner.fit()`` without waiting: the dry-run session captures the request."""
    # The tuner reads estimator.model_data to look for JumpStart artifacts, and for an estimator that
    # never trained that property logs a warning meant for pipeline builders: not this user's concern.
    estimator_log = logging.getLogger("sagemaker.estimator")
    level = estimator_log.level
    estimator_log.setLevel(logging.ERROR)
    try:
        # include_cls_metadata=False: a framework estimator gets sagemaker_estimator_* anyway (the SDK
        # adds them for attach()); the trials' program ignores them.
        tuner.fit(training_inputs(spec), job_name=name, include_cls_metadata=False, wait=False)
    finally:
        estimator_log.setLevel(level)


def render_tuning_request(tp: TuningPlan, spec: EstimatorSpec, name: str) -> dict[str, Any]:
    """The exact CreateHyperParameterTuningJob request, offline (see the module's docstring)."""
    session = make_session(spec.region)
    start_tuning(build_tuner(tp, spec, session), spec, name)
    requests = [req for func, req in session.captured if func == "create_tuning_job"]
    if len(requests) != 1:
        raise RuntimeError(f"expected one CreateHyperParameterTuningJob request, captured {len(requests)}")
    return requests[0]
