"""Training: steps, runners, the epoch loop, optimization, Keras 2/3 bridge, checkpoints, metrics, watchdog.

`metrics` and `watchdog` import no TensorFlow; the others do.
"""
