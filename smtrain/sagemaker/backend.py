"""Following SageMaker training jobs: describe, list, logs and stop, through boto3.

The SDK's own attach()/wait()/logs_for_job() sleep 5 s before polling and need fields that not
every DescribeTrainingJob answer carries, so this module calls the API directly. Logs come from
CloudWatch Logs: group ``/aws/sagemaker/TrainingJobs``, one stream per host and container start,
named ``<job>/algo-<n>-<epoch seconds>``.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from smtrain import exit_codes
from smtrain.aws import api_errors, boto_session, error_code, is_not_found
from smtrain.errors import AwsError
from smtrain.jobs import EventFiles, JobInfo, JobMetrics, LogEvent, SystemUsage, poll_interval
from smtrain.redact import StreamMasker, remember

LOG_GROUP = "/aws/sagemaker/TrainingJobs"
LOGS_POLL_DEFAULT = 5.0
_LIST_PAGE_MAX = 100  # ListTrainingJobs' MaxResults limit
_SETTLE_MS = 2000  # how long a followed event may wait for other hosts' earlier ones
_HOST_RE = re.compile(r"/(algo-\d+)-\d+$")


def console_domain(region: str) -> str:
    """The AWS console's host for a region (China and GovCloud have their own)."""
    if region.startswith("cn-"):
        return f"{region}.console.amazonaws.cn"
    if region.startswith("us-gov-"):
        return f"{region}.console.amazonaws-us-gov.com"
    return f"{region}.console.aws.amazon.com"


def console_url(region: str, name: str) -> str:
    return f"https://{console_domain(region)}/sagemaker/home?region={region}#/jobs/{name}"


def logs_url(region: str, name: str) -> str:
    # The CloudWatch console link the SageMaker SDK prints: every stream of the job.
    return (f"https://{console_domain(region)}/cloudwatch/home?region={region}#logStream:"
            f"group={LOG_GROUP};prefix={quote(name)};streamFilter=typeLogStreamPrefix")


def host_of(stream: str) -> str:
    """"algo-1" for the stream ``job/algo-1-1700000000``; the stream's last part otherwise."""
    m = _HOST_RE.search(stream)
    return m.group(1) if m else stream.rsplit("/", 1)[-1]


def _remember_job_secrets(d: dict[str, Any]) -> None:
    """Register the secrets a job was created with (its secret-looking environment variables and
    hyperparameters): a command that follows the job masks them in its logs and failure reason,
    as the run that submitted it did."""
    remember(d.get("Environment"))
    remember({name: _json_text(value) for name, value in (d.get("HyperParameters") or {}).items()})


def _json_text(value: Any) -> Any:
    # Requests carry hyperparameters JSON-encoded ('"abc"'); the program sees abc.
    try:
        return json.loads(value)
    except (TypeError, ValueError):
        return value


def job_from_description(d: dict[str, Any], region: str) -> JobInfo:
    """JobInfo from a DescribeTrainingJob answer (or a ListTrainingJobs summary)."""
    name = d["TrainingJobName"]
    resources = d.get("ResourceConfig") or {}
    # A heterogeneous cluster has no one type: its groups are told, and its instances counted together.
    groups = [{"name": g.get("InstanceGroupName"), "instance_type": g.get("InstanceType"),
               "count": g.get("InstanceCount")} for g in resources.get("InstanceGroups") or ()]
    extra: dict[str, Any] = {"arn": d.get("TrainingJobArn")}
    if groups:
        extra["instance_groups"] = groups
    return JobInfo(
        name=name, backend="sagemaker", status=d["TrainingJobStatus"],
        secondary_status=d.get("SecondaryStatus"), created=d.get("CreationTime"),
        started=d.get("TrainingStartTime"), ended=d.get("TrainingEndTime"),
        # A fallback list (compute.prefer) has no InstanceType: SageMaker names the type it picked.
        instance_type=resources.get("SelectedInstanceType") or resources.get("InstanceType"),
        instance_count=resources.get("SelectedInstanceCount") or resources.get("InstanceCount")
        or (sum(g["count"] or 0 for g in groups) if groups else None),
        failure_reason=d.get("FailureReason"),
        model_artifacts=(d.get("ModelArtifacts") or {}).get("S3ModelArtifacts"),
        console_url=console_url(region, name), logs_url=logs_url(region, name), region=region,
        extra=extra,
        billable_seconds=d.get("BillableTimeInSeconds"), training_seconds=d.get("TrainingTimeInSeconds"),
        spot=d.get("EnableManagedSpotTraining"),
    )


def listed(call: Callable[..., dict[str, Any]], key: str, limit: int, *, status: str | None = None,
           name_contains: str | None = None, since: dt.datetime | None = None, **more: Any) -> list[dict[str, Any]]:
    """Up to `limit` summaries (under `key`) of a SageMaker List* call, newest first, page after page;
    `more` are the call's own parameters. Tuning jobs list the same way (smtrain.sagemaker.tuning_jobs)."""
    kwargs: dict[str, Any] = {"SortBy": "CreationTime", "SortOrder": "Descending", **more}
    if status:
        kwargs["StatusEquals"] = status
    if name_contains:
        kwargs["NameContains"] = name_contains
    if since:
        kwargs["CreationTimeAfter"] = since
    found: list[dict[str, Any]] = []
    while len(found) < limit:
        page = call(MaxResults=min(_LIST_PAGE_MAX, limit - len(found)), **kwargs)
        found += page.get(key, [])
        if not page.get("NextToken"):
            break
        kwargs["NextToken"] = page["NextToken"]
    return found


def newest_first(jobs: list[JobInfo], limit: int) -> list[JobInfo]:
    epoch = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
    return sorted(jobs, key=lambda j: j.created or epoch, reverse=True)[:limit]


@dataclass
class _Stream:
    name: str
    host: str
    token: str | None = None


class _LogTail:
    """Reads every stream of one job from where it left off; new streams are found on each poll."""

    def __init__(self, logs: Any, job: str) -> None:
        self._logs = logs
        self._job = job
        self._streams: dict[str, _Stream] = {}
        self._pending: list[tuple[int, str, str]] = []  # (ms, host, message) read, not yet returned
        self._mask = StreamMasker()  # per host, in each host's order: a private key block spans events

    def _refresh_streams(self) -> None:
        kwargs: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamNamePrefix": f"{self._job}/"}
        while True:
            try:
                page = self._logs.describe_log_streams(**kwargs)
            except Exception as exc:
                if error_code(exc) == "ResourceNotFoundException":
                    return  # no job has logged in this region yet
                raise
            for s in page.get("logStreams", []):
                name = s["logStreamName"]
                if name not in self._streams:
                    self._streams[name] = _Stream(name, host_of(name))
            if not page.get("nextToken"):
                return
            kwargs["nextToken"] = page["nextToken"]

    def _read(self, stream: _Stream) -> list[tuple[int, str, str]]:
        out = []
        while True:
            kwargs: dict[str, Any] = {"logGroupName": LOG_GROUP, "logStreamName": stream.name, "startFromHead": True}
            if stream.token:
                kwargs["nextToken"] = stream.token
            page = self._logs.get_log_events(**kwargs)
            events = page.get("events", [])
            token = page.get("nextForwardToken")
            out += [(e["timestamp"], stream.host, e["message"]) for e in events]
            # The end of the stream for now: no events, or the same token handed back.
            done = not events or token == stream.token
            stream.token = token or stream.token
            if done:
                return out

    def poll(self, *, final: bool) -> list[LogEvent]:
        """Events read since the last poll, all hosts merged by time.

        Streams are read one after another, so an event another host writes meanwhile can turn up
        a poll later than a newer one: unless `final`, events from the last few seconds wait for
        the next poll so that the merged output stays in time order.
        """
        self._refresh_streams()
        for stream in sorted(self._streams.values(), key=lambda s: s.name):
            self._pending += self._read(stream)
        self._pending.sort(key=lambda e: e[0])  # stable: a host's own order survives equal timestamps
        cutoff = float("inf") if final else time.time() * 1000 - _SETTLE_MS
        ready = [e for e in self._pending if e[0] < cutoff]
        self._pending = self._pending[len(ready):]
        return [LogEvent(host, dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc),
                         self._mask(host, message.rstrip("\n")))
                for ms, host, message in ready]


class SageMakerBackend:
    """The jobs.Backend of SageMaker training jobs in one region."""

    name = "sagemaker"

    def __init__(self, region: str, *, sleep: Callable[[float], None] = time.sleep) -> None:
        self.region = region
        self._session = boto_session(region)
        self._sagemaker = self._session.client("sagemaker")
        self._logs_client: Any = None
        self._sleep = sleep

    def _description(self, name: str) -> dict[str, Any] | None:
        """DescribeTrainingJob's answer, None when SageMaker has no job of that name."""
        with api_errors(f"describe training job {name}"):
            try:
                description = self._sagemaker.describe_training_job(TrainingJobName=name)
            except Exception as exc:
                if is_not_found(exc):
                    return None
                raise
        _remember_job_secrets(description)
        return description

    def description(self, name: str) -> dict[str, Any]:
        """DescribeTrainingJob's answer; an unknown job is a UserError (exit 4)."""
        d = self._description(name)
        if d is None:
            raise AwsError(f"no training job named {name} in {self.region} (check the name, or --region)",
                            exit_codes.API)
        return d

    def describe(self, name: str) -> JobInfo:
        return job_from_description(self.description(name), self.region)

    def event_files(self, name: str, directory: Path | None = None) -> EventFiles:
        """The job's TensorBoard event files, downloaded from S3 into `directory` (default: this user's cache).
        A directory that is not smtrain's, not empty and not downloaded into before is refused first (exit 2)."""
        from smtrain.sagemaker.event_files import claim, default_directory, download, event_files_uri

        cache = default_directory(name)
        place = claim(directory or cache, owned=directory in (None, cache))
        uri = event_files_uri(self.description(name))
        with api_errors(f"download the TensorBoard event files of {name} from {uri}"):
            count, notes = download(self._session.client("s3"), uri, place)
        return EventFiles(name, uri, place.path, count, notes)

    def metrics(self, name: str, host: str | None = None) -> JobMetrics:
        """The job's metric series for `host` (default algo-1), one point per epoch, from CloudWatch."""
        from smtrain.sagemaker.metric_series import read_metrics

        description = self.description(name)
        return read_metrics(self._session.client("cloudwatch"), description,
                            job_from_description(description, self.region), host)

    def system(self, name: str, gpus: int | None = None) -> SystemUsage:
        """The job's instance metrics per host (CPU, memory, GPU, GPU memory, disk) from CloudWatch; `gpus`: each
        host's GPUs, for what the GPU figure says."""
        from smtrain.sagemaker.system_metrics import read_system

        description = self.description(name)
        with api_errors(f"read the instance metrics of {name} (CloudWatch)"):
            return read_system(self._session.client("cloudwatch"), description,
                               job_from_description(description, self.region), gpus)

    def exists(self, name: str) -> bool:
        return self._description(name) is not None

    def list(self, *, status: str | None = None, name_contains: str | None = None,
             since: dt.datetime | None = None, limit: int = 20) -> list[JobInfo]:
        with api_errors("list training jobs"):
            found = [job_from_description(s, self.region) for s in listed(
                self._sagemaker.list_training_jobs, "TrainingJobSummaries", limit, status=status,
                name_contains=name_contains, since=since)]
        return newest_first(found, limit)

    def stop(self, name: str) -> JobInfo:
        info = self.describe(name)
        if info.done or info.status == "Stopping":
            return info
        with api_errors(f"stop training job {name}"):
            self._sagemaker.stop_training_job(TrainingJobName=name)
        return self.describe(name)

    def logs(self, name: str, *, follow: bool = False) -> Iterator[LogEvent]:
        """Every host's log events merged by time; with `follow`, until the job has ended."""
        interval = poll_interval(LOGS_POLL_DEFAULT)
        running = not self.describe(name).done  # also: a wrong name fails here, not with empty output
        if self._logs_client is None:
            self._logs_client = self._session.client("logs")
        tail = _LogTail(self._logs_client, name)
        ended = not (follow and running)
        while True:
            with api_errors(f"read the logs of {name}"):
                events = tail.poll(final=ended)
            yield from events
            if ended:
                return
            self._sleep(interval)
            # Status first, then events: the next poll reads all that was written before the end.
            ended = self.describe(name).done
