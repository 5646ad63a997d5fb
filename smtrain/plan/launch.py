"""What SageMaker's TensorFlow container starts on each host: TF_CONFIG, the mpirun or smddprun line.

These follow the container toolkits (sagemaker-tensorflow-training's TF_CONFIG builders,
sagemaker-training's MPI runner) so that `plan` shows what will run and the local backend
can start the same thing on this machine.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

MWMS_PORT = 8890
PS_WORKER_PORT = 2222
PS_SERVER_PORT = 2223
# The toolkit's lists of instances on which it turns on EFA for NCCL, and EFA's RDMA (sagemaker-training 5.x).
EFA_NCCL_INSTANCES = ("ml.g4dn.8xlarge", "ml.g4dn.12xlarge", "ml.g5.48xlarge", "ml.p3dn.24xlarge",
                      "ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge")
EFA_RDMA_INSTANCES = ("ml.p4d.24xlarge", "ml.p4de.24xlarge", "ml.p5.48xlarge", "ml.p5e.48xlarge")

Address = Callable[[str, int], str]


def host_names(nodes: int) -> list[str]:
    """SageMaker names its hosts algo-1 ... algo-N."""
    return [f"algo-{i}" for i in range(1, nodes + 1)]


def _default_address(host: str, port: int) -> str:
    return f"{host}:{port}"


def tf_config_mwms(hosts: Sequence[str], current: str, address: Address = _default_address) -> dict[str, Any]:
    """TF_CONFIG for MultiWorkerMirroredStrategy: every host a worker on port 8890."""
    return {
        "cluster": {"worker": [address(h, MWMS_PORT) for h in hosts]},
        "environment": "cloud",
        "task": {"index": list(hosts).index(current), "type": "worker"},
    }


def tf_config_ps(hosts: Sequence[str], current: str, *, ps_task: bool = False,
                 address: Address = _default_address) -> dict[str, Any]:
    """TF_CONFIG for parameter server: the first host is master, the rest workers, a ps on every host."""
    hosts = list(hosts)
    cluster: dict[str, list[str]] = {"master": [address(hosts[0], PS_WORKER_PORT)]}
    if len(hosts) > 1:
        cluster["ps"] = [address(h, PS_SERVER_PORT) for h in hosts]
        cluster["worker"] = [address(h, PS_WORKER_PORT) for h in hosts[1:]]
    if ps_task:
        task = {"index": hosts.index(current), "type": "ps"}
    elif current == hosts[0]:
        task = {"index": 0, "type": "master"}
    else:
        task = {"index": hosts[1:].index(current), "type": "worker"}
    return {"cluster": cluster, "environment": "cloud", "task": task}


def hyperparameter_args(hyperparameters: Mapping[str, Any]) -> list[str]:
    """Hyperparameters as the toolkit passes them: sorted `--name value` pairs, values as str()."""
    args = []
    for name in sorted(hyperparameters):
        value = hyperparameters[name]
        if isinstance(value, Mapping):
            value = ",".join(f"{k}={v}" for k, v in sorted(value.items()))
        args += [f"--{name}" if len(name) > 1 else f"-{name}", str(value)]
    return args


SMDDP_SERVER_PORT = 7592
# smddp's mpirun preloads the toolkit's gethostname library; its path depends on the image.
GETHOSTNAME_PRELOAD = "LD_PRELOAD=<sagemaker-training's gethostname library>"


def _nccl_debug(mpi_options: str) -> tuple[str, list[str]]:
    """NCCL_DEBUG and the other custom options: both toolkit runners lift `--NCCL_DEBUG X` out."""
    options = mpi_options.split()
    nccl_debug = "INFO"
    if "--NCCL_DEBUG" in options:
        i = options.index("--NCCL_DEBUG")
        nccl_debug = options[i + 1] if i + 1 < len(options) else nccl_debug
        del options[i:i + 2]
    return nccl_debug, options


def _efa_options(instance_type: str) -> list[str]:
    options = ["-x", "NCCL_PROTO=simple"] if instance_type in EFA_NCCL_INSTANCES else []
    return options + (["-x", "FI_EFA_USE_DEVICE_RDMA=1"] if instance_type in EFA_RDMA_INSTANCES else [])


def mpirun_command(hosts: Sequence[str], processes_per_host: int, instance_type: str, mpi_options: str,
                   program: Sequence[str], *, interface: str = "eth0") -> list[str]:
    """The mpirun line sagemaker-training's MPI runner (Horovod) builds on the first host."""
    host_list = list(hosts) if processes_per_host == 1 else [f"{h}:{processes_per_host}" for h in hosts]
    nccl_debug, options = _nccl_debug(mpi_options)
    cmd = [
        "mpirun", "--host", ",".join(host_list), "-np", str(processes_per_host * len(hosts)),
        "--allow-run-as-root", "--display-map", "--tag-output",
        "-mca", "btl_tcp_if_include", interface, "-mca", "oob_tcp_if_include", interface,
        "-mca", "plm_rsh_no_tree_spawn", "1", "-bind-to", "none", "-map-by", "slot",
        "-mca", "pml", "ob1", "-mca", "btl", "^openib", "-mca", "orte_abort_on_non_zero_status", "1",
        "-mca", "btl_vader_single_copy_mechanism", "none",
        "-x", "NCCL_MIN_NRINGS=4", "-x", f"NCCL_SOCKET_IFNAME={interface}", "-x", f"NCCL_DEBUG={nccl_debug}",
        "-x", "LD_LIBRARY_PATH", "-x", "PATH",
    ]
    cmd += options
    if instance_type in EFA_NCCL_INSTANCES:
        cmd += ["-x", "FI_PROVIDER=efa"]
    return cmd + _efa_options(instance_type) + ["python", "-m", "mpi4py", *program]


def smddprun_command(hosts: Sequence[str], processes_per_host: int, instance_type: str, mpi_options: str,
                     program: Sequence[str], *, interface: str = "eth0") -> list[str]:
    """The line sagemaker-training's smdataparallel runner builds on the first host: mpirun ... smddprun."""
    multi = len(hosts) > 1
    host_list = [f"{h}:{processes_per_host}" for h in hosts] if multi else list(hosts)
    nccl_debug, options = _nccl_debug(mpi_options)
    flag = "SMDATAPARALLEL_USE_HOMOGENEOUS=1" if multi else "SMDATAPARALLEL_USE_SINGLENODE=1"
    cmd = [
        "mpirun", "--host", ",".join(host_list), "-np", str(processes_per_host * len(hosts)),
        "--allow-run-as-root", "--tag-output", "--oversubscribe",
        "-mca", "btl_tcp_if_include", interface, "-mca", "oob_tcp_if_include", interface,
        "-mca", "plm_rsh_no_tree_spawn", "1", "-mca", "pml", "ob1", "-mca", "btl", "^openib",
        "-mca", "orte_abort_on_non_zero_status", "1", "-mca", "btl_vader_single_copy_mechanism", "none",
        "-mca", "plm_rsh_num_concurrent", str(len(hosts)),
        "-x", f"NCCL_SOCKET_IFNAME={interface}", "-x", f"NCCL_DEBUG={nccl_debug}", "-x", "LD_LIBRARY_PATH",
        "-x", "PATH", "-x", flag, "-x", "FI_PROVIDER=efa", "-x", "RDMAV_FORK_SAFE=1", "-x", GETHOSTNAME_PRELOAD,
        *options, *_efa_options(instance_type),
    ]
    if multi:  # the first host serves smddp's rendezvous
        cmd += ["-x", f"SMDATAPARALLEL_SERVER_ADDR={hosts[0]}", "-x", f"SMDATAPARALLEL_SERVER_PORT={SMDDP_SERVER_PORT}",
                "-x", f"SAGEMAKER_INSTANCE_TYPE={instance_type}"]
    return cmd + ["smddprun", "python", "-m", "mpi4py", *program]


@dataclass(frozen=True)
class HostLaunch:
    """What one host runs: its TF_CONFIG (if any) and the command, or a note when it only serves."""

    host: str
    tf_config: dict[str, Any] | None
    command: list[str] | None
    note: str = ""
    ps_tf_config: dict[str, Any] | None = None  # parameter server: the toolkit's ps server on this host


def preview(strategy: str, hosts: Sequence[str], processes_per_host: int, instance_type: str,
            mpi_options: str, entry_point: str, hyperparameters: Mapping[str, Any]) -> list[HostLaunch]:
    """Per-host launch as the container toolkit does it for `strategy`."""
    program = [entry_point, *hyperparameter_args(hyperparameters)]
    python = ["python", *program]
    launches = []
    for i, host in enumerate(hosts):
        if strategy == "multi_worker_mirrored":
            launches.append(HostLaunch(host, tf_config_mwms(hosts, host), python))
        elif strategy == "parameter_server" and len(hosts) > 1:
            launches.append(HostLaunch(host, tf_config_ps(hosts, host), python,
                                       ps_tf_config=tf_config_ps(hosts, host, ps_task=True)))
        elif strategy in ("horovod", "smddp"):
            if i == 0:
                runner = mpirun_command if strategy == "horovod" else smddprun_command
                cmd = runner(hosts, processes_per_host, instance_type, mpi_options, program)
                launches.append(HostLaunch(host, None, cmd))
            else:
                launches.append(HostLaunch(host, None, None, note=f"runs the MPI processes {hosts[0]} starts"))
        else:
            launches.append(HostLaunch(host, None, python))
    return launches
