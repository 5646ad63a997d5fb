"""`smtrain check`'s side in the job: the first steps recorded, so that smtrain can compare two runs.

smtrain runs the job twice on one machine: once on one device standing for the planned replicas
(the reference), once in the planned layout. In both, the training loop hands its first steps to
this package, which runs them one at a time and writes what each saw and did; then the process ends.

    settings.py   SMTRAIN_CHECK_*: where to write, how many steps, what the one device stands for (no TensorFlow)
    layers.py     what trains differently per replica: BatchNormalization, random layers, the model's own
                  SeedGenerators
    weights.py    the weights written (start, end) and the planned run's end set against the reference's
    probe.py      smtrain's loop's steps (the bundled program, smtrain_tf.fit): each replica's examples
                  (fingerprints), the loss before and after, the rate
    keras_steps.py  a wrapped script's steps inside Keras's own fit: the model's own train_step wrapped on the
                  instance, each replica's examples, its logs, its loss terms, the weights after each step; every
                  fit call
    loss_terms.py the loss the step differentiates (each GradientTape.gradient target, kept while the step is
                  traced) taken apart into its terms, each named by the script's line that made it
    seeding.py    smtrain_tf.fit and the bundled program: each worker's unseeded randomness fixed (the job's seed +
                  its index); an op's own seed kept (the wrap seeds by distribute/seeding.py's rule instead)
    rebatch.py    a dataset the script batches: in the one-device run, its batches made the planned run's

Elsewhere in smtrain_tf, a check run (SMTRAIN_CHECK_DIR set) changes only this: the one-device run's batch
and rate rules count the replicas it stands for (wrap/context.py, training/session.py and fit.py, a script's
own batches in wrap/batch_size.py and _api.fit), the wrap cuts every fit, evaluate and predict to the check's steps
and records the model's own steps in Keras's fit (wrap/keras_fit.py, wrap/check_rest.py), the script's own strategy
is taken as the wrap's (wrap/patches.py), and tf.distribute splits data by element from one order
(data/pipeline.py, training/user_data.py).

smtrain (smtrain.local.check_*) reads what these write; settings.py is the one place both take the names from.
"""
