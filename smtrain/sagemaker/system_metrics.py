"""A SageMaker job's instance metrics per host, read from CloudWatch: CPU, memory, GPU, GPU memory and disk use,
and what they say about the GPUs (`smtrain metrics JOB --system`, the last line of `status` and `wait`).

SageMaker publishes them for every training job (AWS, "Monitor Amazon SageMaker AI with Amazon CloudWatch",
Training job, Batch transform job, and Endpoint instance metrics): namespace ``/aws/sagemaker/TrainingJobs``,
dimension ``Host`` = ``<job>/algo-<n>``, the metrics below in percent; GPUUtilization and GPUMemoryUtilization
are summed over a host's GPUs (0 to 100 x GPUs), CPUUtilization over its vCPUs. The same namespace and dimension
as the training metrics (smtrain.sagemaker.metric_series), read with the Average statistic per period.

boto3 is never imported here: the CloudWatch client is handed in.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from smtrain.jobs import JobInfo
from smtrain.plan import launch
from smtrain.sagemaker.metric_series import NAMESPACE

GPU, GPU_MEMORY = "GPUUtilization", "GPUMemoryUtilization"
METRICS = ("CPUUtilization", "MemoryUtilization", GPU, GPU_MEMORY, "DiskUtilization")
MAX_POINTS = 1440  # per series: a minute's period for a day, longer periods for longer jobs
_QUERIES_PER_CALL = 500  # GetMetricData's limit on MetricDataQueries
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
        gpu, cpu = self.gpu_percent(), self.average("CPUUtilization")
        if gpu is None:
            return f"{self.host}: no GPU figures" + (f", CPU {cpu:.0f}%" if cpu is not None else "")
        of = f" of {self.gpus} GPU{'s' if self.gpus != 1 else ''}" if self.gpus else " (summed over its GPUs)"
        verdict = self.verdict()
        return f"{self.host}: GPU {gpu:.0f}%{of}" + (f": {verdict}" if verdict else "")

    def to_dict(self) -> dict[str, Any]:
        return {"host": self.host, "gpus": self.gpus,
                "average": {name: _rounded(self.average(name)) for name in METRICS},
                "gpu_percent_each": _rounded(self.gpu_percent()) if self.gpus else None,
                "verdict": self.verdict(),
                "series": {name: [{"time": t.astimezone(dt.timezone.utc).isoformat().replace("+00:00", "Z"),
                                   "value": _rounded(v)} for t, v in points]
                           for name, points in self.series.items()}}


@dataclass(frozen=True)
class SystemUsage:
    """A job's instance metrics, host by host (README "Utilization")."""

    job: JobInfo
    period: int  # seconds per point
    hosts: tuple[HostUsage, ...]
    notes: tuple[str, ...] = field(default=())

    @property
    def empty(self) -> bool:
        return not any(h.series for h in self.hosts)

    def line(self) -> str | None:
        """The one line `status` and `wait` end with; None when CloudWatch holds nothing for the job."""
        if self.empty:
            return None
        return "; ".join(h.summary_text() for h in self.hosts if h.series)

    def to_dict(self) -> dict[str, Any]:
        return {"job": self.job.name, "status": self.job.status, "source": "cloudwatch", "period_seconds": self.period,
                "hosts": [h.to_dict() for h in self.hosts], "notes": list(self.notes)}


def _rounded(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else round(value, 2)


def period_for(start: dt.datetime, end: dt.datetime) -> int:
    """Whole minutes per point, so that a series has at most MAX_POINTS (CloudWatch keeps minutes for 15 days)."""
    minutes = math.ceil((end - start).total_seconds() / 60 / MAX_POINTS)
    return 60 * max(1, minutes)


def job_hosts(description: Mapping[str, Any]) -> list[str]:
    """algo-1 ... algo-N: every instance of the job, a heterogeneous cluster's groups together."""
    resources = description.get("ResourceConfig") or {}
    count = resources.get("SelectedInstanceCount") or resources.get("InstanceCount")
    if not count and resources.get("InstanceGroups"):
        count = sum(g.get("InstanceCount") or 0 for g in resources["InstanceGroups"])
    return launch.host_names(int(count or 1))


def read_system(cloudwatch: Any, description: Mapping[str, Any], job: JobInfo, gpus: int | None,
                now: dt.datetime | None = None) -> SystemUsage:
    """Every host's instance metrics over the job's run (`gpus`: each host's GPUs, None where unknown or where
    the hosts differ, as in a heterogeneous cluster)."""
    now = now or dt.datetime.now(dt.timezone.utc)
    hosts = job_hosts(description)
    start = description.get("TrainingStartTime") or description.get("CreationTime") or now
    end = max(description.get("TrainingEndTime") or now, start)
    period = period_for(start, end)
    # A period either side: CloudWatch drops the seconds of both ends.
    window = (start - dt.timedelta(seconds=period), end + dt.timedelta(seconds=period))
    pairs = [(host, name) for host in hosts for name in METRICS]
    found: dict[tuple[str, str], list[tuple[dt.datetime, float]]] = {}
    for first in range(0, len(pairs), _QUERIES_PER_CALL):
        chunk = pairs[first:first + _QUERIES_PER_CALL]
        queries = [{"Id": f"q{first + i}", "ReturnData": True, "MetricStat": {
            "Metric": {"Namespace": NAMESPACE, "MetricName": name,
                       "Dimensions": [{"Name": "Host", "Value": f"{job.name}/{host}"}]},
            "Period": period, "Stat": "Average"}} for i, (host, name) in enumerate(chunk)]
        by_id = {q["Id"]: pair for q, pair in zip(queries, chunk, strict=True)}
        kwargs: dict[str, Any] = {"StartTime": window[0], "EndTime": window[1], "ScanBy": "TimestampAscending",
                                  "MetricDataQueries": queries}
        while True:
            page = cloudwatch.get_metric_data(**kwargs)
            for result in page.get("MetricDataResults", []):
                found.setdefault(by_id[result["Id"]], []).extend(
                    zip(result.get("Timestamps", []), result.get("Values", []), strict=False))
            if not page.get("NextToken"):
                break
            kwargs["NextToken"] = page["NextToken"]
    usage = tuple(HostUsage(host, gpus, {name: tuple(sorted(found[(host, name)], key=lambda p: p[0]))
                                         for name in METRICS if found.get((host, name))}) for host in hosts)
    notes = () if any(h.series for h in usage) else (
        f"CloudWatch holds no instance metrics for {job.name} in {NAMESPACE} (SageMaker publishes them while "
        "the job's instances run, a minute apart)",)
    return SystemUsage(job, period, usage, notes)


def plot_series(usage: SystemUsage, name: str = GPU) -> list[tuple[str, Sequence[tuple[dt.datetime, float]]]]:
    """(host, points) of one metric for each host that has it, each GPU figure as the average per GPU."""
    out = []
    for host in usage.hosts:
        points = host.series.get(name, ())
        if points:
            scale = host.gpus if name in (GPU, GPU_MEMORY) and host.gpus else 1
            out.append((host.host, [(t, v / scale) for t, v in points]))
    return out
