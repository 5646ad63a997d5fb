"""The local backend with a stand-in entry point (no TensorFlow): bundle, layout, supervision, records.

Each test runs real processes, ended with SIGKILL; none is left behind (checked).
"""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import textwrap
import time
from pathlib import Path

import pytest

from smtrain import exit_codes
from smtrain.bundle.request import make_request
from smtrain.errors import UserError
from smtrain.jobs import JobInfo
from smtrain.local.backend import LocalBackend, local_request
from smtrain.local.records import STOP_FILE
from smtrain.local.request import render_local
from smtrain.sagemaker import submit as submission
from tests.local.support import Background, alive, kill_all, make_plan, pids_of
from tests.support import ROOT, like_a_terminal

FAST_GRACE = 1.0


def run_job(tmp_path: Path, changes: dict | None = None, *, name: str = "local-test-1", grace: float = FAST_GRACE,
            **kwargs: object) -> tuple[LocalBackend, JobInfo, str]:
    plan = make_plan(tmp_path, changes)
    backend = LocalBackend(tmp_path / "home")
    stream = io.StringIO()
    job = backend.run(local_request(plan, name), stream=stream, grace=grace, **kwargs)
    return backend, job, stream.getvalue()


def env_dumps(backend: LocalBackend, name: str, host: str) -> list[dict]:
    data = backend.store.job_dir(name) / "hosts" / host / "output" / "data"
    return [json.loads(p.read_text()) for p in sorted(data.glob("env-*.json"))]


def test_same_bundle_and_code_location_as_a_real_submission(tmp_path: Path) -> None:
    s3_plan = make_plan(tmp_path / "a", {"output": "s3://my-bucket/out"})
    real = make_request(s3_plan, "job-1")
    local = local_request(s3_plan, "job-1")
    assert local.bundle.sha256 == real.bundle.sha256 and local.bundle.data == real.bundle.data
    assert local.source_uri == real.source_uri
    here = local_request(make_plan(tmp_path / "a"), "job-1")  # same code, output a local directory
    assert here.bundle.sha256 == real.bundle.sha256
    assert here.source_uri == str(tmp_path / "a" / "out" / "source" / real.bundle.sha256 / "sourcedir.tar.gz")


def test_rendered_request_is_the_dry_run_s_request_with_local_places(tmp_path: Path) -> None:
    # One renderer for both backends: a local run's request is what `submit --dry-run` shows for the same job
    # with S3 places, but the places smtrain/local/request.py documents as this machine's (the bundle's path,
    # the output and model_dir under it, the channels as the spec names them; no TensorBoard upload).
    changes = {"compute": {"nodes": 2}, "distribution": {"strategy": "multi_worker_mirrored"},
               "inputs": {"train": "data/train"}, "hyperparameters": {"mode": "ok"}, "environment": {"A": "1"},
               "tags": {"team": "ml"}, "checkpoints": "s3://bkt/ck"}
    (tmp_path / "data" / "train").mkdir(parents=True)
    request = local_request(make_plan(tmp_path, changes), "job-1")
    local = render_local(request)
    twin = make_plan(tmp_path, {**changes, "output": "s3://bkt/out", "inputs": {"train": "s3://bkt/train"}})
    real = submission.dry_run(twin, "job-1")["request"]
    out, sha = tmp_path / "out", request.bundle.sha256
    hps, real_hps = local["HyperParameters"], real["HyperParameters"]
    assert json.loads(hps["sagemaker_submit_directory"]) == str(out / "source" / sha / "sourcedir.tar.gz")
    assert json.loads(real_hps["sagemaker_submit_directory"]) == f"s3://bkt/out/source/{sha}/sourcedir.tar.gz"
    assert (json.loads(hps["model_dir"]), real_hps["model_dir"]) == (str(out / "job-1" / "model"),
                                                                     '"s3://bkt/out/job-1/model"')
    assert local["OutputDataConfig"] == {"S3OutputPath": str(out)}
    assert local["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] == "data/train"
    assert "TensorBoardOutputConfig" not in local and "TensorBoardOutputConfig" in real
    # Those places put back, the very request the dry run shows: same fields, same values, same order.
    placed = json.loads(json.dumps(local))
    placed["HyperParameters"].update(sagemaker_submit_directory=real_hps["sagemaker_submit_directory"],
                                     model_dir=real_hps["model_dir"])
    placed["OutputDataConfig"] = real["OutputDataConfig"]
    placed["InputDataConfig"][0]["DataSource"]["S3DataSource"]["S3Uri"] = "s3://bkt/train"
    placed["TensorBoardOutputConfig"] = real["TensorBoardOutputConfig"]
    assert placed == real
    assert list(placed["HyperParameters"]) == list(real_hps)
    assert [k for k in placed if k != "TensorBoardOutputConfig"] == [k for k in real if k != "TensorBoardOutputConfig"]


@pytest.mark.parametrize("output", ["out", "s3://bkt/out"])
def test_a_local_request_under_network_isolation_has_no_code_channel(tmp_path: Path, output: str) -> None:
    # SageMaker gets the code as a channel of the bundle's S3 key; a local run uploads nothing and unpacks the
    # bundle into each host: a code channel would send it looking for a bundle that is not there.
    (tmp_path / "data" / "train").mkdir(parents=True)
    changes = {"inputs": {"train": "data/train"}, "output": output, "network": {"isolation": True}}
    plan = make_plan(tmp_path, changes)
    local = render_local(local_request(plan, "job-1"))
    assert [c["ChannelName"] for c in local["InputDataConfig"]] == ["train"]
    assert local["EnableNetworkIsolation"] is True
    real = submission.dry_run(make_plan(tmp_path, {**changes, "output": "s3://bkt/out",
                                                   "inputs": {"train": "s3://bkt/train"}}), "job-1")["request"]
    assert [c["ChannelName"] for c in real["InputDataConfig"]] == ["train", "code"]


def test_two_hosts_layout_config_files_environment_and_artifacts(tmp_path: Path) -> None:
    (tmp_path / "data" / "train").mkdir(parents=True)
    (tmp_path / "data" / "train" / "part-0.npz").write_bytes(b"x")
    backend, job, text = run_job(tmp_path, {
        "compute": {"nodes": 2, "instance_type": "ml.g5.12xlarge"}, "distribution": {"strategy": "multi_worker_mirrored"},
        "inputs": {"train": "data/train"}, "environment": {"MY_SETTING": "on"}})
    assert job.status == "Completed", text
    assert job.backend == "local" and job.instance_count == 2 and job.instance_type == "ml.g5.12xlarge"
    job_dir = backend.store.job_dir(job.name)
    tf_configs = []
    for index, host in enumerate(["algo-1", "algo-2"]):
        base = job_dir / "hosts" / host
        for sub in ("input/config", "input/data/train", "model", "output/data", "checkpoints", "code"):
            assert (base / sub).is_dir(), sub
        assert (base / "code" / "smtrain_entry.py").is_file() and (base / "code" / "standin.py").is_file()
        config = base / "input" / "config"
        hps = json.loads((config / "hyperparameters.json").read_text())
        assert all(isinstance(v, str) for v in hps.values())  # JSON-encoded, as SageMaker writes them
        assert hps["sagemaker_multi_worker_mirrored_strategy_enabled"] == "true"
        assert hps["sagemaker_program"] == '"standin.py"' and "cpu_replicas" not in hps
        resources = json.loads((config / "resourceconfig.json").read_text())
        assert resources["current_host"] == host and resources["hosts"] == ["algo-1", "algo-2"]
        assert resources["current_instance_type"] == "ml.g5.12xlarge" and resources["network_interface_name"] == "lo"
        assert json.loads((config / "inputdataconfig.json").read_text()) == {
            "train": {"TrainingInputMode": "File", "S3DistributionType": "FullyReplicated", "RecordWrapperType": "None"}}
        assert (base / "input" / "data" / "train" / "part-0.npz").read_bytes() == b"x"
        [dump] = env_dumps(backend, job.name, host)
        env = dump["env"]
        assert env["SM_CURRENT_HOST"] == host and env["SM_NUM_GPUS"] == "0" and env["MY_SETTING"] == "on"
        assert env["SM_MODEL_DIR"] == str(base / "model") and env["SAGEMAKER_BASE_DIR"] == str(base)
        assert env["SM_CHANNEL_TRAIN"] == str(base / "input" / "data" / "train")
        # What the CPU stands in for reaches smtrain_tf through the environment: an own script's arguments stay its
        # own. MultiWorkerMirrored on a CPU worker has one device: no split (smtrain.local.replica_layout).
        assert env["SMTRAIN_LOCAL_GPUS"] == "4 x A10G" and "SMTRAIN_CPU_REPLICAS" not in env
        assert "cpu_replicas" not in json.loads(env["SM_HPS"])
        assert dump["cwd"] == str(base / "code")
        assert "--cpu_replicas" not in dump["argv"]
        tf = json.loads(env["TF_CONFIG"])
        assert tf["task"] == {"type": "worker", "index": index}
        tf_configs.append(tf)
    workers = tf_configs[0]["cluster"]["worker"]
    assert tf_configs[1]["cluster"] == tf_configs[0]["cluster"] and len(set(workers)) == 2
    assert all(w.startswith("127.0.0.1:") for w in workers)
    assert "[algo-1] standin on algo-1 task=worker:0" in text and "[algo-2] algo-2 done" in text
    with tarfile.open(job.model_artifacts) as tar:
        assert sorted(tar.getnames()) == ["algo-1.txt", "algo-2.txt"]
    output = Path(job.extra["output_artifacts"])
    assert output == tmp_path / "out" / job.name / "output" / "output.tar.gz"
    assert Path(job.model_artifacts) == output.with_name("model.tar.gz")
    with tarfile.open(output) as tar:
        assert len([n for n in tar.getnames() if n.startswith("env-")]) == 2
    assert not any(alive(pid) for pid in pids_of(backend, job.name))


def test_status_list_and_logs_have_the_sagemaker_backends_keys(tmp_path: Path) -> None:
    backend, job, _ = run_job(tmp_path, {"compute": {"nodes": 2}})
    assert backend.has(job.name) and not backend.has("another")
    info = backend.describe(job.name)
    assert set(info.to_dict()) == set(JobInfo(name="x", backend="sagemaker", status="Completed").to_dict())
    assert info.to_dict()["status"] == "Completed" and info.created and info.started and info.ended
    assert info.logs_url and info.logs_url.startswith("file://")
    assert [j.name for j in backend.list(limit=5)] == [job.name]
    assert backend.list(status="Failed") == [] and backend.list(name_contains="nothing") == []
    events = list(backend.logs(job.name, follow=False))
    assert {e.host for e in events} == {"algo-1", "algo-2"}
    assert [e.timestamp for e in events] == sorted(e.timestamp for e in events)
    assert {"host", "timestamp", "message"} == set(events[0].to_dict())
    assert any(e.message == "algo-2 done" for e in events)
    assert list(backend.logs(job.name, follow=True))[-1].timestamp == events[-1].timestamp
    assert backend.stop(job.name).status == "Completed"  # nothing to stop
    with pytest.raises(UserError) as err:
        backend.describe("no-such-job")
    assert err.value.code == exit_codes.USAGE


def test_a_failing_host_ends_the_group_quickly_with_its_reason(tmp_path: Path) -> None:
    backend, job, text = run_job(tmp_path, {
        "compute": {"nodes": 3}, "distribution": {"strategy": "multi_worker_mirrored"},
        "hyperparameters": {"fail_host": "algo-2", "reason": "unknown model 'mpl'"}})
    assert job.status == "Failed" and job.secondary_status == "Failed"
    assert job.failure_reason.startswith("AlgorithmError: unknown model 'mpl'")
    assert job.extra["failed_host"] == "algo-2" and job.extra["exit_code"] == 3
    assert "algo-2 failed (exit code 3): ending the other processes" in text
    assert not any(alive(pid) for pid in pids_of(backend, job.name))  # the SIGTERM-ignoring peers too
    assert Path(job.model_artifacts).is_file()  # SageMaker uploads what there is, failed or not


def test_a_host_that_dies_without_a_failure_file_gets_the_toolkits_reason(tmp_path: Path) -> None:
    backend, job, _ = run_job(tmp_path, {"compute": {"nodes": 2}, "hyperparameters": {"fail_host": "algo-1"}})
    assert job.status == "Failed"
    assert job.failure_reason.startswith("AlgorithmError: ExecuteUserScriptError:\nExitCode 3\nErrorMessage ")
    assert "algo-1 failing" in job.failure_reason  # the host's last lines
    failure = backend.store.job_dir(job.name) / "hosts" / "algo-1" / "output" / "failure"
    assert failure.read_text().startswith("ExecuteUserScriptError:")  # what the toolkit writes


def test_max_run_stops_the_job_as_sagemaker_does(tmp_path: Path) -> None:
    began = time.monotonic()
    backend, job, text = run_job(tmp_path, {"compute": {"nodes": 2, "max_run": 3}, "hyperparameters": {"mode": "hang"}})
    assert time.monotonic() - began >= 3  # not stopped before max_run
    assert (job.status, job.secondary_status) == ("Stopped", "MaxRuntimeExceeded")
    assert "MaxRuntimeInSeconds" in job.failure_reason
    assert not any(alive(pid) for pid in pids_of(backend, job.name))


def test_stop_from_elsewhere_ends_the_job(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "hyperparameters": {"mode": "hang"}})
    backend = LocalBackend(tmp_path / "home")
    with Background(backend, "stop-me", lambda stream: backend.run(local_request(plan, "stop-me"), stream=stream,
                                                                   grace=FAST_GRACE)) as run:
        deadline = time.monotonic() + 60
        while not (backend.has("stop-me") and backend.describe("stop-me").secondary_status == "Training"):
            assert time.monotonic() < deadline
            time.sleep(0.1)
        assert backend.stop("stop-me").status == "Stopping"
        job = run.join(30)
    assert (job.status, job.secondary_status) == ("Stopped", "Stopped")
    assert backend.describe("stop-me").status == "Stopped"
    assert not any(alive(pid) for pid in pids_of(backend, "stop-me"))


def test_logs_follow_a_running_job_until_it_ends(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "hyperparameters": {"ticks": "10"}})
    backend = LocalBackend(tmp_path / "home")
    with Background(backend, "follow", lambda stream: backend.run(local_request(plan, "follow"), stream=stream,
                                                                  grace=FAST_GRACE)) as run:
        deadline = time.monotonic() + 60
        while not backend.has("follow"):
            assert time.monotonic() < deadline
            time.sleep(0.05)
        events = list(backend.logs("follow", follow=True))
        assert run.join(30).status == "Completed"
    messages = [(e.host, e.message) for e in events]
    for host in ("algo-1", "algo-2"):
        assert [m for h, m in messages if h == host and "tick" in m] == [f"{host} tick {i}" for i in range(10)]
        assert (host, f"{host} done") in messages


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_ends_every_process(tmp_path: Path, sig: int) -> None:
    plan_dir = tmp_path / "p"
    plan_dir.mkdir()
    make_plan(plan_dir, {"compute": {"nodes": 2}, "hyperparameters": {"mode": "hang"}})  # writes the spec
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from smtrain.local.backend import LocalBackend, local_request
        from smtrain.plan.catalog_files import load_catalog
        from smtrain.plan.build import build_plan
        from smtrain.spec.model import load_spec
        plan = build_plan(load_spec({str(plan_dir / 'job.yaml')!r}), load_catalog(None, None))
        from smtrain.errors import Terminated
        try:
            LocalBackend(Path({str(tmp_path / 'home')!r})).run(local_request(plan, "ctrl-c"), stream=sys.stdout,
                                                              grace=2)
        except Terminated:
            print("terminated", flush=True)
            sys.exit(143)
        except KeyboardInterrupt:
            print("interrupted", flush=True)
            sys.exit(130)
        sys.exit(3)
    """))
    proc = subprocess.Popen([sys.executable, str(script)], cwd=ROOT, preexec_fn=like_a_terminal,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    backend = LocalBackend(tmp_path / "home")
    try:
        deadline = time.monotonic() + 60
        while not (backend.has("ctrl-c") and backend.describe("ctrl-c").secondary_status == "Training"
                   and len(backend.store.read("ctrl-c")["processes"]) == 2):
            assert time.monotonic() < deadline and proc.poll() is None
            time.sleep(0.1)
        time.sleep(0.5)
        proc.send_signal(sig)
        out, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
        if backend.has("ctrl-c"):
            kill_all(pids_of(backend, "ctrl-c"))  # only if the test failed: the run ends them itself
    if sig == signal.SIGINT:
        assert proc.returncode == 130 and "interrupted: ending every process" in out, out
    else:
        # handled as Ctrl-C is: the job recorded Stopped, then the interrupt (a Terminated) goes on to the caller
        assert proc.returncode == 143 and "smtrain received SIGTERM: ending every process" in out, out
    assert backend.describe("ctrl-c").status == "Stopped"
    assert not any(alive(pid) for pid in pids_of(backend, "ctrl-c"))


def test_parameter_server_runs_a_server_beside_each_worker(tmp_path: Path) -> None:
    backend, job, text = run_job(tmp_path, {"compute": {"nodes": 2}, "distribution": {"strategy": "parameter_server"}})
    assert job.status == "Completed", text
    names = [p["name"] for p in backend.store.read(job.name)["processes"]]
    assert names == ["algo-1/ps", "algo-1", "algo-2/ps", "algo-2"]
    tasks = {}
    for host in ("algo-1", "algo-2"):
        for dump in env_dumps(backend, job.name, host):
            tf = json.loads(dump["env"]["TF_CONFIG"])
            tasks[(host, tf["task"]["type"])] = tf
    # The entry point runs once per host; the ps tasks are bare servers (tests/local/test_conformance.py).
    assert set(tasks) == {("algo-1", "master"), ("algo-2", "worker")}
    cluster = tasks[("algo-1", "master")]["cluster"]
    assert tasks[("algo-2", "worker")]["cluster"] == cluster
    assert sorted(cluster) == ["master", "ps", "worker"] and len(cluster["ps"]) == 2


def test_a_missing_channel_fails_the_job_before_any_host_starts(tmp_path: Path) -> None:
    backend, job, _ = run_job(tmp_path, {"inputs": {"train": "file:///nonexistent/smtrain/train"}})
    assert job.status == "Failed" and job.failure_reason.startswith("ClientError: input channel 'train'")
    assert backend.store.read(job.name)["processes"] == []


def test_pipe_mode_and_a_taken_name_are_refused_before_anything_is_made(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    plan = make_plan(tmp_path, {"inputs": {"train": {"uri": "d", "mode": "Pipe"}}})
    backend = LocalBackend(tmp_path / "home")
    with pytest.raises(UserError, match="Pipe mode"):
        backend.run(local_request(plan, "pipe"))
    assert not backend.store.job_dir("pipe").exists()
    backend.store.create("taken")
    with pytest.raises(UserError, match="already exists"):
        backend.run(local_request(make_plan(tmp_path), "taken"))


def test_horovod_without_mpi4py_is_a_clear_usage_error(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, {"tensorflow": {"version": "2.12"},
                                "compute": {"nodes": 2, "instance_type": "ml.p3.16xlarge"},
                                "distribution": {"strategy": "horovod", "processes_per_host": 1}})
    backend = LocalBackend(tmp_path / "home")
    with pytest.raises(UserError) as err:
        backend.run(local_request(plan, "hvd"), python=sys.executable)
    assert err.value.code == exit_codes.USAGE
    assert "mpi4py" in str(err.value) or "mpirun" in str(err.value)
    assert not backend.store.job_dir("hvd").exists()


def test_a_job_whose_smtrain_process_died_is_reported_failed(tmp_path: Path) -> None:
    backend, job, _ = run_job(tmp_path)
    record = backend.store.read(job.name)
    record.update(status="InProgress", secondary_status="Training", ended=None,
                  supervisor={"pid": 2**22 + 12345, "start": 1})
    backend.store.write(job.name, record)
    # On a full disk (the record's temporary file is /dev/full, for real) the end is told, not recorded yet.
    full = backend.store.job_dir(job.name) / f".record.json.{os.getpid()}.tmp"
    full.symlink_to("/dev/full")
    told = backend.describe(job.name)
    assert told.status == "Failed" and "ended before the job did" in told.failure_reason
    assert backend.store.read(job.name)["status"] == "InProgress" and not full.exists() and not full.is_symlink()
    info = backend.describe(job.name)
    assert info.status == "Failed" and "ended before the job did" in info.failure_reason
    record.update(status="InProgress")
    backend.store.write(job.name, record)
    (backend.store.job_dir(job.name) / STOP_FILE).touch()
    assert backend.stop(job.name).status == "Stopped"


def test_real_entrypoint_bad_hyperparameter_fails_on_every_host_with_its_message(tmp_path: Path) -> None:
    # The bundled entrypoint checks its hyperparameters before importing TensorFlow: seconds, not
    # minutes. (validate catches an unknown model or a missing channel before any host starts.)
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "distribution": {"strategy": "multi_worker_mirrored"},
                                "training": {"data": "synthetic"}, "hyperparameters": {"num_classes": -1}},
                     standin=False)
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(local_request(plan, "bad-model"), stream=io.StringIO(), grace=FAST_GRACE)
    assert job.status == "Failed"
    assert job.failure_reason.startswith("AlgorithmError: ") and "num_classes" in job.failure_reason
    assert job.model_artifacts is None  # it saved nothing: no empty model.tar.gz that reads as a model
    assert "ExecuteUserScriptError" not in job.failure_reason  # the entrypoint's own output/failure
    assert os.path.exists(backend.store.job_dir("bad-model") / "hosts" / job.extra["failed_host"] / "output" / "failure")


def test_a_model_archive_that_cannot_be_written_fails_the_job_with_its_cause(tmp_path: Path) -> None:
    """A full disk under model.tar.gz, for real (its temporary name is /dev/full): the job is Failed with the file
    and the cause, no partial archive is left, and the record stays readable."""
    artifacts = tmp_path / "out" / "local-test-1" / "output"
    backend, job, _ = run_job(tmp_path, {"hyperparameters": {"full_file": str(artifacts / ".model.tar.gz.tmp")}})
    assert (job.status, job.secondary_status) == ("Failed", "Failed")
    assert job.failure_reason == (f"cannot write {artifacts / 'model.tar.gz'}: No space left on device (what the "
                                  f"hosts saved is still in {backend.store.hosts_dir(job.name)})")
    assert sorted(p.name for p in artifacts.iterdir()) == ["output.tar.gz"]  # no partial model.tar.gz
    assert backend.store.read(job.name)["status"] == "Failed"


def test_a_code_bundle_that_cannot_be_written_fails_the_job_with_its_cause(tmp_path: Path) -> None:
    """A full disk under the code bundle, for real (its temporary name, this process's, is /dev/full): the job is
    Failed as SageMaker fails one whose code it cannot fetch, with the file and the cause; nothing partial is
    left (was exit 70, `internal error: OSError`, and a .tmp beside the bundle; seen with `ulimit -f`)."""
    plan = make_plan(tmp_path)
    request = local_request(plan, "no-room")
    bundle = Path(request.source_uri)
    bundle.parent.mkdir(parents=True)
    (bundle.parent / f".{bundle.name}.{os.getpid()}.tmp").symlink_to("/dev/full")
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(request, stream=io.StringIO(), grace=FAST_GRACE)
    assert (job.status, job.failure_reason) == (
        "Failed", f"ClientError: cannot write the code bundle {bundle}: No space left on device")
    assert not [p for p in bundle.parent.iterdir() if bundle.name in p.name]  # no bundle, no temporary one
    assert backend.store.read("no-room")["status"] == "Failed"
