"""smtrain beside a user's own SageMaker SDK (issue 23): its wheel names no `sagemaker` at run time, its dry
run imports none, and `pip install smtrain` into an environment that holds SDK v3 or SDK v2 changes neither,
leaves `pip check` clean, and `submit --dry-run` works there from outside the repository.

The SDK environments are built once and cached outside the repository (tests/support/sdk_envs.py,
`make sdk-v2-env sdk-v3-env`). Each test here installs into a fresh venv of its own, never into a cached one: the fresh
venv sees the cached SDK through a .pth line (see `beside` below for why not a copy).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.support import ROOT, sdk_envs
from tests.support.cli_runner import smtrain as smtrain_here
from tests.support.wheel import build_wheel, fresh_venv, pip

pytestmark = pytest.mark.slow

SDK_DISTRIBUTIONS = ("sagemaker", "sagemaker-core")
# The SDK's import packages: what the dry run must not import.
SDK_MODULES = ("sagemaker", "sagemaker_core")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("sdk-beside-wheel"))


def _requires_dist(wheel: Path) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        lines = archive.read(metadata).decode().splitlines()
    return [Requirement(line.split(":", 1)[1].strip()) for line in lines if line.startswith("Requires-Dist:")]


def test_the_wheel_requires_no_sagemaker_at_run_time(wheel: Path) -> None:
    requires = _requires_dist(wheel)
    runtime = [r for r in requires if r.marker is None or "extra" not in str(r.marker)]
    assert {r.name for r in runtime} >= {"boto3", "click", "pydantic"}, runtime
    assert not [str(r) for r in runtime if r.name.lower() in SDK_DISTRIBUTIONS]
    # The SDK stays, as the test oracle, in the `test` extra alone.
    oracle = [r for r in requires if r.name.lower() == "sagemaker"]
    assert oracle and all(r.marker is not None and r.marker.evaluate({"extra": "test"}) for r in oracle), oracle


def _imported_modules(importtime_stderr: str) -> set[str]:
    """The modules a `PYTHONPROFILEIMPORTTIME=1` run imported, from its `import time:` lines."""
    lines = re.findall(r"^import time:\s+\d+ \|\s+\d+ \| (\s*)(\S+)$", importtime_stderr, re.M)
    return {name for _, name in lines}


def test_the_dry_run_imports_neither_sagemaker_nor_sagemaker_core() -> None:
    # This test's own environment (the project's .venv) holds SDK v2, the oracle: importable, and not imported.
    assert subprocess.run([sys.executable, "-c", "import sagemaker, sagemaker_core"]).returncode == 0
    dry = smtrain_here("submit", "configs/mwms.yaml", "--dry-run", "--output", "json",
                       env={"PYTHONPROFILEIMPORTTIME": "1", "AWS_EC2_METADATA_DISABLED": "true"},
                       process=True)  # the start-up imports of a process of its own
    assert dry.returncode == 0, dry.stderr[-3000:]
    imported = _imported_modules(dry.stderr)
    # The profile covers the whole run (else an empty set would pass): smtrain's CLI and the renderer are in it.
    assert "smtrain.cli.commands" in imported and any(m.startswith("smtrain.render") for m in imported), \
        sorted(imported)[:50]
    sdk = sorted(m for m in imported if m.split(".")[0] in SDK_MODULES)
    assert not sdk, f"submit --dry-run imported the SageMaker SDK: {sdk[:20]}"


# --- pip install smtrain beside SDK v3 and beside SDK v2 -----------------------------------------------

SDK_PYTHONS = {"v3": sdk_envs.required_sdk_v3_python, "v2": sdk_envs.required_sdk_v2_python}


@dataclass
class Beside:
    """A fresh venv that held a SageMaker SDK, then `pip install smtrain`."""

    python: Path
    sdk_before: dict[str, str]
    sdk_after: dict[str, str]
    cached_before: str
    cached_after: str
    install: subprocess.CompletedProcess[str]


def _sdk_packages(python: Path) -> dict[str, str]:
    """{name: version} of the sagemaker* distributions `python`'s environment holds, as `pip list` shows them."""
    listed = pip(python, "list", "--format", "json")
    assert listed.returncode == 0, listed.stderr
    return {d["name"].lower(): d["version"] for d in json.loads(listed.stdout)
            if d["name"].lower().startswith("sagemaker")}


def _site_packages(python: Path) -> Path:
    purelib = "import sys, sysconfig; print(sys.version_info[:2] == (%d, %d), sysconfig.get_path('purelib'))"
    same, site = subprocess.run([str(python), "-c", purelib % sys.version_info[:2]], check=True,
                                capture_output=True, text=True).stdout.split()
    # Its site-packages is read by this interpreter's venvs (compiled wheels are per Python version).
    assert same == "True", f"{python} is not Python {sys.version_info[0]}.{sys.version_info[1]}: rebuild it"
    return Path(site)


@pytest.fixture(scope="module", params=sorted(SDK_PYTHONS, reverse=True))
def beside(request: pytest.FixtureRequest, wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Beside:
    sdk_python = SDK_PYTHONS[request.param]()
    python, site = fresh_venv(tmp_path_factory.mktemp(f"beside-sdk-{request.param}") / "venv")
    # The fresh venv holds the cached SDK env's packages through a .pth line, rather than a copy of that env:
    # a copy costs ~300 MB and seconds per test on CI's 2 cores (and a venv's scripts do not survive a move),
    # while pip installs into the fresh venv only and never removes what lies outside it ("Not uninstalling
    # ..., outside environment"); whatever it installs there shadows the cached copy on sys.path, so
    # `pip list` in the fresh venv shows any version it changed. The cached env itself is checked untouched.
    (site / "zz-sdk.pth").write_text(f"{_site_packages(sdk_python)}\n")
    cached_before = pip(sdk_python, "freeze", "--all").stdout
    sdk_before = _sdk_packages(python)
    install = pip(python, "install", "--progress-bar", "off", str(wheel))  # resolved against the index
    return Beside(python, sdk_before, _sdk_packages(python), cached_before, pip(sdk_python, "freeze", "--all").stdout,
                  install)


def test_installing_smtrain_beside_an_sdk_changes_no_sagemaker_package(beside: Beside) -> None:
    assert beside.install.returncode == 0, beside.install.stdout[-2000:] + beside.install.stderr[-2000:]
    # The environment held the SDK before (else there would be nothing to change).
    assert "sagemaker-core" in beside.sdk_before, beside.sdk_before
    assert beside.sdk_after == beside.sdk_before
    installed = re.findall(r"^Successfully installed (.*)$", beside.install.stdout, re.M)
    assert installed and "smtrain-" in installed[0] and "sagemaker" not in installed[0], installed
    assert beside.cached_after == beside.cached_before


def test_pip_check_passes_beside_an_sdk(beside: Beside) -> None:
    checked = pip(beside.python, "check")
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_dry_run_beside_an_sdk_from_outside_the_repo(beside: Beside, tmp_path: Path) -> None:
    spec = shutil.copy(ROOT / "configs" / "mwms.yaml", tmp_path / "job.yaml")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHONPATH", "VIRTUAL_ENV"))}
    env["AWS_EC2_METADATA_DISABLED"] = "true"
    dry = subprocess.run([str(beside.python.parent / "smtrain"), "submit", str(spec), "--dry-run", "--output", "json"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert dry.returncode == 0, dry.stderr[-3000:]
    request = json.loads(dry.stdout)["request"]
    assert "tensorflow-training:2.21" in request["AlgorithmSpecification"]["TrainingImage"], request
