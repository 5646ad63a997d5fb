"""`kill -9` of smtrain during a local run takes every process of the run with it: hosts and pip.

Nothing in smtrain runs after SIGKILL, so the hosts must notice on their own; these hosts print
nothing once started, ignore SIGTERM (as TensorFlow does while waiting for peers) and each has a
child of its own (as mpirun's ranks), so neither a write to a closed pipe nor a polite signal ends
them. The test waits on evidence only: pid files, then pids gone.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from smtrain.local.records import JobStore
from tests.local.support import PATIENCE, alive, spec_file, wait_until
from tests.support import ROOT

JOB = "killed-supervisor"


def pids_in(job_dir: Path, pattern: str) -> set[int]:
    found = set()
    for path in job_dir.glob(f"hosts/*/output/data/{pattern}"):
        match = re.search(r"-(\d+)\.(?:json|pid)$", path.name)
        if match:
            found.add(int(match.group(1)))
    return found


def kill(pids: set[int]) -> None:
    for pid in pids:
        for signal_it in (os.killpg, os.kill):
            try:
                signal_it(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def start_smtrain(spec: Path, home: Path, **env: str) -> subprocess.Popen[bytes]:
    full_env = {**{k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "PIP_"))},
                "SMTRAIN_HOME": str(home), **env}
    return subprocess.Popen([sys.executable, "-m", "smtrain", "submit", str(spec), "--local", "--job-name", JOB],
                            cwd=ROOT, env=full_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def test_sigkill_of_smtrain_ends_every_host_its_servers_and_their_children(tmp_path: Path) -> None:
    spec = spec_file(tmp_path, {"compute": {"nodes": 2}, "distribution": {"strategy": "parameter_server"},
                                "hyperparameters": {"mode": "hang", "children": "1"}})
    home = tmp_path / "home"
    smtrain = start_smtrain(spec, home)
    store = JobStore(home)
    job_dir = store.job_dir(JOB)
    pids: set[int] = set()
    try:
        # Two hosts, each a worker (with one child) and a parameter server (the toolkit's: a TensorFlow server).
        wait_until(lambda: len(pids_in(job_dir, "env-*.json")) == 2 and len(pids_in(job_dir, "child-*.pid")) == 2
                   and smtrain.poll() is None, "every process to start")
        wait_until(lambda: len(store.read(JOB)["processes"]) == 4, "the record to list the processes")
        pids = pids_in(job_dir, "env-*.json") | pids_in(job_dir, "child-*.pid")
        pids |= {p["pid"] for p in store.read(JOB)["processes"]}
        assert all(alive(pid) for pid in pids)
        smtrain.kill()
        smtrain.wait()
        wait_until(lambda: not any(alive(pid) for pid in pids), "every host process to end with smtrain")
    finally:
        if smtrain.poll() is None:
            smtrain.kill()
            smtrain.wait()
        kill(pids | pids_in(job_dir, "env-*.json") | pids_in(job_dir, "child-*.pid"))


def test_sigkill_of_smtrain_while_pip_installs_requirements_ends_pip(tmp_path: Path) -> None:
    # pip asks a package index on 127.0.0.1 that accepts and never answers: pip waits in silence
    # (its own timeout far beyond the test's patience). pip gone closes the connection: the evidence.
    index = socket.create_server(("127.0.0.1", 0))
    spec = spec_file(tmp_path)
    (tmp_path / "src" / "requirements.txt").write_text(
        f"--index-url http://127.0.0.1:{index.getsockname()[1]}/simple\nsmtrain-never-published\n")
    smtrain = start_smtrain(spec, tmp_path / "home", PIP_TIMEOUT="3600", PIP_RETRIES="0")
    connection = None
    try:
        index.settimeout(PATIENCE)
        connection, _ = index.accept()  # pip is running, blocked on its request
        assert smtrain.poll() is None
        smtrain.kill()
        smtrain.wait()
        connection.settimeout(PATIENCE)
        try:
            while connection.recv(65536):  # the request, then end-of-file once pip is gone
                pass
        except TimeoutError:
            pytest.fail("pip outlived smtrain")
    finally:
        if smtrain.poll() is None:
            smtrain.kill()
            smtrain.wait()
        if connection is not None:
            connection.close()  # a pip still waiting fails now and ends
        index.close()
