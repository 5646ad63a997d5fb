"""`smtrain init`'s starting spec: what it takes from the script, and that the text reads back as a valid spec."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from smtrain.spec.starter import PLACEHOLDER_ROLE, hyperparameters, job_name, read_script, starter_text

SCRIPT = textwrap.dedent("""\
    import argparse, os
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--learning-rate", type=float, default=1e-3)
    parser.add_argument("--optimizer", default="adam")
    parser.add_argument("--note", default="yes ${USER}: 1")
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--data", default=os.environ.get("SM_CHANNEL_TRAIN"))
    parser.add_argument("--resume", default=None)
    parser.add_argument("--model_dir")
    parser.add_argument("--seed", type=int, required=True)
    args = parser.parse_args()
    validation = os.environ["SM_CHANNEL_VALIDATION"]
    """)


def write(tmp_path: Path, text: str = SCRIPT, name: str = "train.py", folder: str = "mnist") -> Path:
    script = tmp_path / folder / name
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text(text)
    return script


def test_hyperparameters_are_the_literal_defaults_and_the_rest_is_named(tmp_path: Path) -> None:
    hps = hyperparameters(read_script(write(tmp_path)).args)
    assert hps.values == {"epochs": 5, "batch-size": 32, "learning-rate": 0.001, "optimizer": "adam",
                          "note": "yes ${USER}: 1"}
    assert hps.flags == ("--amp",) and hps.without_default == ("--data", "--resume") and hps.required == ("--seed",)


def test_the_text_reads_back_as_the_spec_it_describes(tmp_path: Path) -> None:
    script = write(tmp_path)
    (script.parent / "requirements.txt").write_text("numpy\n")
    spec_path = script.parent / "job.yaml"
    text = starter_text(script, spec_path, read_script(script), tf_version="2.19", region="eu-west-1")
    spec_path.write_text(text)
    data = yaml.safe_load(text)
    assert data["name"] == "mnist" and data["role"] == PLACEHOLDER_ROLE and data["region"] == "eu-west-1"
    assert data["tensorflow"] == {"version": "2.19"}
    assert data["code"] == {"source_dir": ".", "entry_point": "train.py", "requirements": "requirements.txt",
                            "wrap": True}
    assert data["compute"]["gpu"] == "A10G" and data["compute"]["nodes"] == 1
    assert list(data["inputs"]) == ["train", "validation"]  # the channels the script reads, in its order
    # The loader expands ${VAR}: the default is written so that it reads back as the script has it.
    loaded = load_spec(spec_path, env={})
    assert loaded.spec.hyperparameters["note"] == "yes ${USER}: 1"
    assert loaded.spec.hyperparameters["learning-rate"] == 0.001
    plan = build_plan(loaded, load_catalog())
    assert plan.instance.gpu == "A10G" and plan.nodes == 1 and plan.spec.code.wrap
    # What is left out is said where the user looks for it.
    assert "# required, set them: --seed" in text and "--amp" in text.split("flags, left out", 1)[1]
    assert "Replace with your SageMaker execution role" in text


def test_a_spec_elsewhere_points_back_at_the_script(tmp_path: Path) -> None:
    script = write(tmp_path, "print('hi')\n", folder="project/src")
    spec_path = tmp_path / "specs" / "job.yaml"
    spec_path.parent.mkdir()
    text = starter_text(script, spec_path, read_script(script), tf_version="2.19", region=None)
    data = yaml.safe_load(text)
    assert data["code"]["source_dir"] == "../project/src" and "requirements" not in data["code"]
    assert data["name"] == "project" and data["region"] == "us-east-1"  # src says nothing: its parent does
    assert data["hyperparameters"] == {} and "declares no argparse option" in text
    assert "inputs" not in data and "# inputs:" in text
    spec_path.write_text(text)
    build_plan(load_spec(spec_path, env={}), load_catalog())


def test_a_script_that_does_not_parse_still_gets_a_spec(tmp_path: Path) -> None:
    script = write(tmp_path, "def f(:\n")
    facts = read_script(script)
    assert facts.parse_error and "line 1" in facts.parse_error
    text = starter_text(script, script.parent / "job.yaml", facts, tf_version="2.19", region=None)
    assert "could not be read" in text and yaml.safe_load(text)["hyperparameters"] == {}


@pytest.mark.parametrize(("path", "name"), [("mnist/train.py", "mnist"), ("mnist/resnet_cifar.py", "mnist-resnet-cifar"),
                                            ("My Project/src/main.py", "my-project"), ("x/_.py", "x")])
def test_job_names(tmp_path: Path, path: str, name: str) -> None:
    assert job_name(tmp_path / path) == name
