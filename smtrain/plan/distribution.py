"""Distribution strategies: which one runs, the SDK's `distribution` dict, and what each one refuses.

The SDK checks little of this itself (an unknown key in `distribution` gives a job with no
distribution at all; p5 with smdistributed fails only at fit()), so every rule lives here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from smtrain.plan.catalog import InstanceType

# The SDK's SMDDP instance list (sagemaker/fw_utils.py SM_DATAPARALLEL_SUPPORTED_INSTANCE_TYPES);
# smdistributed never ran on p5 or p6 for TensorFlow. EFA rules read InstanceType.efa (P6 has it).
SMDDP_INSTANCES = ("ml.p3.16xlarge", "ml.p3dn.24xlarge", "ml.p4d.24xlarge", "ml.p4de.24xlarge")
# What SageMaker's TensorFlow training images ship, per strategy (each fact with its source):
# - smdistributed data parallel: the SDK allows it for TF 2.3 to 2.11 only
#   (SM_DATAPARALLEL_SUPPORTED_FRAMEWORK_VERSIONS in sagemaker/fw_utils.py); discontinued after 2.11.
SMDDP_MIN_TF = (2, 3)
SMDDP_MAX_TF = (2, 11)
# - multi_worker_mirrored: the first image whose toolkit emits TF_CONFIG for MWMS is 2.9 (the SDK
#   refuses `multi_worker_mirrored_strategy` below 2.9: sagemaker/tensorflow/estimator.py).
MWMS_MIN_TF = (2, 9)
# - horovod: the images dropped Horovod in TF 2.13 (aws/deep-learning-containers PR #3161,
#   "Removing Horovod"); 2.12 is the last one that has it. An image_uri of your own may have it.
HOROVOD_MAX_TF = (2, 12)
MPI_STRATEGIES = ("horovod", "smddp")


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split(".") if p.isdigit())


def resolve(requested: str, nodes: int, gpus: int) -> tuple[str, str]:
    """The strategy that runs and why: `auto` follows the hardware."""
    if requested != "auto":
        return requested, "as the spec asks"
    if nodes > 1:
        return "multi_worker_mirrored", f"auto: {nodes} nodes"
    if gpus > 1:
        return "mirrored", f"auto: one node with {gpus} GPUs"
    return "none", "auto: one node with one GPU"


def allowed_instances(strategy: str) -> tuple[tuple[str, ...], str] | None:
    """Instance types a strategy is limited to, with the reason, for automatic selection."""
    if strategy == "smddp":
        return SMDDP_INSTANCES, "smddp runs only on " + ", ".join(SMDDP_INSTANCES)
    return None


def processes_per_host(strategy: str, requested: int | str, gpus: int) -> int:
    """Processes each host starts: one per GPU under MPI by default, else one."""
    if strategy in MPI_STRATEGIES:
        return gpus if requested == "auto" else int(requested)
    return 1


def replicas(strategy: str, nodes: int, gpus: int, processes: int) -> int:
    """Replicas that step in sync, as the entrypoint counts them (num_replicas_in_sync or hvd.size())."""
    if strategy == "multi_worker_mirrored":
        return nodes * gpus
    if strategy in ("mirrored", "parameter_server"):
        # parameter_server: each worker mirrors a step over its own GPUs; workers step asynchronously.
        return gpus
    if strategy in MPI_STRATEGIES:
        return nodes * processes
    return 1


def sdk_distribution(strategy: str, processes: int, mpi_options: str) -> dict[str, Any] | None:
    """The SageMaker Python SDK v2 `distribution` argument of the TensorFlow estimator."""
    if strategy == "multi_worker_mirrored":
        return {"multi_worker_mirrored_strategy": {"enabled": True}}
    if strategy == "parameter_server":
        return {"parameter_server": {"enabled": True}}
    if strategy == "horovod":
        return {"mpi": {"enabled": True, "processes_per_host": processes, "custom_mpi_options": mpi_options}}
    if strategy == "smddp":
        return {"smdistributed": {"dataparallel": {"enabled": True, "custom_mpi_options": mpi_options}}}
    return None


@dataclass
class Findings:
    """Rule results: errors refuse the job, warnings are shown. Each is (field path, message)."""

    errors: list[tuple[tuple[str, ...], str]] = field(default_factory=list)
    warnings: list[tuple[tuple[str, ...], str]] = field(default_factory=list)


def check(strategy: str, tf_version: str | None, instance: InstanceType, nodes: int,
          requested_processes: int | str, image_uri: str | None = None) -> Findings:
    """Every rule a strategy has about TF versions, images, instances, nodes and processes."""
    found = Findings()
    where = ("distribution", "strategy")
    tf = version_tuple(tf_version) if tf_version else None
    if strategy == "smddp":
        if tf is not None and not SMDDP_MIN_TF <= tf[:2] <= SMDDP_MAX_TF:
            found.errors.append((where, f"smddp (smdistributed data parallel) exists for TensorFlow 2.3 to 2.11 "
                                        f"only, not {tf_version}: use multi_worker_mirrored, or "
                                        "tensorflow.version 2.11"))
        if instance.name not in SMDDP_INSTANCES:
            found.errors.append((("compute", "instance_type"),
                                 f"smddp does not run on {instance.name}: use one of "
                                 f"{', '.join(SMDDP_INSTANCES)}, or strategy horovod / multi_worker_mirrored"))
    if strategy == "horovod" and tf is not None and tf[:2] > HOROVOD_MAX_TF and not image_uri:
        found.errors.append((where, f"SageMaker's TensorFlow {tf_version} image has no Horovod (the images "
                                    "dropped it in 2.13): use multi_worker_mirrored, or tensorflow.version "
                                    "2.12, or an image_uri of your own that has Horovod"))
    if strategy == "multi_worker_mirrored" and tf is not None and tf[:2] < MWMS_MIN_TF:
        found.errors.append((where, f"multi_worker_mirrored needs TensorFlow 2.9 or later in SageMaker, not "
                                    f"{tf_version}: raise tensorflow.version or use horovod"))
    if strategy == "mirrored" and nodes > 1:
        found.errors.append((where, f"mirrored uses the GPUs of one node, but compute.nodes is {nodes}: "
                                    "use multi_worker_mirrored (or horovod) for several nodes"))
    if strategy == "parameter_server" and nodes < 2:
        found.errors.append((where, "parameter_server needs compute.nodes of 2 or more (SageMaker turns it off "
                                    "on one node): use mirrored on one node"))
    if strategy in MPI_STRATEGIES and requested_processes != "auto":
        if int(requested_processes) > instance.gpus:
            found.errors.append((("distribution", "processes_per_host"),
                                 f"{requested_processes} processes per host but {instance.name} has "
                                 f"{instance.gpus} GPU(s): use at most {instance.gpus} (one per GPU)"))
    if strategy not in MPI_STRATEGIES and requested_processes != "auto":
        found.warnings.append((("distribution", "processes_per_host"),
                               f"processes_per_host applies to horovod and smddp only; {strategy} ignores it"))
    if strategy == "parameter_server" and instance.gpus > 1:
        found.warnings.append((where, f"parameter_server on {instance.name} ({instance.gpus} GPUs): every GPU "
                                      "reads and updates the variables on the parameter servers over the "
                                      "network each step; multi_worker_mirrored usually scales better"))
    if strategy == "none" and nodes > 1:
        found.warnings.append((where, f"strategy none: each of the {nodes} nodes trains on its own"))
    if nodes > 1 and not instance.efa:
        found.warnings.append((("compute", "nodes"), f"{instance.name} has no EFA: gradients between nodes go over "
                                                     "plain TCP, which can dominate step time"))
    return found
