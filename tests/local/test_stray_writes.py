"""A local job that writes outside its hosts' directories is told so, with the fix; the summary says where its
model went instead of "the job saved no model"."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from smtrain.cli.render import job_text
from smtrain.local import stray_writes
from smtrain.local.backend import LocalBackend, local_request
from tests.local.support import make_plan

# Writes where `--where` says (this machine's /opt/ml in the real case), and/or into --model_dir.
SCRIPT = '''\
import argparse, os
parser = argparse.ArgumentParser()
parser.add_argument("--model_dir")
parser.add_argument("--where", default="")
parser.add_argument("--to_model_dir", default="no")
args, _ = parser.parse_known_args()
if args.where:
    os.makedirs(os.path.dirname(args.where), exist_ok=True)
    open(args.where, "w").write(os.environ["SM_CURRENT_HOST"])
if args.to_model_dir == "yes":
    os.makedirs(args.model_dir, exist_ok=True)
    open(os.path.join(args.model_dir, "model.keras"), "w").write("weights")
'''


def run(tmp_path: Path, name: str, hyperparameters: dict[str, str]) -> tuple[object, str]:
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text(SCRIPT)
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "hyperparameters": hyperparameters,
                                "code": {"source_dir": "src", "entry_point": "train.py"}}, standin=False)
    stream = io.StringIO()
    job = LocalBackend(tmp_path / "home").run(local_request(plan, name), stream=stream, grace=1)
    return job, stream.getvalue()


def test_a_write_under_opt_ml_is_reported_with_sm_model_dir_as_the_fix(tmp_path: Path,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # This machine's /opt/ml stands at a place of the test's own: the run must not know the difference.
    opt_ml = tmp_path / "opt" / "ml"
    (opt_ml / "input").mkdir(parents=True)
    (opt_ml / "input" / "untouched.json").write_text("{}")  # there before the run: not the job's doing
    monkeypatch.setattr(stray_writes, "WATCHED", opt_ml)
    job, text = run(tmp_path, "to-opt-ml", {"where": str(opt_ml / "model" / "weights.h5")})
    assert job.status == "Completed" and job.model_artifacts is None, text
    [note] = [line for line in text.splitlines() if "outside its hosts' directories" in line]
    assert f"{opt_ml / 'model' / 'weights.h5'}." in note and "untouched" not in note
    assert 'os.environ["SM_MODEL_DIR"]' in note
    assert f"model      none in SM_MODEL_DIR: the job saved to {opt_ml / 'model'} instead" in job_text(job)


def test_a_model_saved_to_model_dir_is_found_and_the_fix_named(tmp_path: Path) -> None:
    job, text = run(tmp_path, "to-model-dir", {"to_model_dir": "yes"})
    model_dir = tmp_path / "out" / "to-model-dir" / "model"
    assert job.status == "Completed" and job.model_artifacts is None, text
    [note] = [line for line in text.splitlines() if "saved to --model_dir" in line]
    assert f"here {model_dir} ({model_dir / 'model.keras'})" in note and "SM_MODEL_DIR" in note
    assert f"the job saved to {model_dir} instead" in job_text(job)
    # A job that saved nowhere says so as before.
    quiet, text = run(tmp_path, "nowhere", {})
    assert "model_dir" not in text and "none: the job saved no model" in job_text(quiet)
