"""What TF_CONFIG says about this process: its role and the cluster, in TensorFlow 2's vocabulary.

SageMaker's parameter-server layout names the coordinator `master`; TensorFlow 2 accepts only
`chief`, so `master` is read as `chief` (same address, same index).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional

from .errors import ConfigurationError

_ALIASES = {"master": "chief"}
_KNOWN = ("chief", "worker", "ps", "evaluator")


@dataclass(frozen=True)
class ClusterRole:
    cluster: Dict[str, List[str]]
    task_type: str
    task_index: int

    @property
    def has_ps(self) -> bool:
        return bool(self.cluster.get("ps"))

    @property
    def num_workers(self) -> int:
        return len(self.cluster.get("worker", []))

    @property
    def num_trainers(self) -> int:
        """Processes that train in sync under MultiWorkerMirrored: chief plus workers."""
        return len(self.cluster.get("chief", [])) + self.num_workers

    @property
    def address(self) -> str:
        return self.cluster[self.task_type][self.task_index]

    @property
    def chief_address(self) -> Optional[str]:
        chiefs = self.cluster.get("chief")
        return chiefs[0] if chiefs else None

    @property
    def is_chief(self) -> bool:
        """TensorFlow's rule: the chief task, or worker 0 when there is no chief."""
        if self.task_type == "chief":
            return True
        return self.task_type == "worker" and self.task_index == 0 and "chief" not in self.cluster

    def as_tf_config(self) -> Dict[str, Any]:
        return {"cluster": self.cluster, "task": {"type": self.task_type, "index": self.task_index}}


def read_role(tf_config: Optional[Mapping[str, Any]]) -> Optional[ClusterRole]:
    """The normalised role, or None without TF_CONFIG. Expects a TF_CONFIG already checked for shape."""
    if not tf_config:
        return None
    cluster: Dict[str, List[str]] = {}
    for job, addresses in tf_config["cluster"].items():
        name = _ALIASES.get(job, job)
        if name not in _KNOWN:
            raise ConfigurationError(f"TF_CONFIG job '{job}' is not one of chief/master, worker, ps")
        if name in cluster:
            raise ConfigurationError("TF_CONFIG names both 'master' and 'chief'")
        cluster[name] = list(addresses)
    if len(cluster.get("chief", [])) > 1:
        raise ConfigurationError("TF_CONFIG may name only one chief/master")
    if cluster.get("evaluator"):
        raise ConfigurationError("TF_CONFIG evaluator tasks are not supported: validation runs in the training "
                                 "loop (give a 'validation' channel)")
    task = tf_config["task"]
    return ClusterRole(cluster=cluster, task_type=_ALIASES.get(task["type"], task["type"]),
                       task_index=int(task.get("index", 0)))
