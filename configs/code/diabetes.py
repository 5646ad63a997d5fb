"""A regression through the bundled entrypoint: a data hook and a compiled model hook (configs/regression-diabetes.yaml).

`python -m smtrain.local.demo_data DIR --dataset diabetes` writes the CSV channels this reads: ten
measurements per patient and, last, the disease's progression a year later (the target).
"""

import os

import tensorflow as tf

FEATURES = 10


def load_data(channels, hyperparameters):
    """Unbatched (features, target) examples; the entrypoint shards, shuffles and batches them.

    Reading the files with tf.data keeps the dataset file-based: under MultiWorkerMirroredStrategy
    each worker then reads its own files (the training channel has two).
    """
    def read(channel):
        files = sorted(tf.io.gfile.glob(os.path.join(channel, "*.csv")))
        lines = tf.data.Dataset.from_tensor_slices(files).interleave(
            lambda path: tf.data.TextLineDataset(path).skip(1), cycle_length=1)  # skip each file's header

        def parse(line):
            values = tf.io.decode_csv(line, [0.0] * (FEATURES + 1))
            return tf.stack(values[:FEATURES]), values[FEATURES]

        return lines.map(parse)

    train = read(channels["train"])
    validation = read(channels["validation"]) if "validation" in channels else None
    return train, validation


def build_model(hyperparameters):
    """A compiled model: its loss (MSE) and metrics (MAE, RMSE) are the ones the entrypoint trains and reports."""
    inputs = tf.keras.Input(shape=(FEATURES,), name="measurements")
    x = tf.keras.layers.Dense(int(hyperparameters.get("width", 32)), activation="relu")(inputs)
    # The targets are around 150: start the output there rather than at zero.
    outputs = tf.keras.layers.Dense(1, name="progression",
                                    bias_initializer=tf.keras.initializers.Constant(150.0))(x)
    model = tf.keras.Model(inputs, outputs)
    model.compile(optimizer=tf.keras.optimizers.Adam(float(hyperparameters.get("lr", 0.05))),
                  loss="mse", metrics=["mae", tf.keras.metrics.RootMeanSquaredError(name="rmse")])
    return model
