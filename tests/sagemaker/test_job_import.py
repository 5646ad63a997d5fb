"""`smtrain import --job NAME`: a job SDK v2 submitted (to moto as a real HTTP server) becomes a spec whose dry
run equals the described job's request, but the differences README documents; its code is downloaded."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.api.test_import_launchers import LAUNCHERS, comparable
from tests.render.test_sdk_oracle import differences
from tests.support import ROOT, launcher_oracle, moto_server
from tests.support.cli_runner import smtrain


def described_request(server: moto_server.MotoServer, name: str) -> dict[str, Any]:
    """DescribeTrainingJob's answer (and the job's tags) as a CreateTrainingJob request: the members both have."""
    import botocore.session

    members = botocore.session.get_session().get_service_model("sagemaker").operation_model(
        "CreateTrainingJob").input_shape.members
    sm = server.client("sagemaker")
    described = sm.describe_training_job(TrainingJobName=name)
    # DescribeTrainingJob answers every flag; a request leaves a false one unsaid.
    request = {k: v for k, v in described.items() if k in members and v is not False}
    if request["OutputDataConfig"].get("KmsKeyId") == "":  # AWS answers "" for no key; a request leaves it out
        del request["OutputDataConfig"]["KmsKeyId"]
    tags = sm.list_tags(ResourceArn=described["TrainingJobArn"])["Tags"]
    if tags:
        request["Tags"] = tags
    return request


@pytest.mark.parametrize(("launcher", "left_out"), [("spot_launcher.py", ["profiler_config"]),
                                                   ("vpc_tags_launcher.py",
                                                    ["input_mode", "profiler_config", "debugger_hook_config"]),
                                                   ("hetero_launcher.py", ["profiler_config", "debugger_hook_config"])])
def test_a_job_the_sdk_submitted_imports_into_a_spec_that_sends_it_again(launcher, left_out, aws, tmp_path):
    launcher_oracle.script_request(LAUNCHERS / launcher, endpoint=aws.url)
    (name,) = aws.jobs()
    env = aws.env(tmp_path)
    proc = smtrain("import", "--job", name, "-o", "json", cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr
    document = json.loads(proc.stdout)
    assert document["spec_file"] == f"{name}.yaml" and document["code_dir"] == f"{name}-code"
    # The code the job ran, unpacked: SDK v2 packed source_dir's files.
    assert (tmp_path / f"{name}-code" / "train.py").read_bytes() == (LAUNCHERS / "code" / "train.py").read_bytes()
    dry = smtrain("submit", f"{name}.yaml", "--dry-run", "--job-name", name, "-o", "json", cwd=tmp_path, env=env)
    assert dry.returncode == 0, dry.stderr
    ours = json.loads(dry.stdout)["request"]
    theirs = described_request(aws, name)
    sdk_has_tensorboard = "TensorBoardOutputConfig" in theirs
    assert differences(comparable(ours, sdk_has_tensorboard=sdk_has_tensorboard),
                       comparable(theirs, sdk_has_tensorboard=sdk_has_tensorboard)) == []
    # What the import says it left: what SDK v2 added that smtrain leaves out by design, each said once.
    assert [n.split(": ")[1] for n in document["not_carried_over"]] == left_out, document


def test_an_unknown_job_and_a_code_directory_in_the_way(aws, tmp_path):
    env = aws.env(tmp_path)
    proc = smtrain("import", "--job", "no-such-job", cwd=tmp_path, env=env)
    assert proc.returncode == 4 and "no training job named no-such-job" in proc.stderr
    assert list(tmp_path.glob("*.yaml")) == []
    moto_server.create_job(aws, "made-here")
    (tmp_path / "made-here-code").mkdir()
    proc = smtrain("import", "--job", "made-here", cwd=tmp_path, env=env)
    assert proc.returncode == 2 and "made-here-code exists" in proc.stderr
    assert not (tmp_path / "made-here.yaml").exists()
    shutil.rmtree(tmp_path / "made-here-code")


def test_a_job_smtrain_submitted_with_every_switch_imports_back(aws, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    spec = moto_server.live_spec(tmp_path, {
        "code": {"source_dir": "src", "entry_point": "train.py"},
        "compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2, "remote_debug": True, "infra_check": True,
                    "keep_alive": "30m", "max_retry_attempts": 2},
        "distribution": {"strategy": "multi_worker_mirrored"},
        "output_compression": False, "model_uri": f"s3://{moto_server.BUCKET}/models/m.tar.gz", "model_channel": "warm",
        "model_package": {"group": "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/mnist",
                          "source": "arn:aws:sagemaker:us-east-1:123456789012:model-package/base/1"},
        "inputs": {"train": {"uri": f"s3://{moto_server.BUCKET}/train", "mode": "FastFile"}},
        "environment": {"A": "1"}, "tags": {"team": "ml"}, "hyperparameters": {"epochs": 3, "note": "x y"},
        "tracking": {"mlflow": "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team",
                     "experiment": "mnist", "sagemaker_experiment": {"experiment": "mnist-exp", "trial": "t1"}}})
    env = aws.env(tmp_path)
    sent = smtrain("submit", str(spec), "--job-name", "round-trip-1", env=env)
    assert sent.returncode == 0, sent.stderr
    back = tmp_path / "back"
    back.mkdir()
    proc = smtrain("import", "--job", "round-trip-1", "-o", "json", cwd=back, env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["not_carried_over"] == [
        "training job round-trip-1: metric_definitions: left out: smtrain writes the job's MetricDefinitions from its "
        "own epoch lines"]
    dry = smtrain("submit", "round-trip-1.yaml", "--dry-run", "--job-name", "round-trip-1", "-o", "json", cwd=back,
                  env=env)
    assert dry.returncode == 0, dry.stderr
    ours, theirs = json.loads(dry.stdout)["request"], described_request(aws, "round-trip-1")
    assert differences(comparable(ours, sdk_has_tensorboard=True), comparable(theirs, sdk_has_tensorboard=True)) == []
    assert ours["ModelPackageConfig"] == theirs["ModelPackageConfig"] and "RemoteDebugConfig" in ours
    assert ours["MlflowConfig"] == theirs["MlflowConfig"] and ours["ExperimentConfig"] == theirs["ExperimentConfig"]
    assert [c["ChannelName"] for c in ours["InputDataConfig"]] == ["train", "warm"]


@pytest.mark.parametrize("code", [
    {"source_dir": "src", "entry_point": "train.py", "wrap": True, "wrap_batch": "global", "wrap_tuning": False},
    {"source_dir": "src"},  # the bundled entrypoint, with a module of the user's beside it
])
def test_a_wrapped_or_bundled_smtrain_job_imports_into_the_spec_that_made_it(code, aws, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    changes = {"code": code, "compute": {"allow_cpu": True}, "training": {"lr_scaling": "sqrt", "epochs": 3}}
    if "entry_point" in code:
        changes["training"] = {"lr_scaling": "sqrt", "gradient_accumulation_steps": 2, "seed": 0}
        # tracking.mlflow with a URI: MLflow's variables and SMTRAIN_MLFLOW go back into tracking:
        changes["tracking"] = {"mlflow": "https://mlflow.example.com", "experiment": "mnist", "run": "first"}
    spec = moto_server.live_spec(tmp_path, changes)
    env = aws.env(tmp_path)
    assert smtrain("submit", str(spec), "--job-name", "made-1", env=env).returncode == 0
    back = tmp_path / "back"
    back.mkdir()
    proc = smtrain("import", "--job", "made-1", "-o", "json", cwd=back, env=env)
    assert proc.returncode == 0, proc.stderr
    imported = yaml.safe_load((back / "made-1.yaml").read_text())
    want = {k: v for k, v in code.items() if k != "source_dir"}
    assert {k: v for k, v in imported["code"].items() if k != "source_dir"} == want
    assert imported["compute"]["allow_cpu"] is True and imported["training"]["lr_scaling"] == "sqrt"
    assert imported["training"].get("seed") == changes["training"].get("seed")  # SMTRAIN_SEED: training.seed
    assert imported.get("tracking") == changes.get("tracking")
    assert "environment" not in imported  # smtrain's own variables went back into their fields
    assert sorted(p.name for p in (back / "made-1-code").iterdir()) == ["train.py"]
    dry = smtrain("submit", "made-1.yaml", "--dry-run", "--job-name", "made-1", "-o", "json", cwd=back, env=env)
    assert dry.returncode == 0, dry.stderr
    ours, theirs = json.loads(dry.stdout)["request"], described_request(aws, "made-1")
    assert differences(comparable(ours, sdk_has_tensorboard=True), comparable(theirs, sdk_has_tensorboard=True)) == []


def _own_script_job(server: moto_server.MotoServer, tmp_path: Path, name: str) -> tuple[dict[str, str], Path]:
    """A job of an own script submitted to the server; the environment for smtrain, an empty directory to import
    into."""
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    spec = moto_server.live_spec(tmp_path, {"code": {"source_dir": "src", "entry_point": "train.py"}})
    env = server.env(tmp_path)
    assert smtrain("submit", str(spec), "--job-name", name, env=env).returncode == 0
    back = tmp_path / "back"
    back.mkdir()
    return env, back


def test_code_that_cannot_be_written_here_fails_cleanly_and_leaves_nothing(aws, tmp_path):
    import subprocess
    import sys

    env, back = _own_script_job(aws, tmp_path, "full-1")
    # A file-size limit of 0 blocks: the download's first write fails, as on a full disk.
    proc = subprocess.run(["bash", "-c", f'ulimit -f 0; exec "{sys.executable}" -m smtrain import --job full-1'],
                          cwd=back, env={**env, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: cannot write the job's code into full-1-code: File too large"), proc.stderr
    assert list(back.iterdir()) == []


def test_sigterm_during_the_code_download_leaves_nothing(aws, tmp_path):
    import signal
    import threading

    from tests.support.cli_runner import running_smtrain
    from tests.support.moto_server import Fault

    env, back = _own_script_job(aws, tmp_path, "cut-1")
    held, arrived = threading.Event(), threading.Event()
    aws.control.inject("GetObject", Fault(hold=held, arrived=arrived))
    with running_smtrain("import", "--job", "cut-1", str(back / "cut-1.yaml"), env=env) as proc:
        try:
            assert arrived.wait(60), "the download never reached the server"
            proc.send_signal(signal.SIGTERM)
            out, err = proc.communicate(timeout=60)
        finally:
            held.set()
    assert proc.returncode == 143 and err.rstrip().splitlines()[-1] == "interrupted (SIGTERM)", err
    assert "Traceback" not in err and list(back.iterdir()) == []


def test_the_requirements_smtrain_added_leave_the_imported_code(tmp_path):
    from smtrain.bundle.job_requirements import MARKER
    from smtrain.sagemaker.job_import import _drop_added_requirements

    mixed, alone, users = tmp_path / "mixed.txt", tmp_path / "alone.txt", tmp_path / "users.txt"
    mixed.write_text(f"numpy>=1.26\n{MARKER}tracking.mlflow\nmlflow-skinny==3.17.2\n")
    alone.write_text(f"{MARKER}tensorflow.keras: 2\ntf-keras~=2.19.0\n")
    users.write_text("# pinned by the team\nmlflow-skinny==3.17.2\n")
    for path in (mixed, alone, users, tmp_path / "none.txt"):
        _drop_added_requirements(path)
    assert mixed.read_text() == "numpy>=1.26\n"  # the user's lines stay
    assert not alone.exists()  # smtrain's alone: the spec adds them again
    assert users.read_text() == "# pinned by the team\nmlflow-skinny==3.17.2\n"  # no marker: all the user's
