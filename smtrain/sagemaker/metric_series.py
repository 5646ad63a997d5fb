"""A job's metric series, one point per epoch: read from CloudWatch for a SageMaker job.

SageMaker applies each MetricDefinitions regex to the job's log lines and publishes every value it finds
to CloudWatch: namespace ``/aws/sagemaker/TrainingJobs``, metric name = the definition's Name, dimension
``Host`` = ``<job>/algo-<n>`` (AWS, "Monitor Amazon SageMaker AI with Amazon CloudWatch", Training job
metrics: "Host: [training-job-name]/algo-[instance-number-in-cluster]"). The SDK v2's own reader,
``sagemaker.analytics.TrainingJobAnalytics``, queries that namespace with dimension ``TrainingJobName``,
60 s periods and the Average statistic: a job whose metrics carry no Host dimension is read that way.

Periods: SageMaker's training metrics keep a one-second resolution for three hours, then one minute
(AWS, "Amazon CloudWatch Metrics for Monitoring and Analyzing Training Jobs"; CloudWatch returns no
points for a shorter period than a time range still holds). A job that started less than three hours
ago is read per second (each log line's values on their own), else per minute; a per-second read that
finds nothing is read again per minute.

Epochs: smtrain.jobs.by_epoch, the rule local jobs share.

boto3 is never imported here: the CloudWatch client is handed in.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from smtrain.aws import api_errors
from smtrain.jobs import EPOCH, FIT, JobInfo, JobMetrics, by_epoch, check_host, left_out
from smtrain.plan import launch

NAMESPACE = "/aws/sagemaker/TrainingJobs"
PERIOD = 60  # seconds: CloudWatch's finest period for data older than three hours, as the SDK reads it
FINE_PERIOD = 1  # seconds: while the data is younger than that
FINE_FOR = dt.timedelta(hours=3)
_QUERIES_PER_CALL = 500  # GetMetricData's limit on MetricDataQueries


def _pages(call: Any, key: str, **kwargs: Any) -> list[Any]:
    found: list[Any] = []
    while True:
        page = call(**kwargs)
        found += page.get(key, [])
        if not page.get("NextToken"):
            return found
        kwargs["NextToken"] = page["NextToken"]


def _listed(cloudwatch: Any, dimension: dict[str, str]) -> list[str]:
    """The names of the metrics CloudWatch holds under `dimension` in the namespace."""
    metrics = _pages(cloudwatch.list_metrics, "Metrics", Namespace=NAMESPACE, Dimensions=[dimension])
    return list(dict.fromkeys(m["MetricName"] for m in metrics))


def _query(index: int, name: str, dimension: dict[str, str], period: int) -> dict[str, Any]:
    return {"Id": f"m{index}", "ReturnData": True, "MetricStat": {
        "Metric": {"Namespace": NAMESPACE, "MetricName": name, "Dimensions": [dimension]},
        "Period": period, "Stat": "Maximum" if name in (EPOCH, FIT) else "Average"}}


def _window(description: Mapping[str, Any], now: dt.datetime) -> tuple[dt.datetime, dt.datetime]:
    # A minute either side: CloudWatch drops the seconds of both ends (as the SDK's analytics notes).
    start = description.get("TrainingStartTime") or description["CreationTime"]
    end = description.get("TrainingEndTime") or now
    return start - dt.timedelta(seconds=PERIOD), max(end, start) + dt.timedelta(seconds=PERIOD)


def _data(cloudwatch: Any, names: list[str], dimension: dict[str, str], window: tuple[dt.datetime, dt.datetime],
          period: int) -> dict[str, list[tuple[dt.datetime, float]]]:
    raw: dict[str, list[tuple[dt.datetime, float]]] = {}
    for first in range(0, len(names), _QUERIES_PER_CALL):
        chunk = names[first:first + _QUERIES_PER_CALL]
        by_id = {f"m{first + i}": name for i, name in enumerate(chunk)}
        results = _pages(cloudwatch.get_metric_data, "MetricDataResults", StartTime=window[0], EndTime=window[1],
                         ScanBy="TimestampAscending",
                         MetricDataQueries=[_query(first + i, name, dimension, period)
                                            for i, name in enumerate(chunk)])
        for result in results:  # a query's values may come over several pages
            raw.setdefault(by_id[result["Id"]], []).extend(zip(result.get("Timestamps", []),
                                                               result.get("Values", []), strict=False))
    return raw


def job_hosts(description: Mapping[str, Any]) -> tuple[str, ...]:
    count = (description.get("ResourceConfig") or {}).get("InstanceCount") or 1
    return tuple(launch.host_names(count))


def read_metrics(cloudwatch: Any, description: Mapping[str, Any], job: JobInfo, host: str | None = None,
                 *, now: dt.datetime | None = None) -> JobMetrics:
    """The job's series for `host` (default algo-1) from CloudWatch; AWS errors are one line, exit 4."""
    name = description["TrainingJobName"]
    hosts = job_hosts(description)
    chosen = check_host(host, hosts)
    definitions = [d["Name"] for d in (description.get("AlgorithmSpecification") or {}).get("MetricDefinitions") or []]
    final = {m["MetricName"]: m["Value"] for m in description.get("FinalMetricDataList") or []
             if "MetricName" in m and "Value" in m}
    raw: dict[str, list[tuple[dt.datetime, float]]] = {}
    with api_errors(f"read the metrics of {name} from CloudWatch"):
        dimensions = [{"Name": "Host", "Value": f"{name}/{chosen}"}]
        if chosen == hosts[0]:  # the SDK's reading, every host together: only ever shown as the chief's
            dimensions.append({"Name": "TrainingJobName", "Value": name})
        for dimension in dimensions:
            listed = _listed(cloudwatch, dimension)
            if listed:
                names = [n for n in definitions if n in listed] + [n for n in listed if n not in definitions]
                now = now or dt.datetime.now(dt.timezone.utc)
                window = _window(description, now)
                if window[0] > now - FINE_FOR:
                    raw = _data(cloudwatch, names, dimension, window, FINE_PERIOD)
                if not any(raw.values()):
                    raw = _data(cloudwatch, names, dimension, window, PERIOD)
                break
    return JobMetrics(job=job, source="cloudwatch", host=chosen, hosts=hosts, series=by_epoch(raw, definitions),
                      final=final, notes=left_out(raw))
