"""training.data hooks checked like model hooks, and the metrics a model declares becoming MetricDefinitions."""

from __future__ import annotations

import re
from pathlib import Path

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.declared_metrics import keras_default_name, metric_definitions, names_in_source
from smtrain.render.training_request import preview_request
from smtrain.spec.model import load_spec
from tests.plan.test_entrypoint_rules import only_error, outcome
from tests.support.specfiles import write_spec

HOOKS = '''
import tensorflow as tf

def load_data(channels):
    return tf.data.Dataset.from_tensor_slices(([[0.0]], [0.0]))

def build_model(hyperparameters):
    model = make()
    model.compile(optimizer="adam", loss="mse",
                  metrics=["mae", tf.keras.metrics.RootMeanSquaredError(), keras.metrics.AUC(name="area"), my_metric])
    return model
'''


def test_metric_names_are_read_from_literal_compile_calls_and_returned_dicts() -> None:
    assert names_in_source(HOOKS) == ["mae", "root_mean_squared_error", "area", "my_metric"]
    assert names_in_source("def f():\n    return {'model': m, 'metrics': ['mape']}\n") == ["mape"]
    # Several outputs, by name: Keras names them <output>_<metric>.
    assert names_in_source("m.compile(loss='mse', metrics={'size': ['mae'], 'kind': ['accuracy']})") == \
        ["size_mae", "kind_accuracy"]
    assert names_in_source("m.compile(metrics=chosen)") == []  # not knowable before the run: `metrics:` says
    assert names_in_source("def broken(:") == []
    assert [keras_default_name(n) for n in ("AUC", "TopKCategoricalAccuracy", "F1Score", "MeanIoU")] == \
        ["auc", "top_k_categorical_accuracy", "f1_score", "mean_io_u"]


def test_a_data_hook_and_the_models_metrics_reach_the_plan_and_the_request(tmp_path: Path) -> None:
    (tmp_path / "hooks.py").write_text(HOOKS)
    path = write_spec(tmp_path, {"training": {"data": "hooks:load_data", "model": "hooks:build_model"},
                                 "metrics": ["extra"], "code": {"source_dir": "."}})
    plan = build_plan(load_spec(path, env={}), load_catalog())
    assert plan.hyperparameters["data"] == "hooks:load_data"
    assert plan.metrics == ("extra", "mae", "root_mean_squared_error", "area", "my_metric")
    definitions = {d["Name"]: d["Regex"] for d in preview_request(plan)["AlgorithmSpecification"]["MetricDefinitions"]}
    assert definitions["train:mae"] == " mae=([0-9.eE+-]+)"
    assert definitions["validation:area"] == " val_area=([0-9.eE+-]+)"
    line = "epoch=2 step=9 loss=1.5 mae=0.8 area=0.91 val_loss=1.7 val_mae=0.9 val_area=0.88 lr=0.01"
    assert re.search(definitions["train:mae"], line).group(1) == "0.8"
    assert re.search(definitions["validation:mae"], line).group(1) == "0.9"  # never train's value
    assert re.search(definitions["train:area"], line).group(1) == "0.91"
    assert plan.summary()["metrics"][:3] == ["loss", "accuracy", "extra"]


def test_every_job_keeps_the_shipped_definitions_first() -> None:
    shipped = metric_definitions()
    assert [d["Name"] for d in metric_definitions(("mae",))] == [d["Name"] for d in shipped] + \
        ["train:mae", "validation:mae"]


def test_a_data_source_that_is_neither_known_nor_a_hook_is_refused_at_its_line(tmp_path: Path) -> None:
    line = only_error(tmp_path, {"training": {"data": "my data"}}, "training.data")
    assert "not a data source" in line and "module:function" in line


def test_a_data_hook_needs_the_code_it_names(tmp_path: Path) -> None:
    line = only_error(tmp_path, {"training": {"data": "hooks:load"}}, "training.data")
    assert "set code.source_dir" in line
    (tmp_path / "hooks.py").write_text("def load_data(channels):\n    pass\n")
    line = only_error(tmp_path, {"training": {"data": "hooks:load"}, "code": {"source_dir": "."}}, "training.data")
    assert "data hook hooks:load: hooks.py defines no load (did you mean 'load_data'?)" in line
    # With a data hook the channels are the hook's to read: none is required.
    errors, _ = outcome(tmp_path, {"training": {"data": "hooks:load_data"}, "code": {"source_dir": "."}}, inputs={})
    assert errors == []


def test_a_metric_name_must_be_one_the_line_can_carry(tmp_path: Path) -> None:
    line = only_error(tmp_path, {"metrics": ["mae", "val loss"]}, "metrics[1]")
    assert "not a metric name" in line


HAND_WRITTEN = """\
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(loss="mse", metrics=["mae"])
model.fit(x, y, epochs=2)
"""


def test_a_hand_written_script_is_promised_no_metric_its_output_never_matches(tmp_path: Path) -> None:
    from smtrain.cli.render import plan_text

    def plan_of(script: str, **code: object):
        folder = tmp_path / str(len(list(tmp_path.iterdir())))
        folder.mkdir()
        (folder / "train.py").write_text(script)
        path = write_spec(folder, {"compute": {"instance_type": "ml.g5.xlarge"},
                                   "code": {"source_dir": ".", "entry_point": "train.py", **code}})
        return build_plan(load_spec(path, env={}), load_catalog())

    plain = plan_of(HAND_WRITTEN)  # Keras prints `loss: 0.2300`: no MetricDefinition reads it
    assert plain.metric_lines is False and plain.summary()["metrics"] == []
    assert "  metrics       none known: the MetricDefinitions read smtrain's metric line" in plan_text(plain)
    assert "loss, accuracy" not in plan_text(plain)
    for why, plan in (("wrapped", plan_of(HAND_WRITTEN, wrap=True)),
                      ("smtrain_tf.fit", plan_of("import smtrain_tf\n" + HAND_WRITTEN)),
                      ("its own metric line", plan_of(HAND_WRITTEN + 'print(f"epoch={e} step={s} loss={v:.4f}")\n'))):
        assert plan.metric_lines is True, why
        assert plan.summary()["metrics"] == ["loss", "accuracy", "mae"], why
