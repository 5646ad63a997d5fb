"""A real `mlflow server` on 127.0.0.1 for the tracking tests (issue 37), one per test session.

Its store is SQLite in a temporary directory and its artifacts a directory beside it; it is started by the
`mlflow` command of the test environment (the test extra pins MLflow) and stopped at the end of the session.
The port is one the kernel handed out and released just before (tests.support.free_port): the server is asked
for /health until it answers (its first start migrates the database: about 15 s here), and a server that exits
or stays silent for two minutes fails the test that asked for it with its last lines.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support import free_port

START_SECONDS = 120.0


@dataclass(frozen=True)
class MlflowServer:
    uri: str
    root: Path

    def client(self):  # noqa: ANN201 - MLflow's own class, imported only where MLflow is installed
        from mlflow.tracking import MlflowClient

        return MlflowClient(tracking_uri=self.uri)

    def runs(self, experiment: str) -> list:
        """Every run of `experiment` (none if it does not exist), oldest first."""
        client = self.client()
        found = client.get_experiment_by_name(experiment)
        if found is None:
            return []
        runs = client.search_runs([found.experiment_id], max_results=1000)
        return sorted(runs, key=lambda r: (r.info.start_time, r.info.run_id))


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[MlflowServer]:
    command = shutil.which("mlflow", path=os.path.dirname(sys.executable))
    assert command, "the test extra installs MLflow (its `mlflow` command beside this Python)"
    root = tmp_path_factory.mktemp("mlflow")
    port = free_port()
    log = (root / "server.log").open("w")
    proc = subprocess.Popen([command, "server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1",
                             "--backend-store-uri", f"sqlite:///{root / 'store.db'}",
                             "--default-artifact-root", (root / "artifacts").as_uri()],
                            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    uri = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"{uri}/health", timeout=2) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                tail = (root / "server.log").read_text(errors="replace")[-3000:]
                pytest.fail(f"mlflow server did not answer on {uri} (exit code {proc.poll()}):\n{tail}")
            time.sleep(0.5)
        yield MlflowServer(uri, root)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, 15)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, 9)
                proc.wait()
        log.close()
