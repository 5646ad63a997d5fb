"""smtrain against moto's server as it ships: no patches of the test harness, its own process.

moto 5.2 serves SageMaker, S3 and CloudWatch Logs there, but not Service Quotas' ListServiceQuotas
(a 500 with an HTML page) nor its default quotas in this region. The quota check only advises, so a
submit still goes out with one `note:` line, and the job's lifecycle commands work as on AWS.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.spec.inprocess import run
from tests.support import free_port
from tests.support.moto_server import BUCKET, CANARY_ACCESS_KEY, CANARY_SECRET_KEY, REGION, live_spec

pytestmark = pytest.mark.slow  # a server process of its own


@pytest.fixture(scope="module")
def plain_moto(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    # moto[server]'s script, beside this interpreter (the project's venv) or on the PATH
    program = shutil.which("moto_server", path=os.path.dirname(sys.executable)) or shutil.which("moto_server")
    assert program is not None, "moto[server] provides moto_server"
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log = tmp_path_factory.mktemp("moto") / "server.log"
    with open(log, "wb") as out:
        server = subprocess.Popen([program, "-H", "127.0.0.1", "-p", str(port)], stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:  # up when it answers (bounded: the server starts in a second or two)
            try:
                urllib.request.urlopen(f"{url}/moto-api/", timeout=2).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, log.read_text()[-2000:]
                time.sleep(0.2)
        yield url
    finally:
        server.kill()
        server.wait()


def test_submit_status_list_and_wait_work_against_plain_moto(plain_moto: str, tmp_path: Path) -> None:
    import boto3

    boto3.client("s3", region_name=REGION, endpoint_url=plain_moto, aws_access_key_id="testing",
                 aws_secret_access_key="testing").create_bucket(Bucket=BUCKET)
    env = {"AWS_ENDPOINT_URL": plain_moto, "AWS_ACCESS_KEY_ID": CANARY_ACCESS_KEY,
           "AWS_SECRET_ACCESS_KEY": CANARY_SECRET_KEY, "AWS_DEFAULT_REGION": REGION,
           "AWS_EC2_METADATA_DISABLED": "true", "SMTRAIN_POLL_SECONDS": "0.2"}
    spec = live_spec(tmp_path)
    submitted = run("submit", str(spec), "--job-name", "plain-1", "-o", "json", env=env, home=tmp_path)
    assert submitted.code == 0, submitted.output
    assert json.loads(submitted.stdout)["job_name"] == "plain-1"
    notes = [line for line in submitted.stderr.splitlines() if line.strip()]
    assert len(notes) == 1 and notes[0].startswith("note: cannot read the account's SageMaker quotas"), notes
    assert "HTTP 500" in notes[0] and "<" not in submitted.stderr
    for args in (["status", "plain-1"], ["list"], ["wait", "plain-1", "--timeout", "60s"]):
        result = run(*args, "-o", "json", env=env, home=tmp_path)
        assert result.code == 0, (args, result.output)
    assert "plain-1" in run("list", env=env, home=tmp_path).stdout
    # No instance metrics in moto's CloudWatch: one note, exit 0; status says nothing of them.
    system = run("metrics", "plain-1", "--system", env=env, home=tmp_path)
    assert system.code == 0 and system.stdout == "", system.output
    assert [line for line in system.stderr.splitlines() if line] == [
        "note: CloudWatch holds no instance metrics for plain-1 in /aws/sagemaker/TrainingJobs (SageMaker publishes "
        "them while the job's instances run, a minute apart)"]
    assert "utilization" not in run("status", "plain-1", env=env, home=tmp_path).output
    # The job imports back from moto as it ships: the spec that made it (the bundled entrypoint, its training
    # fields), the code downloaded without smtrain's own files; its dry run sends what the described job holds.
    from tests.api.test_import_launchers import comparable
    from tests.render.test_sdk_oracle import differences

    back = tmp_path / "back"
    back.mkdir()
    imported = run("import", "--job", "plain-1", str(back / "plain-1.yaml"), "-o", "json", env=env, home=tmp_path)
    assert imported.code == 0, imported.output
    text = (back / "plain-1.yaml").read_text()
    assert "entry_point" not in text and "  epochs: 10\n" in text, text
    dry = run("submit", str(back / "plain-1.yaml"), "--dry-run", "--job-name", "plain-1", "-o", "json", env=env,
              home=tmp_path)
    assert dry.code == 0, dry.output
    sm = boto3.client("sagemaker", region_name=REGION, endpoint_url=plain_moto, aws_access_key_id="testing",
                      aws_secret_access_key="testing")
    described = sm.describe_training_job(TrainingJobName="plain-1")
    ours = json.loads(dry.stdout)["request"]
    theirs = {k: v for k, v in described.items() if k in ours}
    assert differences(comparable(ours, sdk_has_tensorboard=True), comparable(theirs, sdk_has_tensorboard=True)) == []
