"""The job's strategy for a wrapped script, built by smtrain_tf's own code (as smtrain_tf.strategy() builds it).

Only tf.distribute strategies that an unchanged script can run under: default, Mirrored and
MultiWorkerMirrored. The others are refused before TensorFlow is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any, Callable, Dict

from ..contract import failure
from ..contract.container import Contract
from ..contract.errors import ConfigurationError
from ..distribute import choice as strategy_choice

_REFUSED: Dict[str, str] = {
    strategy_choice.HOROVOD: "Horovod needs changes to the script (hvd.init, a distributed optimizer or tape, "
                             "a broadcast of the first weights)",
    strategy_choice.SMDDP: "smdistributed data parallel needs changes to the script (its init, its "
                           "DistributedGradientTape, a broadcast of the first weights)",
    strategy_choice.PS: "parameter server needs changes to the script (Keras 3's fit does not support it, "
                        "keras-team/keras#18624, and workers and ps tasks serve instead of running the script)",
}


def refuse_unsupported(kind: str, reason: str) -> None:
    why = _REFUSED.get(kind)
    if why is not None:
        raise ConfigurationError(f"a wrapped script cannot run under strategy {kind} ({reason}): {why}; use "
                                 "multi_worker_mirrored across hosts, or call smtrain_tf.fit in the script "
                                 "and turn code.wrap off")


def build(contract: Contract, say: Callable[[str], None]) -> Any:
    """The Distribution (strategy, replicas, chief) for this process; devices are set up first."""
    # Decided from the contract alone first, so a refused strategy fails before TensorFlow loads.
    early = strategy_choice.decide(contract, 1)
    refuse_unsupported(early.kind, early.reason)

    from ..distribute import distribution, gpu_check

    # The `gpus: ...` line; a job that asked for GPUs and sees none stops here (unless allow_cpu).
    gpu_check.check(contract, say)
    chosen = distribution.choose(contract)
    refuse_unsupported(chosen.kind, chosen.reason)
    distribution.configure_devices(contract, None)
    if chosen.kind != strategy_choice.MWMS:
        return distribution.build(chosen, None)
    return _build_within(contract.hp("startup_timeout"), lambda: distribution.build(chosen, None))


# A separate process watches the join: MultiWorkerMirrored waits for every worker, for ever if one
# never starts, and holds the GIL meanwhile, so no thread of this process can end the wait. The
# guard hears from this process when the join is over (or sees its pipe close when it dies); when
# time is up first, it writes the failure line and kills the waiting process.
_GUARD = """
import os, select, signal, sys
pid, limit, path, reason = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3], sys.argv[4]
ready, _, _ = select.select([sys.stdin], [], [], limit)
if not ready:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".guard", "w", encoding="utf-8") as handle:
        handle.write(reason + "\\n")
    os.replace(path + ".guard", path)
    os.kill(pid, signal.SIGKILL)
"""


def _build_within(limit: float, build_strategy: Callable[[], Any]) -> Any:
    """Build the strategy, or end this process with a failure line if the workers do not join in `limit` s."""
    reason = failure.one_line(f"no progress in {limit:g}s while waiting for the other workers to join "
                              "(MultiWorkerMirrored): a peer process is probably dead or unreachable "
                              "(SMTRAIN_STARTUP_TIMEOUT sets the limit)")
    path = os.path.join(failure.output_dir(), "failure")
    guard = subprocess.Popen([sys.executable, "-c", _GUARD, str(os.getpid()), str(limit), path, reason],
                             stdin=subprocess.PIPE)
    try:
        return build_strategy()
    finally:
        assert guard.stdin is not None
        guard.stdin.close()  # the join is over, one way or the other
        guard.wait()


def describe(dist: Any, script: str) -> str:
    return f"wrap: strategy={dist.kind} replicas={dist.num_replicas} workers={dist.num_workers} " \
           f"chief={'yes' if dist.is_chief else 'no'} script={script}"
