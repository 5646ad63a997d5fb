"""smtrain.submit and smtrain.Job against the moto server (a real HTTP server, in this process): submit's Job,
Job.attach by name, status, wait to the end, logs as lines, stop, the model's place, and an unknown name.

moto makes no job move on its own (tests/support/moto_server.py): the test moves it, once the API under test
has polled it, so each wait sees the job running first and its end after."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

import smtrain
from smtrain import exit_codes
from tests.support.moto_server import BUCKET, REGION, MotoServer, live_spec

DB_PASSWORD = "canary-db-password-never-print"


@pytest.fixture
def aws(moto_session: MotoServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> MotoServer:
    """The emptied server, and this process's environment pointed at it (the API runs here, not as a CLI)."""
    moto_session.reset()
    import os

    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in moto_session.env(tmp_path).items():
        monkeypatch.setenv(name, value)
    return moto_session


def after_next_describe(server: MotoServer, action: Callable[[], None]) -> threading.Thread:
    """Run `action` in the background once the code under test has described a job twice more: its first
    answer (the job as it was) has been read, since the client asks again only after it."""
    before = server.control.count("DescribeTrainingJob")

    def run() -> None:
        deadline = time.monotonic() + 30
        while server.control.count("DescribeTrainingJob") < before + 2 and time.monotonic() < deadline:
            time.sleep(0.02)
        action()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_submit_attach_wait_logs_and_the_model(aws: MotoServer, tmp_path: Path) -> None:
    spec = live_spec(tmp_path, {"environment": {"DB_PASSWORD": DB_PASSWORD}})
    job = smtrain.submit(spec, quota_check=False, job_name="api-job-1")
    assert isinstance(job, smtrain.Job) and job.name == "api-job-1" and not job.local
    assert job.status() == "InProgress" and job.exit_code == 0
    assert aws.jobs() == ["api-job-1"]
    [received] = aws.control.create_requests
    assert received["Environment"]["DB_PASSWORD"] == DB_PASSWORD  # sent as it is; masked only for display
    assert repr(job) == "<Job api-job-1 (sagemaker us-east-1) InProgress>"
    assert "1 x ml.g5.xlarge" in job._repr_html_() and "InProgress (Starting)" in job._repr_html_()

    found = smtrain.Job.attach("api-job-1", region=REGION)
    assert found.name == "api-job-1" and found.region == REGION and found.status() == "InProgress"
    by_default = smtrain.Job.attach("api-job-1")  # the default region: AWS_DEFAULT_REGION here
    assert by_default.region == REGION and repr(by_default) == "<Job api-job-1 (sagemaker us-east-1) InProgress>"

    aws.set_status("api-job-1", "InProgress", "Training")
    now = int(time.time() * 1000)
    aws.put_logs("api-job-1", "algo-2", ["worker up"], timestamp_ms=now + 5)  # written first, read by time
    aws.put_logs("api-job-1", "algo-1", ["epoch=1 step=10 loss=0.5", f"connecting with {DB_PASSWORD}"],
                 timestamp_ms=now)
    lines = list(found.logs())
    assert lines == ["algo-1: epoch=1 step=10 loss=0.5", "algo-1: connecting with ****", "algo-2: worker up"]
    assert all(isinstance(line, str) for line in lines)

    polled = aws.control.count("DescribeTrainingJob")
    thread = after_next_describe(aws, lambda: aws.set_status("api-job-1", "Completed"))
    ended = found.wait(timeout=30)
    thread.join(5)
    assert ended.status == "Completed" and found.exit_code == 0
    assert aws.control.count("DescribeTrainingJob") - polled >= 3  # it saw the job running, then its end
    assert found.model_uri == f"s3://{BUCKET}/out/api-job-1/output/model.tar.gz"
    assert job.status() == "Completed"


def test_logs_follow_until_the_job_ends(aws: MotoServer, tmp_path: Path) -> None:
    job = smtrain.submit(live_spec(tmp_path, {"environment": {"DB_PASSWORD": DB_PASSWORD}}), quota_check=False,
                         job_name="api-follow-1")
    aws.set_status("api-follow-1", "InProgress", "Training")
    # A minute old: a followed tail holds back the last seconds' events (hosts' streams are read in turn).
    aws.put_logs("api-follow-1", "algo-1", ["first"], timestamp_ms=int(time.time() * 1000) - 60_000)

    def end() -> None:
        aws.put_logs("api-follow-1", "algo-1", ["last"])
        aws.set_status("api-follow-1", "Failed", failure_reason=f"AlgorithmError: no login with {DB_PASSWORD}")

    lines = job.logs(follow=True)
    assert next(lines) == "algo-1: first"
    thread = after_next_describe(aws, end)
    assert list(lines) == ["algo-1: last"]
    thread.join(5)
    assert job.status() == "Failed" and job.exit_code == 1
    html = job._repr_html_()
    assert "Failed (Failed)" not in html  # the secondary status only where it says more
    assert "AlgorithmError: no login with ****" in html and DB_PASSWORD not in html


def test_a_wait_that_runs_out_leaves_the_job_running(aws: MotoServer, tmp_path: Path) -> None:
    job = smtrain.submit(live_spec(tmp_path), quota_check=False, job_name="api-timeout-1")
    with pytest.raises(smtrain.WaitTimeout) as caught:
        job.wait(timeout=0.5)
    assert caught.value.code == exit_codes.TIMEOUT and caught.value.job.status == "InProgress"
    assert job.status() == "InProgress"


def test_stop(aws: MotoServer, tmp_path: Path) -> None:
    job = smtrain.submit(live_spec(tmp_path), quota_check=False, job_name="api-stop-1")
    assert job.stop().status == "Stopping"
    assert aws.job("api-stop-1").training_job_status == "Stopping"
    aws.set_status("api-stop-1", "Stopped")
    assert job.wait(timeout=10).status == "Stopped" and job.exit_code == 3


def test_an_unknown_job_is_user_error_4(aws: MotoServer) -> None:
    with pytest.raises(smtrain.UserError) as caught:
        smtrain.Job.attach("no-such-job", region=REGION)
    assert caught.value.code == exit_codes.API == 4
    assert str(caught.value) == "no training job named no-such-job in us-east-1 (check the name, or --region)"
    with pytest.raises(smtrain.UserError) as bad_name:
        smtrain.Job.attach("no_such_job!", region=REGION)
    assert bad_name.value.code == 2


def test_submit_with_wait_follows_the_job(aws: MotoServer, tmp_path: Path) -> None:
    thread = threading.Thread(target=lambda: (aws.control.wait_created("api-wait-1", 30),
                                              after_next_describe(aws, lambda: aws.set_status(
                                                  "api-wait-1", "Completed")).join(30)), daemon=True)
    thread.start()
    job = smtrain.submit(live_spec(tmp_path), quota_check=False, job_name="api-wait-1", wait=True, timeout=30)
    thread.join(5)
    assert job.info.status == "Completed"
