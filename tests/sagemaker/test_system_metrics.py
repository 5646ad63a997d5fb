"""`smtrain metrics JOB --system` and the utilization line of `status` and `wait`: each host's instance metrics as
SageMaker publishes them to CloudWatch (put into the moto server's CloudWatch by tests/support/moto_metrics.py;
moto answers GetMetricData as AWS does), and what the GPU figure says."""

from __future__ import annotations

import datetime as dt
import json

import pytest

from smtrain.jobs import HostUsage, JobInfo, SystemUsage
from smtrain.sagemaker.system_metrics import period_for
from tests.spec.inprocess import run
from tests.support.moto_metrics import publish_usage
from tests.support.moto_server import Fault, MotoServer, create_job

# ml.g5.12xlarge has 4 GPUs: SageMaker's GPUUtilization is their sum (0-400).
ONE_OF_FOUR = [{"CPUUtilization": 40.0 + i, "MemoryUtilization": 30.0, "GPUUtilization": 90.0 + i,
                "GPUMemoryUtilization": 80.0, "DiskUtilization": 5.0} for i in range(5)]
ALL_FOUR = [{"CPUUtilization": 60.0, "MemoryUtilization": 35.0, "GPUUtilization": 360.0,
             "GPUMemoryUtilization": 320.0, "DiskUtilization": 5.0} for _ in range(5)]


def _job(server: MotoServer, name: str, status: str = "Completed") -> None:
    create_job(server, name, instance_type="ml.g5.12xlarge", count=2)
    server.set_status(name, status)


def test_each_host_over_time_and_what_its_gpu_figure_says(aws: MotoServer, tmp_path):
    _job(aws, "busy-one")
    publish_usage(aws, "busy-one", "algo-1", ONE_OF_FOUR)
    publish_usage(aws, "busy-one", "algo-2", ALL_FOUR)
    env = aws.env(tmp_path)

    shown = run("metrics", "busy-one", "--system", env=env)
    assert shown.code == 0, shown.output
    lines = shown.stdout.splitlines()
    assert lines[0] == ("busy-one (Completed), instance metrics from CloudWatch, 1 min apart (GPU figures: the "
                        "average of each host's GPUs):")
    assert lines[1].split() == ["time", "(UTC)", "host", "cpu", "memory", "gpu", "gpu_memory", "disk"]
    rows = [line.split() for line in lines[2:-1]]
    assert len(rows) == 10 and [r[2] for r in rows[:2]] == ["algo-1", "algo-2"]  # per minute, hosts in order
    assert rows[0][3:] == ["40%", "30%", "22%", "20%", "5%"] and rows[1][3:] == ["60%", "35%", "90%", "80%", "5%"]
    assert lines[-1] == ("average: algo-1: GPU 23% of 4 GPUs: the strategy may use one GPU; algo-2: GPU 90% of "
                         "4 GPUs")

    document = json.loads(run("metrics", "busy-one", "--system", "-o", "json", env=env).stdout)
    first, second = document["hosts"]
    assert (document["period_seconds"], first["gpus"], first["average"]["GPUUtilization"],
            first["gpu_percent_each"], first["verdict"]) == (60, 4, 92.0, 23.0, "the strategy may use one GPU")
    assert second["verdict"] is None and len(second["series"]["CPUUtilization"]) == 5

    csv = run("metrics", "busy-one", "--system", "-o", "csv", env=env).stdout.splitlines()
    assert csv[0] == "time,host,cpu,memory,gpu,gpu_memory,disk" and len(csv) == 11
    assert csv[1].split(",")[1:] == ["algo-1", "40", "30", "22.5", "20", "5"]

    plot = run("metrics", "busy-one", "--system", "--plot", env=env)
    assert plot.code == 0 and "GPU use per host, % of each GPU (busy-one)" in plot.stdout, plot.output
    assert "algo-1" in plot.stdout.split("GPU use per host")[1] and "algo-2" in plot.stdout.split("GPU use per host")[1]

    status = run("status", "busy-one", env=env)
    assert status.code == 0 and status.stdout.splitlines()[-1] == (
        "utilization  algo-1: GPU 23% of 4 GPUs: the strategy may use one GPU; algo-2: GPU 90% of 4 GPUs"), status.stdout
    waited = run("wait", "busy-one", env=env)
    assert waited.code == 0 and waited.stdout.splitlines()[-1] == status.stdout.splitlines()[-1], waited.output


def test_no_data_is_one_note_and_exit_0_and_status_says_nothing_of_it(aws: MotoServer, tmp_path):
    _job(aws, "quiet")
    env = aws.env(tmp_path)
    shown = run("metrics", "quiet", "--system", env=env)
    assert shown.code == 0 and shown.stdout == "", shown.output
    assert shown.stderr.splitlines() == [
        "note: CloudWatch holds no instance metrics for quiet in /aws/sagemaker/TrainingJobs (SageMaker publishes "
        "them while the job's instances run, a minute apart)"]
    status = run("status", "quiet", env=env)
    assert status.code == 0 and "utilization" not in status.output


def test_a_cloudwatch_error_is_a_note_in_status_and_an_error_in_metrics(aws: MotoServer, tmp_path):
    _job(aws, "denied", status="Failed")
    publish_usage(aws, "denied", "algo-1", ALL_FOUR)
    env = aws.env(tmp_path)
    denied = Fault("AccessDeniedException", "not authorized to perform: cloudwatch:GetMetricData")
    aws.control.inject("GetMetricData", denied)
    status = run("status", "denied", env=env)
    assert status.code == 1, status.output  # the job's own code: Failed, whatever the utilization read gave
    assert "note: no utilization line: cannot read the instance metrics of denied (CloudWatch)" in status.stderr
    aws.control.inject("GetMetricData", denied)
    shown = run("metrics", "denied", "--system", env=env)
    assert shown.code == 4 and "Traceback" not in shown.output, shown.output


def _host(total: float | None, gpus: int | None) -> HostUsage:
    moment = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    return HostUsage("algo-1", gpus, {} if total is None else {"GPUUtilization": ((moment, total),)})


@pytest.mark.parametrize(("total", "gpus", "verdict"), [
    # About one GPU's worth on a host of several: 20 to 110 summed.
    (19.9, 2, None), (20.0, 2, "the strategy may use one GPU"), (110.0, 2, "the strategy may use one GPU"),
    (110.1, 2, None), (90.0, 1, None),
    # Idle: under 5% of each GPU on average (4 x 4.975 = 19.9 is under, and not one GPU's worth).
    (19.9, 4, "its GPUs sat idle"), (20.0, 4, "the strategy may use one GPU"),
    (4.9, 1, "its GPUs sat idle"), (5.0, 1, None), (0.0, 1, "its GPUs sat idle"),
    # No count, no figure: nothing said.
    (50.0, None, None), (None, 4, None)])
def test_what_the_gpu_figure_says_at_below_and_past_each_threshold(total, gpus, verdict):
    assert _host(total, gpus).verdict() == verdict


def test_a_host_s_line_with_and_without_its_gpu_count():
    assert _host(92.0, 4).summary_text() == "algo-1: GPU 23% of 4 GPUs: the strategy may use one GPU"
    assert _host(92.0, None).summary_text() == "algo-1: GPU 92% (summed over its GPUs)"
    assert _host(None, 4).summary_text() == "algo-1: no GPU figures"
    job = JobInfo(name="j", backend="sagemaker", status="Completed")
    assert SystemUsage(job, "cloudwatch", 60, (_host(None, 4),)).line() is None


@pytest.mark.parametrize(("minutes", "period"), [(1, 60), (1440, 60), (1441, 120), (2880, 120), (2881, 180)])
def test_a_series_has_at_most_1440_points(minutes, period):
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    assert period_for(start, start + dt.timedelta(minutes=minutes)) == period
