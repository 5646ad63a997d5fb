"""How many replicas each host of a local run trains with: the plan's, with CPU devices standing in for GPUs.

A local run must fail where the paid run would, and most of what breaks a distributed script shows
only with several replicas (a strategy built twice, a batch taken as global, per-replica layers).
So each training process gets as many logical CPU devices as the GPUs it would drive on SageMaker:
all of the host's GPUs under mirrored, multi-worker mirrored and parameter server; one per process
under Horovod and smddp, whose ranks each pin a GPU. `--replicas-per-host K` runs fewer (each
logical device costs memory and the CPU is shared); it never runs more than planned.

One limit is TensorFlow's, not smtrain's: its multi-worker strategies (MultiWorkerMirrored, parameter
server) give a worker without GPUs exactly one CPU device, whatever the logical devices. A local run
of a multi-host plan therefore trains one replica per host, and says that the paid run has more.

smtrain_tf (the bundled entrypoint, the wrap, smtrain_tf's helpers) splits the CPU itself when it
reads SMTRAIN_CPU_REPLICAS. A hand-written script does not, so for an own script a start-up hook
(hooks/sitecustomize.py, first on the hosts' PYTHONPATH after the code) splits the CPU right after
TensorFlow is imported, before the script runs any op: the script sees the devices it would see.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from smtrain.errors import UserError
from smtrain.exit_codes import USAGE
from smtrain.plan import program
from smtrain.plan.build import Plan

CPU_REPLICAS_VAR = "SMTRAIN_CPU_REPLICAS"
# What the CPU devices stand in for, for the `gpus:` line of smtrain_tf (SM_NUM_GPUS is 0 here).
STANDS_IN_VAR = "SMTRAIN_LOCAL_GPUS"
HOOKS_DIR = Path(__file__).with_name("hooks")


# TensorFlow's multi-worker strategies use one CPU device per worker (collective_all_reduce_strategy's
# local devices: the GPUs, else `CPU:0` alone; parameter server workers likewise).
_ONE_CPU_DEVICE = ("multi_worker_mirrored", "parameter_server")


def planned_per_process(plan: Plan) -> int:
    """The GPUs one training process drives on SageMaker (at least 1: a CPU-only job has one device)."""
    gpus = max(plan.instance.gpus, 1)
    return max(gpus // max(plan.processes_per_host, 1), 1)


@dataclass(frozen=True)
class ReplicaLayout:
    planned: int  # devices per training process, as planned
    used: int  # devices per training process in this run
    processes_per_host: int
    nodes: int
    gpu: str
    own_script: bool
    one_device_strategy: str | None = None  # the multi-worker strategy that limits this run to one per host

    @property
    def environment(self) -> dict[str, str]:
        env = {CPU_REPLICAS_VAR: str(self.used)} if self.used > 1 else {}
        if self.gpu:
            env[STANDS_IN_VAR] = f"{self.planned} x {self.gpu}"
        return env

    @property
    def python_path(self) -> list[str]:
        """Directories the hosts' PYTHONPATH gets after the code: the device hook, for own scripts."""
        return [str(HOOKS_DIR)] if self.own_script and self.used > 1 else []

    def summary(self, gpus_here: int = 0) -> str:
        """The run's first line about its layout; `gpus_here`: GPUs this machine has (then TensorFlow uses them,
        as SM_NUM_GPUS tells the job, and no CPU stands in)."""
        if gpus_here:
            return (f"this machine has {gpus_here} GPU{'s' if gpus_here != 1 else ''}: the job uses them as they "
                    f"are (SM_NUM_GPUS={gpus_here}), not the planned {self.planned * self.processes_per_host} x "
                    f"{self.gpu or 'GPU'} per host, and no CPU devices stand in")
        per_host = self.used * self.processes_per_host
        planned_per_host = self.planned * self.processes_per_host
        hosts = f"{self.nodes} host{'s' if self.nodes != 1 else ''}"
        replicas = f"{per_host} replica{'s' if per_host != 1 else ''}"
        where = f"{replicas} on {hosts}" if self.nodes == 1 else f"{replicas} per host on {hosts}"
        if self.processes_per_host > 1:
            where += f" ({self.processes_per_host} processes per host)"
        stand_in = f"CPU stand-ins for {planned_per_host} x {self.gpu}" if self.gpu else "CPU devices"
        if self.one_device_strategy and self.planned > 1:
            return (f"{where}; the paid run has {planned_per_host} per host ({self.gpu}): TensorFlow's "
                    f"{self.one_device_strategy} gives a worker without GPUs one CPU device, so each host's CPU stands "
                    f"in for its {planned_per_host} GPUs as one replica (the global batch here is smaller)")
        if self.used == self.planned:
            return f"{where}, as planned ({stand_in})"
        return (f"{where}, fewer than the planned {planned_per_host} per host (--replicas-per-host {per_host}; "
                f"{stand_in})")


def choose(plan: Plan, replicas_per_host: int | None) -> ReplicaLayout:
    """The layout of a local run of `plan`: the planned one, or `replicas_per_host` when it asks for fewer."""
    planned = planned_per_process(plan)
    used = planned
    limited = plan.strategy if plan.strategy in _ONE_CPU_DEVICE else None
    if limited and replicas_per_host not in (None, 1):
        raise UserError(f"--replicas-per-host {replicas_per_host}: this run trains one replica per host whatever "
                        f"the flag: TensorFlow's {limited} gives a worker without GPUs one CPU device", USAGE)
    if limited:
        used = 1
    elif replicas_per_host is not None:
        processes = max(plan.processes_per_host, 1)
        if replicas_per_host % processes or replicas_per_host // processes > planned:
            raise UserError(f"--replicas-per-host {replicas_per_host}: the plan runs {processes} process(es) per "
                            f"host with {planned} replica(s) each; give a multiple of {processes} up to "
                            f"{planned * processes}", USAGE)
        used = replicas_per_host // processes
    gpu = plan.instance.gpu if plan.instance.gpus else ""
    return ReplicaLayout(planned=planned, used=used, processes_per_host=max(plan.processes_per_host, 1),
                         nodes=plan.nodes, gpu=gpu, own_script=plan.kind == program.OWN, one_device_strategy=limited)
