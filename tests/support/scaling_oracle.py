"""A plain TensorFlow oracle for the check's scaling verdicts: no Keras fit, no smtrain. One device against
MirroredStrategy on N CPU devices, the same start weights and the same global batches, a step in the form of
tests/api/check_code/custom_step.py (an MSE scaled for the replicas as Keras's compute_loss is, plus a penalty
added by hand, or divided by the replicas), gradients summed over the replicas as tf.distribute sums them, SGD.
Run as a script (TensorFlow's devices are set before it starts): prints each penalty's weights difference after
the steps, relative to the weights' norm, as JSON."""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main(replicas: int, steps: int = 8, batch: int = 32) -> dict[str, float]:
    import numpy as np
    import tensorflow as tf

    cpu = tf.config.list_physical_devices("CPU")[0]
    tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * replicas)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(steps * batch, 64)).astype("float32")
    y = np.eye(10, dtype="float32")[rng.integers(0, 10, steps * batch)]
    start = [rng.normal(scale=0.2, size=(64, 32)), np.zeros(32), rng.normal(scale=0.2, size=(32, 10)), np.zeros(10)]

    def train(strategy: tf.distribute.Strategy, penalty: str) -> list[np.ndarray]:
        with strategy.scope():
            weights = [tf.Variable(w.astype("float32")) for w in start]

        def step(xb: tf.Tensor, yb: tf.Tensor) -> None:
            n = tf.distribute.get_strategy().num_replicas_in_sync
            with tf.GradientTape() as tape:
                hidden = tf.nn.relu(xb @ weights[0] + weights[1])
                prediction = hidden @ weights[2] + weights[3]
                loss = tf.reduce_mean(tf.square(yb - prediction)) / n  # compute_loss: scaled for the replicas
                term = 0.5 * tf.reduce_mean(tf.square(prediction))
                loss += term if penalty == "unscaled" else term / n
            grads = tape.gradient(loss, weights)
            grads = tf.distribute.get_replica_context().all_reduce(tf.distribute.ReduceOp.SUM, grads)
            for w, g in zip(weights, grads):  # noqa: B905 - one gradient per weight
                w.assign_sub(0.05 * g)

        run = tf.function(lambda xb, yb: strategy.run(step, args=(xb, yb)))
        data = tf.data.Dataset.from_tensor_slices((x, y)).batch(batch)  # global batches, split by the strategy
        for xb, yb in strategy.experimental_distribute_dataset(data):
            run(xb, yb)
        return [w.numpy() for w in weights]

    one = tf.distribute.OneDeviceStrategy("/cpu:0")
    mirrored = tf.distribute.MirroredStrategy([f"/cpu:{i}" for i in range(replicas)])
    found = {}
    for penalty in ("unscaled", "scaled"):
        theirs, mine = train(one, penalty), train(mirrored, penalty)
        difference = np.sqrt(sum(float(np.sum((a - b) ** 2)) for a, b in zip(mine, theirs)))  # noqa: B905
        found[penalty] = difference / np.sqrt(sum(float(np.sum(b ** 2)) for b in theirs))
    return found


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]))))
