"""Training: steps, runners, the epoch loop, checkpoints, metrics, and smtrain_tf.fit.

    session.py        one run of the bundled entrypoint put together
    fit.py            smtrain_tf.fit: the same pieces for a user's model and data
    user_data.py      the user's arrays or datasets made into the loop's streams
    callbacks.py      Keras callbacks driven at train and epoch boundaries
    measures.py       a model's loss and metrics (compiled or default) as sums every strategy adds up
    summaries.py      TensorBoard scalars from the chief, with tf.summary alone
    steps.py          the per-replica step (gradient accumulation included) and its tf.functions
    runners.py        chunks of steps in this process, or on parameter-server workers
    loop.py           the epoch loop: chunks, checkpoints, evaluation, metric lines, epoch hooks
    checkpoints.py    checkpoints and resume
    optimization.py   warm-up schedule, optimizer, mixed precision
    keras_compat.py   Keras 2 and 3 differences
    metrics.py        metric lines and the weights digest
    watchdog.py       the hang guard

`metrics` and `watchdog` import no TensorFlow; the others do.
"""
