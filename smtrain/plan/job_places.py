"""Where a job's things go, decided by the plan before any request exists: the container's paths smtrain
uses, the S3 places of TensorBoard's event files, and stand-ins of the job name and bundle URI's length."""

from __future__ import annotations

from smtrain.spec.model import Spec

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


def job_name_template(prefix: str) -> str:
    """A stand-in for the job name smtrain will make, of the same length."""
    return prefix + JOB_NAME_SUFFIX


def source_uri_template(output: str) -> str:
    """A stand-in for the bundle's S3 URI, of the same length."""
    return _SOURCE_TEMPLATE.format(output=output.rstrip("/"))


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
