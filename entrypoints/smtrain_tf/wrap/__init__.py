"""The wrap: run a user's unchanged Keras script inside the job's tf.distribute strategy.

SageMaker runs `smtrain_wrap.py` (next to this package in the bundle), which calls `launcher.main`.
The launcher reads the contract in own-script mode, runs the GPU check, builds the strategy as the
bundled entrypoint does, sets it as TensorFlow's default strategy, patches Keras (and tf.saved_model,
tf.config), then runs the script as `__main__` with the process's own arguments.

Map:
    settings.py        SMTRAIN_WRAP_* and SMTRAIN_LR_SCALING: the script, the batch rule, tuning, the rate rule
                       (no TensorFlow)
    context.py         what the patches share: the strategy, the settings, the one-time log lines
    strategy.py        builds the strategy with smtrain_tf's own code, after the GPU check; refuses Horovod,
                       smddp, parameter server; a guard process ends a worker whose MultiWorkerMirrored
                       peers never join
    script.py          runs the user's file as __main__ (argv, sys.path) and trims tracebacks to it
    notebook_lines.py  a notebook's script (train_ipynb.py from train.ipynb): its lines named by cell and line,
                       read from its own marker comments, in tracebacks, the failure reason and file:line messages
    launcher.py        the program: set-up, the script, exit status and the failure file; smtrain's lines
                       start lines of their own after a progress bar (contract/log.py tracks stdout)
    patches.py         installs every patch on each Keras found (Keras 2 and 3)
    fit_inputs.py      reading a fit call: bound arguments, arrays or batched data, the caller's file:line
    batch_size.py      the batch a script writes is one replica's: the global batch Keras needs, logged
    keras_fit.py       the patched fit: Keras's own under every strategy (with metric lines:
                       training/epoch_lines.py; Keras 3 repaired: keras_support/keras_repairs.py), during `smtrain
                       check` too (the model's own steps recorded: check/keras_steps.py)
    fit_tuning.py      Keras's fit runs several steps per call (steps_per_execution) when nothing the script
                       wrote needs every step; SMTRAIN_WRAP_TUNING=off leaves it as compiled
    check_rest.py      during `smtrain check` the script runs to its end, each fit, evaluate and predict cut
                       to the check's steps
    learning_rate.py   compile: rescales the optimizer's rate when SMTRAIN_LR_SCALING asks
    saving.py          save/export on a non-chief go to a temporary directory; weights_sha256 on every save
    devices_guard.py   a script's own tf.config device set-up, once the wrap has set up the devices
    repeated_warnings.py  a warning Keras logs at every save (HDF5 is legacy) is shown once
    own_strategy.py    a script's own MirroredStrategy() / MultiWorkerMirroredStrategy() is the wrap's strategy
                       (a batch multiplied by its num_replicas_in_sync is global: distribute/replica_count.py)
    tf_names.py        replacing a TensorFlow function under every name it is loaded as
"""
