"""The spec fields of own scripts (code.wrap, code.wrap_batch, compute.allow_cpu,
training.gradient_accumulation_steps) and the rules that tie them to other fields, each at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.specfiles import BASE_TEXT


def load(tmp_path: Path, extra: str, overrides: tuple[str, ...] = ()):
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    path = tmp_path / "job.yaml"
    path.write_text(BASE_TEXT + extra)
    return load_spec(path, overrides, env={})


def problems(tmp_path: Path, extra: str, overrides: tuple[str, ...] = ()) -> list[str]:
    with pytest.raises(SpecError) as info:
        load(tmp_path, extra, overrides)
    return [p.render() for p in info.value.problems]


OWN = "code:\n  source_dir: src\n  entry_point: train.py\n"


def test_the_new_fields_and_their_defaults(tmp_path):
    spec = load(tmp_path, "").spec
    assert (spec.code.wrap, spec.code.wrap_batch, spec.compute.allow_cpu) == (False, "per_replica", False)
    assert spec.training.gradient_accumulation_steps is None
    spec = load(tmp_path, OWN + "  wrap: on\n  wrap_batch: global\ncompute:\n  allow_cpu: yes\n"
                "training:\n  gradient_accumulation_steps: 4\n").spec
    assert (spec.code.wrap, spec.code.wrap_batch, spec.compute.allow_cpu) == (True, "global", True)
    assert spec.training.gradient_accumulation_steps == 4


@pytest.mark.parametrize("value", ["0", "-1", "2.5", "many"])
def test_gradient_accumulation_steps_is_a_whole_number_from_one(tmp_path, value):
    out = problems(tmp_path, f"training:\n  gradient_accumulation_steps: {value}\n")
    assert len(out) == 1 and ":10:32: training.gradient_accumulation_steps" in out[0]


def test_wrap_batch_takes_only_its_two_rules(tmp_path):
    out = problems(tmp_path, OWN + "  wrap: true\n  wrap_batch: per_gpu\n")
    assert len(out) == 1 and ":13:15: code.wrap_batch:" in out[0] and "per_gpu" in out[0]


def test_wrap_needs_an_entry_point(tmp_path):
    out = problems(tmp_path, "code:\n  source_dir: src\n  wrap: true\n")
    assert out == [f"{tmp_path / 'job.yaml'}:11:9: code.wrap: wrap runs your own script unchanged: set "
                   "code.entry_point (a script in code.source_dir)"]


@pytest.mark.parametrize("wrap", ["", "  wrap: false\n"])
def test_wrap_batch_without_wrap_is_refused(tmp_path, wrap):
    out = problems(tmp_path, OWN + wrap + "  wrap_batch: global\n")
    line = 12 + bool(wrap)
    assert out == [f"{tmp_path / 'job.yaml'}:{line}:15: code.wrap_batch: wrap_batch applies only to a wrapped "
                   "script: set code.wrap: true or remove wrap_batch"]


def test_wrap_tuning_is_on_by_default_and_refused_without_wrap(tmp_path):
    assert load(tmp_path, OWN + "  wrap: true\n").spec.code.wrap_tuning is True
    assert load(tmp_path, OWN + "  wrap: true\n  wrap_tuning: off\n").spec.code.wrap_tuning is False
    out = problems(tmp_path, OWN + "  wrap_tuning: false\n")
    assert out == [f"{tmp_path / 'job.yaml'}:12:16: code.wrap_tuning: wrap_tuning applies only to a wrapped "
                   "script: set code.wrap: true or remove wrap_tuning"]


def test_wrap_batch_set_on_the_command_line_without_wrap_is_refused_there(tmp_path):
    out = problems(tmp_path, OWN, ("code.wrap_batch=global",))
    assert out == ["--set code.wrap_batch=global: code.wrap_batch: wrap_batch applies only to a wrapped script: "
                   "set code.wrap: true or remove wrap_batch"]


@pytest.mark.parametrize("strategy", ["horovod", "smddp", "parameter_server"])
def test_a_wrapped_script_cannot_run_under_a_strategy_that_needs_code_changes(tmp_path, strategy):
    out = problems(tmp_path, OWN + f"  wrap: true\ndistribution:\n  strategy: {strategy}\n")
    assert out == [f"{tmp_path / 'job.yaml'}:14:13: distribution.strategy: a wrapped script cannot run under "
                   f"{strategy}: it needs code changes; use smtrain_tf.fit (see the docs' \"Your own script\") or "
                   "multi_worker_mirrored/mirrored"]


@pytest.mark.parametrize("strategy", ["auto", "none", "mirrored", "multi_worker_mirrored"])
def test_a_wrapped_script_runs_under_the_strategies_the_wrap_builds(tmp_path, strategy):
    spec = load(tmp_path, OWN + f"  wrap: true\ndistribution:\n  strategy: {strategy}\n").spec
    assert spec.code.wrap and spec.distribution.strategy == strategy


def test_an_unwrapped_own_script_may_run_under_horovod(tmp_path):
    assert load(tmp_path, OWN + "distribution:\n  strategy: horovod\n").spec.distribution.strategy == "horovod"


def test_an_own_script_takes_hyperparameters_of_any_name(tmp_path):
    spec = load(tmp_path, OWN + "hyperparameters:\n  epochs: 2\n  learning_rate: 0.1\n  model: resnet\n").spec
    assert spec.hyperparameters == {"epochs": 2, "learning_rate": 0.1, "model": "resnet"}


def test_the_bundled_entrypoint_still_refuses_a_training_field_as_a_hyperparameter(tmp_path):
    out = problems(tmp_path, "hyperparameters:\n  epochs: 2\n")
    assert out == [f"{tmp_path / 'job.yaml'}:10:11: hyperparameters.epochs: 'epochs' is a training field: "
                   "set training.epochs"]


def test_a_notebook_entry_point_that_cannot_become_a_script_is_refused_at_its_cell_and_line(tmp_path):
    import nbformat
    from nbformat.v4 import new_code_cell, new_notebook

    (tmp_path / "src").mkdir()
    cells = [new_code_cell("import os"), new_code_cell("x = (1,\ny = 2")]
    (tmp_path / "src" / "train.ipynb").write_text(nbformat.writes(new_notebook(cells=cells)))
    out = problems(tmp_path, "code:\n  source_dir: src\n  entry_point: train.ipynb\n")
    assert len(out) == 1 and "code.entry_point: train.ipynb, cell 2, line 1: syntax error" in out[0], out
