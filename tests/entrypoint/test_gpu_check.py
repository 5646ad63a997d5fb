"""The GPU line and the check that a job that asked for GPUs sees them, on this CPU-only machine."""

from __future__ import annotations

import os
import re
import shutil
import stat
import types
from pathlib import Path

import pytest

from .conftest import ENTRYPOINTS
from .sagemaker_env import Host, make_host, metric_lines

TIMEOUT = 240
CPU_ONLY = (r"^SM_NUM_GPUS=1 but TensorFlow \S+ sees no GPU: this TensorFlow is a CPU-only build "
            r"\(tf\.test\.is_built_with_cuda\(\) is False\).*checked: CUDA build no, nvidia-smi not found.*"
            r"set compute\.allow_cpu: true \(SMTRAIN_ALLOW_CPU=true\)$")

STRATEGY = """
import smtrain_tf
strategy = smtrain_tf.strategy()
print("strategy", type(strategy).__name__, flush=True)
"""


def _gpu_job(tmp_path: Path, digits_npz: dict[str, Path], name: str, hyperparameters: dict) -> Host:
    host = make_host(tmp_path / name, "algo-1", ["algo-1"], channels=digits_npz, hyperparameters=hyperparameters)
    host.env["SM_NUM_GPUS"] = "1"  # a GPU instance, as far as the job knows
    return host


def _failed_with(host: Host, code: int) -> str:
    assert code != 0, host.stdout()[-2000:]
    reason = host.failure_file.read_text()
    assert reason.count("\n") == 1
    assert re.search(CPU_ONLY, reason.strip()), reason
    assert host.stdout().splitlines()[0] == "gpus: none seen by TensorFlow " + reason.split()[3] + " (the job asked for 1)"
    return reason


@pytest.mark.slow
def test_the_entrypoint_refuses_a_gpu_job_that_sees_no_gpu(tmp_path: Path, digits_npz: dict[str, Path],
                                                             hosts: list[Host]) -> None:
    host = _gpu_job(tmp_path, digits_npz, "refused", {"epochs": 1})
    hosts.append(host.start())
    _failed_with(host, host.wait(TIMEOUT))
    assert "Traceback" not in host.stderr()
    assert "config " not in host.stdout()  # it stopped before building anything


@pytest.mark.slow
def test_allow_cpu_trains_anyway(tmp_path: Path, digits_npz: dict[str, Path], hosts: list[Host]) -> None:
    host = _gpu_job(tmp_path, digits_npz, "allowed", {"epochs": 1, "allow_cpu": True})
    hosts.append(host.start())
    code = host.wait(TIMEOUT)
    assert code == 0, host.stderr()[-3000:]
    out = host.stdout()
    assert "warning: SM_NUM_GPUS=1 but TensorFlow" in out and "training on the CPU (allow_cpu)" in out
    assert len(metric_lines(out)) == 1 and not host.failure_file.exists()


@pytest.mark.slow
def test_the_public_strategy_checks_the_gpus_too(tmp_path: Path, digits_npz: dict[str, Path],
                                                 hosts: list[Host]) -> None:
    code = tmp_path / "code"  # the job's code directory: the user's script beside smtrain_tf
    shutil.copytree(Path(ENTRYPOINTS) / "smtrain_tf", code / "smtrain_tf", ignore=shutil.ignore_patterns("__pycache__"))
    (code / "train.py").write_text(STRATEGY)
    refused = _gpu_job(tmp_path, digits_npz, "refused", {"epochs": 1})
    hosts.append(refused.start(script=code / "train.py"))
    _failed_with(refused, refused.wait(TIMEOUT))
    assert "NoGpuSeen" in refused.stderr()  # the user's script ends with the exception

    allowed = _gpu_job(tmp_path, digits_npz, "allowed", {"epochs": 1})
    allowed.env["SMTRAIN_ALLOW_CPU"] = "true"
    hosts.append(allowed.start(script=code / "train.py"))
    assert allowed.wait(TIMEOUT) == 0, allowed.stderr()[-3000:]
    assert "strategy _DefaultDistributionStrategy" in allowed.stdout()
    assert "training on the CPU (allow_cpu)" in allowed.stdout()


# --- the probes, on stand-ins -------------------------------------------------------------------

def _fake_tf(cuda: bool, build: dict | None = None, broken: bool = False) -> types.SimpleNamespace:
    def is_built_with_cuda() -> bool:
        if broken:
            raise RuntimeError("probe failed")
        return cuda

    return types.SimpleNamespace(test=types.SimpleNamespace(is_built_with_cuda=is_built_with_cuda),
                                 sysconfig=types.SimpleNamespace(get_build_info=lambda: build or {}))


def _nvidia_smi(bin_dir: Path, exit_status: int, message: str = "") -> None:
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "nvidia-smi"
    script.write_text(f"#!/bin/sh\ncat >&2 <<'END'\n{message}\nEND\nexit {exit_status}\n")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def gpu_check(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    from smtrain_tf.distribute import gpu_check

    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + "/usr/bin:/bin")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(gpu_check, "_find_library", lambda name: None)
    return gpu_check


def test_the_cause_named_follows_what_the_probes_find(gpu_check, monkeypatch: pytest.MonkeyPatch,
                                                      tmp_path: Path) -> None:
    build = {"cuda_version": "12.5", "cudnn_version": "9"}
    assert gpu_check.likely_cause(_fake_tf(False)).startswith("this TensorFlow is a CPU-only build")
    assert gpu_check.likely_cause(_fake_tf(True, build)).startswith(
        "no NVIDIA driver in the container (nvidia-smi not found)")
    _nvidia_smi(tmp_path / "bin", 9, "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver")
    assert gpu_check.likely_cause(_fake_tf(True, build)).startswith(
        "the NVIDIA driver does not answer (nvidia-smi fails: NVIDIA-SMI has failed because it couldn't communicate")
    _nvidia_smi(tmp_path / "bin", 0)
    cause = gpu_check.likely_cause(_fake_tf(True, build))
    assert cause.startswith("CUDA libraries not found (libcudart, libcublas, libcudnn); TensorFlow was built for "
                            "CUDA 12.5, CUDNN 9: a CUDA/driver mismatch")
    assert "checked: CUDA build yes, nvidia-smi answers, CUDA libraries found: none" in cause
    monkeypatch.setattr(gpu_check, "_find_library", lambda name: f"lib{name}.so")
    assert "TensorFlow's log above says why" in gpu_check.likely_cause(_fake_tf(True, build))
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert gpu_check.likely_cause(_fake_tf(True, build)).startswith("CUDA_VISIBLE_DEVICES='' hides every GPU")
    # A probe that breaks is reported, never raised.
    assert "CUDA build unknown" in gpu_check.likely_cause(_fake_tf(True, broken=True))


def test_each_gpu_is_described_with_its_memory_and_compute_capability(gpu_check, monkeypatch) -> None:
    details = {"a": {"device_name": "NVIDIA A10G", "compute_capability": (8, 6)}, "b": {}}
    rows = [{"index": "0", "uuid": "GPU-0", "name": "NVIDIA A10G", "memory": "23028"},
            {"index": "1", "uuid": "GPU-1", "name": "Tesla T4", "memory": "15360"}]

    def lookup(gpu: str) -> dict:
        return details[gpu]

    assert gpu_check.describe(["a", "b"], lookup, rows) == ["GPU:0 NVIDIA A10G 22.5 GiB compute 8.6",
                                                            "GPU:1 Tesla T4 15.0 GiB compute ?"]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")  # TensorFlow's GPU:0 is the driver's 1
    assert gpu_check.describe(["b"], lookup, rows) == ["GPU:0 Tesla T4 15.0 GiB compute ?"]
    assert gpu_check.describe(["b"], lambda gpu: 1 / 0, []) == ["GPU:0 unknown memory ? compute ?"]
