"""The public functions of smtrain_tf (listed in its __init__): thin wrappers over the program's own code.

Every answer comes from the container contract read for a script of the user's own: the
environment (SM_*, TF_CONFIG, and smtrain's settings as SMTRAIN_<NAME>, see entrypoints/README.md).
The script's arguments and SM_HPS are its own hyperparameters (hyperparameters()), never read as
smtrain's. Importing this module imports no TensorFlow; the functions that need it import it then.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any, Callable, Dict, Iterator, List, Optional, Sequence

from . import scaling
from .contract import container, failure
from .contract.errors import DataError, TrainingFailure
from .contract.log import say

if TYPE_CHECKING:
    import tensorflow as tf

    from .distribute.distribution import Distribution

# The job's strategy, built once per process (TensorFlow allows its devices to be set up only once).
_built: Optional[Distribution] = None


def _contract() -> container.Contract:
    return container.read(sys.argv[1:], own_script=True)


# True once the wrap adopted its strategy: the wrap reads a script's batches itself.
_wrapped = False
# How a check names a line of the job's code (the wrap's knows a notebook's cells); None: the script's directory.
_place: Optional[Callable[[str, int], Optional[str]]] = None


def adopt(dist: Distribution, place: Optional[Callable[[str, int], Optional[str]]] = None) -> None:
    """Make `dist` this process's strategy (the wrap builds it before the user's script runs)."""
    global _built, _wrapped, _place
    _built, _wrapped, _place = dist, True, place


def _distribution() -> Distribution:
    global _built
    if _built is None:
        try:
            _built = _build(_contract())
        except TrainingFailure as known:
            # The reason SageMaker shows (FailureReason), as the bundled entrypoint writes it.
            failure.report(known.reason)
            raise
    return _built


def _build(contract: container.Contract) -> Distribution:
    # The steps of the bundled entrypoint (_main._train and training.session), in the same order.
    from .distribute import distribution, gpu_check

    gpu_check.check(contract, say)
    choice = distribution.choose(contract)
    if choice.serves_only:
        from .distribute import ps_servers
        from .training.watchdog import exit_now

        assert choice.role is not None
        # TensorFlow's server threads never end on their own: leave without joining them.
        exit_now(ps_servers.serve(choice.role, contract.hp("startup_timeout"), say))
    library = distribution.start_library_if_needed(choice)
    distribution.configure_devices(contract, library)
    built = distribution.build(choice, library)
    from .check import settings as check_settings

    if check_settings.read() is not None:  # `smtrain check`: the worker's random state fixed (check/seeding.py)
        from .check.seeding import seed_tensorflow, worker_seed
        from .distribute import replica_count

        seed_tensorflow(worker_seed(), say)
        # A batch the script makes with num_replicas_in_sync (1 on the check's one device) is recognised, as
        # under the wrap, so that fit can make it the planned run's.
        replica_count.mark_replica_count(built.strategy)
    return built


def _replicas(replicas: Optional[int]) -> int:
    """The job's replicas; in a check's one-device run, those it stands for (the planned run's batch and rate)."""
    if replicas is not None:
        return replicas
    from .check.settings import stands_for

    return _distribution().num_replicas * stands_for()


def strategy() -> tf.distribute.Strategy:
    """The tf.distribute strategy the container contract asks for, built as the bundled entrypoint builds it.

    The choice follows SM_FRAMEWORK_PARAMS, SM_HPS's `sagemaker_*` flags, TF_CONFIG and the host's
    GPUs (see entrypoints/README.md, "Strategies"); SMTRAIN_STRATEGY forces one and
    SMTRAIN_CPU_REPLICAS=N splits the CPU of a host without GPUs into N replicas. Devices are set up first (memory growth
    on every GPU). Built once per process: later calls return the same strategy. Call it before
    TensorFlow runs its first operation, and build the model inside `strategy.scope()`.

    The first line it prints lists the GPUs TensorFlow sees (`gpus: ...`). When the job asked for
    GPUs (SM_NUM_GPUS > 0) and TensorFlow sees none, it fails at once naming the likely cause (a
    CPU-only TensorFlow, CUDA_VISIBLE_DEVICES hiding them, no NVIDIA driver, CUDA libraries
    missing), unless SMTRAIN_ALLOW_CPU=true
    (the spec's compute.allow_cpu).

    - Horovod / smddp: the library is initialised and this process's GPU pinned to its local rank;
      the strategy returned is the default one (average gradients with the library's own
      `DistributedGradientTape`, or use fit()).
    - Parameter server, on worker and ps tasks: never returns. The process serves until the chief
      has finished, then exits with status 0, as the bundled entrypoint's do.

    Raises the entrypoint's errors (a TrainingFailure with a one-line `reason`, also written to
    <SM_OUTPUT_DIR>/failure, which SageMaker shows as the job's FailureReason) for a wrong contract,
    no GPU, or a missing library.
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
    """The local checkpoint directory: SMTRAIN_CHECKPOINT_DIR, else <base>/checkpoints.

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
    """Your script's hyperparameters: the spec's `hyperparameters:` as the job received them.

    SM_HPS decoded (numbers, booleans and lists keep their JSON types), overridden by the
    script's `--name value` arguments where they differ (those as strings), without SageMaker's
    `sagemaker_*` keys (`model_dir`, which the SDK adds, stays). smtrain's own settings are not in
    it: they reach the functions here as SMTRAIN_<NAME> environment variables. A new dict on every
    call.
    """
    extras = _contract().hyperparameters.extras
    return {name: value for name, value in extras.items() if not name.startswith("sagemaker_")}


def fit(model: Any, train: Any, validation: Any = None, *, epochs: int = 1,
        batch_size_per_replica: Optional[int] = None, steps_per_epoch: Optional[int] = None, loss: Any = None,
        optimizer: Any = None, callbacks: Optional[Sequence[Any]] = None,
        gradient_accumulation_steps: Optional[int] = None, shuffle_buffer: int = 0, seed: Optional[int] = None,
        checkpoint: bool = True, log_every_steps: int = 0, initial_epoch: int = 0,
        steps_per_execution: Optional[int] = None) -> Any:
    """Train `model` under the job's strategy; return a keras History.

    Works under every strategy strategy() builds (default, Mirrored, MultiWorkerMirrored, parameter
    server, Horovod, smddp), with Keras 2 and 3. Build (and compile) the model inside
    `smtrain_tf.strategy().scope()`; every process of the job calls fit alike. Under the default,
    Mirrored and MultiWorkerMirrored strategies the loop is Keras's own `model.fit` (Keras 3 repaired
    where it fails under several replicas), so a model's own `train_step` and `test_step` run as
    written; under parameter server and Horovod/smddp (and Keras 2 with gradient accumulation) it is
    the bundled entrypoint's loop.

    - `train`, `validation`: a tf.data.Dataset of (features, labels), or an (x, y) tuple of arrays;
      training data may carry each example's weight as a third element (Keras's sample_weight).
      With `batch_size_per_replica` the data is unbatched: fit shards it (by rank under Horovod/
      smddp), shuffles it (`shuffle_buffer` > 0, with `seed`, else SMTRAIN_SEED or 42), batches it
      with the global batch (per replica x replicas) and prefetches; under parameter server each
      worker shuffles in its own order. Arrays need it. Without it the dataset is already batched:
      each batch is global under tf.distribute strategies (as with Keras), a process's own under
      Horovod/smddp (each rank takes every n-th batch).
    - `steps_per_epoch`: default the data's length over the effective batch (the batch x
      gradient_accumulation_steps); needed when the length is unknown.
    - `loss`, `optimizer`: the compiled ones unless given (a Keras loss or name, a callable
      (y_true, y_pred), an optimizer or its name), compiled into the model with its other compile
      settings; an uncompiled model needs both, a model with a train_step of its own only an
      optimizer. Several outputs take a loss each (a list, or a dict by output name) and the compiled
      loss_weights. The loss is averaged over the examples of one optimizer step (the global batch x
      gradient_accumulation_steps; under Horovod/smddp, whose libraries average, the process's own).
      The learning rate is used as it is: scale it yourself with scaled_learning_rate().
      Metrics are the loss and the model's compiled metrics (MAE, AUC, ...; named <output>_<metric>
      for several outputs; a model's own train_step: what it returns); without any, a classification
      loss reports accuracy.
    - `gradient_accumulation_steps` (default SMTRAIN_GRADIENT_ACCUMULATION_STEPS, else 1): each
      optimizer step takes the gradients of k micro-batches, run one after another (under Keras 3's
      fit, the optimizer's own gradient_accumulation_steps); effective batch = per replica x
      replicas x k.
    - `callbacks`: any Keras callback (EarlyStopping, ReduceLROnPlateau, LearningRateScheduler,
      ModelCheckpoint, CSVLogger, TensorBoard, your own), driven as Keras's fit drives them, with
      the logs Keras passes: loss, each metric, and their val_ values. A callback with batch hooks
      makes the loop run one step per call, so that it sees every batch with the running values;
      `model.stop_training` stops the training. fit itself writes TensorBoard scalars (chief only) into
      <SM_OUTPUT_DIR>/tensorboard (SMTRAIN_TENSORBOARD_DIR; off for none), without the tensorboard
      package; the n-th call in fit-<n>/.
    - `steps_per_execution`: training steps per tf.function call (default the steps_per_execution
      hyperparameter, else 20); a call never runs past an epoch's end, a checkpoint or a progress line.
    - `initial_epoch`: the epoch to start from (epochs counts from 0 to `epochs`, as in Keras).
    - `checkpoint`: checkpoints (model, optimizer, progress) in checkpoint_dir() at every epoch
      end (and every SMTRAIN_CHECKPOINT_EVERY_STEPS steps); a restarted job (spot) resumes from the
      newest (from a checkpoint taken mid-epoch, that epoch's remaining steps). A second fit call in
      the same process keeps its own, in <checkpoint_dir>/fit-2. Off during `smtrain check`.
    - Output: `config ...`, one metric line per epoch from the chief (`epoch=... loss=...
      accuracy=... val_loss=... val_accuracy=...`, each metric by its name, the lines the job's
      metric definitions read),
      `progress ...` every `log_every_steps` steps, and `weights_sha256=<hex>` from every process
      at the end (equal digests: identical weights).

    A known failure (NaN loss, a lost peer, out of memory, a wrong contract) is written to
    <SM_OUTPUT_DIR>/failure (the job's FailureReason) and raised again; a misuse raises ValueError.
    """
    import tensorflow as tf

    from .training import fit as fitting

    dist = _distribution()
    if isinstance(train, tf.data.Dataset) and batch_size_per_replica is None and not _wrapped:
        train = _as_planned_in_a_check(train)
    caller = sys._getframe(1)
    line = caller.f_lineno
    location = (_place or fitting.fit_keras.script_place)(caller.f_code.co_filename, line) \
        or f"{caller.f_code.co_filename}:{line}"
    return fitting.fit(dist, _contract(), model, train, validation, epochs=epochs,
                       batch_size_per_replica=batch_size_per_replica, steps_per_epoch=steps_per_epoch, loss=loss,
                       optimizer=optimizer, callbacks=callbacks,
                       gradient_accumulation_steps=gradient_accumulation_steps, shuffle_buffer=shuffle_buffer,
                       seed=seed, checkpoint=checkpoint, log_every_steps=log_every_steps,
                       initial_epoch=initial_epoch, steps_per_execution=steps_per_execution, say=say,
                       location=location, place=_place)


def _as_planned_in_a_check(train: Any) -> Any:
    """During a check, a dataset the script batched: in the one-device run, made the planned run's global batches
    when the script multiplied its batch by num_replicas_in_sync (a constant batch is global: it stays)."""
    from .check import settings as check_settings

    if check_settings.read() is None:
        return train
    from .check import rebatch
    from .distribute import replica_count

    size = rebatch.first_batch_size(train)  # in both runs: their shuffles stay in step
    times = check_settings.stands_for()
    if times <= 1 or not replica_count.dataset_batch_scaled():
        return train
    say(f"check: the script's batches of {size} taken {times} at a time: one device standing for {times} replicas")
    return rebatch.as_planned(train, size, times)


def save(model: Any) -> List[str]:
    """Save the trained model for serving, from the chief only; return the paths written ([] elsewhere).

    Writes <model_dir()>/1, a SavedModel in TF Serving's layout (signature `serving_default`, as
    the model's Keras version exports it), and <model_dir()>/model.keras, each under a temporary
    name first. Call it on every process: reading the weights may need all of them; only the
    chief writes, so the job ends with one model.
    """
    import time

    from .export import artifacts
    from .training import metrics

    dist = _distribution()
    weights = metrics.weights_list(model)
    if not dist.is_chief:
        return []
    began = time.time()
    with _outside_a_default_strategy():
        written = artifacts.save_model(model, weights, _contract().model_dir)
    say(f"saved {' and '.join(written)} in {time.time() - began:.1f}s")
    return written


@contextlib.contextmanager
def _outside_a_default_strategy() -> Iterator[None]:
    """The export copies the model on the chief alone: under a strategy set as the default (the wrap
    sets one), making the copy's variables would wait for the other workers, which never come."""
    import tensorflow as tf

    outer = tf.distribute.get_strategy() if tf.distribute.has_strategy() else None
    if outer is None or not tf.distribute.in_cross_replica_context():
        yield
        return
    try:
        tf.distribute.experimental_set_strategy(None)
    except RuntimeError:  # inside the script's own `with strategy.scope()`: nothing to lift
        yield
        return
    try:
        yield
    finally:
        tf.distribute.experimental_set_strategy(outer)
