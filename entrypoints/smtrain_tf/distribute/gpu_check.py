"""Which GPUs TensorFlow sees, said in one line, and a job that asked for GPUs stopped when it sees none.

The first line of the bundled entrypoint, of smtrain_tf.strategy() and of the wrap. When the job
asked for GPUs (SM_NUM_GPUS > 0) and TensorFlow sees none, training on the CPU would be slow and
silent; the job fails at once instead, unless allow_cpu (SMTRAIN_ALLOW_CPU), with the likely
cause: a CPU-only TensorFlow, hidden devices, no NVIDIA driver, or CUDA libraries not found.

Listing physical devices and reading their details does not start TensorFlow's runtime, so this
runs before the devices are configured. Every probe is guarded: a probe that fails says so in
the reason, it never raises.
"""

from __future__ import annotations

import ctypes.util
import glob
import os
import shutil
import subprocess
import sys
from typing import Any, Callable, Dict, List, Optional

from ..contract.container import Contract
from ..contract.errors import TrainingFailure
from ..contract.log import say as default_say

# The CUDA libraries TensorFlow loads at start-up; the pip wheels of tensorflow[and-cuda] keep
# theirs under site-packages/nvidia/*/lib, where ctypes does not look.
CUDA_LIBRARIES = ("cudart", "cublas", "cudnn")
_PROBE_SECONDS = 10


class NoGpuSeen(TrainingFailure):
    """The job asked for GPUs and TensorFlow sees none."""


def _nvidia_smi_rows() -> List[Dict[str, str]]:
    """index, uuid, name and memory (MiB) of every GPU the driver knows; [] without a driver."""
    if shutil.which("nvidia-smi") is None:
        return []
    try:
        done = subprocess.run(["nvidia-smi", "--query-gpu=index,uuid,name,memory.total",
                               "--format=csv,noheader,nounits"], capture_output=True, text=True,
                              timeout=_PROBE_SECONDS, check=False)
    except (OSError, subprocess.SubprocessError):
        return []
    rows = []
    for line in done.stdout.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 4:
            rows.append(dict(zip(("index", "uuid", "name", "memory"), parts)))  # noqa: B905 - Python 3.9
    return rows


def _driver_row(position: int, rows: List[Dict[str, str]]) -> Optional[Dict[str, str]]:
    """The nvidia-smi row of TensorFlow's GPU:position (CUDA_VISIBLE_DEVICES renumbers them)."""
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    wanted = visible[position] if position < len(visible) else str(position)
    for row in rows:
        if wanted in (row["index"], row["uuid"]):
            return row
    return rows[position] if position < len(rows) and not visible else None


def describe(gpus: List[Any], details: Callable[[Any], Dict[str, Any]],
             rows: List[Dict[str, str]]) -> List[str]:
    """One `GPU:i name memory compute capability` text per GPU."""
    described = []
    for position, gpu in enumerate(gpus):
        try:
            info = details(gpu) or {}
        except Exception:  # noqa: BLE001 - a detail missing is no reason to stop
            info = {}
        row = _driver_row(position, rows)
        name = info.get("device_name") or (row or {}).get("name") or "unknown"
        memory = "memory ?"
        if row is not None and row.get("memory", "").isdigit():
            memory = f"{int(row['memory']) / 1024:.1f} GiB"
        capability = info.get("compute_capability")
        compute = f"compute {capability[0]}.{capability[1]}" if capability else "compute ?"
        described.append(f"GPU:{position} {name} {memory} {compute}")
    return described


def _find_library(name: str) -> Optional[str]:
    try:
        found = ctypes.util.find_library(name)
    except Exception:  # noqa: BLE001 - the probe must never fail the job
        found = None
    if found:
        return found
    for root in sys.path:
        hits = glob.glob(os.path.join(root, "nvidia", "*", "lib", f"lib{name}.so*"))
        if hits:
            return hits[0]
    return None


def _nvidia_smi_state() -> str:
    """'answers', 'not found' or 'fails: <its first line>'."""
    if shutil.which("nvidia-smi") is None:
        return "not found"
    try:
        done = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=_PROBE_SECONDS,
                              check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"fails: {exc}"
    if done.returncode == 0:
        return "answers"
    text = (done.stderr or done.stdout).strip().splitlines()
    return f"fails: {text[0][:200] if text else f'exit status {done.returncode}'}"


def likely_cause(tf: Any) -> str:
    """Why TensorFlow sees no GPU, as best the cheap probes tell, with what they found."""
    try:
        cuda_build = bool(tf.test.is_built_with_cuda())
    except Exception:  # noqa: BLE001
        cuda_build = None
    try:
        build = dict(tf.sysconfig.get_build_info())
    except Exception:  # noqa: BLE001
        build = {}
    smi = _nvidia_smi_state()
    libraries = {name: _find_library(name) for name in CUDA_LIBRARIES}
    missing = [f"lib{name}" for name, path in libraries.items() if path is None]
    hidden = os.environ.get("CUDA_VISIBLE_DEVICES")
    wants = ", ".join(f"{k.split('_')[0].upper()} {build[k]}" for k in ("cuda_version", "cudnn_version")
                      if build.get(k))
    if cuda_build is False:
        cause = ("this TensorFlow is a CPU-only build (tf.test.is_built_with_cuda() is False): use a GPU image "
                 "of SageMaker's TensorFlow container, or install tensorflow[and-cuda] instead of tensorflow-cpu")
    elif hidden is not None and hidden.strip() in ("", "-1", "NoDevFiles"):
        cause = f"CUDA_VISIBLE_DEVICES={hidden!r} hides every GPU from TensorFlow"
    elif smi == "not found":
        cause = ("no NVIDIA driver in the container (nvidia-smi not found): the instance type has no GPU, or the "
                 "container was started without GPU access")
    elif smi != "answers":
        cause = f"the NVIDIA driver does not answer (nvidia-smi {smi})"
    elif missing:
        cause = (f"CUDA libraries not found ({', '.join(missing)})" + (f"; TensorFlow was built for {wants}" if wants
                                                                       else "") + ": a CUDA/driver mismatch")
    else:
        cause = ("the driver answers and the CUDA libraries are found; TensorFlow's log above says why it skipped "
                 "the GPUs (often a CUDA version the driver is too old for" + (f": TensorFlow wants {wants}"
                                                                             if wants else "") + ")")
    found = ", ".join(f"lib{n}" for n, p in libraries.items() if p) or "none"
    checked = (f"checked: CUDA build {'unknown' if cuda_build is None else 'yes' if cuda_build else 'no'}, "
               f"nvidia-smi {smi}, CUDA libraries found: {found}")
    if hidden is not None:
        checked += f", CUDA_VISIBLE_DEVICES={hidden!r}"
    return f"{cause} ({checked})"


def check(contract: Contract, say: Callable[[str], None] = default_say) -> List[str]:
    """Say the `gpus: ...` line; fail with NoGpuSeen when GPUs were asked for and none is seen.

    Returns the GPUs described. Imports TensorFlow.
    """
    import tensorflow as tf

    try:
        gpus = tf.config.list_physical_devices("GPU")
    except Exception:  # noqa: BLE001 - then the job sees no GPU, which the check below explains
        gpus = []
    described = describe(gpus, tf.config.experimental.get_device_details, _nvidia_smi_rows() if gpus else [])
    asked = contract.num_gpus or 0
    if described:
        say(f"gpus: {len(described)} seen by TensorFlow {tf.__version__}: {'; '.join(described)}")
    elif os.environ.get("SMTRAIN_LOCAL_GPUS") and asked == 0:
        # A local run (smtrain sets the variable there only): SM_NUM_GPUS is 0, and the CPU stands in for
        # this process's planned GPUs, split into SMTRAIN_CPU_REPLICAS logical devices when there are several.
        devices = max(int(contract.hp("cpu_replicas") or 0), 1)
        say(f"gpus: none here (a local run): {devices} CPU device{'s stand' if devices != 1 else ' stands'} in for "
            f"{os.environ['SMTRAIN_LOCAL_GPUS']} (TensorFlow {tf.__version__})")
    else:
        say(f"gpus: none seen by TensorFlow {tf.__version__} (the job asked for {asked})")
    if asked > 0 and not described:
        reason = f"SM_NUM_GPUS={asked} but TensorFlow {tf.__version__} sees no GPU: {likely_cause(tf)}"
        if not contract.hp("allow_cpu"):
            raise NoGpuSeen(reason + "; to train on the CPU anyway set compute.allow_cpu: true "
                                     "(SMTRAIN_ALLOW_CPU=true)")
        say(f"warning: {reason}; training on the CPU (allow_cpu)")
    return described
