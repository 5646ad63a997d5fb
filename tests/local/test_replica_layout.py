"""A local run trains with the planned replicas: as many CPU devices per process as its GPUs on SageMaker.

The layout maths and its sentence, the terminal rendering of progress-bar lines, a failure by signal
named as such, and (slow, real TensorFlow) a hand-written script that builds its own MirroredStrategy
and sees the planned devices without any flag.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from smtrain.errors import UserError
from smtrain.local import replica_layout
from smtrain.local.backend import LocalBackend
from smtrain.local.contract import HostLayout
from smtrain.local.supervise import Outcome
from smtrain.terminal_text import as_shown, physical_lines
from tests.local.support import make_plan
from tests.support.cli_runner import smtrain


def test_each_process_gets_the_gpus_it_drives_on_sagemaker(tmp_path: Path) -> None:
    mirrored = make_plan(tmp_path / "m", {"compute": {"instance_type": "ml.g5.12xlarge"}})
    layout = replica_layout.choose(mirrored, None)
    assert (layout.planned, layout.used) == (4, 4)
    assert layout.environment == {"SMTRAIN_CPU_REPLICAS": "4", "SMTRAIN_LOCAL_GPUS": "4 x A10G"}
    assert layout.summary() == "4 replicas on 1 host, as planned (CPU stand-ins for 4 x A10G)"
    fewer = replica_layout.choose(mirrored, 2)
    assert fewer.environment == {"SMTRAIN_CPU_REPLICAS": "2", "SMTRAIN_LOCAL_GPUS": "4 x A10G"}
    assert fewer.summary() == ("2 replicas on 1 host, fewer than the planned 4 per host (--replicas-per-host 2; "
                               "CPU stand-ins for 4 x A10G)")
    with pytest.raises(UserError, match=r"--replicas-per-host 8: .* up to 4") as refused:
        replica_layout.choose(mirrored, 8)
    assert refused.value.code == 2

    # TensorFlow's multi-worker strategies give a CPU worker one device: said, not hidden.
    two_hosts = make_plan(tmp_path / "w", {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2}})
    assert two_hosts.strategy == "multi_worker_mirrored"
    layout = replica_layout.choose(two_hosts, None)
    assert layout.used == 1 and "SMTRAIN_CPU_REPLICAS" not in layout.environment
    assert replica_layout.choose(two_hosts, 1).used == 1  # what runs anyway: taken
    assert replica_layout.choose(mirrored, None).summary(gpus_here=1).startswith(
        "this machine has 1 GPU: the job uses them as they are (SM_NUM_GPUS=1), not the planned 4 x A10G per host")
    with pytest.raises(UserError, match=r"--replicas-per-host 2: this run trains one replica per host whatever the "
                                        r"flag: TensorFlow's multi_worker_mirrored gives a worker without GPUs one CPU"):
        replica_layout.choose(two_hosts, 2)
    assert layout.summary() == (
        "1 replica per host on 2 hosts; the paid run has 4 per host (A10G): TensorFlow's multi_worker_mirrored "
        "gives a worker without GPUs one CPU device, so each host's CPU stands in for its 4 GPUs as one replica "
        "(the global batch here is smaller)")

    # Horovod: one rank per GPU, each pinned to one: one device each, nothing to split.
    horovod = make_plan(tmp_path / "h", {"tensorflow": {"version": "2.12"},
                                         "compute": {"instance_type": "ml.g5.12xlarge"},
                                         "distribution": {"strategy": "horovod"}})
    layout = replica_layout.choose(horovod, None)
    assert (layout.planned, layout.processes_per_host, layout.environment) == (1, 4, {"SMTRAIN_LOCAL_GPUS": "1 x A10G"})
    assert layout.summary().startswith("4 replicas on 1 host (4 processes per host), as planned")

    single = make_plan(tmp_path / "s", {"compute": {"instance_type": "ml.g5.xlarge"}})
    assert replica_layout.choose(single, None).environment == {"SMTRAIN_LOCAL_GPUS": "1 x A10G"}
    # Only an own script (the stand-in here) gets the start-up hook: smtrain_tf splits the CPU itself.
    assert replica_layout.choose(mirrored, None).python_path == [str(replica_layout.HOOKS_DIR)]
    assert (replica_layout.HOOKS_DIR / "sitecustomize.py").is_file()
    (tmp_path / "b").mkdir()
    bundled = make_plan(tmp_path / "b", {"compute": {"instance_type": "ml.g5.12xlarge"}, "inputs": {"train": "data"}},
                        standin=False)
    assert bundled.kind == "bundled" and replica_layout.choose(bundled, None).python_path == []


def test_a_progress_bar_line_reads_as_the_terminal_left_it() -> None:
    bar = ("\r\x1b[1m 1/16\x1b[0m \x1b[37m━━━━\x1b[0m - loss: 0.9000" + "\b" * 30
           + "\r\x1b[1m16/16\x1b[0m \x1b[32m━━━━\x1b[0m - loss: 0.3000 - val_loss: 0.2500")
    assert as_shown(bar) == "16/16 ━━━━ - loss: 0.3000 - val_loss: 0.2500"
    glued = as_shown(bar + "epoch=1 step=16 loss=0.3")
    assert glued == "16/16 ━━━━ - loss: 0.3000 - val_loss: 0.2500epoch=1 step=16 loss=0.3"
    assert as_shown("abcdef\rXY") == "XYcdef"
    assert as_shown("abc\b\bZ") == "aZc"
    assert as_shown("plain line  ") == "plain line  "
    # Only newlines end lines: what follows a carriage return stays on its line.
    assert physical_lines("a\rb\nc\x0cd\n") == ["a\rb", "c\x0cd"]


def test_a_host_killed_by_a_signal_is_said_to_be(tmp_path: Path) -> None:
    layout = HostLayout(tmp_path / "algo-1")
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "algo-1.log").write_text("2026-11-25T10:00:00Z\twrap: strategy=multi_worker_mirrored\n")
    reason = LocalBackend._failure_reason(Outcome("Failed", "Failed", reason="failure", host="algo-1", exit_code=-11,
                                                  command=["python", "smtrain_wrap.py"]), layout, tmp_path / "logs")
    assert re.search(r'ExitCode -11\nErrorMessage "killed by SIGSEGV \(a crash in native code: TensorFlow\'s C\+\+ '
                     r'or a library\'s\) / wrap: strategy=multi_worker_mirrored"', reason), reason


HAND_WRITTEN = '''\
import os
import tensorflow as tf

strategy = tf.distribute.MirroredStrategy()
print("Number of devices:", strategy.num_replicas_in_sync, flush=True)
with strategy.scope():
    model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(1)])
    model.compile(optimizer="sgd", loss="mse")
model.fit(tf.zeros((64, 4)), tf.zeros((64, 1)), batch_size=16 * strategy.num_replicas_in_sync, epochs=1, verbose=2)
'''


@pytest.mark.slow
@pytest.mark.parametrize("wrap", [False, True], ids=["hand-written", "wrapped"])
def test_a_script_with_its_own_strategy_sees_the_planned_devices_by_default(tmp_path: Path, wrap: bool) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(HAND_WRITTEN)
    spec = {"name": "devices", "role": "arn:aws:iam::123456789012:role/SageMakerRole", "region": "us-east-1",
            "compute": {"instance_type": "ml.g5.12xlarge", "max_run": 600},
            "code": {"source_dir": "src", "entry_point": "train.py", "wrap": wrap}, "output": "out"}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    run = smtrain("submit", "job.yaml", "--local", "--job-name", "devices-1", "-o", "json",
                  env={"SMTRAIN_HOME": str(tmp_path / "home")}, cwd=tmp_path, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout)["job"]["status"] == "Completed"
    assert "[smtrain] 4 replicas on 1 host, as planned (CPU stand-ins for 4 x A10G)" in run.stderr
    assert "[algo-1] Number of devices: 4" in run.stderr
    if wrap:
        assert "[algo-1] gpus: none here (a local run): 4 CPU devices stand in for 4 x A10G" in run.stderr
