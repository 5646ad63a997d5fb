"""What each local host runs, per strategy, as the container toolkits start it on SageMaker.

The TF_CONFIG builders and the host names come from smtrain.plan.launch (the toolkits' layouts);
only the addresses change: every host:port becomes 127.0.0.1 and a port of this machine reserved for the run
(smtrain.local.ports).
A parameter-server host runs a bare tf.distribute.Server as its ps task and the entry point once,
as master or worker: the user's code never runs as the ps task.
Horovod and smddp run one mpirun on the first host for all ranks, as SageMaker does, with the
options that keep Open MPI on loopback and shared memory here.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.local.ports import Reserved
from smtrain.local.supervise import AUX, MAIN, ProcessSpec
from smtrain.plan import launch

# Modules the ranks import, per MPI strategy (checked before anything starts).
_MPI_MODULES = {"horovod": ("mpi4py", "horovod.tensorflow"), "smddp": ("mpi4py", "smdistributed.dataparallel")}
# The ps task as sagemaker-tensorflow-training's `_run_ps` runs it: a bare tf.distribute.Server, its GPUs
# hidden, serving until the host ends; the cluster comes from the TF_CONFIG the toolkit builds for it.
PS_SERVER = """\
import json, os
import tensorflow as tf
tf_config = json.loads(os.environ["TF_CONFIG"])
server = tf.distribute.Server(tf.train.ClusterSpec(tf_config["cluster"]), job_name="ps",
                              task_index=tf_config["task"]["index"],
                              config=tf.compat.v1.ConfigProto(device_count={"GPU": 0}))
server.join()
"""
# (host, TF_CONFIG or None) -> the environment of a process on that host
EnvFor = Callable[[str, dict[str, Any] | None], dict[str, str]]


def loopback_addresses(hosts: Sequence[str], ports: Sequence[int], reserved: Reserved) -> launch.Address:
    """An `address` for smtrain.plan.launch: each (host, container port) gets its own local port, reserved
    (smtrain.local.ports) until the run ends."""
    wanted = [(h, p) for h in hosts for p in ports]
    table = dict(zip(wanted, reserved.take(len(wanted)), strict=True))
    return lambda host, port: f"127.0.0.1:{table[(host, port)]}"


def program(entry_point: str, python: str, args: Sequence[str]) -> list[str]:
    """How the toolkit starts the entry point: a Python script, else a command through sh."""
    if entry_point.endswith(".py"):
        return [python, entry_point, *args]
    return ["/bin/sh", "-c", " ".join(shlex.quote(a) for a in [f"./{entry_point}", *args])]


def check_mpi(strategy: str, python: str) -> str:
    """mpirun's path; a UserError naming what is missing for a Horovod or smddp run here."""
    mpirun = shutil.which("mpirun")
    if mpirun is None:
        raise UserError(f"{strategy} runs under mpirun, which is not installed here (Debian/Ubuntu: "
                        "apt-get install openmpi-bin libopenmpi-dev); or run the job with "
                        "--set distribution.strategy=multi_worker_mirrored", exit_codes.USAGE)
    modules = _MPI_MODULES[strategy]
    probe = "import importlib.util,sys; print(' '.join(m for m in sys.argv[1:] if importlib.util.find_spec(m) is None))"
    try:
        found = subprocess.run([python, "-c", probe, *modules], capture_output=True, text=True, timeout=120)
        missing = found.stdout.split() if found.returncode == 0 else list(modules)
    except (OSError, subprocess.SubprocessError):
        missing = list(modules)
    if missing:
        what = "smdistributed (only SageMaker's images have it)" if strategy == "smddp" else "Horovod and mpi4py"
        raise UserError(f"{strategy} needs {what} in the Python that runs the hosts ({python}); missing: "
                        f"{', '.join(missing)}. Point --python at an environment that has them", exit_codes.USAGE)
    return mpirun


def local_mpirun(mpirun: str, processes: int, env: Mapping[str, str], exported: Sequence[str],
                 mpi_options: str) -> list[str]:
    """mpirun for `processes` ranks on this machine, forwarding the variables in `exported`."""
    argv = [mpirun, "-np", str(processes)]
    if os.geteuid() == 0:
        argv.append("--allow-run-as-root")  # Open MPI refuses root otherwise
    argv += [
        "--oversubscribe",  # more ranks than cores is fine for a local run
        "--bind-to", "none",  # pinning would put every rank of every job on the same cores
        "--tag-output",
        "--mca", "btl", "self,vader",  # one host: shared memory, no TCP listeners
        "--mca", "btl_vader_single_copy_mechanism", "none",  # needs no ptrace rights
        "--mca", "oob_tcp_if_include", "lo",
        "--mca", "orte_abort_on_non_zero_status", "1",  # as the toolkit: one rank fails, all end
    ]
    options = shlex.split(mpi_options)
    if "--NCCL_DEBUG" in options:  # the toolkit lifts this one option out of the custom options
        i = options.index("--NCCL_DEBUG")
        if i + 1 < len(options):
            argv += ["-x", f"NCCL_DEBUG={options[i + 1]}"]
        del options[i:i + 2]
    for name in dict.fromkeys([*exported, "PATH", "PYTHONPATH", "LD_LIBRARY_PATH"]):
        if name in env:
            argv += ["-x", name]
    return argv + options


def host_processes(strategy: str, hosts: Sequence[str], code_dirs: Mapping[str, Path], env_for: EnvFor, *,
                   entry_point: str, python: str, args_for: Callable[[str], list[str]], processes_per_host: int,
                   mpi_options: str, ports: Reserved) -> list[ProcessSpec]:
    """The processes of every host; `env_for(host, tf_config)` and `args_for(host)` give a process's
    environment and the entry point's arguments; TF_CONFIG's ports are taken from `ports` (held by the caller
    until the processes end)."""
    specs: list[ProcessSpec] = []
    if strategy == "multi_worker_mirrored":
        address = loopback_addresses(hosts, [launch.MWMS_PORT], ports)
        for host in hosts:
            env = env_for(host, launch.tf_config_mwms(hosts, host, address=address))
            specs.append(ProcessSpec(host, program(entry_point, python, args_for(host)), env, code_dirs[host]))
    elif strategy == "parameter_server" and len(hosts) > 1:
        address = loopback_addresses(hosts, [launch.PS_WORKER_PORT, launch.PS_SERVER_PORT], ports)
        for host in hosts:
            ps_env = env_for(host, launch.tf_config_ps(hosts, host, ps_task=True, address=address))
            # The toolkit starts this host's parameter server (no user code) before its worker.
            specs.append(ProcessSpec(host, [python, "-c", PS_SERVER], ps_env, code_dirs[host], role=AUX, label="ps"))
            env = env_for(host, launch.tf_config_ps(hosts, host, address=address))
            specs.append(ProcessSpec(host, program(entry_point, python, args_for(host)), env, code_dirs[host]))
    elif strategy in ("horovod", "smddp"):
        mpirun = check_mpi(strategy, python)
        first = hosts[0]
        env = env_for(first, None)
        exported = [k for k in env if k.startswith("SM_") or k in ("SAGEMAKER_BASE_DIR", "TRAINING_JOB_NAME")]
        argv = local_mpirun(mpirun, processes_per_host * len(hosts), env, exported, mpi_options)
        # mpi4py makes an uncaught exception in one rank abort them all (the toolkit runs it so too).
        args = args_for(first)
        ranks = [python, "-m", "mpi4py", entry_point, *args] if entry_point.endswith(".py") \
            else program(entry_point, python, args)
        specs.append(ProcessSpec(first, argv + ranks, env, code_dirs[first]))
    else:
        for host in hosts:
            specs.append(ProcessSpec(host, program(entry_point, python, args_for(host)), env_for(host, None),
                                     code_dirs[host], role=MAIN))
    return specs
