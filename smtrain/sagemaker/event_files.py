"""A SageMaker job's TensorBoard event files: where SageMaker put them, and a copy of them here.

SageMaker uploads the container's TensorBoardOutputConfig.LocalPath (/opt/ml/output/tensorboard) to
<S3OutputPath>/<job>/tensorboard-output/ while the job runs. `smtrain tensorboard JOB` downloads every
object under that prefix into a directory of this machine, keeping the relative layout (train/,
validation/), so that `tensorboard --logdir` reads it as the program wrote it. Downloading again
fetches only what changed: a writer appends to its event file, so a file S3 holds at another size
than the copy here is fetched again; one of the same size is left alone.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.plan.request_preview import tensorboard_files_uri
from smtrain.sagemaker.upload import split_s3_uri

CACHE_ENV = "XDG_CACHE_HOME"
_CHUNK = 1 << 20
# The name a file is downloaded under before it takes its own: no "tfevents" in it, so a TensorBoard
# already reading the directory never picks up half a file.
_PARTIAL = ".smtrain-download-{pid}"


def default_directory(job: str) -> Path:
    """$XDG_CACHE_HOME/smtrain/tensorboard/<job>, else ~/.cache/smtrain/tensorboard/<job>."""
    base = os.environ.get(CACHE_ENV, "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"  # the XDG spec ignores a relative one
    return root / "smtrain" / "tensorboard" / job


def event_files_uri(description: dict[str, Any]) -> str:
    """Where SageMaker keeps the event files of the job DescribeTrainingJob `description` answers for."""
    name = description["TrainingJobName"]
    s3_path = (description.get("TensorBoardOutputConfig") or {}).get("S3OutputPath")
    if not s3_path:
        raise UserError(f"training job {name} has no TensorBoardOutputConfig, so SageMaker keeps no TensorBoard "
                        "event files of it (its spec said `tensorboard: false`, or smtrain did not submit it)",
                        exit_codes.API)
    return tensorboard_files_uri(s3_path, name)


def _relative(key: str, prefix: str) -> tuple[str, ...] | None:
    """The parts of `key` below `prefix`; None for a "folder" marker. A key that would climb out is refused."""
    rest = key[len(prefix):]
    if not rest or rest.endswith("/"):
        return None
    parts = tuple(p for p in rest.split("/") if p not in ("", "."))  # S3 keeps `a//b` and `./a` as written
    if not parts or ".." in parts:
        raise UserError(f"refusing to download {key!r}: its name would put it outside the download directory",
                        exit_codes.USAGE)
    return parts


def _fetch(s3: Any, bucket: str, key: str, target: Path) -> None:
    """One object to `target`, whole or not at all (written under another name, then renamed)."""
    body = s3.get_object(Bucket=bucket, Key=key)["Body"]
    partial = target.with_name(_PARTIAL.format(pid=os.getpid()))
    try:
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(partial, "wb") as out:
                for chunk in body.iter_chunks(_CHUNK):
                    out.write(chunk)
            os.replace(partial, target)
        except OSError as exc:
            raise UserError(f"cannot write {target}: {exc.strerror or exc}", exit_codes.USAGE) from None
    finally:
        partial.unlink(missing_ok=True)


def download(s3: Any, uri: str, directory: Path) -> int:
    """Every object under the S3 prefix `uri` into `directory`, at the same relative path; how many there are.

    AWS errors propagate (the caller turns them into one line); a directory that cannot be written is a
    UserError (exit 2).
    """
    bucket, prefix = split_s3_uri(uri)
    count = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for obj in page.get("Contents", []):
            parts = _relative(obj["Key"], prefix)
            if parts is None:
                continue
            target = directory.joinpath(*parts)
            count += 1
            if target.is_file() and target.stat().st_size == obj.get("Size"):
                continue  # this copy is current: event files only grow
            _fetch(s3, bucket, obj["Key"], target)
    return count
