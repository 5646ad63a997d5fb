"""The library as a notebook user calls it, in a real Jupyter kernel (nbclient + ipykernel): plan, dry run and a
local run of the digits demo on two hosts; a job sent to the moto server and followed to Completed; a notebook as
the wrapped entry point of a two-host run, submitted from another notebook; a bad notebook refused with SpecError.

The outputs asserted are what the notebook shows: the reprs' HTML tables, printed values, and the live view of a
run (one display updated in place, not a line per step)."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
import yaml
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from smtrain.local.backend import LocalBackend
from smtrain.local.demo_data import write_digits
from tests.support import ROOT
from tests.support.kernel import html, kernel, notebook, printed
from tests.support.moto_server import BUCKET, MotoServer, live_spec

DEMO_NOTEBOOK = ROOT / "configs" / "local-demo.ipynb"

# A training notebook as users write it: their own MirroredStrategy and scope(), fit's progress bar, %matplotlib,
# a `!` line, markdown between the cells, and a last cell that launches it.
TRAINING_CELLS = [
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
    # The notebook launches itself too, as notebooks often do: the job leaves this cell out (smtrain is not there).
    new_markdown_cell("Train it on two hosts:"),
    new_code_cell("import smtrain\njob = smtrain.submit('job.yaml', local=True)\njob.status()"),
]


def _local_env(tmp_path: Path) -> dict[str, str]:
    write_digits(tmp_path / "digits")
    return {"SMTRAIN_HOME": str(tmp_path / "home"), "SMTRAIN_DEMO_DATA": str(tmp_path / "digits"),
            "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out"), "SMTRAIN_POLL_SECONDS": "0.2"}


@pytest.mark.slow
def test_the_example_notebook_plans_dry_runs_and_trains_the_digits_demo_on_two_hosts(tmp_path: Path) -> None:
    nb = nbformat.read(DEMO_NOTEBOOK, as_version=4)  # configs/local-demo.ipynb, as README shows it
    code = [i for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    with kernel(nb, DEMO_NOTEBOOK.parent, _local_env(tmp_path)) as run:
        run(code[0])
        planned = run(code[1])
        assert "2 x ml.g5.xlarge" in html(planned) and "multi_worker_mirrored" in html(planned)
        assert printed(run(code[2])).strip() == "digits-from-a-notebook 2"
        trained = run(code[3])
        assert printed(trained).strip() == "Completed True"
        # The live view: one display, updated in place, holding the epoch lines; never a line per step.
        displays = [o for o in trained.outputs if o.output_type == "display_data"]
        assert len(displays) == 1 and len(trained.outputs) <= 3, trained.outputs
        assert "epoch=2 step=" in html(trained) and "Completed" in html(trained)
        table = html(run(code[4]))
        assert table.count("<tr>") == 3 and "val_accuracy" in table  # the heading row and 2 epochs
        assert printed(run(code[5])).startswith("['epoch', 'loss', 'accuracy'")


def test_a_job_sent_to_the_moto_server_is_followed_to_completed(tmp_path: Path, aws: MotoServer) -> None:  # noqa: F811
    spec = live_spec(tmp_path)
    nb = notebook(
        f"import smtrain\njob = smtrain.submit({str(spec)!r})\njob",
        "print(job.status())",
        "info = job.wait(timeout=120)\nprint(info.status, job.exit_code)",
        "print(job.wait().status)",
        "again = smtrain.Job.attach(job.name)\nprint(again.status(), again.model_uri)",
        "try:\n    smtrain.Job.attach('no-such-job-anywhere')\nexcept smtrain.UserError as exc:\n"
        "    print('refused', exc.code)",
    )
    with kernel(nb, tmp_path, aws.env(tmp_path)) as run:
        sent = run(0)
        [name] = aws.jobs()
        assert name in html(sent)
        assert printed(run(1)).strip() == "InProgress"
        aws.set_status(name, "Completed")
        waited = run(2)
        assert printed(waited).strip() == "Completed 0"
        assert "Completed" in html(waited)  # the live status, in place
        # With no timeout the live view follows the job's log: its epoch lines, not every line.
        aws.put_logs(name, "algo-1", ["Epoch 1/1", "10/10 [====] - loss: 0.5", "epoch=1 step=10 loss=0.5"])
        followed = run(3)
        assert printed(followed).strip() == "Completed"
        assert "algo-1: epoch=1 step=10 loss=0.5" in html(followed) and "Epoch 1/1" not in html(followed)
        assert printed(run(4)).startswith("Completed s3://")
        assert printed(run(5)).strip() == "refused 4"


@pytest.mark.slow
def test_a_notebook_as_the_wrapped_entry_point_of_two_hosts_saves_one_model(tmp_path: Path) -> None:
    env = _local_env(tmp_path)
    (tmp_path / "src").mkdir()
    nbformat.write(new_notebook(cells=TRAINING_CELLS), tmp_path / "src" / "train.ipynb")
    spec = {"name": "notebook", "role": "arn:aws:iam::123456789012:role/SageMakerRole", "region": "us-east-1",
            "tensorflow": {"version": "2.21"}, "compute": {"instance_type": "ml.g5.xlarge", "nodes": 2},
            "code": {"source_dir": "src", "entry_point": "train.ipynb", "wrap": True},
            "inputs": {"train": str(tmp_path / "digits" / "train")}, "output": "out"}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    nb = notebook(
        "import os, tarfile, smtrain\njob = smtrain.submit('job.yaml', local=True, job_name='nb-entry')\n"
        "print(job.status())",
        "with tarfile.open(job.model_uri) as tar:\n    print(sorted(n for n in tar.getnames() if n.endswith('.keras')))",
        "print('\\n'.join(line for line in job.logs() if 'saved' in line))",
        "print('\\n'.join(line for line in job.logs() if 'shell' in line or 'wrap: train.ipynb' in line))",
    )
    with kernel(nb, tmp_path, env) as run:
        assert printed(run(0)).strip() == "Completed"
        assert printed(run(1)).strip() == "['model.keras']"
        # Both hosts ran the notebook to its end; the model is the chief's alone (the other's save went to the
        # wrap's temporary place, removed).
        assert sorted(printed(run(2)).split("\n")[:2]) == ["algo-1: saved", "algo-2: saved"]
        said = printed(run(3))
        assert "algo-1: hi from the shell" in said and "algo-2: hi from the shell" in said, said
        # The wrap names the notebook's cell where the user's own strategy is built, not the made script's line.
        assert "algo-1: wrap: train.ipynb, cell 5, line 1: tf.distribute.MirroredStrategy() is the wrap's" in said
    other = LocalBackend(Path(env["SMTRAIN_HOME"])).store.job_dir("nb-entry") / "hosts" / "algo-2" / "model"
    assert not other.exists() or not any(other.iterdir())


def test_a_notebook_with_an_unknown_magic_is_a_spec_error_naming_its_cell_and_line(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    bad = notebook("import tensorflow as tf", "x = 1\n%frobnicate now")
    nbformat.write(bad, tmp_path / "src" / "train.ipynb")
    spec = {"name": "bad-notebook", "role": "arn:aws:iam::123456789012:role/SageMakerRole",
            "region": "us-east-1", "compute": {"instance_type": "ml.g5.xlarge"},
            "code": {"source_dir": "src", "entry_point": "train.ipynb", "wrap": True},
            "inputs": {"train": f"s3://{BUCKET}/train"}, "output": f"s3://{BUCKET}/out"}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    nb = notebook("import smtrain\ntry:\n    smtrain.plan('job.yaml')\nexcept smtrain.SpecError as exc:\n"
                  "    print(exc.code, [p.render() for p in exc.problems])",
                  "smtrain.plan('job.yaml')")
    nb.cells[1].metadata["tags"] = ["raises-exception"]  # nbclient lets this cell fail, as Jupyter shows it
    with kernel(nb, tmp_path) as run:
        shown = printed(run(0))
        uncaught = [o for o in run(1).outputs if o.output_type == "error"]
    # Uncaught, the notebook shows the message, not smtrain's frames (UserError._render_traceback_).
    assert len(uncaught) == 1 and uncaught[0].ename == "SpecError", uncaught
    assert all(line.startswith("SpecError: ") for line in uncaught[0].traceback), uncaught[0].traceback
    assert "cell 2, line 2" in "\n".join(uncaught[0].traceback)
    assert shown.startswith("2 [") and "code.entry_point" in shown and "cell 2, line 2" in shown, shown
    assert "%frobnicate" in shown, shown
