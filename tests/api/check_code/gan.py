"""A GAN in the form of keras.io's "Customizing what happens in fit()" GAN (Keras 3): a keras.Model with no
call() of its own, a train_step over its discriminator and generator, two optimizers and a loss function given
to its own compile, its own metrics, and fit(x) with no labels."""
import os

import keras
import numpy as np
import tensorflow as tf
from keras import layers, ops

LATENT = 8


class GAN(keras.Model):
    def __init__(self, discriminator, generator, latent_dim):
        super().__init__()
        self.discriminator = discriminator
        self.generator = generator
        self.latent_dim = latent_dim
        self.seed_generator = keras.random.SeedGenerator(1337)

    def compile(self, d_optimizer, g_optimizer, loss_fn):
        super().compile()
        self.d_optimizer = d_optimizer
        self.g_optimizer = g_optimizer
        self.loss_fn = loss_fn
        self.d_loss_tracker = keras.metrics.Mean(name="d_loss")
        self.g_loss_tracker = keras.metrics.Mean(name="g_loss")

    @property
    def metrics(self):
        return [self.d_loss_tracker, self.g_loss_tracker]

    def train_step(self, real_images):
        batch_size = ops.shape(real_images)[0]
        random_latent_vectors = keras.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)
        generated_images = self.generator(random_latent_vectors)
        combined_images = ops.concatenate([generated_images, real_images], axis=0)
        labels = ops.concatenate([ops.ones((batch_size, 1)), ops.zeros((batch_size, 1))], axis=0)
        with tf.GradientTape() as tape:
            predictions = self.discriminator(combined_images)
            d_loss = self.loss_fn(labels, predictions)
        grads = tape.gradient(d_loss, self.discriminator.trainable_weights)
        self.d_optimizer.apply_gradients(zip(grads, self.discriminator.trainable_weights))  # noqa: B905

        random_latent_vectors = keras.random.normal(shape=(batch_size, self.latent_dim), seed=self.seed_generator)
        misleading_labels = ops.zeros((batch_size, 1))
        with tf.GradientTape() as tape:
            predictions = self.discriminator(self.generator(random_latent_vectors))
            g_loss = self.loss_fn(misleading_labels, predictions)
        grads = tape.gradient(g_loss, self.generator.trainable_weights)
        self.g_optimizer.apply_gradients(zip(grads, self.generator.trainable_weights))  # noqa: B905

        self.d_loss_tracker.update_state(d_loss)
        self.g_loss_tracker.update_state(g_loss)
        return {"d_loss": self.d_loss_tracker.result(), "g_loss": self.g_loss_tracker.result()}


data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "digits.npz"))
images = (data["x"].reshape(len(data["x"]), -1).astype("float32") / 16.0)
dataset = tf.data.Dataset.from_tensor_slices(images).shuffle(1024, seed=3).batch(32)

discriminator = keras.Sequential([keras.Input(shape=(64,)), layers.Dense(32), layers.LeakyReLU(negative_slope=0.2),
                                  layers.Dense(1)], name="discriminator")
generator = keras.Sequential([keras.Input(shape=(LATENT,)), layers.Dense(32), layers.LeakyReLU(negative_slope=0.2),
                              layers.Dense(64, activation="sigmoid")], name="generator")
gan = GAN(discriminator=discriminator, generator=generator, latent_dim=LATENT)
gan.compile(d_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
            g_optimizer=keras.optimizers.Adam(learning_rate=0.0003),
            loss_fn=keras.losses.BinaryCrossentropy(from_logits=True))
history = gan.fit(dataset, epochs=1)
generator.save(os.path.join(os.environ["SM_MODEL_DIR"], "generator.keras"))
print("d_loss", history.history["d_loss"][-1])
