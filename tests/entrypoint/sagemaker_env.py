"""A per-host /opt/ml-like tree and the environment SageMaker's TensorFlow container gives the entrypoint.

Each host gets its own base directory (input/config/*.json, input/data/<channel>, model, output,
checkpoints) and the SM_* variables the sagemaker-training toolkit exports, plus TF_CONFIG where a
distribution needs it. Processes run the real entrypoint as a subprocess, output captured to files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.support import free_ports  # noqa: F401 - the tests take it from here

REPO_ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = REPO_ROOT / "entrypoints" / "smtrain_entry.py"
PYTHON = sys.executable

# Never hand the child this session's own cluster or SageMaker settings.
_SCRUBBED_PREFIXES = ("SM_", "TF_CONFIG", "SAGEMAKER_", "SMTRAIN_", "OMPI_", "PMI_", "PMIX_")


@dataclass
class Host:
    name: str
    base: Path
    env: dict[str, str]
    args: list[str]
    log_dir: Path
    process: subprocess.Popen | None = None
    tag: str = ""
    _stdout: Any = field(default=None, repr=False)
    _stderr: Any = field(default=None, repr=False)

    @property
    def model_dir(self) -> Path:
        return self.base / "model"

    @property
    def checkpoint_dir(self) -> Path:
        return self.base / "checkpoints"

    @property
    def failure_file(self) -> Path:
        return self.base / "output" / "failure"

    @property
    def stdout_path(self) -> Path:
        return self.log_dir / f"{self.name}{self.tag}.stdout"

    @property
    def stderr_path(self) -> Path:
        return self.log_dir / f"{self.name}{self.tag}.stderr"

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace") if self.stdout_path.exists() else ""

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace") if self.stderr_path.exists() else ""

    def start(self, extra_args: Sequence[str] = (), tag: str = "", script: Path | None = None) -> Host:
        """Run the entrypoint (or another copy of it, `script`) from its own directory, like the toolkit."""
        script = script or ENTRYPOINT
        self.tag = tag
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self._stdout = open(self.stdout_path, "w")
        self._stderr = open(self.stderr_path, "w")
        self.process = subprocess.Popen([PYTHON, str(script), *self.args, *extra_args], env=self.env,
                                        cwd=str(script.parent), stdout=self._stdout, stderr=self._stderr,
                                        start_new_session=True)
        return self

    def wait(self, timeout: float) -> int:
        assert self.process is not None
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(f"{self.name} did not finish within {timeout}s; stdout:\n{self.stdout()[-3000:]}"
                                 f"\nstderr:\n{self.stderr()[-3000:]}") from None
        finally:
            self._close()

    def kill(self) -> None:
        """SIGKILL: TensorFlow ignores SIGTERM while it waits for peers."""
        if self.process is not None and self.process.poll() is None:
            try:
                os.killpg(self.process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.process.wait()
        self._close()

    def _close(self) -> None:
        for handle in (self._stdout, self._stderr):
            if handle is not None and not handle.closed:
                handle.close()

    def wait_for_output(self, needle: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if needle in self.stdout():
                return
            if self.process is not None and self.process.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{self.name}: no {needle!r} in output; stdout:\n{self.stdout()[-3000:]}\n"
                             f"stderr:\n{self.stderr()[-3000:]}")


def base_environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(_SCRUBBED_PREFIXES)}
    env.update({
        "PYTHONUNBUFFERED": "1",
        "TF_CPP_MIN_LOG_LEVEL": "2",
        "CUDA_VISIBLE_DEVICES": "",
        # Two cores shared by every process of a test: keep TensorFlow's thread pools small.
        "TF_NUM_INTEROP_THREADS": "2",
        "TF_NUM_INTRAOP_THREADS": "2",
    })
    return env


def make_host(root: Path, name: str, hosts: Sequence[str], *, channels: Mapping[str, Path],
              hyperparameters: Mapping[str, Any], tf_config: Mapping[str, Any] | None = None,
              framework_params: Mapping[str, Any] | None = None, suffix: str = "") -> Host:
    """Lay out <root>/<name><suffix>/ like /opt/ml and build the variables the toolkit exports."""
    base = root / f"{name}{suffix}"
    config_dir = base / "input" / "config"
    config_dir.mkdir(parents=True, exist_ok=True)
    for sub in ("model", "output/data", "checkpoints"):
        (base / sub).mkdir(parents=True, exist_ok=True)
    channel_dirs = {}
    for channel, source in channels.items():
        target = base / "input" / "data" / channel
        target.parent.mkdir(parents=True, exist_ok=True)
        if not target.exists():
            target.symlink_to(Path(source).resolve(), target_is_directory=True)
        channel_dirs[channel] = str(target)
    hps = {k: v for k, v in hyperparameters.items()}
    framework = dict(framework_params or {})
    # SageMaker stores every value JSON-encoded in hyperparameters.json.
    (config_dir / "hyperparameters.json").write_text(json.dumps({k: json.dumps(v) for k, v in
                                                                 {**hps, **framework}.items()}))
    (config_dir / "resourceconfig.json").write_text(json.dumps({"current_host": name, "hosts": list(hosts)}))
    (config_dir / "inputdataconfig.json").write_text(json.dumps({c: {"TrainingInputMode": "File"} for c in channels}))
    env = base_environment()
    env.update({
        "SAGEMAKER_BASE_DIR": str(base),
        "SM_MODEL_DIR": str(base / "model"),
        "SM_OUTPUT_DIR": str(base / "output"),
        "SM_OUTPUT_DATA_DIR": str(base / "output" / "data"),
        "SM_INPUT_DIR": str(base / "input"),
        "SM_INPUT_CONFIG_DIR": str(config_dir),
        "SM_CHANNELS": json.dumps(sorted(channel_dirs)),
        "SM_HOSTS": json.dumps(list(hosts)),
        "SM_CURRENT_HOST": name,
        "SM_NUM_GPUS": "0",
        "SM_NUM_CPUS": str(os.cpu_count() or 1),
        "SM_HPS": json.dumps(hps),
        "SM_FRAMEWORK_PARAMS": json.dumps(framework),
        "SM_MODULE_DIR": str(ENTRYPOINT.parent),
        "SM_USER_ENTRY_POINT": ENTRYPOINT.name,
    })
    for channel, path in channel_dirs.items():
        env[f"SM_CHANNEL_{channel.upper()}"] = path
    for key, value in hps.items():
        env[f"SM_HP_{key.upper()}"] = str(value)
    if tf_config is not None:
        env["TF_CONFIG"] = json.dumps(tf_config)
    # The toolkit's argument form: sorted `--name value`, values through str(), plus model_dir.
    args: list[str] = []
    for key in sorted(hps):
        args += [f"--{key}", str(hps[key])]
    args += ["--model_dir", f"s3://example-bucket/job/{name}/model"]
    return Host(name=name, base=base, env=env, args=args, log_dir=root / "logs")


def mwms_tf_config(addresses: Sequence[str], index: int) -> dict[str, Any]:
    return {"cluster": {"worker": list(addresses)}, "task": {"type": "worker", "index": index},
            "environment": "cloud"}


def ps_tf_config(master: str, workers: Sequence[str], ps: Sequence[str], task_type: str,
                 index: int) -> dict[str, Any]:
    """SageMaker's parameter-server layout: a master, workers, and ps tasks."""
    return {"cluster": {"master": [master], "worker": list(workers), "ps": list(ps)},
            "task": {"type": task_type, "index": index}, "environment": "cloud"}


def metric_lines(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line.startswith("epoch=")]


def parse_metrics(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split() if "=" in part)
