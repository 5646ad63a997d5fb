"""smtrain check with real TensorFlow on CPU: each job's own code run on one device and in its planned layout
(hosts as processes, CPU devices as replicas), and the verdict.

Layouts: MultiWorkerMirrored on this CPU gives each worker one device (TensorFlow's rule, see
smtrain.local.replica_layout), so the multi-host cases run 2 hosts x 1 replica; the single-host cases run
1 host x 2 replicas (a 4-GPU plan checked on a smaller layout of the same structure). The equivalent ones
pass with their differences; each planted mistake (tests/api/check_code/) is found with its cause.
Every case is a different behaviour, so each runs once; most need only a few steps (the cause shows at
the first).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import smtrain
from smtrain.api.checking import CannotCheckError
from tests.support import ROOT
from tests.support.cli_runner import smtrain as run_cli
from tests.support.moto_server import MotoServer, live_spec
from tests.support.specfiles import write_spec

CODE = Path(__file__).with_name("check_code")


pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("own_temp")]


def _spec(tmp_path: Path, digits: Path, changes: dict[str, Any]) -> Path:
    base: dict[str, Any] = {"name": "check-me", "inputs": {"train": str(digits / "train")},
                            "output": str(tmp_path / "out"), "compute": {"max_run": "15m"}}
    return write_spec(tmp_path, {**base, **changes})


def _wrapped(tmp_path: Path, digits: Path, **hyperparameters: int) -> Path:
    return _spec(tmp_path, digits, {
        "compute": {"instance_type": "ml.g5.xlarge", "nodes": 2, "max_run": "15m"},
        "code": {"source_dir": str(CODE), "entry_point": "tutorial.py", "wrap": True},
        "hyperparameters": {"epochs": 1, "batch-size": 32, **{k.replace("_", "-"): v for k, v in
                                                              hyperparameters.items()}}})


def _hooked(tmp_path: Path, digits: Path, model: str) -> Path:
    return _spec(tmp_path, digits, {
        "compute": {"instance_type": "ml.g5.12xlarge", "nodes": 1, "max_run": "15m"},
        "code": {"source_dir": str(CODE)},
        "training": {"model": f"nets:{model}", "epochs": 1, "batch_size_per_replica": 32, "learning_rate": 0.001,
                     "lr_scaling": "linear"}})


def _work_dirs(place: Path) -> list[Path]:
    return [p for p in place.iterdir() if p.name.startswith("smtrain-check-")]


def _cause(result: smtrain.CheckResult) -> dict[str, Any]:
    causes = result.to_dict()["causes"]
    assert len(causes) >= 1, result.to_dict()
    return causes[0]


def test_the_digits_demo_trains_as_one_device_would(digits: Path, tmp_path: Path, own_temp: Path) -> None:
    env = {"SMTRAIN_DEMO_DATA": str(digits), "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out"), "TMPDIR": str(own_temp)}
    done = run_cli("check", "configs/local-demo.yaml", env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    text = done.stdout
    assert text.startswith("check digits-local: equivalent\n"), text
    assert "2 hosts x 1 replica (multi_worker_mirrored), as planned" in text
    assert "one device    standing for 2 replicas: global batch 64, learning rate 0.002" in text
    assert "20 steps, largest relative difference" in text and "tolerance 0.0001" in text
    assert "float32 sums added in another order" in text
    assert "check: one device standing for 2 replicas, 20 steps" in done.stderr
    assert not (tmp_path / "out").exists()  # the user's output is not written by a check
    assert list(own_temp.iterdir()) == []  # nor is anything of the check's left behind (TensorFlow's files too)


def test_a_batch_norm_model_hook_is_found_and_its_synchronized_form_passes(digits: Path, tmp_path: Path) -> None:
    result = smtrain.check(_hooked(tmp_path, digits, "batch_norm"), steps=5)
    assert not result.equivalent and result.exit_code == 1
    cause = _cause(result)
    assert cause["kind"] == "batch_norm" and "per-replica statistics" in cause["says"]
    assert "BatchNormalization(synchronized=True)" in cause["fix"] and "SyncBatchNormalization" in cause["fix"]
    assert result.verdict.first_step == 1
    data = result.to_dict()
    assert data["planned_layout"]["replicas_per_host"] == 4 and data["checked_layout"]["replicas_per_host"] == 2
    assert any("the same structure, smaller" in note for note in data["notes"])

    synced = smtrain.check(_hooked(tmp_path, digits, "sync_batch_norm"), steps=20)
    assert synced.equivalent, synced.to_dict()["causes"]
    assert synced.verdict.loss_difference < 1e-4 and synced.verdict.weights_difference < 1e-3


def test_the_wrapped_tutorial_script_is_equivalent_when_it_seeds_its_shuffle(digits: Path, tmp_path: Path) -> None:
    result = smtrain.check(_wrapped(tmp_path, digits))
    assert result.equivalent, result.to_dict()["causes"]
    assert result.program == "wrapped" and result.verdict.steps == 20
    assert result.to_dict()["one_device"]["global_batch"] == 64  # 32 x num_replicas_in_sync, for 2 replicas


def test_a_failure_after_training_is_the_planned_runs_with_its_line(digits: Path, tmp_path: Path) -> None:
    """The check runs the whole script in both runs, each fit cut to the check's steps: evaluate's values unpacked
    wrongly after fit fails there, at its line, where the paid job would fail after training (on one device too)."""
    spec = _wrapped(tmp_path, digits, evaluate_wrong=1)
    line = next(n for n, text in enumerate((CODE / "tutorial.py").read_text().splitlines(), 1)
                if "= model.evaluate(" in text)
    proc = run_cli("check", str(spec), "--check-steps", "5", "-o", "json", timeout=900)
    assert proc.returncode == 1, proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["equivalent"] is False
    first = data["causes"][0]
    assert first["kind"] == "after-training", data["causes"]
    assert first["says"].startswith("the planned run fails after training, as one device does: ValueError: not "
                                    "enough values to unpack"), first["says"]
    assert first["says"].endswith(f"(at tutorial.py:{line})"), first["says"]
    # The steps themselves were compared: the training was equivalent, only what follows it fails.
    assert [c["kind"] for c in data["causes"]] == ["after-training"]


def test_a_script_that_seeds_itself_with_validation_past_an_epoch_of_a_sample(digits: Path, tmp_path: Path) -> None:
    # A small --data sample (300 examples: 5 steps an epoch, the last one partial), 12 steps: the epochs must
    # stay in step; the script's own global seed makes its unseeded shuffle the same on every worker, as on
    # SageMaker; its validation data is batched too.
    import numpy as np

    sample = tmp_path / "sample"
    sample.mkdir()
    with np.load(digits / "train" / "digits.npz") as full:
        np.savez(sample / "digits.npz", x=full["x"][:300], y=full["y"][:300])
    spec = _wrapped(tmp_path, digits, shuffle_seed=-1, global_seed=1, validate=1)
    result = smtrain.check(spec, ["inputs.validation=" + str(digits / "validation")], data={"train": str(sample)},
                           steps=12)
    assert result.equivalent, result.to_dict()["causes"]
    assert [row["step"] for row in result.to_dict()["per_step"]] == list(range(1, 13))


def test_a_rate_scaled_by_the_script_on_top_of_lr_scaling(digits: Path, tmp_path: Path) -> None:
    spec = _wrapped(tmp_path, digits, scale_lr=1)
    result = smtrain.check(spec, ["training.lr_scaling=linear"], steps=3)
    causes = {c["kind"]: c for c in result.to_dict()["causes"]}
    assert set(causes) == {"learning_rate"}, causes
    assert causes["learning_rate"]["counts"]["ratio"] == pytest.approx(2.0)
    assert "scaled for the replicas twice" in causes["learning_rate"]["fix"]


def test_a_dataset_batched_by_the_script_with_an_unseeded_shuffle_is_drawn_alike_under_the_wrap(
        digits: Path, tmp_path: Path) -> None:
    """The script batches its dataset with 32 (one replica's number, no num_replicas_in_sync) and shuffles it
    without a seed. The wrap leaves a dataset the script batched as it is, so 32 is the job's global batch, and
    the one device trains on the same batches of 32; the wrap seeds every worker alike (in the paid job too), so
    the unseeded shuffle gives every worker one order: equivalent, and the note says why."""
    result = smtrain.check(_wrapped(tmp_path, digits, per_replica_batch=1, shuffle_seed=-1), steps=10)
    data = result.to_dict()
    assert data["one_device"]["global_batch"] == 32
    assert result.equivalent, data["causes"]
    assert any("seeded every worker's random generators" in note for note in data["notes"]), data["notes"]


def test_a_script_seeding_each_host_with_its_own_seed_is_the_data_cause_alone(digits: Path, tmp_path: Path) -> None:
    """The same unseeded shuffle, but the script seeds TensorFlow with its host's index itself (its seed replaces
    the wrap's, as it would on SageMaker): each worker shuffles its own way, and the workers' overlapping data,
    the real fault, is named, alone."""
    result = smtrain.check(_wrapped(tmp_path, digits, per_replica_batch=1, shuffle_seed=-1, seed_per_host=1),
                           steps=10)
    data = result.to_dict()
    assert [c["kind"] for c in data["causes"]] == ["data"], data["causes"]
    cause = data["causes"][0]
    counts = cause["counts"]
    assert counts["examples"] == 320 and counts["first_step"] == 1
    # Each worker shuffles on its own: examples taken twice and as many of one device's never taken.
    assert counts["taken_again"] == counts["never_taken"] > 0
    assert f"{counts['taken_again']} of them more often than one device did" in cause["says"]
    assert "seed" in cause["fix"]


def test_dropout_with_one_seed_on_every_replica_and_the_rest_checked_without_it(digits: Path,
                                                                                tmp_path: Path) -> None:
    spec = _hooked(tmp_path, digits, "seeded_dropout")
    result = smtrain.check(spec, steps=3)
    cause = _cause(result)
    assert cause["kind"] == "randomness" and "Dropout" in cause["says"]
    assert cause["counts"]["layers"][0]["seed"] == 1
    assert "same random mask" in cause["fix"] and "--random-layers off" in cause["fix"]
    assert smtrain.check(spec, steps=5, random_layers="off").equivalent


def test_smtrain_tf_fit_is_checked_and_a_model_built_outside_the_scope_is_the_cause(
        digits: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SMTRAIN_DEMO_DATA", str(digits))
    monkeypatch.setenv("SMTRAIN_DEMO_OUTPUT", str(tmp_path / "out"))
    ported = smtrain.check(ROOT / "configs" / "own-script-helper.yaml", steps=5)
    assert ported.equivalent and ported.program == "own", ported.to_dict()["causes"]

    # One host (MirroredStrategy can be made late; MultiWorkerMirrored must come first, which fails plainly).
    spec = _spec(tmp_path, digits, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 1, "max_run": "15m"},
                                    "code": {"source_dir": str(CODE), "entry_point": "outside_scope.py"}})
    result = smtrain.check(spec, steps=3)
    cause = _cause(result)
    assert cause["kind"] == "scope" and "not created under the job's strategy" in cause["says"], cause
    assert "with smtrain_tf.strategy().scope():" in cause["fix"]


def test_an_own_script_scaling_its_rate_and_batch_for_the_replicas_is_equivalent(digits: Path, tmp_path: Path) -> None:
    spec = _spec(tmp_path, digits, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2, "max_run": "15m"},
                                    "code": {"source_dir": str(CODE), "entry_point": "helper_scaled.py"}})
    result = smtrain.check(spec, steps=5)
    assert result.equivalent, result.to_dict()["causes"]
    assert result.to_dict()["one_device"] == {"stands_for": 2, "global_batch": 64,
                                              "learning_rate": pytest.approx(0.002)}


def test_a_hand_written_loop_cannot_be_checked(digits: Path, tmp_path: Path, own_temp: Path) -> None:
    # (digits_keras.py reads both channels: validate refuses the job without its validation channel.)
    spec = _spec(tmp_path, digits, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2, "max_run": "15m"},
                                    "code": {"source_dir": str(ROOT / "configs" / "code"),
                                             "entry_point": "digits_keras.py"},
                                    "inputs": {"train": str(digits / "train"),
                                               "validation": str(digits / "validation")}})
    with pytest.raises(CannotCheckError) as caught:
        smtrain.check(spec)
    assert caught.value.code == 2
    assert "code.wrap: true" in str(caught.value) and "smtrain_tf.fit" in str(caught.value)
    assert _work_dirs(own_temp) == []  # refused before anything ran


def test_submit_check_sends_nothing_when_not_equivalent_and_force_sends(digits: Path, tmp_path: Path,
                                                                       aws: MotoServer) -> None:
    # The spec reads s3:// data, which the check does not download: --data gives it a local sample.
    spec = live_spec(tmp_path, {"name": "check-me", "compute": {"instance_type": "ml.g5.12xlarge", "nodes": 1},
                                "code": {"source_dir": str(CODE)},
                                "training": {"model": "nets:batch_norm", "batch_size_per_replica": 32}})
    env = aws.env(tmp_path, TMPDIR=str(tmp_path / "tmp"))
    args = ("submit", str(spec), "--check", "--check-steps", "2", "--no-quota-check")
    refused = run_cli(*args, env=env)
    assert refused.returncode == 2 and "--data train=./sample" in refused.stderr, refused.stderr
    assert aws.jobs() == []

    stopped = run_cli(*args, "--data", f"train={digits / 'train'}", env=env)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert "check check-me: not equivalent, from step 1" in stopped.stderr
    assert "cause         per-replica statistics" in stopped.stderr
    assert "nothing was sent" in stopped.stderr and aws.jobs() == []

    forced = run_cli(*args, "--data", f"train={digits / 'train'}", "--force", "-o", "json", env=env)
    assert forced.returncode == 0, forced.stdout + forced.stderr
    assert "sending it anyway (--force)" in forced.stderr
    assert aws.jobs() == [json.loads(forced.stdout)["job_name"]]
    assert json.loads(forced.stdout)["check"]["equivalent"] is False  # what the check found travels with the job


def test_sigterm_during_the_planned_run_is_an_interrupt_not_a_verdict(digits: Path, tmp_path: Path,
                                                                      own_temp: Path) -> None:
    """A CI runner cancelling `smtrain check` sends SIGTERM: the check ends as Ctrl-C ends it (exit 143,
    "interrupted"), its work directory removed, its processes gone, and no verdict about the job."""
    import os
    import signal
    import subprocess
    import sys
    import time

    spec = _wrapped(tmp_path, digits)
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    proc = subprocess.Popen([sys.executable, "-m", "smtrain", "check", str(spec), "--check-steps", "400"],
                            cwd=ROOT, env={**env, "TMPDIR": str(own_temp)}, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    try:
        said = []
        for line in proc.stderr:  # the check says when the planned run starts
            said.append(line)
            if line.startswith("check: the planned layout"):
                break
        else:
            pytest.fail("".join(said))
        time.sleep(3)  # its hosts are up and training
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 143, err[-3000:]
    assert err.rstrip().endswith("interrupted (SIGTERM)"), err[-3000:]
    assert "equivalent" not in out + err and "cannot check" not in out + err
    assert _work_dirs(own_temp) == []
