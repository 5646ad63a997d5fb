"""No credential or secret value is ever printed, by any command, on any path (--debug included).

Canary values (obviously fake) sit in the AWS credentials, in secret-looking variables of the
process environment and in the spec's `environment`; every output is searched for them.
"""

from __future__ import annotations

import json
import time

import pytest

from tests.support import moto_server
from tests.support.cli_runner import smtrain
from tests.support.moto_server import (
    CANARY_ACCESS_KEY,
    CANARY_SECRET_KEY,
    CANARY_SESSION_TOKEN,
    Fault,
    MotoServer,
    live_spec,
)

moto_session = moto_server.moto_session
aws = moto_server.aws

DB_PASSWORD = "canary-db-password-never-print"
API_TOKEN = "canary-api-token-never-print"
PROCESS_TOKEN = "canary-process-token-never-print"
CANARIES = (CANARY_ACCESS_KEY, CANARY_SECRET_KEY, CANARY_SESSION_TOKEN, DB_PASSWORD, API_TOKEN, PROCESS_TOKEN)


def _assert_clean(proc) -> None:
    for canary in CANARIES:
        assert canary not in proc.stdout, f"{canary} printed on stdout"
        assert canary not in proc.stderr, f"{canary} printed on stderr"


@pytest.mark.slow  # two runs through the SageMaker SDK
def test_secrets_never_reach_the_output(aws: MotoServer, tmp_path):
    spec = live_spec(tmp_path, {"environment": {"DB_PASSWORD": DB_PASSWORD, "API_TOKEN": API_TOKEN,
                                                "LOG_LEVEL": "info"}})
    env = aws.env(tmp_path, DEPLOY_TOKEN=PROCESS_TOKEN)

    dry = smtrain("submit", str(spec), "--dry-run", "--job-name", "secret-job", "-o", "json", env=env)
    assert dry.returncode == 0, dry.stderr
    _assert_clean(dry)
    shown = json.loads(dry.stdout)["request"]["Environment"]
    assert shown == {"DB_PASSWORD": "****", "API_TOKEN": "****", "LOG_LEVEL": "info"}

    sub = smtrain("submit", str(spec), "--job-name", "secret-job", "-o", "json", env=env)
    assert sub.returncode == 0, sub.stderr
    _assert_clean(sub)
    # Masking is for display only: SageMaker gets the real values.
    assert aws.control.create_requests[0]["Environment"]["DB_PASSWORD"] == DB_PASSWORD

    aws.set_status("secret-job", "Failed", failure_reason=f"container exited; AWS key {CANARY_ACCESS_KEY}")
    now = int(time.time() * 1000)
    aws.put_logs("secret-job", "algo-1", ["starting", f"aws_secret_access_key={CANARY_SECRET_KEY}"],
                 timestamp_ms=now)
    aws.put_logs("secret-job", "algo-2", [f"token {PROCESS_TOKEN}"], timestamp_ms=now + 1)
    for args in (("status", "secret-job"), ("status", "secret-job", "-o", "json"), ("logs", "secret-job")):
        proc = smtrain(*args, env=env)
        assert proc.returncode in (0, 1), proc.stderr
        _assert_clean(proc)
    assert "[algo-1] aws_secret_access_key=****" in proc.stdout


@pytest.mark.slow
def test_debug_tracebacks_mask_secrets_too(aws: MotoServer, tmp_path):
    spec = live_spec(tmp_path, {"environment": {"DB_PASSWORD": DB_PASSWORD}})
    # A server error that quotes the request, as AWS validation messages can.
    aws.control.inject("CreateTrainingJob", Fault("ValidationException",
                                                  f"Value '{DB_PASSWORD}' at 'environment.DB_PASSWORD' failed to "
                                                  f"satisfy constraint (caller {CANARY_ACCESS_KEY})"))
    proc = smtrain("--debug", "submit", str(spec), "--job-name", "debug-job", env=aws.env(tmp_path))
    assert proc.returncode == 4
    assert "Traceback" in proc.stderr and "ClientError" in proc.stderr  # --debug shows the chain...
    assert "Value '****' at 'environment.DB_PASSWORD'" in proc.stderr  # ...with the secrets masked
    _assert_clean(proc)
