"""Following SageMaker hyperparameter tuning jobs: describe (with trials and the best one), list, stop, logs.

The lifecycle commands take a tuning job's name where they take a training job's: SageMakerJobsBackend
asks DescribeTrainingJob first, exactly as before, and only when SageMaker knows no training job of
that name (and it could name a tuning job: at most 32 characters) asks
DescribeHyperParameterTuningJob. A training job of a name wins over a tuning job of the same name.
A tuning job's logs are its best trial's (each trial is an ordinary training job), else its newest
trial's while none has an objective yet.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from smtrain import exit_codes
from smtrain.aws import api_errors, is_not_found
from smtrain.errors import AwsError, UserError
from smtrain.jobs import EventFiles, JobInfo, LogEvent
from smtrain.sagemaker.backend import SageMakerBackend, console_url, listed, newest_first

TUNING_NAME_MAX = 32  # HyperParameterTuningJobName
MAX_TRIALS_SHOWN = 100  # status lists at most this many trials, best first


def tuning_console_url(region: str, name: str) -> str:
    # The console's tuning job page sits beside its training job page.
    return console_url(region, name).replace("#/jobs/", "#/hyper-tuning-jobs/")


def _plain(value: Any) -> Any:
    # Static and tuned hyperparameters travel JSON-encoded ('"adam"'); show what the program gets.
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def trial_dict(summary: dict[str, Any]) -> dict[str, Any]:
    """One trial (a HyperParameterTrainingJobSummary) as documented keys."""
    metric = summary.get("FinalHyperParameterTuningJobObjectiveMetric") or {}
    return {
        "name": summary.get("TrainingJobName"),
        "status": summary.get("TrainingJobStatus"),
        "objective": metric.get("Value"),
        "objective_status": summary.get("ObjectiveStatus"),
        "hyperparameters": {k: _plain(v) for k, v in (summary.get("TunedHyperParameters") or {}).items()},
        "failure_reason": summary.get("FailureReason"),
    }


def best_first(summaries: list[dict[str, Any]], objective_type: str | None) -> list[dict[str, Any]]:
    """trial_dict() of each trial: those with an objective best first, then the others as listed."""
    trials = [trial_dict(s) for s in summaries]
    scored = [t for t in trials if isinstance(t["objective"], (int, float))]
    scored.sort(key=lambda t: t["objective"], reverse=objective_type != "Minimize")
    return scored + [t for t in trials if t not in scored]


_COUNTERS = (("Completed", "completed"), ("InProgress", "in_progress"), ("Stopped", "stopped"),
             ("RetryableError", "retryable_error"), ("NonRetryableError", "failed"))


def _counts(d: dict[str, Any]) -> dict[str, int]:
    counters = d.get("TrainingJobStatusCounters") or {}
    out = {key: int(counters.get(name) or 0) for name, key in _COUNTERS}
    out["total"] = sum(out.values())
    return out


@dataclass(frozen=True)
class TuningJobInfo(JobInfo):
    """A tuning job: JobInfo's keys, plus `kind: tuning` and the `tuning` part (README documents both)."""

    tuning: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {**super().to_dict(), "kind": "tuning", "tuning": self.tuning}


def tuning_from_description(d: dict[str, Any], region: str, trials: list[dict[str, Any]] | None = None,
                            best_model: str | None = None) -> TuningJobInfo:
    """TuningJobInfo from DescribeHyperParameterTuningJob (or a ListHyperParameterTuningJobs summary)."""
    name = d["HyperParameterTuningJobName"]
    config = d.get("HyperParameterTuningJobConfig") or {}
    limits = config.get("ResourceLimits") or d.get("ResourceLimits") or {}
    objective = config.get("HyperParameterTuningJobObjective") or {}
    definition = d.get("TrainingJobDefinition") or {}
    resources = definition.get("HyperParameterTuningResourceConfig") or definition.get("ResourceConfig") or {}
    best = d.get("BestTrainingJob")
    objective_counters = d.get("ObjectiveStatusCounters") or {}
    tuning = {
        "strategy": config.get("Strategy") or d.get("Strategy"),
        "objective": {"metric": objective.get("MetricName"), "type": objective.get("Type")} if objective else None,
        "max_jobs": limits.get("MaxNumberOfTrainingJobs"),
        "max_parallel_jobs": limits.get("MaxParallelTrainingJobs"),
        "early_stopping": config.get("TrainingJobEarlyStoppingType"),
        "trials": _counts(d),
        "objective_status": {k.lower(): int(v or 0) for k, v in objective_counters.items()},
        "best": trial_dict(best) if best else None,
        "trial_jobs": trials,
    }
    if tuning["best"] is not None:
        tuning["best"]["model_artifacts"] = best_model
    counts = tuning["trials"]
    # A tuning job has no SecondaryStatus: its trials' progress stands in, so `wait` prints a line as each ends.
    progress = f"{counts['total'] - counts['in_progress']} of {tuning['max_jobs'] or '?'} trials ended"
    return TuningJobInfo(
        name=name, backend="sagemaker", status=d["HyperParameterTuningJobStatus"], secondary_status=progress,
        created=d.get("CreationTime"), ended=d.get("HyperParameterTuningEndTime"),
        instance_type=resources.get("InstanceType"), instance_count=resources.get("InstanceCount"),
        failure_reason=d.get("FailureReason") or None, model_artifacts=best_model,
        console_url=tuning_console_url(region, name), region=region,
        extra={"arn": d.get("HyperParameterTuningJobArn")}, tuning=tuning,
    )


class SageMakerTuningBackend:
    """Hyperparameter tuning jobs in one region (describe, list, stop, logs)."""

    name = "sagemaker"

    def __init__(self, training: SageMakerBackend) -> None:
        self.region = training.region
        self._training = training  # its client, and the trials' own describe and logs
        self._sagemaker = training._sagemaker

    def _description(self, name: str) -> dict[str, Any] | None:
        with api_errors(f"describe tuning job {name}"):
            try:
                return self._sagemaker.describe_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
            except Exception as exc:
                if is_not_found(exc):
                    return None
                raise

    def exists(self, name: str) -> bool:
        return len(name) <= TUNING_NAME_MAX and self._description(name) is not None

    def description(self, name: str) -> dict[str, Any]:
        d = self._description(name)
        if d is None:
            raise AwsError(f"no tuning job named {name} in {self.region} (check the name, or --region)",
                            exit_codes.API)
        return d

    def trials(self, name: str, limit: int = MAX_TRIALS_SHOWN) -> list[dict[str, Any]]:
        """The tuning job's training jobs, newest first (ListTrainingJobsForHyperParameterTuningJob). Not sorted
        by FinalObjectiveMetricValue: that leaves out every trial without an objective yet."""
        with api_errors(f"list the trials of tuning job {name}"):
            return listed(self._sagemaker.list_training_jobs_for_hyper_parameter_tuning_job, "TrainingJobSummaries",
                          limit, HyperParameterTuningJobName=name)

    def describe(self, name: str) -> TuningJobInfo:
        d = self.description(name)
        best = (d.get("BestTrainingJob") or {}).get("TrainingJobName")
        best_model = None
        if best:
            described = self._training._description(best)
            best_model = ((described or {}).get("ModelArtifacts") or {}).get("S3ModelArtifacts")
        objective = (d.get("HyperParameterTuningJobConfig") or {}).get("HyperParameterTuningJobObjective") or {}
        return tuning_from_description(d, self.region, best_first(self.trials(name), objective.get("Type")),
                                       best_model)

    def list(self, *, status: str | None = None, name_contains: str | None = None,
             since: dt.datetime | None = None, limit: int = 20) -> list[JobInfo]:
        with api_errors("list tuning jobs"):
            found: list[JobInfo] = [tuning_from_description(s, self.region) for s in listed(
                self._sagemaker.list_hyper_parameter_tuning_jobs, "HyperParameterTuningJobSummaries", limit,
                status=status, name_contains=name_contains, since=since)]
        return newest_first(found, limit)

    def stop(self, name: str) -> JobInfo:
        info = self.describe(name)
        if info.done or info.status == "Stopping":
            return info
        with api_errors(f"stop tuning job {name}"):
            self._sagemaker.stop_hyper_parameter_tuning_job(HyperParameterTuningJobName=name)
        return self.describe(name)

    def followed_trial(self, name: str) -> str:
        """The trial whose logs and metrics stand for the tuning job's: the best one, else the newest."""
        d = self.description(name)
        best = (d.get("BestTrainingJob") or {}).get("TrainingJobName")
        if best:
            return best
        trials = self.trials(name)
        epoch = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
        newest = max(trials, key=lambda t: t.get("CreationTime") or epoch, default=None)
        if newest is None:
            raise UserError(f"tuning job {name} has started no training job yet: no logs or metrics to show",
                            exit_codes.API)
        return newest["TrainingJobName"]

    def logs(self, name: str, *, follow: bool = False) -> Iterator[LogEvent]:
        trial = self.followed_trial(name)
        # The host names the trial: a tuning job's logs come from one of its training jobs.
        for event in self._training.logs(trial, follow=follow):
            yield LogEvent(f"{trial}/{event.host}", event.timestamp, event.message)

    def event_files(self, name: str, directory: Path | None = None) -> EventFiles:
        raise UserError(f"{name} is a tuning job: its trials have no TensorBoard output (the tuning API has no "
                        "TensorBoardOutputConfig); `smtrain status` names its trials", exit_codes.USAGE)


class _TuningJobName(UserError):
    """Raised by _TrainingOnly: SageMaker knows the name as a tuning job's, not a training job's. The lifecycle
    methods below catch it; anything else asked of a tuning job's name ends with its message (exit 2)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"{name} is a tuning job, not a training job: `smtrain status {name}` names its trials",
                         exit_codes.USAGE)


class _TrainingOnly(SageMakerBackend):
    """SageMakerBackend whose unknown names are checked against tuning jobs before it gives up."""

    def description(self, name: str) -> dict[str, Any]:
        d = self._description(name)
        if d is not None:
            return d
        if len(name) <= TUNING_NAME_MAX and SageMakerTuningBackend(self).exists(name):
            raise _TuningJobName(name)
        return super().description(name)  # the training backend's "no training job named ..."


class SageMakerJobsBackend:
    """The backend of the lifecycle commands: a training job as SageMakerBackend follows it (the same
    calls), a tuning job by its name too. Anything else is the training backend's."""

    def __init__(self, region: str) -> None:
        self.training = _TrainingOnly(region)
        self.tuning = SageMakerTuningBackend(self.training)

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self.training, attribute)

    def describe(self, name: str) -> JobInfo:
        try:
            return self.training.describe(name)
        except _TuningJobName:
            return self.tuning.describe(name)

    def stop(self, name: str) -> JobInfo:
        try:
            return self.training.stop(name)
        except _TuningJobName:
            return self.tuning.stop(name)

    def event_files(self, name: str, directory: Path | None = None) -> EventFiles:
        try:
            return self.training.event_files(name, directory)
        except _TuningJobName:
            return self.tuning.event_files(name, directory)

    def metrics(self, name: str, host: str | None = None) -> Any:
        """A training job's metric series; a tuning job's are its best (else newest) trial's."""
        try:
            return self.training.metrics(name, host)
        except _TuningJobName:
            trial = self.tuning.followed_trial(name)
            return self.training.metrics(trial, host)

    def logs(self, name: str, *, follow: bool = False) -> Iterator[LogEvent]:
        events = self.training.logs(name, follow=follow)
        try:
            first = next(events)  # the training backend describes the job before its first event
        except StopIteration:
            return
        except _TuningJobName:
            yield from self.tuning.logs(name, follow=follow)
            return
        yield first
        yield from events
