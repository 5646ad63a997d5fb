"""A local run with real TensorFlow: its start-up lines stay in the host logs, off the terminal,
unless --verbose or their host fails.

The hosts run a small script that starts TensorFlow as the bundled entrypoint's multi-worker runs
do (a Dataset.from_generator distributed by a strategy): TensorFlow then prints absl's "All log
messages before absl::InitializeLog()" and tf.data's GeneratorDatasetOp warning, at the log level
the toolkit sets (TF_CPP_MIN_LOG_LEVEL=1).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from smtrain.local.backend import LocalBackend, local_request
from smtrain.local.supervise import parse_log_line
from smtrain.local.tf_noise import is_noise
from tests.local.support import make_plan, spec_file
from tests.support.cli_runner import smtrain

pytestmark = pytest.mark.slow

NOISY = '''\
import json, os, sys, time, warnings

argv = sys.argv[1:]
hp = {argv[i][2:]: argv[i + 1] for i in range(0, len(argv) - 1, 2) if argv[i].startswith("--")}
host = os.environ["SM_CURRENT_HOST"]
import tensorflow as tf

cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)
data = tf.data.Dataset.from_generator(lambda: iter(range(8)), output_signature=tf.TensorSpec((), tf.int64)).batch(4)
for _ in tf.distribute.MirroredStrategy(["/cpu:0", "/cpu:1"]).experimental_distribute_dataset(data):
    pass
warnings.warn(f"{host} says: a Python warning")
print(f"epoch=1 step=2 loss=0.5000 on {host}", flush=True)
if hp.get("fail_host"):
    ready = os.path.join(hp["ready_dir"], host)
    open(ready, "w").close()
    if host != hp["fail_host"]:
        time.sleep(600)  # ended by the supervisor once the failing host has failed
    others = [h for h in json.loads(os.environ["SM_HOSTS"]) if h != host]
    deadline = time.monotonic() + 120
    while not all(os.path.exists(os.path.join(hp["ready_dir"], h)) for h in others):
        assert time.monotonic() < deadline, "the other hosts never got ready"
        time.sleep(0.1)
    raise RuntimeError(f"{host} fails on purpose")
'''


def noisy_spec(tmp_path: Path, nodes: int, hyperparameters: dict[str, str] | None = None) -> dict[str, object]:
    (tmp_path / "noisy").mkdir(parents=True, exist_ok=True)
    (tmp_path / "noisy" / "noisy.py").write_text(NOISY)
    return {"code": {"source_dir": "noisy", "entry_point": "noisy.py"}, "compute": {"nodes": nodes, "max_run": 600},
            "hyperparameters": hyperparameters or {}}


def host_log(log_dir: Path, host: str) -> list[str]:
    return [p[1] for p in map(parse_log_line, (log_dir / f"{host}.log").read_text().splitlines()) if p]


def test_a_failing_host_shows_its_hidden_start_up_lines_and_the_other_host_keeps_them_in_its_log(
        tmp_path: Path) -> None:
    (tmp_path / "ready").mkdir()
    plan = make_plan(tmp_path, noisy_spec(tmp_path, 2, {"fail_host": "algo-2", "ready_dir": str(tmp_path / "ready")}),
                     standin=False)
    backend = LocalBackend(tmp_path / "home")
    stream = io.StringIO()
    job = backend.run(local_request(plan, "noisy-fails"), stream=stream, grace=3)
    text = stream.getvalue()
    assert job.status == "Failed" and job.extra["failed_host"] == "algo-2", text[-3000:]
    log_dir = backend.store.log_dir("noisy-fails")
    noise = {host: [line for line in host_log(log_dir, host) if is_noise(line)] for host in ("algo-1", "algo-2")}
    # TensorFlow printed its start-up lines on both hosts; the log files have them.
    assert all(any(line.startswith("WARNING: All log messages before absl::InitializeLog()") for line in lines)
               for lines in noise.values()), noise
    assert all(any("GeneratorDatasetOp" in line for line in lines) for lines in noise.values()), noise
    # The program's own lines show as they come: its Python warning, its output, the traceback.
    for host in ("algo-1", "algo-2"):
        assert f"[{host}] epoch=1 step=2 loss=0.5000 on {host}\n" in text
        assert f"UserWarning: {host} says: a Python warning\n" in text
    assert "[algo-2] Traceback (most recent call last):\n" in text
    assert "[algo-2] RuntimeError: algo-2 fails on purpose\n" in text
    # The failed host's hidden lines follow the failure; the other host's stay hidden.
    failed = text.index("[smtrain] algo-2 failed")
    header = text.index("[smtrain] hidden TensorFlow start-up lines of algo-2 (")
    before = text[:failed]
    assert failed < header, text[-3000:]
    assert not any(f"[{host}] {line}\n" in before for host, lines in noise.items() for line in lines), before
    assert [f"[algo-2] {line}" for line in noise["algo-2"]] == text[header:].splitlines()[1:1 + len(noise["algo-2"])]
    assert not any(f"[algo-1] {line}\n" in text for line in noise["algo-1"]), text[-3000:]
    assert "lines of algo-1" not in text


@pytest.mark.parametrize("verbose", [False, True])
def test_submit_local_shows_tensorflows_start_up_lines_only_with_verbose(tmp_path: Path, verbose: bool) -> None:
    spec = spec_file(tmp_path, noisy_spec(tmp_path, 1), standin=False)
    env = {"SMTRAIN_HOME": str(tmp_path / "home")}
    proc = smtrain("submit", str(spec), "--local", *(["--verbose"] if verbose else []), "--output", "json", env=env,
                   timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    job = json.loads(proc.stdout)["job"]
    logs = smtrain("logs", job["name"], "--output", "json", env=env)
    logged = [json.loads(line)["message"] for line in logs.stdout.splitlines()]
    noise = [line for line in logged if is_noise(line)]
    assert any("GeneratorDatasetOp" in line for line in noise), logged  # `smtrain logs` has every line
    assert "[algo-1] epoch=1 step=2 loss=0.5000 on algo-1\n" in proc.stderr  # --output json: hosts on stderr
    assert "UserWarning: algo-1 says: a Python warning\n" in proc.stderr
    shown = [line for line in noise if f"[algo-1] {line}\n" in proc.stderr]
    assert shown == (noise if verbose else []), proc.stderr[-3000:]


def test_verbose_is_for_local_runs(tmp_path: Path) -> None:
    proc = smtrain("submit", str(spec_file(tmp_path)), "--verbose")
    assert proc.returncode == 2 and "--verbose apply to --local runs" in proc.stderr
