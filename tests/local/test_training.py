"""The local backend with the real entrypoint and TensorFlow on CPU: scikit-learn's digits, two hosts.

Slow (TensorFlow starts in every process): about a minute each on two cores.
"""

from __future__ import annotations

import io
import os
import re
import signal
import tarfile
import time
from pathlib import Path

import pytest

from smtrain.local.backend import LocalBackend, local_request
from tests.local.support import Background, alive, make_plan
from tests.support.horovod_env import DOUBLES_DIR, horovod_python, rank_output

pytestmark = pytest.mark.slow


def digits_plan(tmp_path: Path, digits: Path, **changes: object):
    spec = {"compute": {"nodes": 2, "max_run": 600}, "distribution": {"strategy": "multi_worker_mirrored"},
            "training": {"model": "mlp", "epochs": 4, "batch_size_per_replica": 32, "seed": 3},
            "inputs": {"train": str(digits / "train"), "validation": (digits / "validation").as_uri()}}
    spec.update(changes)
    return make_plan(tmp_path, spec, standin=False)


def test_two_hosts_multi_worker_mirrored_train_digits_and_export_the_model(tmp_path: Path, digits: Path) -> None:
    backend = LocalBackend(tmp_path / "home")
    stream = io.StringIO()
    job = backend.run(local_request(digits_plan(tmp_path, digits), "mwms-digits"), stream=stream, grace=5)
    text = stream.getvalue()
    assert job.status == "Completed", text[-3000:]
    assert re.search(r"\[algo-1\] config strategy=multi_worker_mirrored replicas=2 workers=2", text), text[-3000:]
    accuracy = [float(v) for v in re.findall(r"\[algo-1\] epoch=\d+ .*val_accuracy=([0-9.]+)", text)]
    assert len(accuracy) == 4 and accuracy[-1] >= 0.9
    digests = set(re.findall(r"\[algo-\d\] weights_sha256=(\w+)", text))
    assert len(digests) == 1  # both hosts ended with the same weights
    with tarfile.open(job.model_artifacts) as tar:
        names = set(tar.getnames())
    assert {"1/saved_model.pb", "model.keras"} <= names
    assert Path(job.model_artifacts) == tmp_path / "out" / "mwms-digits" / "output" / "model.tar.gz"
    assert Path(job.extra["output_artifacts"]).is_file()
    checkpoints = backend.store.job_dir("mwms-digits") / "hosts" / "algo-1" / "checkpoints"
    assert any(checkpoints.iterdir())
    assert not any(alive(p["pid"]) for p in backend.store.read("mwms-digits")["processes"])


def test_cpu_replicas_make_mirrored_strategy_run_several_replicas_without_a_gpu(tmp_path: Path,
                                                                                digits: Path) -> None:
    # On SageMaker this spec gets four GPUs and MirroredStrategy; here SM_NUM_GPUS is 0 and the
    # CPU is split into two logical devices instead.
    plan = digits_plan(tmp_path, digits, compute={"instance_type": "ml.g5.12xlarge", "max_run": 600},
                       distribution={"strategy": "auto"},
                       training={"model": "mlp", "epochs": 2, "batch_size_per_replica": 32, "seed": 3})
    assert plan.strategy == "mirrored"
    stream = io.StringIO()
    job = LocalBackend(tmp_path / "home").run(local_request(plan, "mirrored"), stream=stream, grace=5,
                                              replicas_per_host=2)
    text = stream.getvalue()
    assert job.status == "Completed", text[-3000:]
    assert re.search(r"\[algo-1\] config strategy=mirrored replicas=2 ", text), text[-3000:]


def test_kill_nine_of_one_worker_ends_the_whole_group(tmp_path: Path, digits: Path) -> None:
    plan = digits_plan(tmp_path, digits, training={"model": "mlp", "epochs": 400, "batch_size_per_replica": 8})
    backend = LocalBackend(tmp_path / "home")
    with Background(backend, "kill-one",
                    lambda stream: backend.run(local_request(plan, "kill-one"), stream=stream, grace=3)) as run:
        deadline = time.monotonic() + 240
        while "[algo-1] epoch=1 " not in run.stream.getvalue():
            assert time.monotonic() < deadline and run.thread.is_alive(), run.stream.getvalue()[-3000:]
            time.sleep(0.2)
        victim = next(p["pid"] for p in backend.store.read("kill-one")["processes"] if p["host"] == "algo-2")
        os.kill(victim, signal.SIGKILL)
        job = run.join(60)
    # join(60) above returned: the group ended after the grace period, not after TensorFlow's own timeouts.
    assert job.status == "Failed" and job.extra["failed_host"] == "algo-2"
    assert job.failure_reason.startswith("AlgorithmError: ExecuteUserScriptError:\nExitCode -9")
    assert not any(alive(p["pid"]) for p in backend.store.read("kill-one")["processes"])


def test_parameter_server_on_two_hosts_completes(tmp_path: Path, digits: Path) -> None:
    plan = digits_plan(tmp_path, digits, distribution={"strategy": "parameter_server"},
                       training={"model": "mlp", "epochs": 2, "batch_size_per_replica": 64, "seed": 3})
    backend = LocalBackend(tmp_path / "home")
    stream = io.StringIO()
    job = backend.run(local_request(plan, "ps-digits"), stream=stream, grace=5)
    text = stream.getvalue()
    assert job.status == "Completed", text[-3000:]
    assert "[algo-1] config strategy=parameter_server" in text
    with tarfile.open(job.model_artifacts) as tar:
        assert "1/saved_model.pb" in tar.getnames()
    assert not any(alive(p["pid"]) for p in backend.store.read("ps-digits")["processes"])


@pytest.mark.horovod
@pytest.mark.skipif(horovod_python() is None, reason="Horovod env not built: make horovod-env")
@pytest.mark.parametrize("strategy", ["horovod", "smddp"])
def test_mpi_strategies_run_two_hosts_through_one_local_mpirun(tmp_path: Path, digits: Path, strategy: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # Horovod 0.28.1 builds only against TensorFlow 2.13: the hosts run the Horovod env's Python.
    # smdistributed exists only in SageMaker's images: its test double stands in (on PYTHONPATH).
    if strategy == "smddp":
        monkeypatch.setenv("PYTHONPATH", str(DOUBLES_DIR))
    plan = digits_plan(tmp_path, digits, tensorflow={"version": "2.12" if strategy == "horovod" else "2.11"},
                       compute={"nodes": 2, "instance_type": "ml.p4d.24xlarge", "max_run": 600},
                       # Each rank's output also goes to its own files (see rank_output).
                       distribution={"strategy": strategy, "processes_per_host": 1,
                                     "mpi_options": f"--output-filename {tmp_path / 'ranks'}"},
                       training={"model": "mlp", "epochs": 2, "batch_size_per_replica": 32, "seed": 3})
    backend = LocalBackend(tmp_path / "home")
    stream = io.StringIO()
    job = backend.run(local_request(plan, strategy), stream=stream, grace=5, python=str(horovod_python()))
    text = stream.getvalue()
    assert job.status == "Completed", text[-3000:]
    # mpirun runs on the first host and its --tag-output names each rank, as in SageMaker's logs;
    # what each rank printed is read from its own file: in that stream the ranks' lines interleave.
    assert re.search(r"^\[algo-1\] \[1,[01]\]<stdout>:", text, re.M), text[-3000:]
    assert "[1,0]<stdout>:" in text and "[1,1]<stdout>:" in text
    for rank in (0, 1):
        printed = rank_output(tmp_path / "ranks", rank)
        assert f"config strategy={strategy} replicas=2 workers=2" in printed, printed[-3000:]
    with tarfile.open(job.model_artifacts) as tar:
        assert "1/saved_model.pb" in tar.getnames()
    assert not any(alive(p["pid"]) for p in backend.store.read(strategy)["processes"])
