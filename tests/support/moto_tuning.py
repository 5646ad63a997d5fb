"""What moto lacks for hyperparameter tuning jobs, added to the live server (tests/support/moto_server.py).

moto 5.2.5 has Create/Describe/List/DeleteHyperParameterTuningJob, but a created tuning job is
Completed at once with a made-up BestTrainingJob ("FakeTrainingJobName"), counters of one completed
trial, and it never starts a training job. So, each marked "moto lacks" below:

* a tuning job starts InProgress with no trials, no best trial and zero counters, and changes only
  when a test says so (:func:`set_tuning_status`);
* trials scripted by the test (:func:`add_trial`, :func:`set_trial`): each is a real training job on the
  server (so status/logs of a trial work) and a HyperParameterTrainingJobSummary of the tuning job,
  with its tuned hyperparameters, status and objective; the counters and BestTrainingJob follow them;
* ListTrainingJobsForHyperParameterTuningJob (moto has none): the scripted trials, sorted and filtered
  as AWS does (sorting by FinalObjectiveMetricValue leaves out trials without an objective);
* StopHyperParameterTuningJob (moto has none): InProgress -> Stopping, refused once ended;
* a record of every CreateHyperParameterTuningJob body exactly as received
  (``Control.tuning_requests``), and the faults Control.inject queues for it.
"""

from __future__ import annotations

import datetime as dt
import functools
import json
import secrets
import time
from typing import Any

from moto.core.exceptions import JsonRESTError
from moto.core.responses import ActionResult, EmptyResult
from moto.sagemaker import models as sm_models
from moto.sagemaker.responses import SageMakerResponse

from tests.support import moto_server

_CREATE = "CreateHyperParameterTuningJob"


def _now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _tuning_job(name: str) -> Any:
    jobs = moto_server._backend().hyper_parameter_tuning_jobs
    if name not in jobs:
        raise JsonRESTError("ResourceNotFound", f"Amazon SageMaker can't find a tuning job with name {name}")
    return jobs[name]


def _objective_type(job: Any) -> str:
    return (job.hyper_parameter_tuning_job_config.get("HyperParameterTuningJobObjective") or {}).get("Type", "Maximize")


def _recount(job: Any) -> None:
    """Counters and BestTrainingJob from the scripted trials, as SageMaker keeps them."""
    trials = job.trials
    counters = {"Completed": 0, "InProgress": 0, "RetryableError": 0, "NonRetryableError": 0, "Stopped": 0}
    objectives = {"Succeeded": 0, "Pending": 0, "Failed": 0}
    for t in trials:
        status = t["TrainingJobStatus"]
        counters["NonRetryableError" if status == "Failed" else status if status in counters else "InProgress"] += 1
        objectives[t["ObjectiveStatus"]] += 1
    job.training_job_status_counters = counters
    job.objective_status_counters = objectives
    scored = [t for t in trials
              if t["TrainingJobStatus"] == "Completed" and "FinalHyperParameterTuningJobObjectiveMetric" in t]
    sign = 1 if _objective_type(job) == "Maximize" else -1
    best = max(scored, key=lambda t: sign * t["FinalHyperParameterTuningJobObjectiveMetric"]["Value"], default=None)
    job.best_training_job = best
    job.OverallBestTrainingJob = best
    job.last_modified_time = _now()


def patches(control: Any) -> list[tuple[Any, str, Any]]:
    backend_cls = sm_models.SageMakerModelBackend
    original_create = backend_cls.create_hyper_parameter_tuning_job
    original_describe = sm_models.HyperParameterTuningJob.describe

    def create(self: Any, hyper_parameter_tuning_job_name: str, **kwargs: Any) -> str:
        arn = original_create(self, hyper_parameter_tuning_job_name=hyper_parameter_tuning_job_name, **kwargs)
        # moto lacks: a tuning job starts InProgress, with no trial yet (moto: Completed, a fake best).
        job = self.hyper_parameter_tuning_jobs[hyper_parameter_tuning_job_name]
        job.hyper_parameter_tuning_job_status = "InProgress"
        job.hyper_parameter_tuning_end_time = None
        job.tuning_job_completion_details = None
        job.consumed_resources = None
        job.trials = []
        _recount(job)
        control.mark_created(hyper_parameter_tuning_job_name)
        return arn

    def describe(self: Any) -> dict[str, Any]:
        # None members are left out of the answer, as AWS leaves out what a job does not have yet.
        return {k: v for k, v in original_describe(self).items() if v not in (None, "")}

    def create_response(self: Any) -> Any:
        fault = control.take(_CREATE)
        control.tuning_requests.append(json.loads(self.body))  # the body as botocore sent it
        if fault:
            fault.raise_error()
        result = original_create_response(self)
        if fault and fault.delay_after:
            time.sleep(fault.delay_after)  # the job exists; its answer arrives after the client gave up
        return result

    original_create_response = SageMakerResponse.create_hyper_parameter_tuning_job

    def stop_response(self: Any) -> Any:
        # moto lacks: StopHyperParameterTuningJob. AWS moves InProgress to Stopping, refuses ended jobs.
        fault = control.take("StopHyperParameterTuningJob")
        if fault:
            fault.raise_error()
        job = _tuning_job(self._get_param("HyperParameterTuningJobName"))
        if job.hyper_parameter_tuning_job_status != "InProgress":
            raise JsonRESTError("ValidationException", "The request was rejected because the tuning job is in "
                                                       f"status {job.hyper_parameter_tuning_job_status}.")
        job.hyper_parameter_tuning_job_status = "Stopping"
        job.last_modified_time = _now()
        return EmptyResult()

    def list_trials_response(self: Any) -> Any:
        # moto lacks: ListTrainingJobsForHyperParameterTuningJob, over the test's scripted trials.
        job = _tuning_job(self._get_param("HyperParameterTuningJobName"))
        trials = list(job.trials)
        status = self._get_param("StatusEquals")
        if status:
            trials = [t for t in trials if t["TrainingJobStatus"] == status]
        sort_by = self._get_param("SortBy") or "CreationTime"
        descending = (self._get_param("SortOrder") or "Descending") == "Descending"
        if sort_by == "FinalObjectiveMetricValue":
            # AWS: "any training jobs that did not return an objective metric are not listed".
            trials = [t for t in trials if "FinalHyperParameterTuningJobObjectiveMetric" in t]
            key: Any = lambda t: t["FinalHyperParameterTuningJobObjectiveMetric"]["Value"]  # noqa: E731
        else:
            key = {"Name": lambda t: t["TrainingJobName"], "Status": lambda t: t["TrainingJobStatus"]}.get(
                sort_by, lambda t: t["CreationTime"])
        trials.sort(key=key, reverse=descending)
        start = int(self._get_param("NextToken") or 0)
        size = int(self._get_param("MaxResults") or 50)
        page = trials[start:start + size]
        token = str(start + size) if start + size < len(trials) else None
        return ActionResult({"TrainingJobSummaries": page, **({"NextToken": token} if token else {})})

    patches: list[tuple[Any, str, Any]] = [
        (backend_cls, "create_hyper_parameter_tuning_job", create),
        (sm_models.HyperParameterTuningJob, "describe", describe),
        (SageMakerResponse, "create_hyper_parameter_tuning_job", functools.wraps(original_create_response)(
            create_response)),
        (SageMakerResponse, "stop_hyper_parameter_tuning_job", stop_response),
        (SageMakerResponse, "list_training_jobs_for_hyper_parameter_tuning_job", list_trials_response),
    ]
    return patches


# --- the test's hand on tuning jobs ---------------------------------------------------------------


def set_tuning_status(server: Any, name: str, status: str, failure_reason: str | None = None) -> None:
    """Move tuning job `name` to `status` (InProgress, Completed, Failed, Stopping, Stopped)."""
    job = _tuning_job(name)
    job.hyper_parameter_tuning_job_status = status
    if status in ("Completed", "Failed", "Stopped"):
        job.hyper_parameter_tuning_end_time = _now()
    job.failure_reason = failure_reason or ""
    job.last_modified_time = _now()


def add_trial(server: Any, tuning_name: str, hyperparameters: dict[str, str], *, status: str = "InProgress",
              objective: float | None = None, failure_reason: str | None = None) -> str:
    """A training job the tuning job started with `hyperparameters` (as SageMaker passes them: text);
    returns its name, <tuning job>-<3 digits>-<8 hex> as SageMaker names trials."""
    job = _tuning_job(tuning_name)
    name = f"{tuning_name}-{len(job.trials) + 1:03d}-{secrets.token_hex(4)}"
    moto_server.create_job(server, name)
    trial = {"TrainingJobName": name, "TrainingJobArn": server.job(name).arn, "TuningJobName": tuning_name,
             "CreationTime": _now(), "TrainingJobStatus": "InProgress", "ObjectiveStatus": "Pending",
             "TunedHyperParameters": dict(hyperparameters)}
    job.trials.append(trial)
    set_trial(server, tuning_name, name, status=status, objective=objective, failure_reason=failure_reason)
    return name


def set_trial(server: Any, tuning_name: str, trial_name: str, *, status: str, objective: float | None = None,
              failure_reason: str | None = None) -> None:
    """Move a trial (its summary and its training job) to `status`, with its final objective if any."""
    job = _tuning_job(tuning_name)
    trial = next(t for t in job.trials if t["TrainingJobName"] == trial_name)
    trial["TrainingJobStatus"] = status
    server.set_status(trial_name, status, failure_reason=failure_reason)
    training = server.job(trial_name)
    for key, value in (("TrainingStartTime", training.training_start_time),
                       ("TrainingEndTime", training.training_end_time), ("FailureReason", failure_reason)):
        if value is not None:
            trial[key] = value
    if objective is not None:
        objective_ = job.hyper_parameter_tuning_job_config["HyperParameterTuningJobObjective"]
        trial["FinalHyperParameterTuningJobObjectiveMetric"] = {
            "Type": objective_["Type"], "MetricName": objective_["MetricName"], "Value": objective}
    ended = status in ("Completed", "Failed", "Stopped")
    trial["ObjectiveStatus"] = "Succeeded" if objective is not None else "Failed" if ended else "Pending"
    _recount(job)
