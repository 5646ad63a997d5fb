"""A SageMaker job's instance metrics per host, read from CloudWatch: CPU, memory, GPU, GPU memory and disk use
(`smtrain metrics JOB --system`, the last line of `status` and `wait`).

SageMaker publishes them for every training job (AWS, "Monitor Amazon SageMaker AI with Amazon CloudWatch",
Training job, Batch transform job, and Endpoint instance metrics): namespace ``/aws/sagemaker/TrainingJobs``,
dimension ``Host`` = ``<job>/algo-<n>``, the metrics below in percent; GPUUtilization and GPUMemoryUtilization
are summed over a host's GPUs (0 to 100 x GPUs), CPUUtilization over its vCPUs. The same namespace and dimension
as the training metrics (smtrain.sagemaker.metric_series), read with the Average statistic per period.

boto3 is never imported here: the CloudWatch client is handed in. What the figures say: smtrain.jobs.HostUsage.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from typing import Any

from smtrain.jobs import METRICS, HostUsage, JobInfo, SystemUsage
from smtrain.plan import launch
from smtrain.sagemaker.metric_series import NAMESPACE

MAX_POINTS = 1440  # per series: a minute's period for a day, longer periods for longer jobs
_QUERIES_PER_CALL = 500  # GetMetricData's limit on MetricDataQueries


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
    return SystemUsage(job, "cloudwatch", period, usage, notes)
