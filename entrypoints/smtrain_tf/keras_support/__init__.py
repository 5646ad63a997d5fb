"""What the loops, the models, the export, the check and the wrap all ask of Keras, in one place below them.

    keras_compat.py   one Keras handle for TF 2.11-2.21 (Keras 2 or 3) and the differences this program meets
    measures.py       a model's loss and metrics (compiled, given, or the default accuracy) as sums every
                      strategy adds up exactly
    optimization.py   the warm-up schedule, the optimizer and its current rate, mixed precision
    keras_repairs.py  Keras 3's trainer repaired where it fails under MultiWorkerMirrored and several replicas
                      (keras-team/keras#20585, #19246, #20582): its own steps, callbacks and logs otherwise; for
                      the wrap's fit and smtrain_tf.fit's alike
    several_steps.py  several of Keras 3's steps per call: without asking endless data for an optional before
                      each, and in a loop that works under several replicas (#19246)
    iterator_release.py  Keras 3's per-epoch data iterators deleted by a thread of their own, not between
                      two epochs of training
    endless_arrays.py Keras 3's array input repeated where its epoch count is all of it, one iterator for every
                      epoch: no per-step check that data is left, no new iterator per epoch

All import TensorFlow (keras_compat sets KERAS_BACKEND first).
"""
