"""Helpers for the local backend's tests: plans from small specs, and a stand-in entry point.

The stand-in (`standin.py`, shipped in the spec's code.source_dir) needs no TensorFlow, so the
backend's orchestration is tested in seconds. Its behaviour comes from hyperparameters:

    mode       ok (default) | hang (ignore SIGTERM, sleep) | fail
    fail_host  the host that fails (exit 3); the others then hang ignoring SIGTERM, as TensorFlow
               does while it waits for a dead peer
    fail_after seconds before failing (default 0.3)
    reason     written to output/failure before failing (empty: write nothing)
    needs      a module to import first (tests of requirements.txt)
    ticks      lines to print, 0.2 s apart, before finishing
    echo_env   environment variables (comma-separated) whose values it prints, each on a line
               `env NAME: value` (tests of secret masking)
    echo_split the same, `split NAME: value` with a colour reset in the middle of the value and
               terminal controls after it (a window title, an OSC 52 clipboard write, a C1 CSI)
    children   processes to start first (as mpirun starts ranks): each ignores SIGTERM, prints
               nothing, writes output/data/child-<pid>.pid and sleeps

Each process writes its environment and argv to output/data/env-<host>-<pid>.json and a file
named after its host into the model directory.
"""

from __future__ import annotations

import io
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from smtrain.plan.build import Plan, build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from tests.support.specfiles import BASE, merged

STANDIN = '''\
import json, os, signal, subprocess, sys, time

argv = sys.argv[1:]
hp = {argv[i][2:]: argv[i + 1] for i in range(0, len(argv) - 1, 2) if argv[i].startswith("--")}
host = os.environ["SM_CURRENT_HOST"]
if hp.get("needs"):
    __import__(hp["needs"])
task = json.loads(os.environ.get("TF_CONFIG") or "{}").get("task", {})
print(f"standin on {host} task={task.get('type')}:{task.get('index')}", flush=True)
for name in filter(None, hp.get("echo_env", "").split(",")):
    print(f"env {name}: {os.environ.get(name, '')}", flush=True)
for name in filter(None, hp.get("echo_split", "").split(",")):
    value = os.environ.get(name, "")
    print(f"split {name}: {value[:5]}\\x1b[0m{value[5:]}\\x1b]0;title\\x07\\x1b]52;c;Y2FuYXJ5\\x07\\x9b2J", flush=True)
data = os.environ["SM_OUTPUT_DATA_DIR"]
with open(os.path.join(data, f"env-{host}-{os.getpid()}.json"), "w") as f:
    json.dump({"env": dict(os.environ), "argv": argv, "cwd": os.getcwd()}, f)
with open(os.path.join(os.environ["SM_MODEL_DIR"], f"{host}.txt"), "w") as f:
    f.write(host)
CHILD = ("import os, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
         "open(os.path.join(sys.argv[1], 'child-%d.pid' % os.getpid()), 'w').close(); time.sleep(3600)")
for _ in range(int(hp.get("children", "0"))):
    subprocess.Popen([sys.executable, "-c", CHILD, data])
mode = hp.get("mode", "ok")
fail_host = hp.get("fail_host", "")
if hp.get("full_file") and host == "algo-1":  # a full disk where smtrain writes that file after the job
    os.makedirs(os.path.dirname(hp["full_file"]), exist_ok=True)
    os.symlink("/dev/full", hp["full_file"])

def hang():
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print(f"{host} waiting forever", flush=True)
    while True:
        time.sleep(1)

if mode == "hang":
    hang()
if fail_host == host or mode == "fail":
    time.sleep(float(hp.get("fail_after", "0.3")))
    if hp.get("reason"):
        with open(os.path.join(os.environ["SM_OUTPUT_DIR"], "failure"), "w") as f:
            f.write(hp["reason"])
    print(f"{host} failing", file=sys.stderr, flush=True)
    sys.exit(3)
if fail_host:
    hang()
for i in range(int(hp.get("ticks", "0"))):
    print(f"{host} tick {i}", flush=True)
    time.sleep(0.2)
print(f"{host} done", flush=True)
'''


def spec_file(tmp_path: Path, changes: dict[str, Any] | None = None, *, standin: bool = True) -> Path:
    """A spec under tmp_path; with `standin`, its code is the stand-in entry point."""
    changes = dict(changes or {})
    base: dict[str, Any] = {"name": "local-test", "compute": {"instance_type": "ml.g5.xlarge"}, "output": "out"}
    if standin:
        src = tmp_path / "src"
        src.mkdir(parents=True, exist_ok=True)
        (src / "standin.py").write_text(STANDIN)
        base["code"] = {"source_dir": "src", "entry_point": "standin.py"}
    data = merged(merged(BASE, base), changes)
    data["inputs"] = changes.get("inputs", {})  # no channel unless the test names one
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def make_plan(tmp_path: Path, changes: dict[str, Any] | None = None, *, standin: bool = True) -> Plan:
    return build_plan(load_spec(spec_file(tmp_path, changes, standin=standin)), load_catalog(None, None))


def pids_of(backend: Any, name: str) -> list[int]:
    """The processes local job `name`'s record holds (each host's)."""
    return [p["pid"] for p in backend.store.read(name)["processes"]]


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is gone for every purpose here.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return False


class Background:
    """LocalBackend.run of job `name` in a thread (the test keeps its hands free), the stream captured.

    Used as a context manager: a run still going when the block ends (a failed assertion) is
    stopped through its stop file, so no process outlives the test.
    """

    def __init__(self, backend: Any, name: str, run: Callable[[io.StringIO], Any]) -> None:
        self.backend = backend
        self.name = name
        self.stream = io.StringIO()
        self.result: Any = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._target, args=(run,), daemon=True)
        self.thread.start()

    def __enter__(self) -> Background:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.thread.is_alive():
            self.backend.store.job_dir(self.name).mkdir(parents=True, exist_ok=True)
            self.backend.store.request_stop(self.name)
            self.thread.join(60)

    def _target(self, run: Callable[[io.StringIO], Any]) -> None:
        try:
            self.result = run(self.stream)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def join(self, timeout: float) -> Any:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the local run did not end in time"
        if self.error is not None:
            raise self.error
        return self.result


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


PATIENCE = 120.0  # a bound for a stuck test, far above what any step takes


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting for {what}"
        time.sleep(0.05)
