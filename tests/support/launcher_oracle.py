"""SDK v2 itself runs a launcher (a script or a notebook in a real kernel) and its CreateTrainingJob request is
taken where the SDK hands it to boto3: the oracle of `smtrain import` (tests/api/test_import_launchers.py).

AWS is moto in this process (mock_aws): the SDK's default bucket, its STS call and its code upload are real
calls to moto; the create request is captured at the SDK's own seam (Session._intercept_create_request, the
one PipelineSession uses) and never sent. get_execution_role() is the one thing stood in for: moto's caller is
a user, not a role, and the SDK refuses it.
"""

from __future__ import annotations

import contextlib
import copy
import io
import json
import os
import runpy
import sys
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.support import ROOT, sdk_oracle

ROLE = "arn:aws:iam::123456789012:role/SageMakerRole"
REGION = "us-east-1"
ACCOUNT = "123456789012"  # moto's
DEFAULT_BUCKET = f"sagemaker-{REGION}-{ACCOUNT}"
BUCKETS = ("my-bucket",)  # the launchers' own bucket, made in moto before they run
CODE_FILES = "code files"  # the key under which a captured request carries its code archive's file names
_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_DEFAULT_REGION": REGION,
        "AWS_REGION": REGION, "SAGEMAKER_SUPPRESS_V2_WARNING": "1"}
_UNSET = ("AWS_PROFILE", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL_SAGEMAKER", "AWS_SESSION_TOKEN",
          "MLFLOW_TRACKING_URI")


@contextlib.contextmanager
def sdk_capturing(endpoint: str | None = None) -> Iterator[list[dict[str, Any]]]:
    """Inside: SDK v2 against moto, every CreateTrainingJob request appended to the list yielded; never sent,
    or with `endpoint` (a moto server's URL) sent there as well."""
    saved = {k: os.environ.get(k) for k in (*_ENV, *_UNSET)}
    os.environ.update(_ENV)
    for key in _UNSET:
        os.environ.pop(key, None)
    if endpoint is not None:
        os.environ["AWS_ENDPOINT_URL"] = endpoint
    sdk_oracle._import_sdk()
    import boto3
    import sagemaker
    import sagemaker.session as sm_session
    from moto import mock_aws

    captured: list[dict[str, Any]] = []

    def intercept(self: Any, request: dict, create: Any, func_name: str | None = None) -> None:
        if func_name == "train":
            captured.append(copy.deepcopy(request))
            # The files of the code archive the SDK uploaded (to moto), for the bundle's comparison.
            submitted = json.loads(request["HyperParameters"]["sagemaker_submit_directory"])
            if submitted.startswith("s3://"):
                bucket, _, key = submitted.removeprefix("s3://").partition("/")
                body = boto3.client("s3", region_name=REGION).get_object(Bucket=bucket, Key=key)["Body"].read()
                with tarfile.open(fileobj=io.BytesIO(body)) as tar:
                    captured[-1][CODE_FILES] = sorted(m.name for m in tar.getmembers() if m.isfile())
            if endpoint is not None:
                create(request)

    patches = [(sm_session.Session, "_intercept_create_request", intercept),
               (sm_session.Session, "logs_for_job", lambda self, *a, **k: None),
               (sm_session.Session, "wait_for_job", lambda self, *a, **k: {}),
               (sm_session, "load_sagemaker_config", lambda *a, **k: {}),
               (sagemaker, "get_execution_role", lambda *a, **k: ROLE),
               (sm_session, "get_execution_role", lambda *a, **k: ROLE)]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, value in patches:
        setattr(owner, name, value)
    try:
        with contextlib.nullcontext() if endpoint else mock_aws():
            s3 = boto3.client("s3", region_name=REGION)
            for bucket in BUCKETS:
                s3.create_bucket(Bucket=bucket)
            yield captured
    finally:
        for owner, name, value in originals:
            setattr(owner, name, value)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _one(captured: list[dict[str, Any]], launcher: Path) -> dict[str, Any]:
    if len(captured) != 1:
        raise AssertionError(f"{launcher.name}: the SDK made {len(captured)} CreateTrainingJob requests, not one")
    return captured[0]


def script_request(launcher: Path, argv: tuple[str, ...] = (), endpoint: str | None = None) -> dict[str, Any]:
    """The request SDK v2 builds when `python launcher.py ARGV` runs in the launcher's directory (and sends, to
    the moto server at `endpoint` when given)."""
    cwd, old_argv = os.getcwd(), sys.argv
    os.chdir(launcher.parent)
    sys.argv = [str(launcher), *argv]
    try:
        with sdk_capturing(endpoint) as captured:
            runpy.run_path(str(launcher), run_name="__main__")
    finally:
        os.chdir(cwd)
        sys.argv = old_argv
    return _one(captured, launcher)


def notebook_request(launcher: Path) -> dict[str, Any]:
    """The request SDK v2 builds when the notebook's cells run in order in a real Jupyter kernel."""
    import nbformat
    from nbformat.v4 import new_code_cell

    from tests.support.kernel import kernel

    nb = nbformat.read(launcher, as_version=4)
    nb.cells.insert(0, new_code_cell("from tests.support.launcher_oracle import sdk_capturing\n"
                                     "_oracle = sdk_capturing()\n_captured = _oracle.__enter__()"))
    nb.cells.append(new_code_cell("import json\nprint('REQUEST=' + json.dumps(_captured))\n"
                                  "_oracle.__exit__(None, None, None)"))
    env = {"PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    with kernel(nb, launcher.parent, env) as run:
        cells = [run(i) for i in range(len(nb.cells))]
    text = "".join(o.get("text", "") for o in cells[-1].outputs if o.get("output_type") == "stream")
    line = next(line for line in text.splitlines() if line.startswith("REQUEST="))
    return _one(json.loads(line.removeprefix("REQUEST=")), launcher)
