"""The public functions of smtrain_tf (listed in its __init__): thin wrappers over the program's own code.

Every answer comes from the container contract as the bundled entrypoint reads it: the process's
`--name value` arguments (sys.argv) and its environment (SM_*, TF_CONFIG, ...). Importing this
module imports no TensorFlow; the functions that need the strategy import it when they build it.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any, Dict, Optional

from . import scaling
from .contract import container
from .contract.errors import DataError
from .contract.log import say

if TYPE_CHECKING:
    import tensorflow as tf

    from .distribute.distribution import Distribution

# The job's strategy, built once per process (TensorFlow allows its devices to be set up only once).
_built: Optional[Distribution] = None


def _contract() -> container.Contract:
    return container.read(sys.argv[1:])




def _distribution() -> Distribution:
    global _built
    if _built is None:
        _built = _build(_contract())
    return _built


def _build(contract: container.Contract) -> Distribution:
    # The steps of the bundled entrypoint (_main._train and training.session), in the same order.
    from .distribute import distribution

    choice = distribution.choose(contract)
    if choice.serves_only:
        from .distribute import ps_servers
        from .training.watchdog import exit_now

        assert choice.role is not None
        # TensorFlow's server threads never end on their own: leave without joining them.
        exit_now(ps_servers.serve(choice.role, contract.hp("startup_timeout"), say))
    library = distribution.start_library_if_needed(choice)
    distribution.configure_devices(contract, library)
    return distribution.build(choice, contract.hp("collective_timeout"), library)


def _replicas(replicas: Optional[int]) -> int:
    return _distribution().num_replicas if replicas is None else replicas


def strategy() -> tf.distribute.Strategy:
    """The tf.distribute strategy the container contract asks for, built as the bundled entrypoint builds it.

    The choice follows SM_FRAMEWORK_PARAMS, SM_HPS, TF_CONFIG, the host's GPUs and the `strategy`
    and `cpu_replicas` hyperparameters (see entrypoints/README.md, "Strategies"); devices are set
    up first (memory growth on every GPU). Built once per process: later calls return the same
    strategy. Call it before TensorFlow runs its first operation.

    - Horovod / smddp: the library is initialised and this process's GPU pinned to its local rank;
      the strategy returned is the default one (average gradients with the library's own
      `DistributedGradientTape`).
    - Parameter server, on worker and ps tasks: never returns. The process serves until the chief
      has finished, then exits with status 0, as the bundled entrypoint's do.

    Raises the entrypoint's errors (a TrainingFailure with a one-line `reason`) for a wrong
    contract or a missing library.
    """
    return _distribution().strategy


def global_batch_size(per_replica: int, replicas: Optional[int] = None) -> int:
    """Examples per training step over the whole job: `per_replica` x the replicas.

    `replicas` defaults to the job's (all processes' devices together; the processes under
    Horovod/smddp), building the strategy as strategy() does if it is not built yet.
    """
    return scaling.global_batch_size(per_replica, _replicas(replicas))


def scaled_learning_rate(base: float, rule: str, replicas: Optional[int] = None) -> float:
    """The learning rate for the job, given `base`, the rate that suits one replica.

    `rule` is `none`, `linear` (base x replicas) or `sqrt` (base x sqrt(replicas)), as the
    `lr_scaling` hyperparameter. `replicas` defaults to the job's, as in global_batch_size().
    """
    return scaling.scaled_learning_rate(base, rule, _replicas(replicas))


def is_chief() -> bool:
    """Whether this process is the one that writes the model and the checkpoints.

    The chief task, or worker 0 without one, under MultiWorkerMirrored; the coordinator under
    parameter server; rank 0 under Horovod/smddp; the only process otherwise. Builds the strategy
    as strategy() does if it is not built yet.
    """
    return _distribution().is_chief


def model_dir() -> str:
    """Where the chief writes the model: SM_MODEL_DIR, else <SAGEMAKER_BASE_DIR or /opt/ml>/model.

    SageMaker uploads it as model.tar.gz. The `--model_dir s3://...` argument the SDK adds is not it.
    """
    return _contract().model_dir


def checkpoint_dir() -> str:
    """The local checkpoint directory: the `checkpoint_dir` hyperparameter, else <base>/checkpoints.

    `<base>` is SAGEMAKER_BASE_DIR or /opt/ml; SageMaker syncs /opt/ml/checkpoints with the job's
    CheckpointConfig, so a spot job resumes from it.
    """
    return _contract().checkpoint_dir


def channel(name: str) -> str:
    """The local directory of the input channel `name` (SM_CHANNEL_<NAME>, e.g. `train`).

    Raises DataError (a TrainingFailure) naming the channels given when the job has no such channel.
    """
    channels = _contract().channels
    if name not in channels:
        given = ", ".join(sorted(channels)) or "none"
        raise DataError(f"no '{name}' channel (channels given: {given})")
    return channels[name]


def hyperparameters() -> Dict[str, Any]:
    """The job's hyperparameters, as the bundled entrypoint hands them to model hooks.

    The entrypoint's own (entrypoints/README.md, "Hyperparameters") typed and with their defaults;
    every other name (yours, and SageMaker's `sagemaker_*` and `model_dir`) as a string. Command-line
    `--name value` arguments win over SM_HPS. A new dict on every call.
    """
    parsed = _contract().hyperparameters
    return {**parsed.extras, **parsed.values}
