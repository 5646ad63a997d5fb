"""What every backend reports about a job, with stable keys for `--output json`."""

from __future__ import annotations

import datetime as dt
import math
import os
import re
import shlex
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from smtrain import exit_codes
from smtrain.errors import UserError

POLL_ENV = "SMTRAIN_POLL_SECONDS"  # how often job commands poll, for every backend
JOB_STATUSES = ("InProgress", "Completed", "Failed", "Stopping", "Stopped")
TERMINAL = ("Completed", "Failed", "Stopped")
EXIT_FOR_STATUS = {"Completed": exit_codes.OK, "Failed": exit_codes.FAILED, "Stopped": exit_codes.STOPPED}


def seconds_from_env(name: str, default: float) -> float:
    """A positive number of seconds from environment variable `name`, else `default`."""
    value = os.environ.get(name)
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if seconds <= 0:
        raise UserError(f"{name}={value!r} is not a positive number of seconds", exit_codes.USAGE)
    return seconds


def poll_interval(default: float) -> float:
    """Seconds between polls: SMTRAIN_POLL_SECONDS if set, else `default`."""
    return seconds_from_env(POLL_ENV, default)


def exit_code_for(job: JobInfo) -> int:
    """The process exit code that reports `job`'s state (0 while it runs)."""
    return EXIT_FOR_STATUS.get(job.status, exit_codes.OK)


def reattach_command(*words: str, region: str | None = None) -> str:
    """The smtrain command line to run again, e.g. ``smtrain logs JOB --follow --region R``."""
    args = ["smtrain", *words] + (["--region", region] if region else [])
    return " ".join(shlex.quote(a) for a in args)


def _rounded(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 2)


def _iso(value: dt.datetime | None) -> str | None:
    return value.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z") if value else None


@dataclass(frozen=True)
class JobCost:
    """What a job cost (README "Quotas and cost"); None where unknown (a running job, an unpriced type)."""

    billable_seconds: int | None  # wall clock per instance, as AWS bills it (spot: after its saving)
    training_seconds: int | None
    instance_type: str | None
    instance_count: int
    spot: bool
    price_per_hour: float | None  # USD on demand, one instance (a heterogeneous cluster: all of it, count 1)
    price_region: str | None  # the region the price is for
    price_note: str | None  # another region's price, an estimate, or no price known
    usd: float | None  # billable_seconds x price x instances
    on_demand_usd: float | None  # spot: what the training time would have cost on demand
    spot_saving_usd: float | None
    spot_saving_percent: float | None  # as the console shows it: 1 - billable / training
    cluster: bool = False  # a heterogeneous cluster: instance_type names its groups (README "Quotas and cost")

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@dataclass(frozen=True)
class JobInfo:
    name: str
    backend: str  # "sagemaker" | "local"
    status: str  # InProgress | Completed | Failed | Stopping | Stopped (Unknown: a local record `list` cannot read)
    secondary_status: str | None = None
    created: dt.datetime | None = None
    started: dt.datetime | None = None
    ended: dt.datetime | None = None
    instance_type: str | None = None
    instance_count: int | None = None
    failure_reason: str | None = None
    model_artifacts: str | None = None
    console_url: str | None = None
    logs_url: str | None = None
    region: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    # What AWS bills (DescribeTrainingJob; SageMaker reports both times once the job has ended).
    billable_seconds: int | None = None
    training_seconds: int | None = None
    spot: bool | None = None  # managed spot training
    cost: JobCost | None = None  # set by the commands that price a job (status, list --cost)

    @property
    def done(self) -> bool:
        return self.status in TERMINAL

    @property
    def status_text(self) -> str:
        """The status with its secondary status when that says more: "InProgress (Training)", "Completed"."""
        second = self.secondary_status
        return self.status + (f" ({second})" if second and second != self.status else "")

    def to_dict(self) -> dict[str, Any]:
        """The documented JSON shape of a job (README: "JSON output")."""
        return {
            "name": self.name, "backend": self.backend, "status": self.status,
            "secondary_status": self.secondary_status, "created": _iso(self.created),
            "started": _iso(self.started), "ended": _iso(self.ended), "instance_type": self.instance_type,
            "instance_count": self.instance_count, "failure_reason": self.failure_reason,
            "model_artifacts": self.model_artifacts, "console_url": self.console_url,
            "logs_url": self.logs_url, "region": self.region,
            "cost": self.cost.to_dict() if self.cost else None,
        }


@dataclass(frozen=True)
class LogEvent:
    host: str  # "algo-1"
    timestamp: dt.datetime
    message: str

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "timestamp": _iso(self.timestamp), "message": self.message}


EVENT_FILE_PREFIX = "events.out.tfevents."  # what tf.summary's writers name their files, TF 1 and 2 alike


def is_event_file(name: str) -> bool:
    """Whether the file name `name` (no folder) is a TensorBoard event file: events.out.tfevents.*."""
    return name.startswith(EVENT_FILE_PREFIX) and len(name) > len(EVENT_FILE_PREFIX)


@dataclass(frozen=True)
class EventFiles:
    """A job's TensorBoard event files, in a directory of this machine that `tensorboard --logdir` can read."""

    job: str
    source: str  # "local" (a local job's own directory), or the s3:// prefix they were downloaded from
    logdir: Path
    files: int  # how many event files the directory holds (0: none written or uploaded yet)
    notes: tuple[str, ...] = ()  # what was left out or left alone, one line each (stderr, never the JSON)

    def to_dict(self, command: str | None) -> dict[str, Any]:
        """The documented JSON of `smtrain tensorboard` (README: "JSON output"); `command` runs TensorBoard."""
        return {"job": self.job, "source": self.source, "logdir": str(self.logdir), "files": self.files,
                "tensorboard": command}


@dataclass(frozen=True)
class MetricPoint:
    epoch: int
    value: float
    timestamp: dt.datetime | None  # when the line was written (local), CloudWatch's period start (SageMaker)
    fit: int = 1  # the script's n-th fit call whose epoch this is (`fit=N` in its line from the second on)


@dataclass(frozen=True)
class MetricSeries:
    """One MetricDefinitions metric of a job, one point per epoch (`smtrain metrics`)."""

    name: str  # the definition's Name: "train:loss", "validation:accuracy"
    points: tuple[MetricPoint, ...]


@dataclass(frozen=True)
class JobMetrics:
    """A job's metric series as one host reported them (README "Metrics")."""

    job: JobInfo
    source: str  # "cloudwatch" (SageMaker) or "log" (a local job's host log)
    host: str  # "algo-1": the chief, unless asked for another
    hosts: tuple[str, ...]  # every host of the job
    series: tuple[MetricSeries, ...]  # in MetricDefinitions order; train:epoch is the rows' key, not a series
    final: dict[str, float] = field(default_factory=dict)  # SageMaker's FinalMetricDataList; local: last epoch's
    notes: tuple[str, ...] = ()  # what was read and left out (an epoch that is no count), said with the table


# A job's instance metrics per host (`metrics --system`): SageMaker publishes these for every training job (AWS,
# "Monitor Amazon SageMaker AI with Amazon CloudWatch"), in percent; CPU and GPU figures are sums over a host's
# vCPUs and GPUs (0 to 100 x count). A local job's hosts are sampled the same way (smtrain.local.usage_sampler).
GPU, GPU_MEMORY = "GPUUtilization", "GPUMemoryUtilization"
METRICS = ("CPUUtilization", "MemoryUtilization", GPU, GPU_MEMORY, "DiskUtilization")
# What the GPU figure says. A host of several GPUs whose summed use is about one GPU's (and no more): its work
# runs on one of them, as a Keras script without a strategy (or with MirroredStrategy over one device) does.
ONE_GPU_AT_MOST = 110.0
ONE_GPU_AT_LEAST = 20.0
IDLE_BELOW = 5.0  # percent of each GPU, on average: nothing ran there


@dataclass(frozen=True)
class HostUsage:
    """One host's instance metrics: name -> (time, percent) points, in time order."""

    host: str
    gpus: int | None  # the host's GPUs (the catalog's figure for its type); None: unknown
    series: Mapping[str, tuple[tuple[dt.datetime, float], ...]]

    def average(self, name: str) -> float | None:
        values = [v for _, v in self.series.get(name, ()) if math.isfinite(v)]
        return sum(values) / len(values) if values else None

    def gpu_percent(self) -> float | None:
        """The average use of each GPU (percent of one GPU), or the summed figure when the count is unknown."""
        total = self.average(GPU)
        if total is None:
            return None
        return total / self.gpus if self.gpus else total

    def verdict(self) -> str | None:
        """What the GPU figure says, when it says something: one GPU of several busy, or none."""
        total = self.average(GPU)
        if total is None or not self.gpus:
            return None
        if self.gpus > 1 and ONE_GPU_AT_LEAST <= total <= ONE_GPU_AT_MOST:
            return "the strategy may use one GPU"
        if total / self.gpus < IDLE_BELOW:
            return "its GPUs sat idle"
        return None

    def summary_text(self) -> str:
        """`algo-1: GPU 23% of 4 GPUs: the strategy may use one GPU`, or CPU's figure where no GPU is reported."""
        gpu, cpu, memory = self.gpu_percent(), self.average("CPUUtilization"), self.average("MemoryUtilization")
        if gpu is None:
            shown = [f"{what} {value:.0f}%" for what, value in (("CPU", cpu), ("memory", memory)) if value is not None]
            return f"{self.host}: " + ", ".join([*shown, "no GPU figures"])
        of = f" of {self.gpus} GPU{'s' if self.gpus != 1 else ''}" if self.gpus else " (summed over its GPUs)"
        verdict = self.verdict()
        return f"{self.host}: GPU {gpu:.0f}%{of}" + (f": {verdict}" if verdict else "")

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "gpus": self.gpus,
                "average": {name: _rounded(self.average(name)) for name in METRICS},
                "gpu_percent_each": _rounded(self.gpu_percent()) if self.gpus else None,
                "verdict": self.verdict(),
                "series": {name: [{"time": _iso(t), "value": _rounded(v)} for t, v in points]
                           for name, points in self.series.items()}}


@dataclass(frozen=True)
class SystemUsage:
    """A job's instance metrics, host by host (README "Utilization"): SageMaker's from CloudWatch, a local job's
    sampled from its host processes."""

    job: JobInfo
    source: str  # "cloudwatch" | "processes"
    period: int  # seconds per point
    hosts: tuple[HostUsage, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not any(h.series for h in self.hosts)

    def line(self) -> str | None:
        """The one line `status` and `wait` end with; None when no figure was recorded for the job."""
        if self.empty:
            return None
        return "; ".join(h.summary_text() for h in self.hosts if h.series)

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job.name, "status": self.job.status, "source": self.source, "period_seconds": self.period,
                "hosts": [h.to_dict() for h in self.hosts], "notes": list(self.notes)}


class Backend(Protocol):
    """The small interface every backend offers (after TorchX's scheduler: dry run, then schedule)."""

    def describe(self, name: str) -> JobInfo: ...

    def list(self, *, status: str | None, name_contains: str | None, since: dt.datetime | None,
             limit: int) -> list[JobInfo]: ...

    def logs(self, name: str, *, follow: bool) -> Iterator[LogEvent]: ...

    def stop(self, name: str) -> JobInfo: ...

    def event_files(self, name: str, directory: Path | None) -> EventFiles: ...

    def metrics(self, name: str, host: str | None = None) -> JobMetrics: ...

    def system(self, name: str, gpus: int | None = None) -> SystemUsage: ...

# A job's metrics, one point per epoch: the rule both backends share.
#
# Epochs: CloudWatch keeps values with timestamps, not epochs. :func:`by_epoch` gives every point the epoch
# of the ``train:epoch`` value of the same timestamp (the same log line locally and in a per-second read;
# the same minute in a per-minute one, where train:epoch is read with the Maximum statistic: the last epoch
# that ended in that minute, the other metrics being that minute's Average). A point without one is a
# `progress` line's (it matches the train:* regexes too) and is left out. The epoch is the number logged, as
# it is (0 and negative ones included): a train:epoch value that is no whole number (nan, 2.5, 1e300) makes
# its timestamp no epoch's. A job whose lines carry no train:epoch counts epochs by order instead: each
# distinct timestamp is the next epoch. A value is kept as read, nan and inf included (a local log has them).
# Fit calls: a script that calls fit several times logs epochs 1, 2, ... for each call; the lines of its second
# call on carry ``fit=N`` (``train:fit``), and an epoch is the pair (call, epoch), so no call's epochs replace
# another's. The rows run in that order, which is the order of time.
EPOCH = "train:epoch"  # its values are epoch numbers (smtrain_tf/metric_definitions.json)
FIT = "train:fit"  # its values are fit call numbers, from the second call on (absent: the first)
_HOST = re.compile(r"algo-[1-9][0-9]*")

Raw = Mapping[str, Iterable[tuple[dt.datetime, float]]]  # metric name -> (timestamp, value) as read


def by_epoch(raw: Raw, order: Iterable[str]) -> tuple[MetricSeries, ...]:
    """One point per epoch for each metric of `raw` (see the module's rule), in `order`, then the rest."""
    points = {name: sorted(values, key=lambda p: p[0]) for name, values in raw.items()}
    epochs = points.pop(EPOCH, [])
    calls = points.pop(FIT, [])
    call_at = {stamp: int(value) for stamp, value in calls if _whole(value) and value >= 1}
    unclear = {stamp for stamp, _ in calls} - set(call_at)  # a fit call that is no whole number: no row's
    if epochs:
        epoch_at = {stamp: int(value) for stamp, value in epochs if _whole(value)}
    else:
        stamps = sorted({stamp for values in points.values() for stamp, _ in values})
        epoch_at = {stamp: n for n, stamp in enumerate(stamps, start=1)}
    names = [n for n in dict.fromkeys(order) if n in points] + [n for n in points if n not in order]
    series = []
    for name in names:
        kept: dict[tuple[int, int], MetricPoint] = {}
        for stamp, value in points[name]:
            if stamp in epoch_at and stamp not in unclear:  # a later point of the same epoch and call wins
                call = call_at.get(stamp, 1)
                kept[(call, epoch_at[stamp])] = MetricPoint(epoch_at[stamp], value, stamp, call)
        if kept:
            series.append(MetricSeries(name, tuple(kept[key] for key in sorted(kept))))
    return tuple(series)


def left_out(raw: Raw) -> tuple[str, ...]:
    """What by_epoch leaves out of `raw`, said: metric lines whose epoch is no count (a 23-digit number, a
    fraction, or none read where the others have one), and fit calls that are none, which no row can key."""
    notes = []
    epochs = raw.get(EPOCH, [])
    if epochs:
        keyed = {stamp for stamp, value in epochs if _whole(value)}
        lines = {stamp for name, values in raw.items() if name not in (EPOCH, FIT) for stamp, _ in values}
        lost = len(lines - keyed)
        if lost:
            notes.append(f"{lost} metric line{'s' if lost != 1 else ''} left out: no epoch smtrain can count on "
                         f"{'them' if lost != 1 else 'it'} (a whole number up to 2^53), so no row can be keyed by it")
    odd = [value for _, value in raw.get(FIT, []) if not (_whole(value) and value >= 1)]
    if odd:
        notes.append(f"{len(odd)} metric line{'s' if len(odd) != 1 else ''} left out: fit call {odd[0]:g} is no "
                     "whole number from 1")
    return tuple(notes)


def _whole(value: float) -> bool:
    # Within 2^53 a float holds every whole number exactly: past it an "epoch" is no count anyone logged.
    return math.isfinite(value) and value.is_integer() and abs(value) <= 2**53


def check_host(host: str | None, hosts: tuple[str, ...]) -> str:
    """`host` (default: the chief, algo-1) when the job has it; else a usage error naming its hosts."""
    if host is None:
        return hosts[0]
    if not _HOST.fullmatch(host) or host not in hosts:
        raise UserError(f"--host {host}: the job's hosts are {', '.join(hosts)}", exit_codes.USAGE)
    return host
