"""`smtrain check`'s side in the job: the first steps recorded, so that smtrain can compare two runs.

smtrain runs the job twice on one machine: once on one device standing for the planned replicas
(the reference), once in the planned layout. In both, the job's steps are recorded here: inside Keras's own
fit (a wrapped script's, the bundled program's, smtrain_tf.fit's), the model's own train_step wrapped and
each fit call cut to the check's steps, the script running to its end. smtrain's own loop (parameter server,
Horovod/smddp, Keras 2 with gradient accumulation) is refused (training/loop.py, by refusal.py).

    settings.py   SMTRAIN_CHECK_*: where to write, how many steps, what the one device stands for (no TensorFlow)
    layers.py     what trains differently per replica: BatchNormalization, random layers, the model's own
                  SeedGenerators
    weights.py    the weights written (start, end) and the planned run's end set against the reference's
    refusal.py    why a run cannot be checked, written for smtrain, and the process ended
    keras_steps.py  the steps inside Keras's own fit (a wrapped script's, smtrain_tf.fit's): the model's own
                  train_step wrapped on the instance, each replica's examples, its logs, its loss terms, the
                  weights after each step; every fit call
    check_build.py  the one-device run builds the model before its first step, as Keras builds it under the
                  planned run's strategy, so both start from the same weights
    places.py     a line of the job's code as the check names it (`train.py:31`)
    loss_terms.py the loss the step differentiates (each GradientTape.gradient target, kept while the step is
                  traced) taken apart into its terms, each named by the script's line that made it
    seeding.py    smtrain_tf.fit and the bundled program: each worker's unseeded randomness fixed (the job's seed +
                  its index); an op's own seed kept (the wrap seeds by distribute/seeding.py's rule instead)
    rebatch.py    a dataset the script batches: in the one-device run, its batches made the planned run's

Elsewhere in smtrain_tf, a check run (SMTRAIN_CHECK_DIR set) changes only this: the one-device run's batch
and rate rules count the replicas it stands for (wrap/context.py, training/session.py and fit.py, a script's
own batches in wrap/batch_size.py and _api.fit), the wrap cuts every fit, evaluate and predict to the check's steps
and records the model's own steps in Keras's fit (wrap/keras_fit.py, wrap/check_rest.py; smtrain_tf.fit's in
training/keras_loop.py, checkpoints off), the script's own strategy
is taken as the wrap's (wrap/patches.py), and tf.distribute splits data by element from one order
(data/pipeline.py, training/user_data.py).

smtrain (smtrain.local.check_*) reads what these write; settings.py is the one place both take the names from.
"""
