"""What the loop, the models, the export, the check and the wrap all ask of Keras, in one place below them.

    keras_compat.py   one Keras handle for TF 2.11-2.21 (Keras 2 or 3) and the differences this program meets
    measures.py       a model's loss and metrics (compiled, given, or the default accuracy) as sums every
                      strategy adds up exactly
    optimization.py   the warm-up schedule, the optimizer and its current rate, mixed precision

All three import TensorFlow (keras_compat sets KERAS_BACKEND first).
"""
