"""An AWS endpoint that accepts connections and never answers (a socket on 127.0.0.1 that reads and says nothing):
a read-only command says it is waiting once an answer is late, then gives up with exit 4, never in silence."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from smtrain.aws import WAIT_NOTICE_AFTER
from tests.support.cli_runner import smtrain


@pytest.fixture
def silent_endpoint() -> Iterator[str]:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])  # kept open, never answered
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}"
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        server.close()


def test_status_against_a_silent_endpoint_says_it_waits_then_gives_up(silent_endpoint: str, tmp_path: Path) -> None:
    env = {"AWS_ENDPOINT_URL": silent_endpoint, "AWS_ACCESS_KEY_ID": "AKIACANARY0000000000",
           "AWS_SECRET_ACCESS_KEY": "canary-secret-key-never-print-0000000000", "AWS_DEFAULT_REGION": "us-east-1",
           "AWS_EC2_METADATA_DISABLED": "true", "HOME": str(tmp_path), "SMTRAIN_HOME": str(tmp_path / "home"),
           # 3 attempts of 3 s: past the notice's 5 s, and a short test
           "SMTRAIN_API_TIMEOUT": "3", "AWS_MAX_ATTEMPTS": "3"}
    proc = smtrain("status", "some-job", "--region", "us-east-1", env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 4, proc.stderr
    host = silent_endpoint.removeprefix("http://")
    notice = (f"waiting for an answer from {host} (DescribeTrainingJob): none after {WAIT_NOTICE_AFTER:g} s; "
              "smtrain gives up after 3 attempts of 3 s (SMTRAIN_API_TIMEOUT, AWS_MAX_ATTEMPTS)")
    assert proc.stderr.startswith(notice), proc.stderr
    assert proc.stderr.count("waiting for an answer") == 1 and "Traceback" not in proc.stderr
    assert "error: " in proc.stderr.splitlines()[-1]
