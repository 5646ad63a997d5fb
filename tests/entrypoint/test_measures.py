"""A model's loss and metrics as sums (keras_support/measures.py), against Keras's own evaluate on the same data."""

from __future__ import annotations

import numpy as np
import pytest

from .conftest import ENTRYPOINTS  # noqa: F401 - puts smtrain_tf on sys.path


@pytest.fixture(scope="module")
def tf():
    import tensorflow

    return tensorflow


def _regression(tf):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 4)).astype("float32")
    y = (x @ np.array([1.0, -2.0, 0.5, 3.0], "float32") + rng.normal(scale=0.3, size=200)).astype("float32")
    tf.keras.utils.set_random_seed(1)
    inputs = tf.keras.Input((4,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
    model.compile("adam", loss="mse", metrics=["mae", tf.keras.metrics.RootMeanSquaredError(name="rmse"),
                                               tf.keras.metrics.MeanAbsolutePercentageError()])
    return model, x, y


def _summed(measures, model, batches):
    totals = np.zeros(measures.size)
    for x, y in batches:
        out = model(x, training=False)
        totals += measures.stats(y, out, measures.per_example_loss(y, out)).numpy()
    return totals


def test_a_compiled_regression_reports_its_own_metrics_exactly_as_keras_evaluates_them(tf) -> None:
    from smtrain_tf.keras_support.measures import Measures, compiled

    model, x, y = _regression(tf)
    given = compiled(model)
    measures = Measures(model, given["loss"], given["metrics"], given["loss_weights"], from_logits=False)
    assert measures.names == ["mae", "rmse", "mean_absolute_percentage_error"]  # no accuracy for a regression
    # Sums over uneven batches (as replicas, workers and a partial last batch give them) make the whole.
    totals = _summed(measures, model, [(x[:70], y[:70]), (x[70:130], y[70:130]), (x[130:], y[130:])])
    ours = measures.values(totals)
    theirs = model.evaluate(x, y, batch_size=64, verbose=0, return_dict=True)
    assert set(ours) == {"loss", "mae", "rmse", "mean_absolute_percentage_error"}
    for name, value in theirs.items():
        assert ours[name] == pytest.approx(value, rel=1e-4), name
    assert ours["rmse"] == pytest.approx(np.sqrt(ours["loss"]), rel=1e-4)  # a stateful metric, summed exactly


def test_two_outputs_have_their_losses_weights_and_metrics_by_name(tf) -> None:
    from smtrain_tf.keras_support.measures import Measures, compiled

    rng = np.random.default_rng(2)
    x = rng.normal(size=(120, 3)).astype("float32")
    labels = {"kind": (x[:, 0] > 0).astype("int64"), "size": (x.sum(axis=1) * 2).astype("float32")}
    tf.keras.utils.set_random_seed(3)
    inputs = tf.keras.Input((3,))
    hidden = tf.keras.layers.Dense(8, activation="relu")(inputs)
    outputs = {"kind": tf.keras.layers.Dense(2, activation="softmax", name="kind")(hidden),
               "size": tf.keras.layers.Dense(1, name="size")(hidden)}
    model = tf.keras.Model(inputs, outputs)
    model.compile("adam", loss={"kind": "sparse_categorical_crossentropy", "size": "mse"},
                  loss_weights={"kind": 1.0, "size": 0.5}, metrics={"kind": ["accuracy"], "size": ["mae"]})
    given = compiled(model)
    measures = Measures(model, given["loss"], given["metrics"], given["loss_weights"], from_logits=False)
    assert measures.names == ["kind_loss", "kind_accuracy", "size_loss", "size_mae"]
    batches = [(x[:50], {k: v[:50] for k, v in labels.items()}), (x[50:], {k: v[50:] for k, v in labels.items()})]
    ours = measures.values(_summed(measures, model, batches))
    theirs = model.evaluate(x, labels, batch_size=120, verbose=0, return_dict=True)
    for name in ("loss", "kind_loss", "size_loss", "kind_accuracy", "size_mae"):
        assert ours[name] == pytest.approx(theirs[name], rel=1e-4), name
    assert ours["loss"] == pytest.approx(ours["kind_loss"] + 0.5 * ours["size_loss"], rel=1e-5)


def test_accuracy_is_the_default_of_classification_losses_only(tf) -> None:
    from smtrain_tf.keras_support.measures import Measures

    inputs = tf.keras.Input((3,))
    classifier = tf.keras.Model(inputs, tf.keras.layers.Dense(4)(inputs))
    assert Measures(classifier, None, None, None, from_logits=True).names == ["accuracy"]  # built-in models
    assert Measures(classifier, tf.keras.losses.CategoricalCrossentropy(), None, None, False).names == ["accuracy"]
    assert Measures(classifier, "mae", None, None, False).names == []
    assert Measures(classifier, "mse", ["acc", "mse"], None, False).names == ["acc", "mse"]


def test_a_metric_may_not_take_a_name_of_the_metric_line(tf) -> None:
    from smtrain_tf.keras_support.measures import Measures

    inputs = tf.keras.Input((3,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(inputs))
    with pytest.raises(ValueError, match="metric name 'lr' clashes"):
        Measures(model, "mse", [tf.keras.metrics.MeanAbsoluteError(name="lr")], None, False)
    with pytest.raises(ValueError, match="3 losses for 2 outputs|3 losses for a model with one output"):
        Measures(model, ["mse", "mae", "mse"], None, None, False)
