"""SDK v2 estimator arguments -> the spec that sends the same request, and every argument it could not carry, with
where it is written and why (`smtrain import`; README "Coming from the SageMaker SDK" is the table).

Works on a Launcher (smtrain.spec.launcher) whether it was read from a launcher's code or made from a described
training job: the arguments as the SDK's TensorFlow estimator takes them, fit()'s inputs and job name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from smtrain.redact import looks_secret
from smtrain.spec import patterns
from smtrain.spec.launcher import Arg, Launcher, SdkObject, Templated, Unknown

__all__ = ["BUCKET_VARIABLE", "CHECKPOINT_DEFAULT", "ROLE_VARIABLE", "Imported", "Note", "spec_data"]

# The environment variables an imported spec reads where the launcher looks a value up when it runs.
ROLE_VARIABLE = "SMTRAIN_ROLE"
BUCKET_VARIABLE = "SMTRAIN_BUCKET"
CHECKPOINT_DEFAULT = "/opt/ml/checkpoints"
# The SDK's default base job name for its TensorFlow estimator (the image's repository name).
SDK_BASE_NAME = "tensorflow-training"
_INPUT_MODES = ("File", "FastFile", "Pipe")
_DISTRIBUTIONS = ("FullyReplicated", "ShardedByS3Key")

# What smtrain makes itself (README "The SageMaker SDK"): the request differs there by design.
SMTRAIN_OWN = {
    "metric_definitions": "smtrain writes the job's MetricDefinitions from its own epoch lines",
    "debugger_hook_config": "smtrain sends no Debugger hook (the docs' \"The SageMaker SDK\")",
    "rules": "Debugger rules are not sent (the docs' \"The SageMaker SDK\")",
    "profiler_config": "the profiler is off in smtrain's jobs (the docs' \"The SageMaker SDK\")",
    "disable_profiler": "the profiler is off in smtrain's jobs (the docs' \"The SageMaker SDK\")",
    "enable_sagemaker_metrics": "smtrain always turns SageMaker's metrics time series on",
    "code_location": "smtrain uploads the code under output, named by its sha256",
    "sagemaker_session": "smtrain makes its own session (region: the spec's, else the environment's)",
}
# Arguments smtrain has no spec field for yet: the import names them (issue tracker: "every estimator argument").
NO_FIELD_YET = {
    "training_repository_access_mode": "a private image registry has no spec field yet",
    "training_repository_credentials_provider_arn": "a private image registry has no spec field yet",
    "container_entry_point": "smtrain runs the TensorFlow image's own entry point",
    "container_arguments": "smtrain runs the TensorFlow image's own entry point",
    "compiler_config": "the Training Compiler is not supported for TensorFlow 2.12 and later images",
}
# Arguments of SDK v2's TensorFlow/Estimator that map to a spec field (handled below, one by one).
MAPPED = ("entry_point", "source_dir", "git_config", "role", "instance_type", "instance_count", "volume_size",
          "volume_kms_key", "max_run", "use_spot_instances", "max_wait", "keep_alive_period_in_seconds",
          "max_retry_attempts", "training_plan", "output_path", "output_kms_key", "checkpoint_s3_uri",
          "checkpoint_local_path", "subnets", "security_group_ids", "enable_network_isolation",
          "encrypt_inter_container_traffic", "environment", "hyperparameters", "tags", "framework_version",
          "py_version", "image_uri", "distribution", "tensorboard_output_config", "base_job_name", "input_mode",
          "container_log_level", "model_dir", "enable_remote_debug", "enable_infra_check", "disable_output_compression",
          "enable_session_tag_chaining", "dependencies", "model_uri", "model_channel_name", "instance_groups",
          "experiment_config")
# What a described job carries that SDK v2 has no argument for (smtrain.sagemaker.job_import names it so).
JOB_ONLY = ("model_package_config", "smtrain_settings", "max_pending", "unread_fields", "mlflow_config")


@dataclass(frozen=True)
class Note:
    where: str  # "launch.py:12" or "job NAME"
    argument: str
    message: str
    taken: bool = False  # a value taken from somewhere the launcher may change when it runs (an option's default)
    line: int = 0  # for the order of the notes: the launcher's

    def render(self) -> str:
        return f"{self.where}: {self.argument}: {self.message}" if self.argument else f"{self.where}: {self.message}"


@dataclass(frozen=True)
class Imported:
    data: dict[str, Any]  # the spec, as YAML data (placeholders as ${VAR})
    notes: tuple[Note, ...]  # what was not carried over, and why
    variables: tuple[str, ...]  # environment variables the spec reads (role, output) that the launcher computed


_DROPPED = object()


def _escaped(value: Any, variables: set[str], dropped: list[tuple[str, Unknown]], path: str = "") -> Any:
    """A value as the spec reads it back: a literal "${" written "$${" (the loader expands ${VAR}), a Templated
    text's own ${VAR} kept (its variables added to `variables`); a value the launcher computes, wherever it sits,
    left out (added to `dropped` with its field)."""
    if isinstance(value, Unknown):
        dropped.append((path, value))
        return _DROPPED
    if isinstance(value, Templated):
        variables.update(value.variables)
        return str(value)
    if isinstance(value, str):
        return value.replace("${", "$${")
    if isinstance(value, dict):
        items = ((k, _escaped(v, variables, dropped, f"{path}.{k}" if path else str(k))) for k, v in value.items())
        return {k: v for k, v in items if v is not _DROPPED}
    if isinstance(value, list):
        items = (_escaped(v, variables, dropped, f"{path}[{i}]") for i, v in enumerate(value))
        return [v for v in items if v is not _DROPPED]
    return value


class _Mapping:
    def __init__(self, launcher: Launcher, base: str, region: str | None) -> None:
        self.launcher = launcher
        self.region = region
        self.base = base  # where relative code paths of the launcher start, relative to the spec (POSIX)
        self.data: dict[str, Any] = {}
        self.notes: list[Note] = []

    def note(self, arg: Arg | None, name: str, message: str, taken: bool = False) -> None:
        line = arg.line if arg else self.launcher.line
        self.notes.append(Note(self.launcher.where(line), name, message, taken, line))

    def known(self, name: str, kinds: type | tuple[type, ...] = object) -> Any:
        """The argument's value when it is known and of `kinds`; else None, with a note saying why."""
        arg = self.launcher.arguments.get(name)
        if arg is None or arg.value is None:
            return None
        if isinstance(arg.value, Unknown) and arg.value.variable:
            self.note(arg, name, f"{arg.value}: the spec reads ${{{arg.value.variable}}}")
            return Templated(f"${{{arg.value.variable}}}", (arg.value.variable,))
        if isinstance(arg.value, Unknown):
            self.note(arg, name, f"not imported: {arg.value}")
            return None
        if "default" in arg.source:
            self.note(arg, name, f"{arg.value!r}, {arg.source}", taken=True)
        if isinstance(arg.value, Templated):
            self.note(arg, name, f"{arg.value!s}: the spec reads {', '.join(f'${{{v}}}' for v in arg.value.variables)} "
                      "(looked up by the launcher when it runs)")
        wanted = kinds if isinstance(kinds, tuple) else (kinds,)
        # bool is an int to Python, never to the SDK's numeric arguments.
        if not isinstance(arg.value, wanted) or isinstance(arg.value, bool) and bool not in wanted and object not in wanted:
            self.note(arg, name, f"not imported: {arg.value!r} is not what the SDK takes here")
            return None
        return arg.value

    def put(self, dotted: str, value: Any) -> None:
        *parents, last = dotted.split(".")
        place = self.data
        for part in parents:
            place = place.setdefault(part, {})
        place[last] = value

    # --- the arguments ----------------------------------------------------------------------------------------

    def run(self) -> Imported:
        args = self.launcher.arguments
        self._name()
        role = self.known("role", str)
        if role is None:
            self.note(args.get("role"), "role", f"not known: the spec reads ${{{ROLE_VARIABLE}}}")
            role = Templated(f"${{{ROLE_VARIABLE}}}", (ROLE_VARIABLE,))
        self.data["role"] = role
        if self.region:
            self.data["region"] = self.region
        self._tensorflow()
        self._compute()
        self._distribution()
        self._code()
        self._inputs()
        self._output()
        self._scalars()
        self._tracking()
        for field in self.known("unread_fields", list) or []:
            self.note(args["unread_fields"], field, "not imported: smtrain has no spec field for this member of the job")
        for name, arg in args.items():
            if name in SMTRAIN_OWN:
                self.note(arg, name, f"left out: {SMTRAIN_OWN[name]}")
            elif name in NO_FIELD_YET:
                self.note(arg, name, f"not imported: {NO_FIELD_YET[name]}")
            elif name not in MAPPED and name not in JOB_ONLY:
                self.note(arg, name, f"not imported: not an argument of SDK v2's {self.launcher.kind} estimator "
                                     "that smtrain knows")
        for line, text in self.launcher.notes:  # what the reader saw around the estimator
            self.notes.append(Note(self.launcher.where(line), "", text, line=line))
        variables: set[str] = set()
        dropped: list[tuple[str, Unknown]] = []
        data = _escaped(self.data, variables, dropped)
        for field, unknown in dropped:
            self.note(None, field, f"not imported: {unknown}")
        return Imported(data, tuple(sorted(self.notes, key=lambda n: n.line)), tuple(sorted(variables)))

    def _name(self) -> None:
        base = self.known("base_job_name", str)
        if base is not None and not patterns.NAME.matches(base):
            self.note(self.launcher.arguments["base_job_name"], "base_job_name",
                      f"{base!r} is not a spec name (up to 42 letters, digits and hyphens): {SDK_BASE_NAME} instead")
            base = None
        if self.launcher.job_name is not None:
            self.note(self.launcher.job_name, "job_name", "smtrain names each job <name>-<time>-<4 hex>; the spec's "
                      "name is its prefix (smtrain submit --job-name NAME gives one exact name)")
        self.data["name"] = base or SDK_BASE_NAME

    def _tensorflow(self) -> None:
        version = self.known("framework_version", (str, int, float))
        python = self.known("py_version", str)
        image = self.known("image_uri", str)
        if version is not None:
            self.put("tensorflow.version", str(version))
        if python is not None:
            self.put("tensorflow.python", python)
        if image is not None:
            self.put("tensorflow.image_uri", image)
            if version is None:
                tag = image.rpartition(":")[2]
                guessed = tag.split("-")[0] if tag[:1].isdigit() else None
                if guessed and patterns.TF_VERSION.matches(guessed):
                    self.put("tensorflow.version", ".".join(guessed.split(".")[:2]))
                    self.note(self.launcher.arguments["image_uri"], "image_uri", f"tensorflow.version "
                              f"{'.'.join(guessed.split('.')[:2])} read from the image's tag (smtrain's checks of "
                              "strategies and Keras use it): correct it if the image holds another", taken=True)
                else:
                    self.note(self.launcher.arguments["image_uri"], "image_uri",
                              "the image's TensorFlow version is not in its tag: tensorflow.version is smtrain's "
                              "default; write the one the image holds")

    def _compute(self) -> None:
        for arg, field, kinds in (("instance_type", "instance_type", str), ("instance_count", "nodes", int),
                                  ("max_run", "max_run", int), ("max_wait", "max_wait", int),
                                  ("keep_alive_period_in_seconds", "keep_alive", int),
                                  ("max_retry_attempts", "max_retry_attempts", int),
                                  ("volume_kms_key", "volume_kms_key", str), ("training_plan", "training_plan", str)):
            value = self.known(arg, kinds)
            if value is not None:
                self.put(f"compute.{field}", value)
        pending = self.known("max_pending", int)  # a described job's MaxPendingTimeInSeconds
        if pending is not None:
            self.put("compute.max_pending", pending)
        size = self.known("volume_size", int)
        if size is not None:
            self.put("compute.volume_size", f"{size}GB")
        spot = self.known("use_spot_instances", bool)
        if spot:
            self.put("compute.spot", True)
        elif "max_wait" in self.data.get("compute", {}):
            del self.data["compute"]["max_wait"]
            self.note(self.launcher.arguments["max_wait"], "max_wait", "left out: without use_spot_instances "
                      "the SDK does not send it either")
        self._groups()
        if not {"instance_type", "instance_groups"} & set(self.data.get("compute", {})):
            self.note(self.launcher.arguments.get("instance_type"), "instance_type",
                      "not known: compute.instance_type is auto (smtrain picks the cheapest GPU instance that fits)")

    def _groups(self) -> None:
        """instance_groups' InstanceGroup objects as compute.instance_groups; all of them or none."""
        groups = self.known("instance_groups", list)
        if not groups:
            return
        out = []
        for group in groups:
            given = group.arguments if isinstance(group, SdkObject) and group.kind == "InstanceGroup" else {}
            name, kind, count = (given.get(k) for k in ("instance_group_name", "instance_type", "instance_count"))
            if not (isinstance(name, str) and isinstance(kind, str) and isinstance(count, int)):
                self.note(self.launcher.arguments["instance_groups"], "instance_groups",
                          f"not imported: {group!r} is not an InstanceGroup(name, type, count) written out")
                return
            out.append({"name": name, "instance_type": kind, "count": count})
        self.put("compute.instance_groups", out)

    def _distribution(self) -> None:
        arg = self.launcher.arguments.get("distribution")
        given = self.known("distribution", dict)
        strategy, options = "none", {}
        if given:
            enabled = [k for k, v in given.items() if isinstance(v, dict) and v.get("enabled", k == "smdistributed")]
            mpi = given.get("mpi") if isinstance(given.get("mpi"), dict) else {}
            smd = given.get("smdistributed") if isinstance(given.get("smdistributed"), dict) else {}
            if "multi_worker_mirrored_strategy" in enabled:
                strategy = "multi_worker_mirrored"
            elif "parameter_server" in enabled:
                strategy = "parameter_server"
            elif isinstance(smd.get("dataparallel"), dict) and smd["dataparallel"].get("enabled"):
                strategy = "smddp"
                options["mpi_options"] = smd["dataparallel"].get("custom_mpi_options", "")
            elif "mpi" in enabled:
                strategy = "horovod"
                # Unset, the SDK sends no processes_per_host and the container starts one per host.
                options["processes_per_host"] = mpi.get("processes_per_host", 1)
                options["mpi_options"] = mpi.get("custom_mpi_options", "")
            groups = given.get("instance_groups")
            if isinstance(groups, list) and groups:
                # The InstanceGroup objects (a launcher) or their names (a described job).
                names = [g.arguments.get("instance_group_name") if isinstance(g, SdkObject) else g for g in groups]
                if all(isinstance(n, str) for n in names):
                    options["instance_groups"] = names
                else:
                    self.note(arg, "distribution.instance_groups", f"not imported: {groups!r} holds a group "
                              "not written out")
            known_keys = {"multi_worker_mirrored_strategy", "parameter_server", "mpi", "smdistributed",
                          "instance_groups"}
            for key in given:
                if key not in known_keys:
                    self.note(arg, f"distribution.{key}", "not imported: not a strategy of SDK v2's TensorFlow "
                              "estimator that smtrain runs (the SDK ignores an unknown key)")
            if isinstance(smd.get("modelparallel"), dict) and smd["modelparallel"].get("enabled"):
                self.note(arg, "distribution.smdistributed.modelparallel", "not imported: model parallelism is "
                          "not a strategy smtrain runs")
        # Written always: left auto, smtrain would pick a strategy for the hardware where the SDK sends none.
        self.put("distribution.strategy", strategy)
        for key, value in options.items():
            if value not in ("", None):
                self.put(f"distribution.{key}", value)

    def _code(self) -> None:
        dependencies = self.known("dependencies", list)
        if dependencies:
            if all(isinstance(d, str) for d in dependencies):  # relative to the launcher, as the SDK reads them
                self.put("code.dependencies", [_joined(self.base, d) for d in dependencies])
            else:
                self.note(self.launcher.arguments["dependencies"], "dependencies",
                          f"not imported: {dependencies!r} holds a value computed when the launcher runs")
        entry = self.known("entry_point", str)
        source = self.known("source_dir", str)
        git = self.known("git_config", dict)
        if entry is None and "smtrain_settings" in self.launcher.arguments:
            if source is not None:  # smtrain's bundled entrypoint: the job's own files (hooks), if any
                self.put("code.source_dir", _joined(self.base, source))
            return
        if entry is None:
            self.note(self.launcher.arguments.get("entry_point"), "entry_point",
                      "no script: smtrain runs a script of yours or its own entrypoint; code is smtrain's bundled "
                      "entrypoint until you set code.entry_point")
            return
        if git is not None:
            arg = self.launcher.arguments["git_config"]
            repository = git.get("repo")
            if isinstance(repository, str):
                parts = urlsplit(repository)
                if "@" in parts.netloc and parts.scheme in ("http", "https"):
                    # https://user:token@host/...: the credentials stay out of the spec.
                    repository = urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
                    self.note(arg, "git_config.repo", "the credentials in its URL left out: smtrain clones with "
                              "your own git credentials and writes no secret")
            self.put("code.git.repository", repository)
            for key in ("branch", "commit"):
                if git.get(key) is not None:
                    self.put(f"code.git.{key}", git[key] if isinstance(git[key], Unknown) else str(git[key]))
            if source:
                self.put("code.git.directory", source)
            for secret in ("username", "password", "token", "2FA_enabled"):
                if git.get(secret):
                    self.note(arg, f"git_config.{secret}",
                              "left out: smtrain clones with your own git credentials and writes no secret")
            self.put("code.entry_point", entry)
            return
        if source is not None and source.startswith("s3://"):
            self.note(self.launcher.arguments["source_dir"], "source_dir",
                      f"an S3 archive ({source}): download and unpack it, then set code.source_dir")
            self.put("code.entry_point", entry)
            return
        if source is None:
            # The SDK packs entry_point's file alone; smtrain packs its directory (.gitignore'd files left out).
            parent = str(PurePosixPath(entry).parent)
            source, entry = parent, PurePosixPath(entry).name
            self.note(self.launcher.arguments["entry_point"], "entry_point", f"no source_dir: the SDK packs "
                      f"{entry} alone, the spec packs its directory ({source})")
        self.put("code.source_dir", _joined(self.base, source))
        self.put("code.entry_point", entry)

    def _inputs(self) -> None:
        mode = self.known("input_mode", str)
        arg = self.launcher.inputs
        channels: dict[str, Any] = {}
        value = arg.value if arg else None
        if isinstance(value, Unknown):
            self.note(arg, "fit(inputs)", f"not imported: {value}")
            value = None
        if isinstance(value, (str, SdkObject)):
            value = {"training": value}  # the SDK's own name for a single input
        if isinstance(value, dict):
            for name, item in value.items():
                channel = self._channel(arg, str(name), item, mode)
                if channel is not None:
                    channels[str(name)] = channel
        elif value is not None:
            self.note(arg, "fit(inputs)", f"not imported: {value!r} is not an input the SDK takes")
        if mode is not None and mode not in _INPUT_MODES:
            self.note(self.launcher.arguments["input_mode"], "input_mode", f"not imported: {mode!r} is not one of "
                      + ", ".join(_INPUT_MODES))
        elif mode not in (None, "File"):
            self.note(self.launcher.arguments["input_mode"], "input_mode", f"{mode} written as each channel's mode "
                      "(the same mode, set per channel)")
        if channels:
            self.data["inputs"] = channels

    def _channel(self, arg: Arg | None, name: str, item: Any, mode: str | None) -> Any:
        where = f"fit(inputs)[{name!r}]"
        if isinstance(item, Unknown):
            self.note(arg, where, f"not imported: {item}")
            return None
        if isinstance(item, str):
            uri, own = item, {}
        elif isinstance(item, SdkObject) and item.kind == "TrainingInput":
            own = dict(item.arguments)
            uri = own.pop("s3_data", None)
            if not isinstance(uri, str):
                self.note(arg, where, f"not imported: its s3_data is {uri}")
                return None
        elif isinstance(item, SdkObject) and item.kind == "FileSystemInput":
            fs = item.arguments
            if any(not isinstance(fs.get(k), str) for k in ("file_system_id", "file_system_type", "directory_path")):
                self.note(arg, where, "not imported: a FileSystemInput with a value computed when the launcher runs")
                return None
            system = {"id": fs["file_system_id"], "type": fs["file_system_type"], "directory": fs["directory_path"]}
            if fs.get("file_system_access_mode", "ro") != "ro":
                system["access_mode"] = fs["file_system_access_mode"]
            for key, value in fs.items():
                if key not in ("file_system_id", "file_system_type", "directory_path", "file_system_access_mode") \
                        and value is not None:
                    self.note(arg, f"{where}.{key}", f"not imported: {key}={value!r} has no spec field")
            return {"file_system": system}
        else:
            self.note(arg, where, f"not imported: {item!r} is not an input the SDK takes")
            return None
        if isinstance(uri, Templated) and uri.uploads:
            copy = "sync" if not uri.endswith("/" + os.path.basename(uri.uploads)) else "cp"
            self.note(arg, where, f"the launcher uploads {uri.uploads} to {uri} when it runs (sess.upload_data): "
                      f"upload it once (aws s3 {copy} {uri.uploads} {uri}), or give {uri.uploads} for --local")
        out: dict[str, Any] = {"uri": uri}
        channel_mode = own.pop("input_mode", None) or (mode if mode in _INPUT_MODES and mode != "File" else None)
        if channel_mode is not None:
            out["mode"] = channel_mode
        distribution = own.pop("distribution", None)
        if distribution not in (None, "FullyReplicated"):
            out["distribution"] = distribution
        groups = own.pop("instance_groups", None)
        if isinstance(groups, list) and groups and all(isinstance(g, str) for g in groups):
            out["instance_groups"] = groups
        elif groups:
            self.note(arg, f"{where}.instance_groups", f"not imported: {groups!r} is not a list of group names")
        for key, value in own.items():
            if value is not None and not (key == "s3_data_type" and value == "S3Prefix"):
                self.note(arg, f"{where}.{key}", f"not imported: channel option {key}={value!r} has no spec field")
        return out if len(out) > 1 else uri

    def _tracking(self) -> None:
        """A described job's MlflowConfig, and fit()'s experiment_config (SageMaker Experiments)."""
        mlflow = self.known("mlflow_config", dict)
        if mlflow and isinstance(mlflow.get("MlflowResourceArn"), str):
            self.put("tracking.mlflow", mlflow["MlflowResourceArn"])
            for key, field in (("MlflowExperimentName", "experiment"), ("MlflowRunName", "run")):
                if mlflow.get(key):
                    self.put(f"tracking.{field}", mlflow[key])
        experiment = self.known("experiment_config", dict)
        if not experiment:
            return
        fields = {"ExperimentName": "experiment", "TrialName": "trial", "RunName": "run"}
        for key, value in experiment.items():
            if key in fields and isinstance(value, str):
                self.put(f"tracking.sagemaker_experiment.{fields[key]}", value)
            elif value is not None:
                self.note(self.launcher.arguments["experiment_config"], f"experiment_config.{key}",
                          f"not imported: {value!r} has no spec field" if key not in fields else
                          f"not imported: {value}")

    def _output(self) -> None:
        output = self.known("output_path", str)
        if output is None:
            # The SDK's default: the session's bucket, s3://sagemaker-REGION-ACCOUNT/.
            output = Templated(f"s3://${{{BUCKET_VARIABLE}}}/", (BUCKET_VARIABLE,))
            self.note(self.launcher.arguments.get("output_path"), "output_path",
                      f"the SDK's default, the session's bucket: the spec reads ${{{BUCKET_VARIABLE}}}")
        self.data["output"] = output
        key = self.known("output_kms_key", str)
        if key is not None:
            self.data["output_kms_key"] = key
        model = self.known("model_uri", str)
        channel = self.known("model_channel_name", str)
        if model is not None:
            self.data["model_uri"] = model
            if channel not in (None, "model"):
                self.data["model_channel"] = channel
        elif channel is not None:
            self.note(self.launcher.arguments["model_channel_name"], "model_channel_name",
                      "left out: it names model_uri's channel, and model_uri is not imported")
        checkpoints = self.known("checkpoint_s3_uri", str)
        if checkpoints is not None:
            self.data["checkpoints"] = checkpoints
        local = self.known("checkpoint_local_path", str)
        if local is not None and checkpoints is None:
            self.note(self.launcher.arguments["checkpoint_local_path"], "checkpoint_local_path",
                      "left out: without checkpoint_s3_uri the SDK does not send it either")
        elif local is not None and local != CHECKPOINT_DEFAULT:
            self.data["checkpoint_local_path"] = local
        board = self.known("tensorboard_output_config", SdkObject)
        if board is not None:
            s3 = board.arguments.get("s3_output_path")
            if isinstance(s3, str):
                self.data["tensorboard"] = s3
            else:
                self.note(self.launcher.arguments["tensorboard_output_config"], "tensorboard_output_config",
                          f"not imported: its s3_output_path is {s3}")
            local_board = board.arguments.get("container_local_output_path")
            if local_board is not None:
                self.note(self.launcher.arguments["tensorboard_output_config"], "container_local_output_path",
                          "left out: smtrain's jobs write event files to /opt/ml/output/tensorboard")
        level = self.known("container_log_level", int)
        if level is not None and level != 20:
            self.note(self.launcher.arguments["container_log_level"], "container_log_level",
                      "not imported: smtrain's jobs log at INFO (20)")
        model_dir = self.launcher.arguments.get("model_dir")
        if model_dir is not None:
            self.note(model_dir, "model_dir", "not imported: smtrain sets model_dir as the SDK does by default")

    def _scalars(self) -> None:
        network = {"subnets": self.known("subnets", list), "security_groups": self.known("security_group_ids", list)}
        for key, value in network.items():
            if value:
                self.put(f"network.{key}", value)
        for arg, key in (("enable_network_isolation", "network.isolation"),
                         ("encrypt_inter_container_traffic", "network.encrypt_inter_container_traffic"),
                         ("enable_remote_debug", "compute.remote_debug"), ("enable_infra_check", "compute.infra_check"),
                         ("enable_session_tag_chaining", "session_tag_chaining")):
            if self.known(arg, bool):
                self.put(key, True)
        if self.known("disable_output_compression", bool):
            self.data["output_compression"] = False
        for dotted, value in (self.known("smtrain_settings", dict) or {}).items():  # a job smtrain made
            if value is not None:
                self.put(dotted, value)
        package = self.known("model_package_config", dict)  # a described job's ModelPackageConfig
        if package and package.get("ModelPackageGroupArn"):
            self.data["model_package"] = {"group": package["ModelPackageGroupArn"]}
            if package.get("SourceModelPackageArn"):
                self.data["model_package"]["source"] = package["SourceModelPackageArn"]
        environment = self.known("environment", dict)
        if environment:
            arg = self.launcher.arguments["environment"]
            kept: dict[str, Any] = {}
            for key, value in environment.items():
                if looks_secret(str(key)) and isinstance(value, str) and not isinstance(value, Templated):
                    # A secret's value stays out of the spec file: it reads the variable where smtrain runs.
                    self.note(arg, f"environment[{key!r}]", f"a secret-looking value left out: the spec reads "
                              f"${{{key}}}; export {key} where you run smtrain")
                    value = Templated(f"${{{key}}}", (str(key),))
                kept[str(key)] = value if isinstance(value, (str, Unknown)) else str(value)
            self.data["environment"] = kept
        tags = self.known("tags", (list, dict))
        if isinstance(tags, dict):
            tags = [{"Key": k, "Value": v} for k, v in tags.items()]
        if tags:
            out = {}
            for tag in tags:
                value = tag.get("Value", "") if isinstance(tag, dict) else None
                if isinstance(tag, dict) and isinstance(tag.get("Key"), str) and not isinstance(value, Unknown):
                    out[tag["Key"]] = value if isinstance(value, str) else str(value)
                else:
                    self.note(self.launcher.arguments["tags"], "tags", f"not imported: {tag!r} is not a "
                              "{'Key': ..., 'Value': ...} the SDK sends")
            if out:
                self.data["tags"] = out
        hps = self.known("hyperparameters", dict)
        if hps:
            arg = self.launcher.arguments["hyperparameters"]
            kept = {}
            for key, value in hps.items():
                if isinstance(value, Unknown):
                    self.note(arg, f"hyperparameters[{key!r}]", f"not imported: {value}")
                elif str(key).startswith("sagemaker_") or key == "model_dir":
                    self.note(arg, f"hyperparameters[{key!r}]", "not imported: SageMaker's own name, set by smtrain")
                elif not isinstance(value, (str, int, float, bool)):
                    self.note(arg, f"hyperparameters[{key!r}]", f"not imported: {value!r} is not a number, text or "
                              "flag (smtrain sends each value as its JSON text, as the SDK does)")
                else:
                    kept[str(key)] = value
            if kept:
                self.data["hyperparameters"] = kept


def _joined(base: str, path: str) -> str:
    """`path` (relative to the launcher's directory, or absolute) as seen from the spec's directory."""
    if os.path.isabs(path):
        return path
    return PurePosixPath(os.path.normpath(os.path.join(base, path))).as_posix() if base not in ("", ".") else \
        PurePosixPath(os.path.normpath(path)).as_posix()


def spec_data(launcher: Launcher, base: str = ".", region: str | None = None) -> Imported:
    """The spec that sends what `launcher` sends; `base`: the launcher's directory seen from the spec's;
    `region`: the spec's region when it is known (a described job's)."""
    return _Mapping(launcher, base, region).run()
