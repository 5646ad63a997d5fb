"""smtrain: a YAML job spec in, a TensorFlow training job on SageMaker (or on this machine) out.

From Python and Jupyter (README "From Python and Jupyter"):

    import smtrain
    planned = smtrain.plan("job.yaml", {"compute.nodes": 2})   # every decision; nothing sent
    request = smtrain.dry_run("job.yaml")                        # the exact CreateTrainingJob request
    job = smtrain.submit("job.yaml", local=True)                 # or on SageMaker, then job.wait()
    job.metrics()                                                # rows per epoch; .plot()
    smtrain.check("job.yaml").equivalent                         # the planned layout trains as one device

Each name below is imported when first used, so `import smtrain` stays light (no boto3, no TensorFlow).

The flow runs one way:  YAML -> Spec -> Plan -> bundle -> the rendered request -> backend.

    spec/       YAML file -> validated Spec (positions, ${VAR}, --set, units, problems)
    plan/       Spec -> Plan (instance catalog, distribution rules, TF images, launch preview)
    preflight/  Plan + an own script -> findings: the code checked before it is bundled (ast only)
    bundle/     Plan -> Request (the content-addressed sourcedir.tar.gz, the job name)
    render/     Plan + Request -> the CreateTrainingJob / CreateHyperParameterTuningJob request, smtrain's own
                rendering, within botocore's limits
    sagemaker/  the rendered request -> SageMaker through boto3 (the dry run shows it, submit sends it); following jobs
    local/      the rendered request -> a job run here, each host a process under the container contract
    api/        the library: load, plan, validate, dry_run, submit, tune, check, Job; what this package exports
    cli/        click commands over api/: parse options, show results, exit codes
    examples/   the example specs and their code, shipped as data (a link to the repository's configs/,
                where each is tested); `smtrain init --example NAME` writes one out

Imports run the same way down, never up: cli -> api -> (sagemaker | local) -> render -> bundle -> preflight ->
plan -> spec -> the shared modules at this level (import-linter's contracts in pyproject.toml check it; this
file's lazy names point at api/, its place, and no stage below the api imports it). The two backends are
siblings: both take the rendered request, neither imports the other.

Shared by every stage, and importing nothing above them:
    errors.py      the exceptions for people (UserError and its kinds), each with its exit code
    exit_codes.py  the process exit codes CI relies on
    jobs.py        what a backend reports about a job (JobInfo, LogEvent, Backend, metric series by epoch),
                   polling knobs
    redact/        secret masking for everything printed or written for people: mask_data, mask_text, and the
                   known secret values found in text in one pass (secret_values.py, its index)
    terminal_text.py  a job's output line as a terminal shows it, with nothing a terminal would act on
    aws.py         talking to AWS: the default region (read without boto3), boto3 sessions with retries and
                   timeouts, AWS errors as one actionable line (both backends use it)
    version.py     the installed distribution's version (what `smtrain.__version__` gives)
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from smtrain.api.importing import ImportResult, import_job, import_launcher
    from smtrain.api.job import Job
    from smtrain.api.listing import list_jobs
    from smtrain.api.metrics import Metrics
    from smtrain.api.planning import Planned, plan  # smtrain.plan: the stage package, callable as plan()
    from smtrain.api.specs import load
    from smtrain.api.submitting import dry_run, submit
    from smtrain.api.tuning import tune, tune_dry_run, tune_here
    from smtrain.api.validation import Validation, validate
    from smtrain.errors import AwsError, PreflightError, UserError, WaitTimeout
    from smtrain.plan.catalog import CatalogError
    from smtrain.spec.model import LoadedSpec
    from smtrain.spec.problems import Problem, SpecError

# name -> the module that defines it, imported on first use (PEP 562).
_LAZY = {
    "load": "smtrain.api.specs", "plan": "smtrain.api.planning", "Planned": "smtrain.api.planning",
    "validate": "smtrain.api.validation", "Validation": "smtrain.api.validation",
    "dry_run": "smtrain.api.submitting", "submit": "smtrain.api.submitting",
    "tune": "smtrain.api.tuning", "tune_dry_run": "smtrain.api.tuning", "tune_here": "smtrain.api.tuning",
    "check": "smtrain.api.checking", "CheckResult": "smtrain.api.checking",
    "Job": "smtrain.api.job", "Metrics": "smtrain.api.metrics", "list_jobs": "smtrain.api.listing",
    "import_launcher": "smtrain.api.importing", "import_job": "smtrain.api.importing",
    "ImportResult": "smtrain.api.importing",
    "UserError": "smtrain.errors", "AwsError": "smtrain.errors", "PreflightError": "smtrain.errors",
    "WaitTimeout": "smtrain.errors", "CatalogError": "smtrain.plan.catalog", "SpecError": "smtrain.spec.problems",
    "Problem": "smtrain.spec.problems", "LoadedSpec": "smtrain.spec.model",
}
__all__ = [
    "AwsError", "CatalogError", "CheckResult", "ImportResult", "Job", "LoadedSpec", "Metrics", "Planned",
    "PreflightError", "Problem", "SpecError", "UserError", "Validation", "WaitTimeout", "check", "dry_run",
    "import_job", "import_launcher", "list_jobs", "load", "plan", "submit", "tune", "tune_dry_run", "tune_here",
    "validate",
]


def __getattr__(name: str) -> Any:
    if name == "__version__":  # the installed distribution's, as `smtrain --version` says it
        from smtrain.version import installed_version

        return installed_version()
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'smtrain' has no attribute {name!r}")
    if name == "plan":  # the stage package, callable (_PlanStage): importing it sets the attribute
        return importlib.import_module("smtrain.plan")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # once: later lookups do not come here
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})


class _PlanStage(types.ModuleType):
    """smtrain.plan is the stage package (smtrain.plan.catalog, ...) and, called, the library's plan(): one name,
    both uses, so `smtrain.plan(spec)` and `import smtrain.plan.catalog` both work."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        from smtrain.api.planning import plan

        return plan(*args, **kwargs)

    # `smtrain.plan?` and inspect.signature show plan()'s, as for the library's other names.
    @property
    def __doc__(self) -> str | None:  # type: ignore[override]
        from smtrain.api.planning import plan

        return plan.__doc__

    @property
    def __signature__(self) -> Any:
        import inspect

        from smtrain.api.planning import plan

        return inspect.signature(plan)


class _Library(types.ModuleType):
    """This package as a module that makes the stage package smtrain.plan callable as it is set here (the
    import system sets it once smtrain.plan or one of its modules is first imported)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "plan" and type(value) is types.ModuleType:
            value.__class__ = _PlanStage
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Library
