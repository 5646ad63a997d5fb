"""`smtrain tune` and the lifecycle commands on tuning jobs, against the live moto server.

The commands run in this process (click's runner) over real HTTP to the server: the SDK is imported
once for the module. What moto lacks for tuning (trials, Stop, ListTrainingJobsForHyperParameterTuningJob,
status changes, the received body) comes from tests/support/moto_tuning.py.
"""

from __future__ import annotations

import json
import re
import signal
import threading
from pathlib import Path
from typing import Any

import pytest

from smtrain.render.service_model import check_request
from tests.sagemaker.test_lifecycle import JOB_KEYS
from tests.spec.inprocess import run
from tests.support import moto_server
from tests.support.cli_runner import read_until, running_smtrain
from tests.support.moto_server import BUCKET, THROTTLE, Fault, MotoServer, live_spec
from tests.support.moto_tuning import add_trial, set_trial, set_tuning_status

TUNING = {"objective": "validation:accuracy", "max_jobs": 4, "max_parallel_jobs": 2,
          "ranges": {"training.learning_rate": {"min": 0.0001, "max": 0.01, "scaling": "logarithmic"},
                     "training.batch_size_per_replica": {"values": [32, 64]},
                     "training.epochs": {"min": 2, "max": 6}}}
TUNING_KEYS = {"strategy", "objective", "max_jobs", "max_parallel_jobs", "early_stopping", "trials",
               "objective_status", "best", "trial_jobs"}
TRIAL_KEYS = {"name", "status", "objective", "objective_status", "hyperparameters", "failure_reason"}
NAME_RE = re.compile(r"^test-job-\d{6}-\d{6}$")


def _spec(tmp_path: Path, **changes: Any) -> Path:
    return live_spec(tmp_path, {"tensorflow": {"version": "2.21"}, "tags": {"team": "ml"},
                                "tuning": {**TUNING, **changes}})


def _json(result: Any) -> Any:
    assert result.code == 0, result.output
    return json.loads(result.stdout)


def _renamed(value: Any, old: str, new: str) -> Any:
    return json.loads(json.dumps(value).replace(old, new))


def _tune(server: MotoServer, tmp_path: Path, *args: str) -> Any:
    return run("tune", *args, env=server.env(tmp_path))


def test_the_server_receives_the_dry_run_request(aws: MotoServer, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    dry = _json(_tune(aws, tmp_path, str(spec), "--dry-run", "--job-name", "dry-name", "-o", "json"))
    assert dry["tuning_job_name"] == "dry-name"
    assert aws.control.calls == [] and aws.control.tuning_requests == []  # offline: nothing reached the server
    # The dry run holds to every limit of botocore's model of the operation.
    assert check_request(dry["request"], "CreateHyperParameterTuningJob") == []

    created = _json(_tune(aws, tmp_path, str(spec), "-o", "json"))
    name = created["tuning_job_name"]
    assert NAME_RE.match(name) and len(name) <= 32
    assert created["status"] == "InProgress" and created["upload"]["uploaded"] is True
    assert created["upload"]["sha256"] == dry["upload"]["sha256"]
    assert created["commands"]["status"] == f"smtrain status {name}"
    # Names aside (the job's, and where the SDK puts it: sagemaker_job_name, model_dir), the same request.
    [received] = aws.control.tuning_requests
    assert received == _renamed(dry["request"], "dry-name", name)
    config = received["HyperParameterTuningJobConfig"]
    assert config["HyperParameterTuningJobObjective"] == {"Type": "Maximize", "MetricName": "validation:accuracy"}
    assert config["ParameterRanges"]["CategoricalParameterRanges"] == [
        {"Name": "batch_size_per_replica", "Values": ['"32"', '"64"']}]
    assert config["ParameterRanges"]["IntegerParameterRanges"] == [
        {"Name": "epochs", "MinValue": "2", "MaxValue": "6", "ScalingType": "Auto"}]
    static = received["TrainingJobDefinition"]["StaticHyperParameters"]
    assert not {"learning_rate", "batch_size_per_replica", "epochs"} & set(static)
    assert static["optimizer"] == '"adam"'
    assert received["Tags"] == [{"Key": "team", "Value": "ml"}]
    # The bundle went where the dry run said, once, and the tuning job points the trials there.
    key = f"out/source/{dry['upload']['sha256']}/sourcedir.tar.gz"
    assert [o["Key"] for o in aws.client("s3").list_objects_v2(Bucket=BUCKET)["Contents"]] == [key]
    assert static["sagemaker_submit_directory"] == json.dumps(f"s3://{BUCKET}/{key}")


def test_the_dry_run_needs_no_credentials(tmp_path: Path) -> None:
    spec = live_spec(tmp_path, {"tuning": TUNING})
    bare = {name: None for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                                    "AWS_ENDPOINT_URL", "AWS_PROFILE")}
    result = run("tune", str(spec), "--dry-run", env={**bare, "AWS_EC2_METADATA_DISABLED": "true"}, home=tmp_path)
    assert result.code == 0, result.output
    assert result.stdout.startswith("Dry run: nothing was sent. CreateHyperParameterTuningJob test-job-")


def test_a_spec_for_local_runs_is_refused_at_its_fields_with_the_local_command(tmp_path: Path) -> None:
    # The demo's tuning spec names places on this machine: a dry run says so at each field, not at code.source_dir.
    spec = live_spec(tmp_path, {"output": "out", "inputs": {"train": "data/train"}, "tuning": TUNING})
    result = run("tune", str(spec), "--dry-run", env={})
    assert result.code == 2 and result.stdout == ""
    lines = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert [line.split(": ")[2] for line in lines] == ["inputs.train.uri", "output"], lines
    assert all("run the spec with `tune --local`" in line for line in lines)


def test_a_taken_name_and_a_throttled_create(aws: MotoServer, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    aws.control.inject("CreateHyperParameterTuningJob", THROTTLE)  # sent again after a back-off
    first = _tune(aws, tmp_path, str(spec), "--job-name", "taken")
    assert first.code == 0, first.output
    assert "created tuning job taken in us-east-1" in first.stdout and "status  smtrain status taken" in first.stdout
    assert len(aws.control.tuning_requests) == 2
    again = _tune(aws, tmp_path, str(spec), "--job-name", "taken")
    assert again.code == 4
    assert "a tuning job named taken already exists in us-east-1: pick another --job-name" in again.stderr
    assert len(aws.control.tuning_requests) == 2  # refused before the upload and the create


def test_a_lost_answer_makes_one_tuning_job(aws: MotoServer, tmp_path: Path) -> None:
    # The create is done, its answer comes after the client's read timeout: smtrain asks, finds the job, says so.
    aws.control.inject("CreateHyperParameterTuningJob", Fault(delay_after=3))
    env = aws.env(tmp_path, SMTRAIN_API_TIMEOUT="1")
    created = _json(run("tune", str(_spec(tmp_path)), "--job-name", "lost", "-o", "json", env=env))
    assert created["tuning_job_name"] == "lost" and created["arn"].endswith("hyper-parameter-tuning-job/lost")
    assert len(aws.control.tuning_requests) == 1
    assert list(moto_server._backend().hyper_parameter_tuning_jobs) == ["lost"]


def test_the_sdks_own_hyperparameters_count_toward_the_100(aws: MotoServer, tmp_path: Path) -> None:
    # 85 of the script's own + 12 tuned pass the plan (97); with the SDK's static ones the request has over 100.
    code = tmp_path / "code"
    code.mkdir()
    (code / "train.py").write_text("print('hi')\n")
    spec = live_spec(tmp_path, {"code": {"source_dir": "code", "entry_point": "train.py"},
                                "hyperparameters": {f"h{i}": i for i in range(85)},
                                "tuning": {"objective": "validation:accuracy", "ranges": {
                                    f"hyperparameters.t{i}": {"min": 1, "max": 2} for i in range(12)}}})
    assert run("plan", str(spec), env=aws.env(tmp_path)).code == 0
    result = _tune(aws, tmp_path, str(spec), "--dry-run")
    assert result.code == 2 and "hyperparameters, static and tuned together: SageMaker takes at most 100" in \
        result.stderr, result.output


def test_the_parallel_trials_must_fit_the_quota(aws: MotoServer, tmp_path: Path) -> None:
    # max_parallel_jobs 2 x 1 ml.g5.xlarge: a quota of 1 holds one trial, not two; nothing is uploaded or created.
    aws.control.quotas.set("ml.g5.xlarge for training job usage", 1)
    result = _tune(aws, tmp_path, str(_spec(tmp_path)))
    assert result.code == 5, result.output
    assert aws.control.tuning_requests == [] and "Contents" not in aws.client("s3").list_objects_v2(Bucket=BUCKET)
    assert _tune(aws, tmp_path, str(_spec(tmp_path)), "--no-quota-check", "-o", "json").code == 0


def test_bad_names_are_refused_before_anything_runs(aws: MotoServer, tmp_path: Path) -> None:
    spec = _spec(tmp_path)
    result = _tune(aws, tmp_path, str(spec), "--job-name", "x" * 33)
    assert result.code == 2 and "1-32 letters, digits and hyphens" in result.stderr
    assert aws.control.calls == []


def _created(aws: MotoServer, tmp_path: Path, name: str = "tune-a") -> str:
    _json(_tune(aws, tmp_path, str(_spec(tmp_path)), "--job-name", name, "-o", "json"))
    return name


def _status(aws: MotoServer, tmp_path: Path, name: str) -> tuple[int, dict[str, Any]]:
    result = run("status", name, "-o", "json", env=aws.env(tmp_path))
    return result.code, json.loads(result.stdout)


def test_status_shows_trials_the_best_one_and_exit_codes(aws: MotoServer, tmp_path: Path) -> None:
    name = _created(aws, tmp_path)
    code, info = _status(aws, tmp_path, name)
    assert code == 0 and info["status"] == "InProgress" and info["kind"] == "tuning"
    assert set(info) == JOB_KEYS | {"kind", "tuning"}
    assert set(info["tuning"]) == TUNING_KEYS and info["secondary_status"] == "0 of 4 trials ended"
    assert info["tuning"]["best"] is None and info["tuning"]["trials"]["total"] == 0
    assert info["instance_type"] == "ml.g5.xlarge"
    assert "#/hyper-tuning-jobs/tune-a" in info["console_url"]

    good = add_trial(aws, name, {"learning_rate": "0.003", "batch_size_per_replica": '"64"', "epochs": "4"},
                     status="Completed", objective=0.93)
    worse = add_trial(aws, name, {"learning_rate": "0.0002", "batch_size_per_replica": '"32"', "epochs": "2"},
                      status="Completed", objective=0.81)
    failed = add_trial(aws, name, {"learning_rate": "0.009", "batch_size_per_replica": '"32"', "epochs": "6"},
                       status="Failed", failure_reason="AlgorithmError: out of memory")
    running = add_trial(aws, name, {"learning_rate": "0.001", "batch_size_per_replica": '"64"', "epochs": "3"})
    aws.job(good).model_artifacts = {"S3ModelArtifacts": f"s3://{BUCKET}/out/{good}/output/model.tar.gz"}
    code, info = _status(aws, tmp_path, name)
    tuning = info["tuning"]
    assert info["secondary_status"] == "3 of 4 trials ended"
    assert tuning["trials"] == {"completed": 2, "in_progress": 1, "stopped": 0, "retryable_error": 0,
                                "failed": 1, "total": 4}
    assert tuning["objective"] == {"metric": "validation:accuracy", "type": "Maximize"}
    best = tuning["best"]
    assert best["name"] == good and best["objective"] == 0.93
    # What the program got: the JSON text decoded ("64" for a categorical value).
    assert best["hyperparameters"] == {"learning_rate": 0.003, "batch_size_per_replica": "64", "epochs": 4}
    assert best["model_artifacts"] == info["model_artifacts"] == f"s3://{BUCKET}/out/{good}/output/model.tar.gz"
    assert [t["name"] for t in tuning["trial_jobs"]][:2] == [good, worse]  # best first, then the rest
    assert {t["name"] for t in tuning["trial_jobs"]} == {good, worse, failed, running}
    assert all(set(t) == TRIAL_KEYS for t in tuning["trial_jobs"])

    text = run("status", name, env=aws.env(tmp_path))
    assert text.code == 0
    assert re.search(r"trials\s+4: 2 completed, 1 in progress, 1 failed", text.stdout)
    assert re.search(rf"best\s+{good}", text.stdout) and "objective   0.93" in text.stdout
    assert "batch_size_per_replica=64, epochs=4, learning_rate=0.003" in text.stdout

    # A trial is an ordinary training job: status takes its name as before.
    code, trial = _status(aws, tmp_path, failed)
    assert code == 1 and "kind" not in trial and trial["failure_reason"] == "AlgorithmError: out of memory"

    set_trial(aws, name, running, status="Completed", objective=0.95)
    set_tuning_status(aws, name, "Completed")
    code, info = _status(aws, tmp_path, name)
    assert code == 0 and info["tuning"]["best"]["name"] == running
    set_tuning_status(aws, name, "Failed", failure_reason="All training jobs failed")
    code, info = _status(aws, tmp_path, name)
    assert code == 1 and info["failure_reason"] == "All training jobs failed"
    set_tuning_status(aws, name, "Stopped")
    assert _status(aws, tmp_path, name)[0] == 3


def test_minimize_puts_the_lowest_objective_first(aws: MotoServer, tmp_path: Path) -> None:
    spec = _spec(tmp_path, objective="validation:loss")
    _json(_tune(aws, tmp_path, str(spec), "--job-name", "tune-loss", "-o", "json"))
    high = add_trial(aws, "tune-loss", {"epochs": "2"}, status="Completed", objective=0.9)
    low = add_trial(aws, "tune-loss", {"epochs": "5"}, status="Completed", objective=0.2)
    info = _status(aws, tmp_path, "tune-loss")[1]["tuning"]
    assert info["objective"]["type"] == "Minimize"
    assert info["best"]["name"] == low and [t["name"] for t in info["trial_jobs"]] == [low, high]


def test_list_wait_stop_and_logs(aws: MotoServer, tmp_path: Path) -> None:
    env = aws.env(tmp_path)
    first, second = _created(aws, tmp_path, "tune-one"), _created(aws, tmp_path, "tune-two")
    listed = _json(run("list", "--tuning", "-o", "json", env=env))
    assert [j["name"] for j in listed["jobs"]] == [second, first]
    assert all(j["kind"] == "tuning" and j["status"] == "InProgress" for j in listed["jobs"])
    assert listed["jobs"][0]["tuning"]["strategy"] == "Bayesian"
    assert _json(run("list", "-o", "json", env=env))["jobs"] == []  # training jobs: none
    table = run("list", "--tuning", env=env)
    assert table.code == 0 and "tune-one" in table.stdout and "tune-two" in table.stdout

    # logs: no trial yet, then the newest trial's, then the best trial's; each line names the trial.
    none_yet = run("logs", first, env=env)
    assert none_yet.code == 4 and "has started no training job yet" in none_yet.stderr
    early = add_trial(aws, first, {"epochs": "2"}, status="Completed", objective=0.7)
    late = add_trial(aws, first, {"epochs": "3"})
    aws.put_logs(early, "algo-1", ["epoch=1 step=10 loss=0.5 val_accuracy=0.7"])
    aws.put_logs(late, "algo-1", ["epoch=1 step=10 loss=0.9"])
    logs = run("logs", first, env=env)
    assert logs.code == 0 and f"{early}/algo-1" in logs.stdout and "val_accuracy=0.7" in logs.stdout
    assert "loss=0.9" not in logs.stdout

    set_tuning_status(aws, second, "Completed")
    assert run("wait", second, env=env).code == 0

    stopped = run("stop", first, "-o", "json", env=env)
    assert _json(stopped)["status"] == "Stopping"
    assert "stopping tune-one" in stopped.stderr
    again = run("stop", second, env=env)  # ended: nothing to stop
    assert again.code == 0 and "had already ended (Completed)" in again.stderr
    set_tuning_status(aws, first, "Stopped")
    assert run("wait", first, env=env).code == 3


def test_tune_wait_follows_the_tuning_job_to_its_end(aws: MotoServer, tmp_path: Path) -> None:

    def finish() -> None:  # once the command has created the job, the test ends it (moto never would)
        aws.control.wait_created("tune-wait")
        add_trial(aws, "tune-wait", {"epochs": "3"}, status="Completed", objective=0.9)
        set_tuning_status(aws, "tune-wait", "Completed")

    helper = threading.Thread(target=finish)
    helper.start()
    result = _tune(aws, tmp_path, str(_spec(tmp_path)), "--job-name", "tune-wait", "--wait", "-o", "json")
    helper.join(60)
    assert not helper.is_alive()
    data = _json(result)
    assert data["status"] == "Completed" and data["job"]["kind"] == "tuning"
    assert data["job"]["tuning"]["best"]["objective"] == 0.9


def test_metrics_of_a_tuning_job_are_its_best_trials(aws: MotoServer, tmp_path: Path) -> None:
    name = _created(aws, tmp_path, "tune-m")
    add_trial(aws, name, {"epochs": "2"}, status="Completed", objective=0.5)
    best = add_trial(aws, name, {"epochs": "4"}, status="Completed", objective=0.8)
    assert _json(run("metrics", name, "-o", "json", env=aws.env(tmp_path)))["job"] == best


def test_unknown_names_and_tensorboard(aws: MotoServer, tmp_path: Path) -> None:
    env = aws.env(tmp_path)
    result = run("status", "no-such-job", env=env)
    assert result.code == 4
    assert "no training job named no-such-job in us-east-1 (check the name, or --region)" in result.stderr
    name = _created(aws, tmp_path, "tune-tb")
    tensorboard = run("tensorboard", name, "--no-launch", env=env)
    assert tensorboard.code == 2 and "is a tuning job" in tensorboard.stderr


def test_a_training_job_keeps_its_name_and_calls(aws: MotoServer, tmp_path: Path) -> None:
    # A training job is described exactly as before: one DescribeTrainingJob, no tuning call.
    moto_server.create_job(aws, "plain-job")
    before = aws.control.count("DescribeTrainingJob")
    code, info = _status(aws, tmp_path, "plain-job")
    assert code == 0 and "kind" not in info and aws.control.count("DescribeTrainingJob") == before + 1


@pytest.mark.parametrize("strategy", ["hyperband", "grid"])
def test_strategies_reach_the_request(aws: MotoServer, tmp_path: Path, strategy: str) -> None:
    changes: dict[str, Any] = {"strategy": strategy}
    if strategy == "grid":
        changes.update(max_jobs=None, ranges={"training.batch_size_per_replica": {"values": [32, 64]},
                                              "training.optimizer": {"values": ["adam", "sgd"]}})
    else:
        changes["ranges"] = {"training.learning_rate": {"min": 0.001, "max": 0.1}}
    spec = live_spec(tmp_path, {"tensorflow": {"version": "2.21"}, "training": {"epochs": 9},
                                "tuning": {k: v for k, v in {**TUNING, **changes}.items() if v is not None}})
    request = _json(_tune(aws, tmp_path, str(spec), "--dry-run", "-o", "json"))["request"]
    config = request["HyperParameterTuningJobConfig"]
    assert check_request(request, "CreateHyperParameterTuningJob") == []
    if strategy == "hyperband":
        assert config["Strategy"] == "Hyperband"
        assert config["StrategyConfig"] == {"HyperbandStrategyConfig": {"MinResource": 1, "MaxResource": 9}}
    else:
        assert config["Strategy"] == "Grid" and config["ResourceLimits"]["MaxNumberOfTrainingJobs"] == 4
        assert config["ParameterRanges"]["CategoricalParameterRanges"][1] == {
            "Name": "optimizer", "Values": ['"adam"', '"sgd"']}


def test_sigterm_while_tune_waits_leaves_the_tuning_job_running_and_says_how_to_follow(aws: MotoServer,
                                                                                      tmp_path: Path) -> None:
    with running_smtrain("tune", str(_spec(tmp_path)), "--job-name", "tune-term", "--wait",
                         env=aws.env(tmp_path)) as proc:
        read_until(proc.stderr, "tune-term: InProgress")  # in its wait: it has described the tuning job
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=30)
    assert proc.returncode == 143, err
    assert "tune-term keeps running; reattach with: smtrain wait tune-term" in err
    assert err.rstrip().endswith("interrupted (SIGTERM)") and "Traceback" not in err, err
    described = aws.client("sagemaker").describe_hyper_parameter_tuning_job(HyperParameterTuningJobName="tune-term")
    assert described["HyperParameterTuningJobStatus"] == "InProgress"
