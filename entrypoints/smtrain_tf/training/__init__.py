"""The training loop: the bundled entrypoint's run (session.py) and smtrain_tf.fit (fit.py) share it.

    session.py        one run of the bundled entrypoint put together
    fit.py            smtrain_tf.fit: the same pieces for a user's model and data
    user_data.py      the user's arrays or datasets made into the loop's streams
    callbacks.py      Keras callbacks driven at train and epoch boundaries
    summaries.py      TensorBoard scalars from the chief, with tf.summary alone
    steps.py          the per-replica step (gradient accumulation included) and its tf.functions
    runners.py        chunks of steps in this process, or on parameter-server workers
    loop.py           the epoch loop: chunks, checkpoints, evaluation, metric lines, epoch hooks
    checkpoints.py    checkpoints and resume
    metrics.py        metric lines and the weights digest
    watchdog.py       the hang guard

`metrics` and `watchdog` import no TensorFlow; the others do. The Keras pieces the loop shares with the
models, the export, the check and the wrap (measures, optimizer, Keras 2/3) are in ../keras_support/.
"""
