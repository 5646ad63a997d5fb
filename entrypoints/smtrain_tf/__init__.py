"""smtrain's TensorFlow training program, run inside SageMaker's TensorFlow training container,
and the functions a training script of your own may call to follow the same container contract.

    import smtrain_tf

    strategy = smtrain_tf.strategy()
    with strategy.scope():
        model = build_model()
        model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    smtrain_tf.fit(model, (x, y), epochs=10, batch_size_per_replica=64)
    smtrain_tf.save(model)

The names in `__all__` are the whole public face; everything else (the subpackages, names with a
leading underscore) may change without notice. Importing this package imports neither TensorFlow nor
anything else heavy (during `smtrain check` only, NumPy, to seed it): each function is loaded on
first use, and the ones that need TensorFlow import it then. `smtrain_tf.scaling`,
`.contract.hyperparameters`, `.models.names` and `.check.settings` (plain Python) are imported by
smtrain itself.

It must not import `smtrain`: only this directory (with smtrain_entry.py and smtrain_wrap.py) is
shipped in the job's source bundle.

Map (each subpackage's __init__ names its modules; entrypoints/README.md has a line for each):

    _main.py        the bundled entrypoint's program (smtrain_entry.py calls its main()): contract, strategy,
                    training, export; on failure one line and an exit status
    training/       the training loops (Keras's own fit; smtrain's for parameter server and Horovod/smddp):
                    session.py puts the entrypoint's run together; fit.py is smtrain_tf.fit
    wrap/           the wrap (smtrain_wrap.py calls wrap/launcher.py): the user's own script, or a notebook's,
                    run unchanged under the job's strategy, with Keras patched
    contract/       the container contract: SM_* variables, hyperparameters, TF_CONFIG, the failure file, errors
    check/          `smtrain check`'s side in the job: the loop's first steps recorded, randomness fixed
    _api.py         the public functions of `__all__`: thin wrappers over the modules below
    scaling.py      the batch and learning-rate maths (plain Python)
    distribute/     which strategy runs, devices, building the strategy, Horovod/smddp, parameter-server tasks
    keras_support/  what the layers above ask of Keras: one Keras handle (2 or 3), a model's measures, the optimizer
    data/           NPZ/TFRecord/CSV channels, the tf.data pipelines, a data hook's datasets
    models/         the model names, the built-in models and model hooks
    export/         the SavedModel, model.keras and the training summary

Layers, top to bottom. A module imports its own subpackage and the layers below its own, never a layer
above nor a sibling on its row (pyproject.toml's import contracts). The check sits below the loop, which hands
it its first steps; the wrap sits on _api, whose strategy and fit a wrapped script shares.

    this __init__ (the public face)
    wrap
    _main | _api
    training
    data | models | export
    check
    keras_support
    distribute
    contract
    scaling
"""

__version__ = "0.1.0"

# The public functions, defined in ._api and loaded on first access (PEP 562).
__all__ = [
    "strategy",
    "global_batch_size",
    "scaled_learning_rate",
    "is_chief",
    "model_dir",
    "checkpoint_dir",
    "channel",
    "hyperparameters",
    "fit",
    "save",
]


def _seed_a_check_run() -> None:
    # `smtrain check` (SMTRAIN_CHECK_DIR set, only ever by smtrain for its runs): a script's unseeded Python and
    # NumPy randomness fixed per worker as it imports this package, before its own seeding (check/seeding.py).
    import os

    if os.environ.get("SMTRAIN_CHECK_DIR"):
        from .check.seeding import seed_python_and_numpy, worker_seed

        seed_python_and_numpy(worker_seed())


_seed_a_check_run()


def __getattr__(name: str):
    if name in __all__:
        from . import _api

        value = getattr(_api, name)
        globals()[name] = value  # later look-ups skip this hook
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(__all__))
