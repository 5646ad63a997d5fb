"""A TuningPlan -> SageMaker: the rendered CreateHyperParameterTuningJob request, shown by the dry run and
sent unchanged by tune(), as submit does for a training job (smtrain.sagemaker.submit)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from smtrain.bundle.request import Request, make_request
from smtrain.jobs import reattach_command
from smtrain.plan.tuning import TuningPlan, new_tuning_job_name
from smtrain.render.tuning_limits import request_problems
from smtrain.render.tuning_request import render_tuning_request
from smtrain.sagemaker.create import TUNING
from smtrain.sagemaker.submit import Submitted, upload_and_create
from smtrain.spec.problems import SpecError


@dataclass(frozen=True)
class PreparedTuning:
    """A tuning job ready to send: its Request (the trials' bundle, the name) and the request rendered for it."""

    tp: TuningPlan
    request: Request
    body: dict[str, Any]  # CreateHyperParameterTuningJob's parameters, exactly as sent

    def to_dict(self) -> dict[str, Any]:
        return {"tuning_job_name": self.request.job_name, "request": self.body,
                "upload": self.request.upload_summary(), "tuning": self.tp.summary()}


def prepare(tp: TuningPlan, job_name: str | None = None) -> PreparedTuning:
    """The bundle, the name and the request, within every limit of botocore's model; offline."""
    name = job_name or new_tuning_job_name(tp.plan.spec.name)
    TUNING.check_name(name)
    request = make_request(tp.plan, name)  # the bundle and its content-addressed place, as submit's
    body = render_tuning_request(tp, name, request.source_uri)
    problems = request_problems(tp.plan, body)
    if problems:
        raise SpecError(problems)
    return PreparedTuning(tp, request, body)


def dry_run(tp: TuningPlan, job_name: str | None = None) -> dict[str, Any]:
    """The tuning job's request and what would be uploaded; offline, no credentials."""
    return prepare(tp, job_name).to_dict()


@dataclass(frozen=True)
class TuningSubmitted(Submitted):
    """A tuning job SageMaker accepted, and how its code got there (Submitted's fields, its own JSON)."""

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON of `smtrain tune` (README: "Hyperparameter tuning")."""
        from smtrain.sagemaker.tuning_jobs import tuning_console_url

        name, flag = self.job_name, self.region_flag
        return {
            "tuning_job_name": name, "arn": self.arn, "region": self.region, "status": "InProgress",
            "upload": self.upload.to_dict(), "console_url": tuning_console_url(self.region, name),
            "commands": {verb: reattach_command(*words, region=flag) for verb, words in (
                ("status", ("status", name)), ("wait", ("wait", name)), ("logs", ("logs", name)),
                ("stop", ("stop", name)))},
        }


def send(prepared: PreparedTuning, *, progress: bool = False) -> TuningSubmitted:
    """Create the tuning job from `prepared.body`, unchanged (submit.upload_and_create)."""
    uploaded, outcome = upload_and_create(prepared.request, prepared.body, TUNING, progress=progress)
    return TuningSubmitted(prepared.request, uploaded, outcome.arn, outcome.confirmed_by_describe)


def tune(tp: TuningPlan, job_name: str | None = None, *, progress: bool = False) -> TuningSubmitted:
    """send(prepare(tp)): the request the dry run shows is the one sent."""
    return send(prepare(tp, job_name), progress=progress)
