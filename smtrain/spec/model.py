"""The job spec: YAML file -> validated, typed Spec, or every problem with its file:line:column.

The pydantic models below are the user-facing contract; `smtrain schema` prints their JSON Schema.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, PlainValidator, ValidationError, WithJsonSchema

from smtrain.aws_config import default_region
from smtrain.spec.problems import Path_, Problem, SpecError
from smtrain.spec.units import parse_duration, parse_size
from smtrain.spec.yaml_source import SourceMap, load_yaml

STRATEGIES = ("auto", "none", "mirrored", "multi_worker_mirrored", "parameter_server", "horovod", "smddp")

# Job names are <name>-<yyyymmdd-HHMMSS>-<4 hex>: 21 characters after the name, 63 in all.
_NAME = re.compile(r"^(?=.{1,42}$)[A-Za-z0-9](?:-*[A-Za-z0-9])*$")
_ROLE = re.compile(r"^arn:aws[a-z-]*:iam::\d{12}:role/[\w+=,.@/-]{1,512}$")
_REGION = re.compile(r"^[a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-\d$")
_S3 = re.compile(r"^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](?:/.*)?$")
_CHANNEL = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,511}$")
_TAG_TEXT = re.compile(r"^[\w\s.:/=+\-@]*$", re.UNICODE)
_SUBNET = re.compile(r"^subnet-[0-9a-f]{8,17}$")
_SG = re.compile(r"^sg-[0-9a-f]{8,17}$")
_PY = re.compile(r"^py3\d{1,2}$")
_VERSION = re.compile(r"^\d+\.\d+(?:\.\d+)?$")

MAX_RUN_LIMIT = 28 * 86400  # SageMaker's ceiling for MaxRuntimeInSeconds / MaxWaitTimeInSeconds


def _checked(kind: str, pattern: re.Pattern[str], hint: str) -> Any:
    def check(value: object) -> str:
        if not isinstance(value, str) or not pattern.match(value):
            raise ValueError(f"{value!r} is not {kind}: {hint}")
        return value

    return PlainValidator(check)


def _size(value: object) -> int:
    return parse_size(value)


def _duration(value: object) -> int:
    return parse_duration(value)


def _processes(value: object) -> int | str:
    if value == "auto":
        return "auto"
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str) and value.isdigit() and int(value) >= 1:
        return int(value)
    raise ValueError(f"{value!r} is not 'auto' or a positive whole number")


def _scalar_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (str, int, float)):
        return str(value)
    raise ValueError(f"expected a plain value (text or number), not {type(value).__name__}")


def _hyperparameter(value: object) -> str | int | float | bool:
    if isinstance(value, (str, int, float, bool)):
        return value
    raise ValueError(f"expected a plain value (text, number or true/false), not {type(value).__name__}")


Size = Annotated[int, PlainValidator(_size),
                 WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0},
                                           {"type": "string", "pattern": r"^\d+(\.\d+)?\s*([KMGT]i?B?)?$"}],
                                 "description": "bytes, or a size such as 40GB (10^9) or 100GiB (2^30)"})]
Duration = Annotated[int, PlainValidator(_duration),
                     WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 0},
                                               {"type": "string", "pattern": r"^\d+(\.\d+)?\s*[smhd]?$"}],
                                     "description": "seconds, or a duration such as 90m, 6h, 1d"})]
ProcessesPerHost = Annotated[int | str, PlainValidator(_processes),
                             WithJsonSchema({"anyOf": [{"const": "auto"}, {"type": "integer", "minimum": 1}]})]
Text = Annotated[str, PlainValidator(_scalar_text), WithJsonSchema({"type": ["string", "number", "boolean"]})]
HyperValue = Annotated[str | int | float | bool, PlainValidator(_hyperparameter),
                       WithJsonSchema({"type": ["string", "number", "boolean"]})]
S3Uri = Annotated[str, _checked("an S3 URI", _S3, "write s3://bucket/prefix"),
                  WithJsonSchema({"type": "string", "pattern": "^s3://"})]
# Inputs and output may also be local (file:// or a path) for `submit --local`.
DataUri = Annotated[str, PlainValidator(lambda v: _data_uri(v)), WithJsonSchema({"type": "string"})]


def _data_uri(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected an s3:// URI, a file:// URI or a local path")
    if value.startswith("s3://") and not _S3.match(value):
        raise ValueError(f"{value!r} is not a valid S3 URI: write s3://bucket/prefix")
    if re.match(r"^[a-z][a-z0-9+.-]*://", value) and not value.startswith(("s3://", "file://")):
        raise ValueError(f"{value!r}: only s3://, file:// or a local path are supported")
    return value


def _key(kind: str, ok: Any, hint: str) -> Any:
    def check(value: object) -> str:
        if not isinstance(value, str) or not ok(value):
            raise ValueError(f"{value!r} is not {kind}: {hint}")
        return value

    return PlainValidator(check)


ChannelName = Annotated[str, _key("a channel name", _CHANNEL.match, "1-64 letters, digits, '.', '-' or '_'")]
EnvName = Annotated[str, _key("an environment variable name", _ENV_NAME.match, "letters, digits and _")]
TagKey = Annotated[str, _key("a tag key", lambda k: 1 <= len(k) <= 128 and _TAG_TEXT.match(k)
                             and not k.lower().startswith("aws:"),
                             "1-128 letters, digits, spaces or _.:/=+-@, not starting with aws:")]
HyperName = Annotated[str, _key("a hyperparameter name", lambda k: bool(k) and not k.startswith("sagemaker_"),
                                "names starting with sagemaker_ are SageMaker's own")]


def _tag_value(value: object) -> str:
    text = _scalar_text(value)
    if len(text) > 256 or not _TAG_TEXT.match(text):
        raise ValueError("tag values are up to 256 letters, digits, spaces or _.:/=+-@")
    return text


TagValue = Annotated[str, PlainValidator(_tag_value), WithJsonSchema({"type": ["string", "number", "boolean"]})]


def _limited(value: object) -> int:
    seconds = parse_duration(value)
    if seconds > MAX_RUN_LIMIT:
        raise ValueError(f"{value!r} is over SageMaker's limit of 28 days")
    return seconds


LimitedDuration = Annotated[int, PlainValidator(_limited),
                            WithJsonSchema({"anyOf": [{"type": "integer", "minimum": 1},
                                                      {"type": "string", "pattern": r"^\d+(\.\d+)?\s*[smhd]?$"}],
                                            "description": "seconds, or a duration such as 90m, 6h, 1d"})]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class TensorFlowSpec(_Model):
    version: Annotated[str, _checked("a version", _VERSION, 'write it quoted, such as "2.19"')] | None = Field(
        None, description="SageMaker TensorFlow training image version, e.g. \"2.19\"")
    python: Annotated[str, _checked("a Python tag", _PY, "such as py310 or py312")] | None = Field(
        None, description="py310, py312, ...; inferred from version when omitted")
    image_uri: str | None = Field(None, description="a training image URI to use instead of SageMaker's")


class ComputeSpec(_Model):
    instance_type: str = Field("auto", description='"auto" or an ml.* instance type')
    gpu: str | None = Field(None, description="for auto: GPU model wanted (A100, H100, V100, T4, A10G, L4, L40S, ...)")
    gpus_per_node: int = Field(1, ge=1, description="for auto: at least this many GPUs per node")
    min_gpu_memory: Size | None = Field(None, description="for auto: memory per GPU, e.g. 40GB")
    nodes: int = Field(1, ge=1, le=100, description="number of instances")
    volume_size: Size = Field(30 * 10**9, description="EBS volume per instance")
    spot: bool = Field(False, description="managed spot training")
    max_run: LimitedDuration = Field(86400, description="MaxRuntimeInSeconds")
    max_wait: LimitedDuration | None = Field(None, description="spot only: MaxWaitTimeInSeconds, >= max_run")
    keep_alive: Duration = Field(0, description="warm-pool keep-alive period")


class DistributionSpec(_Model):
    strategy: Literal[STRATEGIES] = "auto"  # type: ignore[valid-type]
    processes_per_host: ProcessesPerHost = Field("auto", description="horovod/smddp: default = GPUs per node")
    mpi_options: str = Field("", description="extra mpirun options (horovod/smddp)")


class TrainingSpec(_Model):
    """Hyperparameters of the bundled entrypoint (entrypoints/README.md documents each)."""

    model: str = Field("mlp", description="mlp, cnn, resnet50, or module:function in your source_dir")
    epochs: int = Field(10, ge=1)
    batch_size_per_replica: int = Field(64, ge=1)
    learning_rate: float = Field(0.001, gt=0, description="for one replica; scaled by lr_scaling")
    lr_scaling: Literal["none", "linear", "sqrt"] = "linear"
    warmup_epochs: float = Field(0, ge=0)
    optimizer: Literal["adam", "sgd"] = "adam"
    mixed_precision: Literal["auto", "on", "off"] = "auto"
    xla: bool = False
    steps_per_execution: int | None = Field(None, ge=1)
    checkpoint_every_steps: int | None = Field(None, ge=0)
    data: Literal["channels", "synthetic"] = "channels"
    data_format: Literal["auto", "npz", "tfrecord", "csv"] = "auto"
    seed: int | None = None


class ChannelSpec(_Model):
    uri: DataUri
    mode: Literal["File", "FastFile", "Pipe"] | None = None
    distribution: Literal["FullyReplicated", "ShardedByS3Key"] | None = None


class CodeSpec(_Model):
    source_dir: str | None = Field(None, description="your code, relative to this file")
    entry_point: str | None = Field(None, description="a script in source_dir; default: the bundled entrypoint")
    requirements: str | None = Field(None, description="requirements file, relative to source_dir")
    use_gitignore: bool = Field(True, description="leave out what .gitignore ignores")
    allow_secrets: tuple[str, ...] = Field((), description="gitignore-style patterns of secret-looking files to allow")
    max_bundle_size: Size = Field(100 * 10**6, description="largest sourcedir.tar.gz accepted")


class NetworkSpec(_Model):
    subnets: tuple[Annotated[str, _checked("a subnet id", _SUBNET, "such as subnet-0abc1234")], ...] = ()
    security_groups: tuple[Annotated[str, _checked("a security group id", _SG, "such as sg-0abc1234")], ...] = ()
    isolation: bool = False
    encrypt_inter_container_traffic: bool = False


class Spec(_Model):
    """A training job."""

    model_config = ConfigDict(extra="forbid", frozen=True, title="smtrain job spec")

    name: Annotated[str, _checked("a job name prefix", _NAME, "up to 42 letters, digits and hyphens "
                                  "(the job name adds 21 characters within SageMaker's 63), starting and ending with "
                                  "a letter or digit")]
    role: Annotated[str, _checked("an IAM role ARN", _ROLE, "write the full ARN, "
                                  "arn:aws:iam::123456789012:role/NAME")]
    region: Annotated[str, _checked("an AWS region", _REGION, "such as us-east-1")] | None = None
    tensorflow: TensorFlowSpec
    compute: ComputeSpec = ComputeSpec()
    distribution: DistributionSpec = DistributionSpec()
    training: TrainingSpec = TrainingSpec()
    code: CodeSpec = CodeSpec()
    inputs: dict[ChannelName, ChannelSpec] = Field(default_factory=dict, description="channel name -> URI or {uri, mode}")
    output: DataUri = Field(description="where model, output and code go (s3://, or local for --local)")
    checkpoints: S3Uri | None = Field(None, description="checkpoint S3 URI; required when compute.spot is true")
    hyperparameters: dict[HyperName, HyperValue] = Field(default_factory=dict, description="passed through as they are")
    environment: dict[EnvName, Text] = Field(default_factory=dict)
    tags: dict[TagKey, TagValue] = Field(default_factory=dict)
    network: NetworkSpec = NetworkSpec()


@dataclass(frozen=True)
class LoadedSpec:
    """A valid spec with what it was read from: positions for later messages, the base for relative paths."""

    spec: Spec
    source: SourceMap
    base_dir: Path

    @property
    def region(self) -> str | None:
        return self.spec.region or default_region()

    def path(self, relative: str) -> Path:
        return (self.base_dir / relative).resolve()

    def problem(self, path: Path_, message: str) -> Problem:
        return Problem(path, message, self.source.locate(path))


def _normalise(data: dict[str, Any]) -> None:
    """Shorthands the schema allows: `train: s3://...` for a channel; version numbers left unquoted."""
    inputs = data.get("inputs")
    if isinstance(inputs, dict):
        for name, value in inputs.items():
            if isinstance(value, str):
                inputs[name] = {"uri": value}


def _fix_unquoted_version(data: dict[str, Any], smap: SourceMap) -> None:
    # YAML reads `version: 2.10` as the float 2.1: take the text as written instead.
    tf = data.get("tensorflow")
    raw = smap.raw.get(("tensorflow", "version"))
    if isinstance(tf, dict) and isinstance(tf.get("version"), (int, float)) and raw:
        tf["version"] = raw


def _submodel(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The model a field holds, and whether it sits behind a mapping key (dict[str, Model])."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation, False
    args = getattr(annotation, "__args__", ())
    if getattr(annotation, "__origin__", None) is dict and len(args) == 2:
        inner, _ = _submodel(args[1])
        return inner, True
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
            problems.append(Problem(loc, f"unknown field '{loc[-1]}'{hint}", smap.locate(loc, at_key=True)))
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
    if spec.tensorflow.version is None and spec.tensorflow.image_uri is None:
        out.append(loaded.problem(("tensorflow",), "give tensorflow.version (such as \"2.19\") or "
                                                   "tensorflow.image_uri"))
    if c.spot and spec.checkpoints is None:
        out.append(loaded.problem(("compute", "spot"), "spot training needs `checkpoints: s3://...` so that an "
                                  "interrupted job resumes instead of starting over"))
    if c.max_wait is not None and not c.spot:
        out.append(loaded.problem(("compute", "max_wait"), "max_wait applies only to spot training: "
                                  "set compute.spot: true or remove max_wait"))
    if c.spot and c.max_wait is not None and c.max_wait < c.max_run:
        out.append(loaded.problem(("compute", "max_wait"), f"max_wait ({c.max_wait}s) must be at least "
                                  f"max_run ({c.max_run}s): it includes the time spent waiting for spot capacity"))
    if c.volume_size < 10**9:
        out.append(loaded.problem(("compute", "volume_size"), "a training volume needs at least 1GB"))
    if bool(spec.network.subnets) != bool(spec.network.security_groups):
        out.append(loaded.problem(("network",), "give both subnets and security_groups (a VPC needs both), "
                                  "or neither"))
    clash = sorted(set(spec.hyperparameters) & set(TrainingSpec.model_fields))
    for key in clash:
        out.append(loaded.problem(("hyperparameters", key), f"'{key}' is a training field: set training.{key}"))
    code = spec.code
    if code.source_dir is not None:
        src = loaded.path(code.source_dir)
        if not src.is_dir():
            out.append(loaded.problem(("code", "source_dir"), f"directory not found: {code.source_dir}"))
        else:
            if code.entry_point and not (src / code.entry_point).is_file():
                out.append(loaded.problem(("code", "entry_point"), f"{code.entry_point} not found in source_dir"))
            if code.requirements and not (src / code.requirements).is_file():
                out.append(loaded.problem(("code", "requirements"), f"{code.requirements} not found in source_dir"))
    elif code.entry_point or code.requirements:
        field = "entry_point" if code.entry_point else "requirements"
        out.append(loaded.problem(("code", field), "needs code.source_dir"))
    if "/" not in spec.training.model and ":" in spec.training.model and code.source_dir is None:
        out.append(loaded.problem(("training", "model"), "a module:function model lives in your code: "
                                  "set code.source_dir"))
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


def apply_overrides(data: dict[str, Any], smap: SourceMap, overrides: Sequence[str]) -> list[Problem]:
    problems = []
    for expr in overrides:
        key, sep, value = expr.partition("=")
        path = tuple(p for p in key.strip().split("."))
        if not sep or not all(path):
            problems.append(Problem((), f"--set {expr!r}: write FIELD.PATH=VALUE, such as compute.nodes=4"))
            continue
        if path[0] == "inputs" and len(path) == 2:
            value_ = _override_value(value)
            _set_path(data, path, {"uri": value_} if isinstance(value_, str) else value_)
        else:
            _set_path(data, path, _override_value(value))
        smap.overridden[path] = expr
    return problems


def load_spec(path: str | os.PathLike[str], overrides: Sequence[str] = (),
              env: Mapping[str, str] | None = None) -> LoadedSpec:
    """Read, interpolate, override and validate a job spec; raise SpecError listing every problem."""
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([Problem((), f"{file}: no such file")]) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError([Problem((), f"{file}: cannot read: {exc}")]) from None
    data, smap = load_yaml(text, str(file), os.environ if env is None else env)
    problems = apply_overrides(data, smap, overrides)
    _normalise(data)
    _fix_unquoted_version(data, smap)
    try:
        spec = Spec.model_validate(data)
    except ValidationError as exc:
        raise SpecError(problems + _problems_from(exc, smap)) from None
    loaded = LoadedSpec(spec, smap, file.resolve().parent)
    problems += _check(loaded)
    if problems:
        raise SpecError(problems)
    return loaded


def json_schema() -> dict[str, Any]:
    """The JSON Schema of the job spec, from the same models that validate it."""
    schema = Spec.model_json_schema()
    # A channel may be written as its URI alone; the loader expands it before validation.
    channel = schema["properties"]["inputs"]["additionalProperties"]
    schema["properties"]["inputs"]["additionalProperties"] = {"anyOf": [{"type": "string"}, channel]}
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
