"""Writes `<output>/failure`, which SageMaker shows as the job's FailureReason."""

from __future__ import annotations

import os
import sys
import tempfile
from typing import Mapping, Optional

# SageMaker keeps at most 1024 characters of FailureReason.
_MAX_REASON = 1000


def output_dir(environ: Optional[Mapping[str, str]] = None) -> str:
    """SM_OUTPUT_DIR, else <SAGEMAKER_BASE_DIR or /opt/ml>/output."""
    env = os.environ if environ is None else environ
    if env.get("SM_OUTPUT_DIR"):
        return env["SM_OUTPUT_DIR"]
    return os.path.join(env.get("SAGEMAKER_BASE_DIR") or "/opt/ml", "output")


def one_line(reason: str) -> str:
    """Collapse whitespace so the reason reads as one line, cut to SageMaker's limit."""
    text = " ".join(str(reason).split()) or "training failed"
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."


def write_failure(reason: str, environ: Optional[Mapping[str, str]] = None) -> Optional[str]:
    """Write the reason atomically (several MPI ranks may fail at once); return the path or None."""
    directory = output_dir(environ)
    path = os.path.join(directory, "failure")
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".failure.", dir=directory)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(one_line(reason) + "\n")
        os.replace(tmp, path)
        return path
    except OSError:
        # Nowhere to write: stderr still carries the reason.
        return None


def report(reason: str) -> str:
    """Say the reason on stderr as `ERROR: ...` and write it to the failure file; return the line."""
    from . import mlflow_run

    line = one_line(reason)
    mlflow_run.failed()  # the job's MLflow run, if any, ends FAILED
    print(f"ERROR: {line}", file=sys.stderr, flush=True)
    write_failure(line)
    return line
