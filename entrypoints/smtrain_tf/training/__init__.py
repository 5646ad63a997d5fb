"""The training loops: Keras's own fit (keras_loop.py) for the bundled entrypoint's run (session.py) and
smtrain_tf.fit (fit_keras.py) under default, Mirrored and MultiWorkerMirrored; smtrain's loop (loop.py) where
Keras has none (parameter server, Horovod/smddp; Keras 2 with gradient accumulation), frozen there.

    fit.py            smtrain_tf.fit: its arguments checked, then Keras's loop or smtrain's
    keras_loop.py     Keras's own model.fit as the job runs it: repairs, checkpoints restored, steps per call, the
                      job's callbacks, a check's recording
    fit_keras.py      smtrain_tf.fit through keras_loop: the user's data as streams, compile, its lines
    job_callbacks.py  the one callback keras_loop adds on every process: checkpoints, NaN, progress lines, a
                      resumed epoch's remainder
    steps_per_call.py several steps per tf.function call in Keras's fit, for one call (the wrap's tuning too)
    epoch_lines.py    the Keras callback printing smtrain's metric line each epoch (keras_loop's and the wrap's)
    session.py        one run of the bundled entrypoint put together (keras_loop, or smtrain's loop)
    user_data.py      the user's arrays or datasets made into the loop's streams
    callbacks.py      Keras callbacks driven at train and epoch boundaries of smtrain's loop
    summaries.py      TensorBoard scalars from the chief, with tf.summary alone
    steps.py          smtrain's loop: the per-replica step (gradient accumulation included) and its tf.functions
    runners.py        chunks of steps in this process, or on parameter-server workers
    loop.py           the epoch loop: chunks, checkpoints, evaluation, metric lines, epoch hooks
    checkpoints.py    checkpoints and resume
    metrics.py        metric lines and the weights digest
    watchdog.py       the hang guard

`metrics`, `watchdog` and `steps_per_call` import no TensorFlow; the others do. The Keras pieces the loop shares with the
models, the export, the check and the wrap (measures, optimizer, Keras 2/3) are in ../keras_support/.
"""
