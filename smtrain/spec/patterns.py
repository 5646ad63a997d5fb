"""The text patterns of the spec's fields: one copy for the loader, the JSON Schema and the CLI.

A pattern is written without anchors and matched whole (re.fullmatch). `^...$` would let
"name\\n" through, because Python's `$` also matches before a final newline. Each body uses only
syntax that Python's `re` and JSON Schema's ECMA-262 regexes read alike (no \\w, no \\Z), so the
schema states the same rule to an editor and to a Python validator (whole_text() anchors it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from smtrain import exit_codes
from smtrain.errors import UserError


def whole_text(body: str) -> str:
    """A JSON Schema pattern that `body` must match whole: `$` alone would let a final newline
    through a Python validator (jsonschema uses re.search); `(?![\\s\\S])` is the end in both dialects."""
    return f"^(?:{body})(?![\\s\\S])"


@dataclass(frozen=True)
class Pattern:
    body: str
    max_length: int | None = None
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_compiled", re.compile(self.body))

    def matches(self, value: object) -> bool:
        if not isinstance(value, str) or (self.max_length is not None and len(value) > self.max_length):
            return False
        return self._compiled.fullmatch(value) is not None

    def json_schema(self) -> dict[str, object]:
        """{"type": "string", "pattern": ...} with the anchors JSON Schema needs."""
        out: dict[str, object] = {"type": "string", "pattern": whole_text(self.body)}
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        return out


_LABEL = "[A-Za-z0-9](?:-*[A-Za-z0-9])*"  # letters and digits, inner hyphens
_HOST = "[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?"
_REPO_PART = "[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"

# Job names are <name>-<yyyymmdd-HHMMSS>-<4 hex>: 21 characters after the name, 63 in all.
NAME = Pattern(_LABEL, max_length=42)
JOB_NAME = Pattern(_LABEL, max_length=63)  # CreateTrainingJob's own rule for TrainingJobName
TUNING_JOB_NAME = Pattern(_LABEL, max_length=32)  # HyperParameterTuningJobName's, in botocore's model


def check_job_name(name: str, rule: Pattern = JOB_NAME, noun: str = "job", given_as: str | None = None) -> None:
    """Refuse (exit 2, one line) a job name SageMaker would refuse: botocore's model checks only its length. Local
    jobs' records and downloads are directories named after a job, so a name is checked before anything runs."""
    if not rule.matches(name):
        where = f" ({given_as})" if given_as else ""
        raise UserError(f"invalid {noun} name {name!r}{where}: 1-{rule.max_length} letters, digits and hyphens, "
                        "starting and ending with a letter or digit", exit_codes.USAGE)
ROLE = Pattern(r"arn:aws[a-z-]*:iam::[0-9]{12}:role/[A-Za-z0-9_+=,.@/-]{1,512}")
REGION = Pattern(r"[a-z]{2}(?:-gov|-iso[a-z]*)?-[a-z]+-[0-9]")
# The key part of an S3 URI may hold spaces, never control characters (a newline included).
S3_URI = Pattern(r"s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](?:/[^\x00-\x1f\x7f]*)?")
# "." and ".." would name the channel's own directory or its parent on a host.
CHANNEL = Pattern(r"(?!\.\.?$)[A-Za-z0-9._-]{1,64}")
# InstanceGroupName: the service model's ".+" of 1-64 characters; one line here, as it becomes a hyperparameter.
INSTANCE_GROUP = Pattern(r"[^\x00-\x1f\x7f]+", max_length=64)
ENV_NAME = Pattern(r"[A-Za-z_][A-Za-z0-9_]{0,511}")
FILE_SYSTEM_ID = Pattern(r"fs-[0-9a-f]{8,18}")  # FileSystemDataSource.FileSystemId: 11-21 characters
ABSOLUTE_PATH = Pattern(r"/[^\x00-\x1f\x7f]*", max_length=4096)  # a directory in a file system or the container
SUBNET = Pattern(r"subnet-[0-9a-f]{8,17}")
SECURITY_GROUP = Pattern(r"sg-[0-9a-f]{8,17}")
PYTHON_TAG = Pattern(r"py3[0-9]{1,2}")
# The bundled entrypoint's `data`: its own sources, or a module:function data hook in source_dir.
DATA_SOURCE = Pattern(r"channels|synthetic|[A-Za-z_][A-Za-z0-9_.]*:[A-Za-z_][A-Za-z0-9_]*")
# A metric as the metric line names it (`name=value`): Keras's names, letters, digits and _.
METRIC_NAME = Pattern(r"[A-Za-z_][A-Za-z0-9_]*", max_length=64)
TF_VERSION = Pattern(r"[0-9]+\.[0-9]+(?:\.[0-9]+)?")
# code.git: a commit as 7 to 40 hex digits (git's shortest abbreviation is 4; 7 is what it prints).
GIT_COMMIT = Pattern(r"[0-9a-fA-F]{7,40}")
# code.git.branch: git check-ref-format's rules for a branch, roughly: no space, control character or
# ~^:?*[\\, no "..", "@{" or "//", not starting with "-" (never read as an option) or "/", not ending with
# "/", "." or ".lock".
GIT_BRANCH = Pattern(r"(?!-)(?!/)(?!.*\.\.)(?!.*@\{)(?!.*//)(?!.*(?:/|\.|\.lock)$)[^\x00-\x20\x7f~^:?*\[\\]+",
                     max_length=255)
# CreateTrainingJob's KmsKeyId (OutputDataConfig, ResourceConfig.VolumeKmsKeyId): a key id, key ARN, alias
# or alias ARN, `[a-zA-Z0-9:/_-]*` up to 2048 in botocore's model (empty refused: leave the field out).
KMS_KEY = Pattern(r"[a-zA-Z0-9:/_-]+", max_length=2048)
# ResourceConfig.TrainingPlanArn in botocore's model: arn:aws[a-z\-]*:sagemaker:[a-z0-9\-]*:[0-9]{12}:training-plan/.*
MODEL_PACKAGE_GROUP = Pattern(r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]{9,16}:[0-9]{12}:model-package-group/[^\s]{1,2048}",
                              max_length=2048)
MODEL_PACKAGE = Pattern(r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]{9,16}:[0-9]{12}:model-package/[^\s]{1,2048}",
                        max_length=2048)
# MlflowConfig.MlflowResourceArn's pattern in botocore's model: a tracking server or an MLflow app.
MLFLOW_ARN = Pattern(r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:mlflow-[a-zA-Z-]*/[^\s]+", max_length=2048)
# MlflowConfig's experiment and run names: 1-256 characters (".*"), on one line here.
MLFLOW_NAME = Pattern(r"[^\x00-\x1f\x7f]+", max_length=256)
# ExperimentConfig's ExperimentEntityName: letters and digits, inner hyphens, up to 120.
EXPERIMENT_ENTITY = Pattern(r"[a-zA-Z0-9](?:-*[a-zA-Z0-9]){0,119}", max_length=120)
TRAINING_PLAN = Pattern(r"arn:aws[a-z-]*:sagemaker:[a-z0-9-]*:[0-9]{12}:training-plan/[^\s]+", max_length=2048)
# registry/repository[:tag][@sha256:digest], as Docker and ECR read an image reference; the
# registry is a host name with a dot or a port (or localhost), so "a b" or "ubuntu" is refused.
IMAGE_URI = Pattern(
    f"(?:{_HOST}(?:\\.{_HOST})+(?::[0-9]+)?|localhost(?::[0-9]+)?|{_HOST}:[0-9]+)"
    f"/{_REPO_PART}(?:/{_REPO_PART})*"
    r"(?::[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(?:@sha256:[a-f0-9]{64})?"
)
