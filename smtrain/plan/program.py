"""The program a job runs, and what reaches it: hyperparameters, smtrain's SMTRAIN_* variables, and
warnings for the training fields that do not.

Three kinds of program:

    bundled   smtrain_entry.py (no code.entry_point): the training fields that are set become its
              hyperparameters, then the spec's own `hyperparameters:`.
    own       code.entry_point: exactly the spec's `hyperparameters:` (plus what SageMaker's
              TensorFlow contract adds), never the bundled entrypoint's settings: a script's argparse declares its own.
              A notebook (train.ipynb) runs as the script made from it (train_ipynb.py, smtrain.spec.notebook).
    wrapped   code.entry_point with code.wrap: SageMaker runs smtrain_wrap.py, which runs the script
              unchanged inside the strategy; the script receives what an own script receives.

smtrain's settings for the wrap and for smtrain_tf travel in the container environment (the
request's Environment), never as arguments: smtrain_tf reads each row of its hyperparameter table
from SMTRAIN_<NAME> too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from smtrain.plan import tracking
from smtrain.plan.job_places import CHECKPOINT_LOCAL_PATH
from smtrain.spec.model import LoadedSpec, Spec
from smtrain.spec.notebook import is_notebook, program_name
from smtrain.spec.problems import Path_, Problem, dotted
from smtrain.version import installed_version

BUNDLED_ENTRY_POINT = "smtrain_entry.py"
WRAP_PROGRAM = "smtrain_wrap.py"

BUNDLED, OWN, WRAPPED = "bundled", "own", "wrapped"

# Training fields an own script still gets, through the environment: kind -> fields.
# training.seed: the wrap seeds every worker's generators with it (smtrain_tf/distribute/seeding.py), smtrain_tf.fit
# shuffles with it, and `smtrain check` seeds both its runs with it: the paid run must get it too.
_APPLIES_TO = {OWN: ("gradient_accumulation_steps", "seed"),
               WRAPPED: ("gradient_accumulation_steps", "lr_scaling", "seed")}


def kind(spec: Spec) -> str:
    if spec.code.entry_point is None:
        return BUNDLED
    return WRAPPED if spec.code.wrap else OWN


def script_program(spec: Spec) -> str:
    """The user's script as the bundle holds it: code.entry_point, or for a notebook the script made from it."""
    script = spec.code.entry_point or ""
    return program_name(script) if is_notebook(script) else script


def entry_point(spec: Spec) -> str:
    """The program SageMaker starts (sagemaker_program)."""
    return {BUNDLED: BUNDLED_ENTRY_POINT, WRAPPED: WRAP_PROGRAM}.get(kind(spec), script_program(spec))


def _as_written(value: Any) -> Any:
    # A whole number goes as one (`warmup_epochs: 5` is sent as "5", not "5.0", as the user wrote it).
    return int(value) if isinstance(value, float) and value.is_integer() else value


def hyperparameters(spec: Spec) -> dict[str, Any]:
    """What the program receives besides the TensorFlow contract's own: see the module's docstring."""
    if kind(spec) != BUNDLED:
        return dict(spec.hyperparameters)
    values = {k: _as_written(v) for k, v in spec.training.model_dump().items() if v is not None}
    values.update(spec.hyperparameters)
    return values


@dataclass(frozen=True)
class Variable:
    """One variable smtrain adds to the container environment, and the spec field it comes from."""

    name: str
    value: str
    field: Path_


def smtrain_variables(spec: Spec, image_uri: str | None = None, version: str | None = None,
                      base_dir: Path | None = None) -> list[Variable]:
    """The variables this job's container gets from smtrain (the spec's environment: aside): SMTRAIN_* ones,
    TF_USE_LEGACY_KERAS, and for tracking.mlflow MLflow's own and SMTRAIN_MLFLOW (smtrain.plan.tracking)."""
    code, training, what = spec.code, spec.training, kind(spec)
    found = []
    if what == WRAPPED:
        found += [Variable("SMTRAIN_WRAP_SCRIPT", script_program(spec), ("code", "entry_point")),
                  Variable("SMTRAIN_WRAP_BATCH", code.wrap_batch, ("code", "wrap_batch")),
                  Variable("SMTRAIN_WRAP_TUNING", "on" if code.wrap_tuning else "off", ("code", "wrap_tuning"))]
        # The wrap leaves a script's learning rate alone unless the spec asks for a rule.
        if "lr_scaling" in training.model_fields_set:
            found.append(Variable("SMTRAIN_LR_SCALING", training.lr_scaling, ("training", "lr_scaling")))
    if spec.tensorflow.keras == 2:
        # Read by TensorFlow 2.16+ when it is imported: tf.keras is then tf_keras (Keras 2); older
        # TensorFlow, whose tf.keras is Keras 2 already, ignores it (smtrain.plan.keras_choice).
        found.append(Variable("TF_USE_LEGACY_KERAS", "1", ("tensorflow", "keras")))
    if spec.compute.allow_cpu:
        found.append(Variable("SMTRAIN_ALLOW_CPU", "true", ("compute", "allow_cpu")))
    if spec.checkpoint_local_path not in (None, CHECKPOINT_LOCAL_PATH):
        # smtrain's own code (the entrypoint, the wrap, smtrain_tf.checkpoint_dir()) writes where SageMaker syncs.
        found.append(Variable("SMTRAIN_CHECKPOINT_DIR", str(spec.checkpoint_local_path), ("checkpoint_local_path",)))
    target = spec.tracking.mlflow
    if target is not None:
        # MLflow's own variables: the job's code (and MLflow in it) logs there; an ARN also renders
        # MlflowConfig, and MLflow takes it as a tracking URI through the sagemaker-mlflow plugin.
        found.append(Variable("MLFLOW_TRACKING_URI", target, ("tracking", "mlflow")))
        if spec.tracking.experiment is not None:
            found.append(Variable("MLFLOW_EXPERIMENT_NAME", spec.tracking.experiment, ("tracking", "experiment")))
        settings = tracking.settings(spec, image_uri, version or installed_version(), base_dir)
        if settings is not None:
            found.append(Variable(tracking.SETTINGS, settings, ("tracking", "mlflow")))
    if what != BUNDLED and training.seed is not None:
        # The bundled entrypoint gets it as a hyperparameter instead; a script's own seed calls still win.
        found.append(Variable("SMTRAIN_SEED", str(training.seed), ("training", "seed")))
    if what != BUNDLED and training.gradient_accumulation_steps is not None:
        # The bundled entrypoint gets it as a hyperparameter instead.
        found.append(Variable("SMTRAIN_GRADIENT_ACCUMULATION_STEPS", str(training.gradient_accumulation_steps),
                              ("training", "gradient_accumulation_steps")))
    return found


def environment(loaded: LoadedSpec, image_uri: str | None = None) -> tuple[dict[str, str], list[Problem]]:
    """The container environment (the spec's, then smtrain's), and a problem for each spec variable
    that smtrain sets itself for this job: two sources for one value would leave the user guessing."""
    spec = loaded.spec
    added = smtrain_variables(spec, image_uri, base_dir=loaded.base_dir)
    problems = [loaded.problem(("environment", v.name), f"smtrain sets {v.name} for this job (from "
                                                        f"{dotted(v.field)}): remove it from environment:")
                for v in added if v.name in spec.environment]
    return {**spec.environment, **{v.name: v.value for v in added}}, problems


def field_of_variable(spec: Spec, name: str) -> Path_:
    """The spec field behind a variable of the request's Environment."""
    if name in spec.environment:
        return ("environment", name)
    return next((v.field for v in smtrain_variables(spec) if v.name == name), ("environment", name))


def unused_training_fields(loaded: LoadedSpec) -> list[Problem]:
    """Warnings for the training fields a spec sets that its own script never receives."""
    spec = loaded.spec
    what = kind(spec)
    if what == BUNDLED:
        return []
    applies = _APPLIES_TO[what]
    found = []
    for name in (n for n in type(spec.training).model_fields if n in spec.training.model_fields_set):
        if name in applies:
            continue
        if name == "lr_scaling":
            message = ("training.lr_scaling applies to the bundled entrypoint and to wrapped scripts (code.wrap) only; "
                       "your script scales its own rate (smtrain_tf.scaled_learning_rate(base, rule))")
        else:
            message = (f"training.{name} applies to the bundled entrypoint only; pass your script's own settings "
                       "under hyperparameters:")
        found.append(loaded.problem(("training", name), message))
    return found


_STRATEGY_CLASSES = {"mirrored": "MirroredStrategy", "multi_worker_mirrored": "MultiWorkerMirroredStrategy"}


def strategy_told(what: str, strategy: str, nodes: int, gpus: int, processes_per_host: int) -> str | None:
    """What an own script's strategy is told by the container (a wrapped script: what the wrap builds)."""
    if what == BUNDLED:
        return None
    if what == WRAPPED:
        if strategy in _STRATEGY_CLASSES:
            source = "TF_CONFIG (below)" if strategy == "multi_worker_mirrored" else f"the host's {gpus} GPUs"
            return f"the wrap builds {_STRATEGY_CLASSES[strategy]} from {source} and makes it the default strategy"
        return "one device: the wrap runs your script under the default strategy"
    if strategy == "multi_worker_mirrored":
        return (f"TF_CONFIG names the {nodes} workers (below); tf.distribute.MultiWorkerMirroredStrategy() "
                "reads it (smtrain_tf.strategy() builds it)")
    if strategy == "parameter_server":
        return ("TF_CONFIG names the master, workers and parameter servers (below); your script needs a "
                "ParameterServerStrategy coordinator (smtrain_tf.strategy() builds it)")
    if strategy in ("horovod", "smddp"):
        return (f"mpirun starts {processes_per_host} process(es) per host (below), one GPU each; "
                f"{'hvd' if strategy == 'horovod' else 'smdistributed.dataparallel'}.init() in your script")
    if strategy == "mirrored":
        return (f"one host with SM_NUM_GPUS={gpus}: tf.distribute.MirroredStrategy() uses them all "
                "(smtrain_tf.strategy() builds it)")
    return f"one device (SM_NUM_GPUS={gpus}): no strategy needed"
