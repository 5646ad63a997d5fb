"""`import smtrain` stays light, and its names are the library's."""

from __future__ import annotations

import subprocess
import sys

import smtrain
from tests.support import ROOT

NOT_AT_IMPORT = ("boto3", "botocore", "tensorflow", "sagemaker", "pydantic", "nbformat", "IPython")
API = ("load", "plan", "validate", "dry_run", "submit", "tune", "tune_dry_run", "tune_here", "Job", "Metrics",
       "Planned", "Validation", "UserError", "SpecError", "CatalogError", "AwsError", "PreflightError",
       "WaitTimeout", "Problem", "LoadedSpec", "check", "CheckResult")


def _imported(code: str) -> set[str]:
    """The top-level packages `python -X importtime -c code` imported."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-c", code], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    rows = [line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")]
    assert "smtrain" in rows, proc.stderr[-2000:]
    return {row.split(".")[0] for row in rows}


def test_import_smtrain_loads_nothing_heavy() -> None:
    imported = _imported("import smtrain; smtrain.__all__")
    assert sorted(imported & set(NOT_AT_IMPORT)) == []


def test_plan_validate_and_dry_run_load_nothing_heavy() -> None:
    # The calls that need no AWS stay as light as `smtrain plan` (no SDK, boto3, TensorFlow, notebook kit).
    imported = _imported("import smtrain; smtrain.plan('configs/mwms.yaml'); smtrain.validate('configs/mwms.yaml'); "
                         "smtrain.dry_run('configs/mwms.yaml')")
    assert sorted(imported & {"boto3", "botocore", "tensorflow", "sagemaker", "IPython", "matplotlib"}) == []


def test_plan_plans_even_after_the_stage_package_is_imported() -> None:
    import smtrain.plan.catalog  # the stage package of the same name

    planned = smtrain.plan(ROOT / "configs" / "mwms.yaml")
    assert isinstance(planned, smtrain.Planned) and planned.plan.replicas == 16
    assert smtrain.plan.catalog.CatalogError is smtrain.CatalogError  # the stage is still the stage
    # ... and in fresh processes where the stage comes first, or the call does
    for first in ("import smtrain.plan.catalog, smtrain", "import smtrain; smtrain.plan; import smtrain.plan.build",
                  "from smtrain import plan; import smtrain"):
        code = (f"{first}; import smtrain.plan.catalog; "
                "assert smtrain.plan('configs/mwms.yaml').plan.replicas == 16; "
                "assert smtrain.plan.catalog.Catalog")
        proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, (first, proc.stderr)


def test_dir_and_all_list_the_api() -> None:
    assert set(API) <= set(smtrain.__all__) <= set(dir(smtrain))
    for name in smtrain.__all__:
        assert getattr(smtrain, name) is not None, name
    assert smtrain.Job.__module__ == "smtrain.api.job" and smtrain.SpecError.__module__ == "smtrain.spec.problems"
    assert smtrain.load.__module__ == "smtrain.api.specs" and smtrain.dry_run.__module__ == "smtrain.api.submitting"


def test_the_version_is_the_installed_distributions() -> None:
    from importlib.metadata import version

    import smtrain

    assert smtrain.__version__ == version("smtrain") and smtrain.__version__[0].isdigit()
    # and `smtrain --version` says the same
    said = subprocess.run([sys.executable, "-m", "smtrain", "--version"], capture_output=True, text=True, timeout=60)
    assert said.returncode == 0 and said.stdout.split()[-1] == smtrain.__version__, said.stdout
