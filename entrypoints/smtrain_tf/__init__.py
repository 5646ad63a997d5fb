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
`.contract.hyperparameters` and `.models.names` (plain Python) are imported by smtrain itself at
plan time.

It must not import `smtrain`: only this directory (with smtrain_entry.py and smtrain_wrap.py) is
shipped in the job's source bundle.
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
