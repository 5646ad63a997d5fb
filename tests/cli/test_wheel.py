"""smtrain as users install it: a wheel in a fresh virtual environment, run from outside the repository.

The wheel is built from a copy of the sources (no editable install, no repository on sys.path). The
fresh venv gets the wheel with --no-deps and reads its dependencies from this test's own environment
through a .pth line (plain path lines only: the editable install's import hook is not loaded there).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sysconfig
import zipfile
from pathlib import Path

import pytest

from tests.support import ROOT
from tests.support.cli_runner import smtrain as smtrain_here
from tests.support.wheel import build_wheel, fresh_venv, pip

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bin/ directory of a fresh venv holding smtrain from its wheel."""
    base = tmp_path_factory.mktemp("wheel")
    wheel = build_wheel(base)
    python, site = fresh_venv(base / "venv")
    # The dependencies (and TensorFlow, for the local run) come from this environment's site-packages.
    (site / "zz-test-deps.pth").write_text(sysconfig.get_path("purelib") + "\n")
    pip(python, "install", "--quiet", "--no-deps", str(wheel)).check_returncode()
    return python.parent


def run(bin_dir: Path, *args: str, cwd: Path, env: dict[str, str] | None = None,
        timeout: float = 300) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PYTHONPATH"))}
    full_env.update(env or {})
    return subprocess.run([str(bin_dir / "smtrain"), *args], cwd=cwd, env=full_env, capture_output=True, text=True,
                          timeout=timeout)


def test_the_wheel_holds_the_bundled_entrypoint(installed: Path) -> None:
    (wheel,) = (installed.parent.parent / "dist").glob("smtrain-*.whl")
    names = set(zipfile.ZipFile(wheel).namelist())
    assert {"smtrain_entry.py", "smtrain_wrap.py", "smtrain_tf/__init__.py", "smtrain_tf/metric_definitions.json",
            "smtrain/plan/data/instances.yaml", "smtrain/local/hooks/sitecustomize.py"} <= names
    assert not any(n.startswith(("tests/", "entrypoints/")) for n in names)
    # Every example spec and the code they run: `smtrain init --example NAME` writes them out.
    examples = {f"smtrain/examples/{p.relative_to(ROOT / 'configs').as_posix()}"
                for p in (ROOT / "configs").rglob("*") if p.suffix in (".yaml", ".py", ".ipynb")}
    assert examples and examples <= names and "smtrain/examples/local-demo.ipynb" in names
    assert "smtrain/py.typed" in names  # the library's hints reach users' type checkers (PEP 561)
    # The demo data (python -m smtrain.local.demo_data) needs scikit-learn: the `local` extra brings it.
    metadata = next(n for n in names if n.endswith(".dist-info/METADATA"))
    requires = [line for line in zipfile.ZipFile(wheel).read(metadata).decode().splitlines()
                if line.startswith("Requires-Dist: scikit-learn")]
    assert any(line.endswith("; extra == \"local\"") for line in requires), requires


def test_installed_smtrain_imports_from_the_wheel_not_the_checkout(installed: Path, tmp_path: Path) -> None:
    where = subprocess.run([str(installed / "python"), "-c",
                            "import importlib.util, smtrain, smtrain_tf, smtrain_entry; "
                            "print(smtrain.__file__, smtrain_tf.__file__, smtrain_entry.__file__, "
                            "importlib.util.find_spec('smtrain_wrap').origin)"],
                           cwd=tmp_path, capture_output=True, text=True, check=True).stdout.split()
    assert len(where) == 4 and all(str(installed.parent) in path for path in where), where


def test_validate_plan_and_dry_run_from_outside_the_repo(installed: Path, tmp_path: Path) -> None:
    spec = shutil.copy(ROOT / "configs" / "mwms.yaml", tmp_path / "job.yaml")
    assert run(installed, "validate", spec, cwd=tmp_path).returncode == 0
    plan = run(installed, "plan", spec, "-o", "json", cwd=tmp_path)
    assert plan.returncode == 0 and json.loads(plan.stdout)["replicas"] > 1, plan.stderr
    dry = run(installed, "submit", spec, "--dry-run", "--job-name", "wheel-1", "-o", "json", cwd=tmp_path)
    assert dry.returncode == 0, dry.stderr
    here = smtrain_here("submit", str(spec), "--dry-run", "--job-name", "wheel-1", "-o", "json")
    assert here.returncode == 0, here.stderr
    wheel_run, editable_run = json.loads(dry.stdout), json.loads(here.stdout)
    # The same bundle, byte for byte, whichever way smtrain was installed.
    assert wheel_run["upload"]["sha256"] == editable_run["upload"]["sha256"]
    assert {f["path"] for f in wheel_run["upload"]["files"]} >= {"smtrain_entry.py", "smtrain_wrap.py",
                                                                  "smtrain_tf/__init__.py"}
    assert wheel_run["request"] == editable_run["request"]


def test_a_one_host_local_run_from_the_wheel(installed: Path, tmp_path: Path) -> None:
    # The First hour's local steps with nothing but the wheel: the example spec and the demo data from it.
    env = {"SMTRAIN_HOME": str(tmp_path / "home")}
    assert run(installed, "init", "--example", "local-demo", cwd=tmp_path).returncode == 0
    data = subprocess.run([str(installed / "python"), "-m", "smtrain.local.demo_data", ".demo/digits"], cwd=tmp_path,
                          capture_output=True, text=True)
    assert data.returncode == 0 and (tmp_path / ".demo" / "digits" / "train" / "digits.npz").is_file(), data.stderr
    proc = run(installed, "submit", "configs/local-demo.yaml", "--local", "--set", "compute.nodes=1", "--set",
               "training.epochs=1", "-o", "json", cwd=tmp_path, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    job = json.loads(proc.stdout)["job"]
    assert job["status"] == "Completed" and Path(job["model_artifacts"]).is_file()
