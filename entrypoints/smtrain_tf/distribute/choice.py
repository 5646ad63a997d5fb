"""Which distribution strategy runs, decided from the contract alone (no TensorFlow needed)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

from ..contract import container as c
from ..contract.cluster import ClusterRole, read_role
from ..contract.errors import ConfigurationError

DEFAULT = "default"
MIRRORED = "mirrored"
MWMS = "multi_worker_mirrored"
PS = "parameter_server"
HOROVOD = "horovod"
SMDDP = "smddp"
COLLECTIVE_LIBS = (HOROVOD, SMDDP)


@dataclass(frozen=True)
class Choice:
    kind: str
    reason: str
    role: Optional[ClusterRole]

    @property
    def serves_only(self) -> bool:
        """Parameter-server workers and ps tasks run a server; the chief does the training."""
        return self.kind == PS and self.role is not None and self.role.task_type in ("worker", "ps")


def local_device_count(num_gpus: int, cpu_replicas: int) -> int:
    """Devices one process trains on: its GPUs, else the logical CPUs asked for, else one."""
    if num_gpus > 0:
        return num_gpus
    return max(cpu_replicas, 1)


def decide(contract: c.Contract, local_devices: int) -> Choice:
    role = read_role(contract.tf_config)
    forced = contract.hp("strategy")
    if forced != "auto":
        return _forced(forced, role)
    if contract.flag(c.SMDDP_FLAG):
        return Choice(SMDDP, f"{c.SMDDP_FLAG} is set", None)
    if contract.flag(c.MPI_FLAG):
        return Choice(HOROVOD, f"{c.MPI_FLAG} is set", None)
    if role is not None and role.has_ps:
        if role.num_workers == 0:
            # SageMaker's one-host parameter-server layout: nobody to train but the master.
            return _local(local_devices, "TF_CONFIG has no worker to train for the parameter servers")
        return Choice(PS, "TF_CONFIG names ps tasks", role)
    if role is not None and (role.num_trainers > 1 or contract.flag(c.MWMS_FLAG)):
        return Choice(MWMS, f"TF_CONFIG names {role.num_trainers} workers", role)
    return _local(local_devices, "one process")


def _local(local_devices: int, why: str) -> Choice:
    if local_devices > 1:
        return Choice(MIRRORED, f"{why} with {local_devices} local devices", None)
    return Choice(DEFAULT, f"{why} with one device", None)


def _forced(kind: str, role: Optional[ClusterRole]) -> Choice:
    reason = "strategy hyperparameter"
    if kind == MWMS:
        if role is None or role.num_trainers < 1:
            raise ConfigurationError("strategy=multi_worker_mirrored needs TF_CONFIG naming the workers "
                                     "(SageMaker sets it with distribution multi_worker_mirrored_strategy)")
        if role.has_ps or role.task_type not in ("chief", "worker"):
            raise ConfigurationError("strategy=multi_worker_mirrored cannot run with ps tasks in TF_CONFIG")
        return Choice(MWMS, reason, role)
    if kind == PS:
        if role is None or not role.has_ps or role.num_workers < 1 or role.chief_address is None:
            raise ConfigurationError("strategy=parameter_server needs TF_CONFIG with a chief (or master), "
                                     "at least one worker and at least one ps")
        return Choice(PS, reason, role)
    if kind in COLLECTIVE_LIBS:
        return Choice(kind, reason, None)
    if kind == MIRRORED:
        return Choice(MIRRORED, reason, None)
    return Choice(DEFAULT, reason, None)
