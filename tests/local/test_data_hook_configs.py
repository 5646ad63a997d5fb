"""configs/regression-diabetes.yaml and configs/two-input.yaml: your data (a data hook) and your compiled model (a
model hook) through the bundled entrypoint, trained for real on two local hosts (MultiWorkerMirrored), then served
from the SavedModel it exported, with the metrics the model declares in its lines, its MetricDefinitions and its
TensorBoard scalars.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest

from smtrain.local.backend import LocalBackend, local_request
from smtrain.local.demo_data import write_diabetes, write_digits
from smtrain.local.supervise import parse_log_line
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.render import java_regex
from smtrain.spec.model import load_spec
from tests.support import ROOT

pytestmark = pytest.mark.slow


def _run(config: str, data: Path, tmp_path: Path, job: str) -> tuple[LocalBackend, str, list[str]]:
    env = {"SMTRAIN_DEMO_DATA": str(data), "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out")}
    plan = build_plan(load_spec(ROOT / "configs" / config, env=env), load_catalog())
    backend = LocalBackend(tmp_path / "home")
    stream = io.StringIO()
    done = backend.run(local_request(plan, job), stream=stream, grace=5)
    text = stream.getvalue()
    assert done.status == "Completed", text[-4000:]
    logged = [p[1] for p in map(parse_log_line, (backend.store.log_dir(job) / "algo-1.log").read_text().splitlines())
              if p]
    # The job's MetricDefinitions read the metrics the model declares from the chief's lines, once per epoch.
    definitions = {d["Name"]: d["Regex"] for d in metric_definitions(plan.metrics)}
    epochs = [line for line in logged if line.startswith("epoch=")]
    for name, regex in definitions.items():
        if name.endswith(":accuracy") and " accuracy=" not in epochs[0]:
            continue  # a regression has none: its definition simply finds nothing
        if name == "train:fit":
            continue  # the fit call's number: the first call's lines have none
        found = [m.group(1) for m in (java_regex.compiled(regex, java_regex.bound_for(line)).search(line)
                                      for line in epochs) if m]
        assert len(found) == len(epochs), (name, regex, epochs[:2])
    return backend, text, epochs


def _serve(backend: LocalBackend, job: str, inputs: dict[str, np.ndarray]) -> np.ndarray:
    import tensorflow as tf

    loaded = tf.saved_model.load(str(backend.store.job_dir(job) / "hosts" / "algo-1" / "model" / "1"))
    serve = loaded.signatures["serving_default"]
    assert set(serve.structured_input_signature[1]) == set(inputs)  # the model's own input names
    (output,) = serve(**{k: tf.constant(v) for k, v in inputs.items()}).values()
    return output.numpy()


def _scalars(backend: LocalBackend, job: str) -> dict[str, dict[str, list[float]]]:
    import tensorflow as tf

    root = backend.store.job_dir(job) / "hosts" / "algo-1" / "output" / "tensorboard"
    found: dict[str, dict[str, list[float]]] = {}
    for events in sorted(root.glob("*/events.out.tfevents.*")):
        for event in tf.compat.v1.train.summary_iterator(str(events)):
            for value in event.summary.value:
                found.setdefault(events.parent.name, {}).setdefault(value.tag, []).append(
                    float(tf.make_ndarray(value.tensor)))
    return found


def test_a_regression_with_a_data_hook_and_a_compiled_model_serves_better_than_the_mean(tmp_path: Path) -> None:
    write_diabetes(tmp_path / "diabetes")
    backend, text, epochs = _run("regression-diabetes.yaml", tmp_path / "diabetes", tmp_path, "diabetes")
    assert re.search(r"\[algo-1\] config .*lr_scaling=none optimizer=the_model's .*metrics=mae,rmse", text), text[:3000]
    assert "auto-shard by DATA" not in text  # two training files: each worker reads its own
    last = dict(part.split("=", 1) for part in epochs[-1].split())
    assert {"loss", "mae", "rmse", "val_loss", "val_mae", "val_rmse"} <= set(last) and "accuracy" not in last
    assert float(last["rmse"]) == pytest.approx(float(last["loss"]) ** 0.5, rel=1e-3)

    rows = np.loadtxt(tmp_path / "diabetes" / "validation" / "part-0.csv", delimiter=",", skiprows=1, dtype="float32")
    predictions = _serve(backend, "diabetes", {"measurements": rows[:, :10]})
    assert predictions.shape == (len(rows), 1)
    mse = float(np.mean((predictions[:, 0] - rows[:, 10]) ** 2))
    assert mse < 0.7 * float(np.var(rows[:, 10]))  # predicting the mean would score the variance
    assert mse == pytest.approx(float(last["val_loss"]), rel=1e-3)  # the served model is the trained one

    scalars = _scalars(backend, "diabetes")
    assert set(scalars) == {"train", "validation"}
    assert {"epoch_loss", "epoch_mae", "epoch_rmse", "epoch_learning_rate", "epoch_examples_per_sec"} <= \
        set(scalars["train"])
    assert len(scalars["validation"]["epoch_loss"]) == len(epochs)
    assert scalars["validation"]["epoch_mae"][-1] == pytest.approx(float(last["val_mae"]), abs=1e-4)
    # Only the chief writes them.
    assert not (backend.store.job_dir("diabetes") / "hosts" / "algo-2" / "output" / "tensorboard").exists()


def test_a_two_input_model_takes_a_dict_of_features_and_serves_them_by_name(tmp_path: Path) -> None:
    write_digits(tmp_path / "digits")
    backend, text, epochs = _run("two-input.yaml", tmp_path / "digits", tmp_path, "two-inputs")
    # An in-memory dataset cannot be split by file: each worker says how it is split instead.
    assert re.search(r"\[algo-1\] warning: the training dataset reads no files .*auto-shard by DATA", text)
    last = dict(part.split("=", 1) for part in epochs[-1].split())
    assert {"accuracy", "top3", "val_accuracy", "val_top3"} <= set(last)

    validation = np.load(tmp_path / "digits" / "validation" / "digits.npz")
    images, labels = validation["x"].astype("float32"), validation["y"]
    probabilities = _serve(backend, "two-inputs", {"pixels": images.reshape(len(images), 64),
                                                   "rows": images.sum(axis=2) / 8.0})
    assert probabilities.shape == (len(labels), 10)
    accuracy = float(np.mean(probabilities.argmax(axis=1) == labels))
    majority = float(np.max(np.bincount(labels)) / len(labels))
    assert accuracy > 0.9 > majority
    assert accuracy == pytest.approx(float(last["val_accuracy"]), abs=1e-3)
