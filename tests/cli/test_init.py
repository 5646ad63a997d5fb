"""`smtrain init train.py`, as a user runs it: a starting spec that validates, never a file replaced unasked."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.support.cli_runner import smtrain

SCRIPT = textwrap.dedent("""\
    import argparse
    import os

    import tensorflow as tf

    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--model_dir")
    args = parser.parse_args()
    x = os.environ["SM_CHANNEL_TRAIN"]
    """)


def script_in(tmp_path: Path, folder: str = "digits") -> Path:
    script = tmp_path / folder / "train.py"
    script.parent.mkdir(parents=True)
    script.write_text(SCRIPT)
    return script


def test_init_writes_a_spec_beside_the_script_that_validate_and_plan_accept(tmp_path: Path) -> None:
    script_in(tmp_path)
    proc = smtrain("init", "digits/train.py", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    spec = tmp_path / "digits" / "job.yaml"
    data = yaml.safe_load(spec.read_text())
    assert data["hyperparameters"] == {"epochs": 3, "batch-size": 64}
    assert data["code"] == {"source_dir": ".", "entry_point": "train.py", "wrap": True}
    assert proc.stdout.splitlines()[:2] == ["wrote digits/job.yaml for digits/train.py",
                                           "digits/job.yaml: valid (none on 1 x ml.g5.xlarge)"]
    for step in ("smtrain plan digits/job.yaml", "smtrain submit digits/job.yaml --dry-run",
                 "smtrain submit digits/job.yaml --local"):
        assert f"  {step}" in proc.stdout
    assert proc.stderr == ""  # nothing for the preflight scan to say about it
    again = smtrain("validate", "digits/job.yaml", "--strict", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    plan = smtrain("plan", "digits/job.yaml", "-o", "json", cwd=tmp_path)
    assert plan.returncode == 0 and json.loads(plan.stdout)["preflight"] == []


def test_init_never_replaces_a_file_without_force(tmp_path: Path) -> None:
    script = script_in(tmp_path)
    spec = script.parent / "job.yaml"
    spec.write_text("mine\n")
    proc = smtrain("init", str(script))
    assert proc.returncode == 2 and "exists: pass --force" in proc.stderr
    assert spec.read_text() == "mine\n"
    forced = smtrain("init", str(script), "--force")
    assert forced.returncode == 0, forced.stderr
    assert yaml.safe_load(spec.read_text())["name"] == "digits"


def test_init_writes_where_asked_and_speaks_json(tmp_path: Path) -> None:
    script_in(tmp_path, "project/src")
    proc = smtrain("init", "project/src/train.py", "specs/train.yaml", "-o", "json", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["spec_file"] == "specs/train.yaml" and out["valid"] is True and out["preflight"] == []
    assert out["hyperparameters"] == {"epochs": 3, "batch-size": 64}
    assert out["next"][0] == "smtrain plan specs/train.yaml"
    data = yaml.safe_load((tmp_path / "specs" / "train.yaml").read_text())
    assert data["code"]["source_dir"] == "../project/src" and data["name"] == "project"


def test_init_shows_what_the_preflight_scan_finds(tmp_path: Path) -> None:
    script = script_in(tmp_path)
    script.write_text(SCRIPT + 'os.environ["CUDA_VISIBLE_DEVICES"] = "0"\n')
    proc = smtrain("init", str(script))
    assert proc.returncode == 0, proc.stderr
    assert "train.py:12: warning: the script sets CUDA_VISIBLE_DEVICES" in proc.stderr


HOROVOD_SCRIPT = SCRIPT.replace("import tensorflow as tf\n", "import horovod.tensorflow.keras as hvd\n"
                                "import tensorflow as tf\n\nhvd.init()\n")
# The TensorFlow docs' multi-worker tutorial: reads TF_CONFIG itself, builds its own strategy.
TF_CONFIG_SCRIPT = textwrap.dedent("""\
    import json
    import os

    import tensorflow as tf

    tf_config = json.loads(os.environ["TF_CONFIG"])
    num_workers = len(tf_config["cluster"]["worker"])
    strategy = tf.distribute.MultiWorkerMirroredStrategy()
    """)


def test_init_gives_a_horovod_script_a_horovod_job_and_validate_refuses_it_wrapped(tmp_path: Path) -> None:
    script = script_in(tmp_path)
    script.write_text(HOROVOD_SCRIPT)
    proc = smtrain("init", str(script))
    assert proc.returncode == 0, proc.stderr
    data = yaml.safe_load((script.parent / "job.yaml").read_text())
    assert data["distribution"] == {"strategy": "horovod"} and "wrap" not in data["code"]
    assert data["tensorflow"]["version"] == "2.12"  # the last SageMaker image with Horovod
    assert "valid (horovod on 1 x ml.g5.xlarge)" in proc.stdout
    wrapped = smtrain("validate", str(script.parent / "job.yaml"), "--set", "code.wrap=true",
                      "--set", "distribution.strategy=auto", "--set", "tensorflow.version=2.21")
    assert wrapped.returncode == 2
    assert "train.py:4: error: the script imports horovod, but a wrapped script" in wrapped.stderr


def test_init_gives_a_script_reading_tf_config_two_nodes_and_validate_refuses_one(tmp_path: Path) -> None:
    script = script_in(tmp_path)
    script.write_text(TF_CONFIG_SCRIPT)
    proc = smtrain("init", str(script))
    assert proc.returncode == 0, proc.stderr
    spec = script.parent / "job.yaml"
    data = yaml.safe_load(spec.read_text())
    assert data["compute"]["nodes"] == 2 and data["distribution"] == {"strategy": "multi_worker_mirrored"}
    assert data["code"]["wrap"] is True
    one = smtrain("validate", str(spec), "--set", "compute.nodes=1", "--set", "distribution.strategy=auto")
    assert one.returncode == 2 and "valid" not in one.stdout
    assert ("train.py:6: error: the script reads TF_CONFIG, which the container sets only for "
            "multi_worker_mirrored") in one.stderr
    assert "compute.nodes: 2" in one.stderr


def test_init_says_why_a_spec_cannot_run_the_script(tmp_path: Path) -> None:
    script = script_in(tmp_path)
    # (a Keras 2 call that init reads as Keras 2 gets tensorflow.keras: 2 instead: the test above)
    script.write_text(SCRIPT + "model = tf.keras.Sequential()\nmodel.save(\"export\")\n")
    proc = smtrain("init", str(script))
    assert proc.returncode == 2 and "valid" not in proc.stdout
    assert "train.py:13: error: Keras 3 (TensorFlow " in proc.stderr and "refuses a path without" in proc.stderr
    assert "digits/job.yaml cannot run" in proc.stderr or "job.yaml cannot run" in proc.stderr
    assert (script.parent / "job.yaml").is_file()  # written whole: the user fixes the script, then validates


def test_init_refuses_what_is_not_a_python_script(tmp_path: Path) -> None:
    missing = smtrain("init", str(tmp_path / "nope.py"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    other = tmp_path / "train.R"  # a notebook (.ipynb) is taken: tests/spec/test_notebook.py
    other.write_text("x <- 1\n")
    proc = smtrain("init", str(other))
    assert proc.returncode == 2 and "not a Python script (.py) or notebook (.ipynb)" in proc.stderr
    assert not (tmp_path / "job.yaml").exists()
    folder = smtrain("init", str(tmp_path))
    assert folder.returncode == 2 and "not a file" in folder.stderr
    assert "Traceback" not in missing.stderr + proc.stderr + folder.stderr


def test_init_example_writes_a_tested_config_and_its_code_where_its_paths_work(tmp_path: Path) -> None:
    from tests.support import ROOT

    listed = smtrain("init", "--example", "list", "-o", "json", cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert sorted(json.loads(listed.stdout)["examples"]) == sorted(p.stem for p in (ROOT / "configs").glob("*.yaml"))
    proc = smtrain("init", "--example", "own-script-wrapped", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    spec = tmp_path / "configs" / "own-script-wrapped.yaml"
    assert spec.read_bytes() == (ROOT / "configs" / "own-script-wrapped.yaml").read_bytes()
    assert (tmp_path / "configs" / "code" / "digits_keras.py").read_bytes() == \
        (ROOT / "configs" / "code" / "digits_keras.py").read_bytes()
    assert "python -m smtrain.local.demo_data .demo/digits" in proc.stdout
    # Its relative paths count from configs/, as in the repository: the demo data goes to ./.demo.
    plan = smtrain("plan", str(spec), "-o", "json", cwd=tmp_path,
                   env={"SMTRAIN_DEMO_DATA": "", "SMTRAIN_DEMO_OUTPUT": ""})
    assert plan.returncode == 0, plan.stderr
    again = smtrain("init", "--example", "own-script-wrapped", cwd=tmp_path)
    assert again.returncode == 2 and "--force" in again.stderr and "Traceback" not in again.stderr
    assert smtrain("init", "--example", "own-script-wrapped", "--force", cwd=tmp_path).returncode == 0
    unknown = smtrain("init", "--example", "nope", cwd=tmp_path)
    assert unknown.returncode == 2 and "local-demo" in unknown.stderr
    # The demo comes with the notebook that drives it from Python (README "From Python and Jupyter").
    demo = smtrain("init", "--example", "local-demo", cwd=tmp_path)
    assert demo.returncode == 0, demo.stderr
    assert (tmp_path / "configs" / "local-demo.ipynb").read_bytes() == (ROOT / "configs" / "local-demo.ipynb").read_bytes()


# Keras 2 forms that Keras 3 refuses, one a file: init proposes tensorflow.keras: 2 with the line it read.
@pytest.mark.parametrize("code, form", [
    ("opt = tf.keras.optimizers.Adam(lr=0.01)\n", "Adam(lr=...)"),
    ("train_loss = tf.keras.metrics.Mean()\ntrain_loss.reset_states()\n", "train_loss.reset_states()"),
    ("opt = tf.keras.optimizers.legacy.SGD()\n", "keras.optimizers.legacy"),
    ("model = tf.keras.Sequential()\nmodel.fit_generator(iter([]))\n", "model.fit_generator()"),
])
def test_init_proposes_keras_2_for_code_that_reads_as_keras_2(tmp_path: Path, code: str, form: str) -> None:
    script = script_in(tmp_path)
    script.write_text(SCRIPT + code)
    proc = smtrain("init", str(script), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    text = (script.parent / "job.yaml").read_text()
    line = len(SCRIPT.splitlines()) + len(code.splitlines())
    assert yaml.safe_load(text)["tensorflow"]["keras"] == 2
    assert f"your code reads as Keras 2 ({form}, line {line}): run as written on tf_keras" in text
    assert "error" not in proc.stderr  # validate accepts the script as written under Keras 2


def test_init_leaves_keras_alone_for_keras_3_code_and_for_a_keras_2_image(tmp_path: Path) -> None:
    script = script_in(tmp_path)
    script.write_text(SCRIPT + "m = tf.keras.metrics.Mean()\nm.reset_state()\nstate.reset_states()\n")
    assert smtrain("init", str(script), cwd=tmp_path).returncode == 0
    assert "keras" not in yaml.safe_load((script.parent / "job.yaml").read_text())["tensorflow"]
    horovod = script_in(tmp_path, "hvd")  # a Horovod script gets TensorFlow 2.12, whose tf.keras is Keras 2
    horovod.write_text(HOROVOD_SCRIPT + "opt = tf.keras.optimizers.Adam(lr=0.01)\n")
    assert smtrain("init", str(horovod), cwd=tmp_path).returncode == 0
    assert "keras" not in yaml.safe_load((horovod.parent / "job.yaml").read_text())["tensorflow"]
