"""Parameter-server workers and ps tasks: serve until the chief is done, then exit cleanly.

How they learn that the chief is done: the chief's gRPC server listens on its TF_CONFIG address
from the moment it connects to the cluster until its process ends. A server task waits (up to
startup_timeout) to see that port accept connections, then polls it; once it refuses twice in a
row, the chief has exited and the task ends with status 0. This needs no shared file system and
is the same signal SageMaker's toolkit uses for its own ps processes (it polls the master's port).
"""

from __future__ import annotations

import socket
import time
from typing import Callable, Tuple

from ..contract.cluster import ClusterRole
from ..contract.errors import PeerFailure

POLL_SECONDS = 2.0
REFUSALS_TO_STOP = 2


def _host_port(address: str) -> Tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def reachable(address: str, timeout: float = 2.0) -> bool:
    host, port = _host_port(address)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def start_server(role: ClusterRole) -> object:
    import tensorflow as tf

    config = tf.compat.v1.ConfigProto()
    if role.task_type == "ps":
        # Variables live in host memory; keep the GPUs for the worker beside it.
        config.device_count["GPU"] = 0
    # Small hosts: too few inter-op threads can starve concurrent remote function calls.
    config.inter_op_parallelism_threads = max(4, role.num_workers + 1)
    return tf.distribute.Server(tf.train.ClusterSpec(role.cluster), job_name=role.task_type,
                                task_index=role.task_index, protocol="grpc", config=config, start=True)


def wait_for_chief(chief: str, startup_timeout: float, emit: Callable[[str], None],
                   probe: Callable[[str], bool] = reachable, sleep: Callable[[float], None] = time.sleep,
                   clock: Callable[[], float] = time.monotonic) -> None:
    """Block until the chief has come up and gone away again; fail if it never comes up."""
    deadline = clock() + startup_timeout
    while not probe(chief):
        if clock() > deadline:
            raise PeerFailure(f"the chief at {chief} did not come up within {startup_timeout:.0f}s")
        sleep(POLL_SECONDS)
    emit(f"chief {chief} is up; serving until it finishes")
    refusals = 0
    while refusals < REFUSALS_TO_STOP:
        sleep(POLL_SECONDS)
        refusals = 0 if probe(chief) else refusals + 1
    emit(f"chief {chief} has finished; stopping")


def serve(role: ClusterRole, startup_timeout: float, emit: Callable[[str], None]) -> int:
    start_server(role)
    emit(f"{role.task_type} {role.task_index} serving at {role.address}")
    chief = role.chief_address
    assert chief is not None
    wait_for_chief(chief, startup_timeout, emit)
    return 0
