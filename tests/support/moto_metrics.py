"""A training job's metrics in the moto server's CloudWatch, as SageMaker publishes them.

SageMaker reads each MetricDefinitions regex from the job's output and puts the values into namespace
/aws/sagemaker/TrainingJobs, metric name = the definition's Name, dimension Host = <job>/algo-<n>, at the
time of the line. moto's CloudWatch keeps put data and answers ListMetrics and GetMetricData (Average and
Maximum per period) as AWS does: nothing is patched there. What moto lacks is on the SageMaker side: a
job that started in the past (so that its data is not in the future) and FinalMetricDataList.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence

from tests.support.moto_server import MotoServer

NAMESPACE = "/aws/sagemaker/TrainingJobs"
STARTED_AGO = dt.timedelta(minutes=20)  # room for 9 epochs two minutes apart, all in the past


def _aware(value: dt.datetime) -> dt.datetime:
    return value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)  # moto keeps naive UTC


def started(server: MotoServer, job: str, ago: dt.timedelta = STARTED_AGO) -> dt.datetime:
    """The job's TrainingStartTime, moved `ago` back the first time (moto lacks jobs made in the past)."""
    record = server.job(job)
    start = record.training_start_time or record.creation_time
    now = dt.datetime.now(dt.timezone.utc)
    if _aware(start) > now - STARTED_AGO / 2:
        start = (now - ago).replace(microsecond=0)
        record.creation_time = record.training_start_time = start.replace(tzinfo=None)
    return _aware(start)


def epoch_time(start: dt.datetime, epoch: int, spacing: dt.timedelta = dt.timedelta(minutes=2)) -> dt.datetime:
    """When epoch `epoch`'s line is written: `spacing` apart (by default in minutes of their own)."""
    return start + spacing * epoch - spacing / 2 + dt.timedelta(seconds=30)


def publish_epochs(server: MotoServer, job: str, epochs: Sequence[Mapping[str, float]], *, host: str = "algo-1",
                   first: int = 1, progress: bool = False, ago: dt.timedelta = STARTED_AGO,
                   spacing: dt.timedelta = dt.timedelta(minutes=2)) -> None:
    """Put each epoch's values (metric name -> value) and its train:epoch, as SageMaker would from the epoch
    lines of `host`, for a job that started `ago`; with `progress`, a `progress` line's train:loss (x10) half
    way to each epoch (no train:epoch)."""
    start = started(server, job, ago)
    data = []
    for number, values in enumerate(epochs, start=first):
        stamp = epoch_time(start, number, spacing)
        for name, value in {"train:epoch": float(number), **values}.items():
            data.append({"MetricName": name, "Timestamp": stamp, "Value": value,
                         "Dimensions": [{"Name": "Host", "Value": f"{job}/{host}"}]})
        if progress and "train:loss" in values:
            data.append({"MetricName": "train:loss", "Timestamp": stamp - spacing / 2,
                         "Value": values["train:loss"] * 10, "Dimensions": [{"Name": "Host", "Value": f"{job}/{host}"}]})
    cloudwatch = server.client("cloudwatch")
    for first_item in range(0, len(data), 1000):  # PutMetricData's limit per call
        cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=data[first_item:first_item + 1000])


def set_final(server: MotoServer, job: str, values: Mapping[str, float]) -> None:
    """FinalMetricDataList, as SageMaker reports it once the job has ended (moto lacks it)."""
    now = dt.datetime.now(dt.timezone.utc).replace(tzinfo=None)
    server.job(job).final_metric_data_list = [{"MetricName": name, "Value": value, "Timestamp": now}
                                              for name, value in values.items()]


def publish_usage(server: MotoServer, job: str, host: str, minutes: Sequence[Mapping[str, float]], *,
                  ago: dt.timedelta = STARTED_AGO) -> None:
    """Put a host's instance metrics (CPUUtilization, GPUUtilization summed over its GPUs, ...) one minute apart
    from the job's start, as SageMaker publishes them for every training job (same namespace and Host dimension
    as the training metrics)."""
    start = started(server, job, ago)
    data = [{"MetricName": name, "Timestamp": start + dt.timedelta(minutes=number, seconds=30), "Value": value,
             "Unit": "Percent", "Dimensions": [{"Name": "Host", "Value": f"{job}/{host}"}]}
            for number, values in enumerate(minutes) for name, value in values.items()]
    cloudwatch = server.client("cloudwatch")
    for first_item in range(0, len(data), 1000):
        cloudwatch.put_metric_data(Namespace=NAMESPACE, MetricData=data[first_item:first_item + 1000])
