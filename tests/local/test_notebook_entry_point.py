"""A notebook as the wrapped entry point, trained for real on two local hosts (`smtrain submit --local`): written
as notebook users write it (their own MirroredStrategy and scope(), fit's progress bar, %matplotlib, a `!` line),
it runs under the job's MultiWorkerMirrored strategy and its model is saved once, by the chief."""

from __future__ import annotations

import json
import tarfile
from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from smtrain.local.backend import LocalBackend
from smtrain.local.demo_data import write_digits
from tests.support.cli_runner import smtrain

CELLS = [
    new_markdown_cell("# Digits\nA small MLP on scikit-learn's digits."),
    new_code_cell("%matplotlib inline\nimport os\nimport numpy as np\nimport tensorflow as tf\n!echo hi from the shell"),
    new_code_cell('data = np.load(os.path.join(os.environ["SM_CHANNEL_TRAIN"], "digits.npz"))\n'
                  'x = data["x"].reshape(len(data["x"]), -1)\ny = data["y"]\nx.shape'),
    new_markdown_cell("Several GPUs: MirroredStrategy."),
    new_code_cell("strategy = tf.distribute.MirroredStrategy()\n"
                  "with strategy.scope():\n"
                  "    model = tf.keras.Sequential([tf.keras.Input(shape=(64,)),\n"
                  "                                 tf.keras.layers.Dense(64, activation='relu'),\n"
                  "                                 tf.keras.layers.Dense(10, activation='softmax')])\n"
                  "    model.compile(optimizer='adam', loss='sparse_categorical_crossentropy', metrics=['accuracy'])"),
    new_code_cell("model.fit(x, y, epochs=1, batch_size=32)"),
    new_code_cell('model.save(os.path.join(os.environ.get("SM_MODEL_DIR", "."), "model.keras"))\nprint("saved")'),
]


@pytest.mark.slow
def test_a_wrapped_notebook_trains_on_two_local_hosts_and_saves_one_model(tmp_path: Path) -> None:
    write_digits(tmp_path / "digits")
    (tmp_path / "src").mkdir()
    nbformat.write(new_notebook(cells=CELLS), tmp_path / "src" / "train.ipynb")
    spec = {"name": "notebook", "role": "arn:aws:iam::123456789012:role/SageMakerRole", "region": "us-east-1",
            "tensorflow": {"version": "2.21"}, "compute": {"instance_type": "ml.g5.xlarge", "nodes": 2, "max_run": 900},
            "code": {"source_dir": "src", "entry_point": "train.ipynb", "wrap": True},
            "inputs": {"train": str(tmp_path / "digits" / "train")}, "output": "out"}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    home = tmp_path / "home"
    proc = smtrain("submit", "job.yaml", "--local", "--job-name", "nb-1", "--output", "json",
                   env={"SMTRAIN_HOME": str(home)}, cwd=tmp_path, timeout=600)
    log = proc.stderr
    assert proc.returncode == 0, log[-4000:]
    job = json.loads(proc.stdout)["job"]
    assert job["status"] == "Completed"
    assert "[algo-1] hi from the shell" in log and "[algo-2] hi from the shell" in log
    assert "[algo-1] saved" in log, log[-4000:]
    # The wrap names the notebook's cell where the user's own strategy is built, not the made script's line.
    assert "[algo-1] wrap: train.ipynb, cell 5, line 1: tf.distribute.MirroredStrategy() is the wrap's" in log
    with tarfile.open(job["model_artifacts"]) as tar:
        assert "model.keras" in tar.getnames()
    # One model: the chief's. The other worker's save went to a temporary place the wrap removed.
    other = LocalBackend(home).store.job_dir("nb-1") / "hosts" / "algo-2" / "model"
    assert not other.exists() or not any(other.iterdir())
