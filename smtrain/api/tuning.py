"""smtrain.tune and smtrain.tune_dry_run: the spec's `tuning:` section as a SageMaker hyperparameter tuning
job (rendered, sent, waited for), or as trials run here one after another (local=True)."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smtrain import exit_codes
from smtrain.api.code_checks import bundle_refused_as_spec_problem, refuse_findings, refuse_local_places
from smtrain.api.job import Job
from smtrain.api.planning import Planned
from smtrain.api.specs import Overrides, SpecSource, override_texts
from smtrain.api.submitting import advisories, check_quota_before_sending, planned
from smtrain.errors import UserError

if TYPE_CHECKING:
    from smtrain.local.tuning import LocalTuning, Trial
    from smtrain.plan.catalog import Catalog
    from smtrain.render.tuning_limits import TuningPlan


def _tuning_plan(found: Planned) -> TuningPlan:
    if found.tuning is None:
        raise UserError(f"{found.loaded.source.source} has no tuning: section: add one (the docs, \"Hyperparameter "
                        "tuning\"), or run the job once with `smtrain submit`", exit_codes.USAGE)
    return found.tuning


def check_tuning_name(value: str | None, given_as: str = "job_name") -> None:
    """A tuning job's name within its rules (32 characters); SpecError-like UserError (exit 2) if not."""
    if value is not None:
        from smtrain.sagemaker.create import TUNING

        TUNING.check_name(value, given_as=given_as)


def tune_dry_run(spec: SpecSource | Planned, overrides: Overrides = None, *, job_name: str | None = None,
                 catalog: Catalog | str | os.PathLike[str] | None = None) -> dict[str, Any]:
    """The exact CreateHyperParameterTuningJob request, offline (as `smtrain tune --dry-run`)."""
    from smtrain.sagemaker import tuning as tuning_backend

    check_tuning_name(job_name)
    found = planned(spec, overrides, catalog)
    tp = _tuning_plan(found)
    refuse_findings(found.findings, strict=False)  # every trial would fail at an error's line
    refuse_local_places(found.plan, "tune --local")
    with bundle_refused_as_spec_problem(found.loaded):
        return {**tuning_backend.dry_run(tp, job_name), "warnings": advisories(found)}


def tune(spec: SpecSource | Planned, overrides: Overrides = None, *, wait: bool = False,
         timeout: float | None = None, job_name: str | None = None, quota_check: bool = True,
         progress: bool = False, show: bool | None = None, on_quota: Callable[[Any], None] = lambda report: None,
         catalog: Catalog | str | os.PathLike[str] | None = None) -> Job:
    """Create the SageMaker tuning job of the spec's `tuning:` section; its Job (status, wait, stop and logs
    take a tuning job's name as they take a training job's). The quota check is submit's, for the trials that
    run at once. For trials here, see tune_here."""
    from smtrain.api.backends import sagemaker_backend
    from smtrain.sagemaker import tuning as tuning_backend

    check_tuning_name(job_name)
    found = planned(spec, overrides, catalog)
    tp = _tuning_plan(found)
    refuse_findings(found.findings, strict=False)
    refuse_local_places(found.plan, "tune --local")
    with bundle_refused_as_spec_problem(found.loaded):
        if quota_check:  # the trials that run at once must fit
            check_quota_before_sending(tp.parallel_trials(), on_quota)
        sent = tuning_backend.tune(tp, job_name, progress=progress)
    job = Job(sent.job_name, sagemaker_backend(sent.region, with_tuning=True), region=sent.region, submitted=sent,
              warnings=advisories(found))
    if wait:
        job.wait(timeout, show=show)
    return job


def tune_here(spec: str | os.PathLike[str], overrides: Overrides = None, *, job_name: str | None = None,
              seed: int | None = None, catalog: Catalog | str | os.PathLike[str] | None = None,
              on_start: Callable[[Trial], None] = lambda trial: None,
              on_end: Callable[[Trial], None] = lambda trial: None,
              on_note: Callable[[str], None] = lambda note: None,
              on_ready: Callable[[LocalTuning, TuningPlan], None] = lambda tuning, tp: None) -> LocalTuning:
    """Run the spec's tuning here: trials one after another through the local backend (random or grid search,
    seeded by `seed`, else training.seed, else 0). Each trial re-reads the spec file with its values, so the
    spec is a file here. `on_ready` sees the tuning and its plan before the first trial, `on_start` and `on_end`
    each trial, `on_note` what the search changed. Returns the LocalTuning (its trials, `.best`, `.to_dict()`)."""
    from smtrain.local.tuning import prepare, run_trials, trial_loader
    from smtrain.plan.tuning import new_tuning_job_name

    if isinstance(spec, Mapping) or not isinstance(spec, (str, os.PathLike)):
        raise TypeError("tune_here re-reads the spec for each trial: pass the spec's file")
    check_tuning_name(job_name)
    found = planned(spec, overrides, catalog)
    tp = _tuning_plan(found)
    refuse_findings(found.findings, strict=False)  # every trial would fail at an error's line
    name = job_name or new_tuning_job_name(found.loaded.spec.name)  # trial names then fit a job name
    tuning = prepare(tp, name=name, seed=(found.loaded.spec.training.seed or 0) if seed is None else seed)
    for note in tuning.notes:
        on_note(note)
    on_ready(tuning, tp)
    from smtrain.api.planning import catalog_of

    run_trials(tuning, trial_loader(str(Path(spec)), override_texts(overrides), tp.tuning, catalog_of(catalog)),
               on_start=on_start, on_end=on_end)
    return tuning
