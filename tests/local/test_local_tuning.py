"""`smtrain tune --local`: the trials' values (seeded random search, grid), each trial's objective as SageMaker
reads it, a failed trial that does not stop the tuning, the table and JSON, and (slow, real TensorFlow) the
digits demo tuned to at least the untuned demo's accuracy.

The quick tests run a few-line script of their own as each trial's entry point (no TensorFlow): it prints the
entrypoint's metric lines with the value it is given, and fails when asked to.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import random
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from smtrain.local.backend import LocalBackend
from smtrain.local.demo_data import write_digits
from smtrain.local.supervise import format_log_line
from smtrain.local.trial_sampling import draw, grid_assignments, random_assignments
from smtrain.local.tuning import LocalTuning, Trial, objective_value, read_local_tuning, search
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.plan.tuning import TunedRange, TuningPlan, build_tuning_plan
from smtrain.spec.model import load_spec
from tests.local.support import alive, pids_of, spec_file
from tests.spec.inprocess import run
from tests.support import ROOT
from tests.support.cli_runner import running_smtrain

REGEX = {d["Name"]: d["Regex"] for d in metric_definitions()}
TUNING_KEYS = {"tuning_name", "backend", "status", "objective", "strategy", "requested_strategy", "seed", "created",
               "ended", "trials", "best", "notes"}
TRIAL_KEYS = {"number", "name", "status", "values", "hyperparameters", "objective", "seconds", "failure_reason"}

LR = TunedRange("training.learning_rate", "learning_rate", "continuous", 0.0001, 0.01, "Logarithmic")
BATCH = TunedRange("training.batch_size_per_replica", "batch_size_per_replica", "categorical", values=(16, 32, 64))


# -- which values the trials get ---------------------------------------------------------------------------------

def test_a_seed_gives_the_same_trials_and_another_seed_others() -> None:
    first = random_assignments([LR, BATCH], 6, seed=7)
    assert first == random_assignments([LR, BATCH], 6, seed=7)
    assert first != random_assignments([LR, BATCH], 6, seed=8)
    # a shorter search is the start of a longer one: `--set tuning.max_jobs=2` runs the first two trials
    assert random_assignments([LR, BATCH], 2, seed=7) == first[:2]


def test_logarithmic_scaling_spreads_draws_evenly_over_the_decades() -> None:
    rng = random.Random(1)
    values = [draw(LR, rng) for _ in range(3000)]
    assert all(0.0001 <= v <= 0.01 for v in values)
    below = sum(v < 0.001 for v in values) / len(values)  # 0.001 is the middle of [1e-4, 1e-2] on a log scale
    assert 0.45 < below < 0.55
    linear = TunedRange("training.learning_rate", "learning_rate", "continuous", 0.0001, 0.01, "Linear")
    assert sum(draw(linear, rng) < 0.001 for _ in range(3000)) / 3000 < 0.15


def test_reverse_logarithmic_draws_stay_below_one_and_crowd_its_top() -> None:
    momentum = TunedRange("hyperparameters.momentum", "momentum", "continuous", 0.9, 0.999, "ReverseLogarithmic")
    rng = random.Random(2)
    values = [draw(momentum, rng) for _ in range(2000)]
    assert all(0.9 <= v <= 0.999 for v in values)
    # uniform in log(1 - x): as many draws above 1 - sqrt(0.1 * 0.001) = 0.99 as below it
    assert 0.4 < sum(v > 0.99 for v in values) / len(values) < 0.6


def test_integer_ranges_include_both_bounds_and_categorical_values_come_alike() -> None:
    rng = random.Random(3)
    epochs = TunedRange("training.epochs", "epochs", "integer", 2, 5, "Linear")
    counts = {n: 0 for n in range(2, 6)}
    for _ in range(2000):
        counts[draw(epochs, rng)] += 1
    assert all(350 < c < 650 for c in counts.values()), counts
    log_epochs = TunedRange("training.epochs", "epochs", "integer", 1, 100, "Logarithmic")
    drawn = [draw(log_epochs, rng) for _ in range(2000)]
    assert min(drawn) == 1 and max(drawn) <= 100 and all(isinstance(v, int) for v in drawn)
    picked = [draw(BATCH, rng) for _ in range(3000)]
    assert all(900 < picked.count(v) < 1100 for v in (16, 32, 64))


def test_a_small_space_is_not_drawn_twice_while_it_has_untried_points() -> None:
    assert sorted(a["training.batch_size_per_replica"] for a in random_assignments([BATCH], 3, seed=0)) == [16, 32, 64]


def test_grid_runs_every_combination_once_first_range_slowest() -> None:
    optimizer = TunedRange("training.optimizer", "optimizer", "categorical", values=("adam", "sgd"))
    assert grid_assignments([optimizer, BATCH]) == [
        {"training.optimizer": o, "training.batch_size_per_replica": b} for o in ("adam", "sgd") for b in (16, 32, 64)]
    with pytest.raises(ValueError, match="categorical ranges only: training.learning_rate"):
        grid_assignments([LR, BATCH])


def _tuning_plan(tmp_path: Path, tuning: dict[str, Any], **changes: Any) -> TuningPlan:
    path = spec_file(tmp_path, {"training": {"model": "mlp", "seed": 7}, "tuning": tuning,
                                "inputs": {"train": "s3://my-bucket/train"}, **changes}, standin=False)
    loaded = load_spec(path)
    return build_tuning_plan(loaded, build_plan(loaded, load_catalog(None, None)))


@pytest.mark.parametrize("strategy", ["bayesian", "hyperband"])
def test_bayesian_and_hyperband_fall_back_to_random_with_a_note(tmp_path: Path, strategy: str) -> None:
    tp = _tuning_plan(tmp_path, {"objective": "validation:accuracy", "strategy": strategy, "max_jobs": 3,
                                 "ranges": {"training.learning_rate": {"min": 0.0001, "max": 0.01,
                                                                       "scaling": "logarithmic"}}})
    used, seed, assignments, notes = search(tp, 5)
    assert (used, seed) == ("random", 5) and assignments == random_assignments(tp.ranges, 3, 5)
    assert notes == [f"{strategy} search is SageMaker's own: --local samples at random instead (seed 5)"]


def test_grid_search_runs_the_whole_grid_and_says_what_is_sagemakers_only(tmp_path: Path) -> None:
    tp = _tuning_plan(tmp_path, {"objective": "validation:loss", "strategy": "grid", "max_parallel_jobs": 2,
                                 "early_stopping": "auto", "ranges": {
                                     "training.batch_size_per_replica": {"values": [16, 32, 64]},
                                     "training.optimizer": {"values": ["adam", "sgd"]}}})
    used, seed, assignments, notes = search(tp, 5)
    assert (used, seed, len(assignments)) == ("grid", None, 6)
    assert {(a["training.batch_size_per_replica"], a["training.optimizer"]) for a in assignments} == {
        (b, o) for b in (16, 32, 64) for o in ("adam", "sgd")}
    assert notes == ["max_parallel_jobs 2 is for SageMaker: --local runs one trial at a time",
                     "early_stopping is SageMaker's: every local trial runs to its end"]


# -- a trial's objective, as SageMaker reads it ------------------------------------------------------------------

def _write_log(log_dir: Path, host: str, lines: list[str]) -> None:
    log_dir.mkdir(parents=True, exist_ok=True)
    start = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
    (log_dir / f"{host}.log").write_text("".join(format_log_line(start + dt.timedelta(seconds=i), line)
                                                 for i, line in enumerate(lines)))


EPOCHS = [
    "config strategy=default learning_rate=0.001 metrics=accuracy",
    "progress epoch=1 step=10 loss=0.9 accuracy=0.60 examples_per_sec=100",
    "epoch=1 step=20 loss=0.8 accuracy=0.70 val_loss=0.5 val_accuracy=0.91 lr=0.001 examples_per_sec=100",
    "progress epoch=2 step=30 loss=0.4 accuracy=0.88 examples_per_sec=100",
    "epoch=2 step=40 loss=0.3 accuracy=0.90 val_loss=0.2 val_accuracy=0.95 lr=0.001 examples_per_sec=100",
    "progress epoch=3 step=50 loss=0.2 accuracy=0.93 examples_per_sec=100",
    "epoch=3 step=60 loss=0.25 accuracy=0.94 val_loss=0.3 val_accuracy=0.93 lr=0.001 examples_per_sec=100",
    "weights_sha256=00ff",
]


def test_the_objective_is_the_last_value_the_regex_reads_in_the_chiefs_log(tmp_path: Path) -> None:
    _write_log(tmp_path / "logs", "algo-1", EPOCHS)
    _write_log(tmp_path / "logs", "algo-2", ["epoch=3 step=60 loss=0.1 accuracy=0.99 val_loss=0.1 val_accuracy=0.99"])
    # SageMaker takes the last value reported, not the best: epoch 3's 0.93, not epoch 2's 0.95
    assert objective_value(tmp_path / "logs", "validation:accuracy", REGEX["validation:accuracy"]) == 0.93
    assert objective_value(tmp_path / "logs", "validation:loss", REGEX["validation:loss"]) == 0.3
    assert objective_value(tmp_path / "logs", "train:loss", REGEX["train:loss"]) == 0.25
    assert objective_value(tmp_path / "logs", "validation:accuracy", REGEX["validation:accuracy"], "algo-2") == 0.99
    assert objective_value(tmp_path / "nothing", "validation:accuracy", REGEX["validation:accuracy"]) is None


def test_validation_objectives_read_one_value_per_epoch_and_train_ones_the_progress_lines_too(tmp_path: Path) -> None:
    from smtrain.local.metric_series import matches

    lines = [(dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), line) for line in EPOCHS]
    found = matches([{"Name": n, "Regex": REGEX[n]} for n in ("validation:accuracy", "train:accuracy")], lines)
    assert [v for _, v in found["validation:accuracy"]] == [0.91, 0.95, 0.93]
    assert [v for _, v in found["train:accuracy"]] == [0.60, 0.70, 0.88, 0.90, 0.93, 0.94]


# -- the table -----------------------------------------------------------------------------------------------------

def _tuning(goal: str) -> LocalTuning:
    trials = [Trial(1, "t-001", {"training.learning_rate": 0.001, "training.batch_size_per_replica": 16}, "Completed",
                    0.95, 20.0),
              Trial(2, "t-002", {"training.learning_rate": 0.003, "training.batch_size_per_replica": 32}, "Failed",
                    0.99, 5.0, "AlgorithmError: boom"),
              Trial(3, "t-003", {"training.learning_rate": 0.0002, "training.batch_size_per_replica": 64}, "Completed",
                    0.91, 21.5)]
    return LocalTuning("t", "validation:accuracy", goal, REGEX["validation:accuracy"], "random", "bayesian", 7, trials)


def test_the_table_marks_the_best_completed_trial_by_the_goal() -> None:
    from smtrain.cli.tune_local import summary_lines, trials_table

    table = trials_table(_tuning("maximize"))
    assert table[0].split() == ["trial", "learning_rate", "batch_size_per_replica", "validation:accuracy", "status",
                                "seconds"]
    assert [line.split() for line in table[1:]] == [
        ["*", "t-001", "0.001", "16", "0.95", "Completed", "20.0"],  # a failed trial's 0.99 does not count
        ["t-002", "0.003", "32", "0.99", "Failed", "5.0"],
        ["t-003", "0.0002", "64", "0.91", "Completed", "21.5"]]
    assert _tuning("minimize").best.name == "t-003"  # type: ignore[union-attr]
    lines = summary_lines(_tuning("maximize"))
    assert "best (*)    t-001: validation:accuracy 0.95" in lines
    assert "values      learning_rate=0.001 batch_size_per_replica=16" in lines


# -- trials through the local backend, no TensorFlow -----------------------------------------------------------------

SCRIPT = '''\
import sys
argv = sys.argv[1:]
hp = {argv[i][2:]: argv[i + 1] for i in range(0, len(argv) - 1, 2) if argv[i].startswith("--")}
score = float(hp["score"])
for epoch in (1, 2):
    print(f"progress epoch={epoch} step=1 loss=0.5 accuracy=0.99", flush=True)
    print(f"epoch={epoch} step=2 loss=0.4 accuracy=0.5 val_loss=0.3 val_accuracy={score * epoch / 2}", flush=True)
if hp.get("wait") == "yes":  # stays until ended: a trial running when the tuning is cancelled
    print("waiting", flush=True)
    import time
    time.sleep(3600)
if hp.get("crash") == "yes":
    print("epoch=3 step=3 loss=0.1 accuracy=0.5 val_loss=0.1 val_accuracy=0.99", flush=True)
    sys.exit(3)
'''


def _script_spec(tmp_path: Path, ranges: dict[str, Any]) -> Path:
    src = tmp_path / "src"
    src.mkdir()
    (src / "score.py").write_text(SCRIPT)
    return spec_file(tmp_path, {"code": {"source_dir": "src", "entry_point": "score.py"},
                                "hyperparameters": {"score": 0.1}, "training": {"seed": 3},
                                "tuning": {"objective": "validation:accuracy", "strategy": "grid", "ranges": ranges}},
                     standin=False)


def test_a_failed_trial_is_recorded_and_the_tuning_goes_on_to_the_best(tmp_path: Path) -> None:
    path = _script_spec(tmp_path, {"hyperparameters.score": {"values": [0.25, 0.75]},
                                   "hyperparameters.crash": {"values": ["yes", "no"]}})
    home = tmp_path / "home"
    result = run("tune", str(path), "--local", "--job-name", "grid-run", "-o", "json", env={"SMTRAIN_HOME": str(home)})
    assert result.code == 0, result.output
    data = json.loads(result.stdout)
    assert set(data) == TUNING_KEYS and all(set(t) == TRIAL_KEYS for t in data["trials"])
    assert (data["status"], data["strategy"], data["seed"]) == ("Completed", "grid", None)
    assert [(t["name"], t["values"], t["status"], t["objective"]) for t in data["trials"]] == [
        ("grid-run-001", {"hyperparameters.score": 0.25, "hyperparameters.crash": "yes"}, "Failed", 0.99),
        ("grid-run-002", {"hyperparameters.score": 0.25, "hyperparameters.crash": "no"}, "Completed", 0.25),
        ("grid-run-003", {"hyperparameters.score": 0.75, "hyperparameters.crash": "yes"}, "Failed", 0.99),
        ("grid-run-004", {"hyperparameters.score": 0.75, "hyperparameters.crash": "no"}, "Completed", 0.75)]
    assert data["trials"][0]["failure_reason"].startswith("AlgorithmError: ")
    assert data["best"]["name"] == "grid-run-004" and data["best"]["hyperparameters"] == {"score": 0.75, "crash": "no"}
    assert data["objective"] == {"metric": "validation:accuracy", "goal": "maximize",
                                 "regex": REGEX["validation:accuracy"]}
    assert read_local_tuning("grid-run", home) == data  # the record: what -o json printed
    # each trial is a local job: status (and logs, metrics, tensorboard) work on it
    status = run("status", "grid-run-004", "-o", "json", env={"SMTRAIN_HOME": str(home)})
    assert status.code == 0 and json.loads(status.stdout)["status"] == "Completed"
    # the lines of each trial went to stderr, stdout holds the one document
    assert "trial 1/4 grid-run-001: score=0.25 crash=yes" in result.stderr
    again = run("tune", str(path), "--local", "--job-name", "grid-run", env={"SMTRAIN_HOME": str(home)})
    assert again.code == 2 and "a local tuning named grid-run (and 4 more) is already in" in again.stderr


def test_when_every_trial_fails_the_table_says_so_and_the_exit_code_is_1(tmp_path: Path) -> None:
    path = _script_spec(tmp_path, {"hyperparameters.crash": {"values": ["yes"]}})
    result = run("tune", str(path), "--local", "--job-name", "all-fail", env={"SMTRAIN_HOME": str(tmp_path / "home")})
    assert result.code == 1, result.output
    assert "local tuning all-fail: Failed, 1 trials, grid" in result.stdout
    assert "best        none: no trial completed with a validation:accuracy value" in result.stdout
    assert [line.split()[:2] for line in result.stdout.splitlines() if line.startswith("   all-fail-")] == [
        ["all-fail-001", "yes"]]


def test_sigterm_stops_the_running_trial_and_records_the_tuning_stopped(tmp_path: Path) -> None:
    path = _script_spec(tmp_path, {"hyperparameters.wait": {"values": ["yes", "no"]}})
    home = tmp_path / "home"
    with running_smtrain("tune", str(path), "--local", "--job-name", "cancelled",
                         env={"SMTRAIN_HOME": str(home)}) as proc:
        log = LocalBackend(home).store.log_dir("cancelled-001") / "algo-1.log"  # a trial's lines go to its log
        deadline = time.monotonic() + 60
        while "waiting" not in (log.read_text() if log.exists() else ""):  # the first trial's script runs
            assert time.monotonic() < deadline and proc.poll() is None, proc.stderr
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 143, err
    assert err.rstrip().endswith("interrupted (SIGTERM)") and "Traceback" not in err, err
    tuning = read_local_tuning("cancelled", home)
    assert tuning["status"] == "Stopped"
    assert [t["status"] for t in tuning["trials"]] == ["Stopped", "Pending"]
    status = run("status", "cancelled-001", "-o", "json", env={"SMTRAIN_HOME": str(home)})
    assert json.loads(status.stdout)["status"] == "Stopped"
    assert not any(alive(pid) for pid in pids_of(LocalBackend(home), "cancelled-001"))


# -- the digits demo, real TensorFlow ------------------------------------------------------------------------------

CONFIG = ROOT / "configs" / "tune-digits.yaml"
TRIALS = 2  # the seeded search's first two: enough to show the search beats the spec's own values, in ~2 minutes


@pytest.mark.slow
def test_tuning_the_digits_demo_finds_a_trial_at_least_as_good_as_the_untuned_demo(tmp_path: Path) -> None:
    write_digits(tmp_path / "digits")
    home = tmp_path / "home"
    env = {"SMTRAIN_HOME": str(home), "SMTRAIN_DEMO_DATA": str(tmp_path / "digits"),
           "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out")}
    # The untuned demo: the same spec, its own values (epochs, seed, learning rate, batch size), no tuning.
    untuned = run("submit", str(CONFIG), "--local", "--set", "tuning=null", "--job-name", "untuned", "-o", "json",
                  env=env)
    assert untuned.code == 0, untuned.output[-3000:]
    baseline = objective_value(home / "local-jobs" / "untuned" / "logs", "validation:accuracy",
                               REGEX["validation:accuracy"])
    assert baseline is not None and 0.5 < baseline < 1

    tuned = run("tune", str(CONFIG), "--local", "--set", f"tuning.max_jobs={TRIALS}", "--job-name", "digits-tuned",
                env=env)
    assert tuned.code == 0, tuned.output[-3000:]
    record = read_local_tuning("digits-tuned", home)
    assert record is not None and [t["status"] for t in record["trials"]] == ["Completed"] * TRIALS
    best = record["best"]
    assert best["objective"] >= baseline, (baseline, record["trials"])
    assert best["objective"] == max(t["objective"] for t in record["trials"])
    # The table names it: one row marked, the best's; the summary after it too.
    marked = [line.split() for line in tuned.stdout.splitlines() if line.startswith("* ")]
    assert len(marked) == 1 and marked[0][1] == best["name"], tuned.stdout
    assert math.isclose(float(marked[0][4]), best["objective"])
    assert f"best (*)    {best['name']}: validation:accuracy {best['objective']:.6g}" in tuned.stdout
