"""check/layers.py: what trains differently per replica, read from the model."""

from __future__ import annotations


def test_a_seed_generator_of_the_script_s_own_model_is_listed_and_keras_s_own_layers_are_not() -> None:
    import keras
    from smtrain_tf.check import layers

    class GAN(keras.Model):  # keras.io's GAN form: the step draws its latent vectors from the model's own generator
        def __init__(self) -> None:
            super().__init__()
            self.generator = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
            self.seed_generator = keras.random.SeedGenerator(1337)

    assert layers.seed_generators(GAN()) == [{"name": "gan.seed_generator", "class": "SeedGenerator", "seed": 1337}]
    # An LSTM's cell holds a SeedGenerator for its dropout, drawn from only when the rate is set: not the model's own.
    recurrent = keras.Sequential([keras.Input((3, 2)), keras.layers.LSTM(4), keras.layers.Dropout(0.1)])
    found = layers.inventory(recurrent)
    assert found["random"] == [{"name": recurrent.layers[-1].name, "class": "Dropout", "seed": None}], found
