"""Helpers to write job specs for tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

BASE: dict[str, Any] = {
    "name": "test-job",
    "role": "arn:aws:iam::123456789012:role/SageMakerRole",
    "region": "us-east-1",
    # The default image (the newest AWS patches): an older one adds an end-of-patch warning to every plan.
    "tensorflow": {"version": "2.21"},
    "inputs": {"train": "s3://my-bucket/train"},
    "output": "s3://my-bucket/out",
}

# The same spec as text, for tests that care about its exact lines (positions in messages).
BASE_TEXT = """\
name: mnist
role: arn:aws:iam::123456789012:role/SageMakerRole
region: us-east-1
tensorflow:
  version: "2.21"
inputs:
  train: s3://my-bucket/train
output: s3://my-bucket/out
"""


def merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = merged(out[key], value)
        else:
            out[key] = value
    return out


def write_spec(directory: Path, changes: dict[str, Any] | None = None, name: str = "job.yaml") -> Path:
    path = directory / name
    path.write_text(yaml.safe_dump(merged(BASE, changes or {}), sort_keys=False))
    return path
