"""Forms public Keras scripts take, in one script of our own: pairs drawn with Python's `random` (unseeded, as
keras.io's siamese example draws them), a model of two inputs fed a list of two arrays, int32 labels, and four
fit calls: a teacher, then a distiller in keras.io's form (its own compile and train_step, Keras's loss objects),
then the student fine-tuned alone; last, a subclassed model of two outputs with its own train_step and metrics,
compiled with no loss (its loss objects are its own).
"""
import os
import random

import keras
import numpy as np
import tensorflow as tf

data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "digits.npz"))
x_all = data["x"].reshape(len(data["x"]), -1).astype("float32")
labels = data["y"].astype("int32")

# Pairs of examples drawn with Python's random, unseeded: same class (1) or not (0).
pairs = [(random.randrange(len(x_all)), random.randrange(len(x_all))) for _ in range(640)]
left = x_all[[a for a, _ in pairs]]
right = x_all[[b for _, b in pairs]]
same = np.array([int(labels[a] == labels[b]) for a, b in pairs], dtype="int32")


def pair_model() -> keras.Model:
    a, b = keras.Input(shape=(64,)), keras.Input(shape=(64,))
    joined = keras.layers.Concatenate()([a, b])
    hidden = keras.layers.Dense(32, activation="relu")(joined)
    return keras.Model([a, b], keras.layers.Dense(2)(hidden))


class Distiller(keras.Model):
    def __init__(self, student, teacher):
        super().__init__()
        self.student, self.teacher = student, teacher

    def compile(self, optimizer, metrics, student_loss_fn, distillation_loss_fn, alpha=0.1, temperature=3):
        super().compile(optimizer=optimizer, metrics=metrics)
        self.student_loss_fn, self.distillation_loss_fn = student_loss_fn, distillation_loss_fn
        self.alpha, self.temperature = alpha, temperature

    def call(self, x):
        return self.student(x)

    def train_step(self, data):
        x, y = data
        teacher_predictions = self.teacher(x, training=False)
        with tf.GradientTape() as tape:
            student_predictions = self.student(x, training=True)
            student_loss = self.student_loss_fn(y, student_predictions)
            distillation_loss = self.distillation_loss_fn(
                tf.nn.softmax(teacher_predictions / self.temperature, axis=1),
                tf.nn.softmax(student_predictions / self.temperature, axis=1))
            loss = self.alpha * student_loss + (1 - self.alpha) * distillation_loss
        gradients = tape.gradient(loss, self.student.trainable_variables)
        self.optimizer.apply(gradients, self.student.trainable_variables)
        for metric in self.metrics:
            if metric.name != "loss":
                metric.update_state(y, student_predictions)
        return {"student_loss": student_loss, "distillation_loss": distillation_loss,
                **{m.name: m.result() for m in self.metrics if m.name != "loss"}}


teacher = pair_model()
teacher.compile(optimizer=keras.optimizers.Adam(0.01),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
teacher.fit([left, right], same, epochs=1, batch_size=32)

student = pair_model()
distiller = Distiller(student=student, teacher=teacher)
distiller.compile(optimizer=keras.optimizers.SGD(0.1), metrics=[keras.metrics.SparseCategoricalAccuracy()],
                  student_loss_fn=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  distillation_loss_fn=keras.losses.KLDivergence(), alpha=0.1, temperature=10)
distiller.fit([left, right], same, epochs=1, batch_size=32)

student.compile(optimizer=keras.optimizers.SGD(0.05),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
student.fit([left, right], same, epochs=1, batch_size=32)
print("student accuracy", student.evaluate([left, right], same, verbose=0)[1])


class TwoHeads(keras.Model):
    """The digit and its parity from one body; the loss is the step's own, no compiled loss."""

    def __init__(self):
        super().__init__()
        self.body = keras.layers.Dense(32, activation="relu")
        self.digit = keras.layers.Dense(10)
        self.parity = keras.layers.Dense(1)
        self.digit_loss = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
        self.parity_loss = keras.losses.BinaryCrossentropy(from_logits=True)
        self.loss_tracker = keras.metrics.Mean(name="loss")
        self.accuracy = keras.metrics.SparseCategoricalAccuracy(name="digit_accuracy")

    def call(self, x):
        hidden = self.body(x)
        return self.digit(hidden), self.parity(hidden)

    @property
    def metrics(self):
        return [self.loss_tracker, self.accuracy]

    def train_step(self, data):
        x, (digit, parity) = data
        with tf.GradientTape() as tape:
            digit_logits, parity_logits = self(x, training=True)
            loss = self.digit_loss(digit, digit_logits) + 0.5 * self.parity_loss(parity, parity_logits)
        gradients = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(gradients, self.trainable_variables))  # noqa: B905
        self.loss_tracker.update_state(loss)
        self.accuracy.update_state(digit, digit_logits)
        return {m.name: m.result() for m in self.metrics}


two_heads = TwoHeads()
two_heads.compile(optimizer=keras.optimizers.Adam(0.01))
two_heads.fit(x_all, (labels, (labels % 2).astype("float32")[:, None]), epochs=1, batch_size=32)
