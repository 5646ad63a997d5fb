"""`smtrain tensorboard JOB` for SageMaker jobs, against the live moto server: the event files found
through DescribeTrainingJob's TensorBoardOutputConfig, downloaded with their layout, and what is said
when there are none.

Where a test needs a `tensorboard` program it puts a small stand-in on PATH (tests/support/
fake_tensorboard.py): it stands in for the real program's command line only, recording its arguments;
TensorBoard itself is not installed for the tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from smtrain.errors import UserError
from smtrain.sagemaker.event_files import _relative, default_directory
from tests.support import moto_server
from tests.support.cli_runner import smtrain
from tests.support.fake_tensorboard import bin_dir, no_tensorboard_here
from tests.support.moto_server import BUCKET, MotoServer, create_job, live_spec

moto_session = moto_server.moto_session
aws = moto_server.aws

IN_CONTAINER = "/opt/ml/output/tensorboard"
TB_PATH = f"s3://{BUCKET}/out/tensorboard"
# Event-like objects as SageMaker uploads the chief's output/tensorboard (Keras's layout).
EVENTS = {
    "train/events.out.tfevents.1700000000.algo-1.41.0.v2": b"\x18\x00train-epoch-0" * 20,
    "validation/events.out.tfevents.1700000000.algo-1.41.1.v2": b"\x18\x00val-epoch-0" * 10,
}

def job_with_tensorboard(server: MotoServer, name: str, s3_path: str = TB_PATH) -> None:
    create_job(server, name, TensorBoardOutputConfig={"S3OutputPath": s3_path, "LocalPath": IN_CONTAINER})


def put_events(server: MotoServer, job: str, events: dict[str, bytes] = EVENTS, s3_path: str = TB_PATH) -> None:
    prefix = s3_path.removeprefix(f"s3://{BUCKET}/")
    s3 = server.client("s3")
    for relative, data in events.items():
        s3.put_object(Bucket=BUCKET, Key=f"{prefix}/{job}/tensorboard-output/{relative}", Body=data)


def env_for(server: MotoServer, tmp_path: Path, *, fake: bool = False, **extra: str) -> dict[str, str]:
    """The server's environment; PATH holds the stand-in `tensorboard` or nothing at all."""
    return server.env(tmp_path, PATH=str(bin_dir(tmp_path, fake=fake)), FAKE_TENSORBOARD_RECORD=str(tmp_path / "argv.json"),
                      **extra)


def tree(directory: Path) -> dict[str, bytes]:
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*")) if p.is_file()}


def one_error_line(proc) -> str:
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


@no_tensorboard_here
def test_json_names_the_download_and_the_files_keep_their_layout(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "tb-job")
    put_events(aws, "tb-job")
    # Another job whose name starts the same: its files are not this job's.
    put_events(aws, "tb-job-2", {"train/events.out.tfevents.1.algo-1.9.0.v2": b"other"})
    aws.client("s3").put_object(Bucket=BUCKET, Key="out/tensorboard/tb-job/tensorboard-output/", Body=b"")  # a folder
    target = tmp_path / "logs"
    proc = smtrain("tensorboard", "tb-job", "--dir", str(target), "-o", "json", env=env_for(aws, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"job": "tb-job", "source": f"{TB_PATH}/tb-job/tensorboard-output/",
                                       "logdir": str(target), "files": 2, "tensorboard": None}
    assert tree(target) == EVENTS


def test_the_default_directory_is_the_users_cache(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "cached-job", s3_path=f"s3://{BUCKET}/elsewhere/tb/")
    put_events(aws, "cached-job", s3_path=f"s3://{BUCKET}/elsewhere/tb")
    proc = smtrain("tensorboard", "cached-job", "-o", "json", env=env_for(aws, tmp_path))  # HOME is tmp_path
    assert proc.returncode == 0, proc.stderr
    expected = tmp_path / ".cache" / "smtrain" / "tensorboard" / "cached-job"
    assert json.loads(proc.stdout)["logdir"] == str(expected) and tree(expected) == EVENTS
    cache = tmp_path / "xdg"
    proc = smtrain("tensorboard", "cached-job", "-o", "json", env=env_for(aws, tmp_path, XDG_CACHE_HOME=str(cache)))
    assert proc.returncode == 0, proc.stderr
    assert tree(cache / "smtrain" / "tensorboard" / "cached-job") == EVENTS


def test_downloading_again_fetches_what_grew_and_leaves_the_rest(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "growing")
    put_events(aws, "growing")
    target, env = tmp_path / "logs", env_for(aws, tmp_path)
    assert smtrain("tensorboard", "growing", "--dir", str(target), "--no-launch", env=env).returncode == 0
    kept = target / "validation" / "events.out.tfevents.1700000000.algo-1.41.1.v2"
    before = kept.stat().st_mtime_ns
    grown = {**EVENTS, "train/events.out.tfevents.1700000000.algo-1.41.0.v2": EVENTS[
        "train/events.out.tfevents.1700000000.algo-1.41.0.v2"] + b"\x18\x00train-epoch-1"}
    put_events(aws, "growing", grown)
    proc = smtrain("tensorboard", "growing", "--dir", str(target), "-o", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert tree(target) == grown and kept.stat().st_mtime_ns == before
    assert not [p for p in target.rglob("*") if p.name.startswith(".smtrain-download")]


@no_tensorboard_here
def test_text_without_tensorboard_says_where_and_how_to_get_it(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "text-job")
    put_events(aws, "text-job")
    target = tmp_path / "logs"
    proc = smtrain("tensorboard", "text-job", "--dir", str(target), env=env_for(aws, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        f"text-job: 2 TensorBoard event files from {TB_PATH}/text-job/tensorboard-output/",
        f"  downloaded to {target}",
        f"TensorBoard is not installed here: pip install 'smtrain[tensorboard]', then run tensorboard --logdir {target}"]


@no_tensorboard_here
def test_tensorboard_runs_on_the_download_and_its_exit_code_is_the_commands(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "launch-job")
    put_events(aws, "launch-job")
    target = tmp_path / "logs"
    fake = tmp_path / "bin" / "tensorboard"
    proc = smtrain("tensorboard", "launch-job", "--dir", str(target), env=env_for(aws, tmp_path, fake=True))
    assert proc.returncode == 0, proc.stderr
    assert json.loads((tmp_path / "argv.json").read_text()) == ["--logdir", str(target)]
    assert f"starting TensorBoard (Ctrl-C ends it): {fake} --logdir {target}" in proc.stdout
    (tmp_path / "argv.json").unlink()
    proc = smtrain("tensorboard", "launch-job", "--dir", str(target),
                   env=env_for(aws, tmp_path, fake=True, FAKE_TENSORBOARD_EXIT="3"))
    assert proc.returncode == 3 and (tmp_path / "argv.json").exists()


@no_tensorboard_here
@pytest.mark.parametrize("args", [["--no-launch"], ["-o", "json"]])
def test_no_launch_and_json_start_nothing(aws: MotoServer, tmp_path: Path, args: list[str]) -> None:
    job_with_tensorboard(aws, "quiet-job")
    put_events(aws, "quiet-job")
    target = tmp_path / "logs"
    proc = smtrain("tensorboard", "quiet-job", "--dir", str(target), *args, env=env_for(aws, tmp_path, fake=True))
    assert proc.returncode == 0, proc.stderr
    assert not (tmp_path / "argv.json").exists()
    command = f"{tmp_path / 'bin' / 'tensorboard'} --logdir {target}"
    if args == ["-o", "json"]:
        assert json.loads(proc.stdout)["tensorboard"] == command
    else:
        assert proc.stdout.splitlines()[-1] == f"start TensorBoard with: {command}"


def test_a_job_without_tensorboard_output_is_one_line_exit_4(aws: MotoServer, tmp_path: Path) -> None:
    create_job(aws, "no-tb")  # no TensorBoardOutputConfig: `tensorboard: false`, or not smtrain's
    proc = smtrain("tensorboard", "no-tb", "--dir", str(tmp_path / "logs"), env=env_for(aws, tmp_path))
    assert proc.returncode == 4 and proc.stdout == ""
    assert "training job no-tb has no TensorBoardOutputConfig" in one_error_line(proc)
    assert not (tmp_path / "logs").exists()


def test_a_job_with_no_event_files_yet_is_one_line_exit_4(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "starting")
    proc = smtrain("tensorboard", "starting", "-o", "json", env=env_for(aws, tmp_path))
    assert proc.returncode == 4 and proc.stdout == ""
    line = one_error_line(proc)
    assert f"no TensorBoard event files of starting under {TB_PATH}/starting/tensorboard-output/ yet" in line
    assert "SageMaker uploads them while the job runs" in line


@pytest.mark.parametrize(("setup", "words"), [
    ("unknown", ("no training job named ghost",)),
    ("denied", ("access denied", "sagemaker:DescribeTrainingJob")),
    ("no-bucket", ("bucket does not exist",)),
])
def test_aws_errors_are_actionable_one_liners(aws: MotoServer, tmp_path: Path, setup: str, words: tuple) -> None:
    if setup == "denied":
        aws.control.inject("DescribeTrainingJob", moto_server.Fault(
            "AccessDeniedException", "User: arn:aws:iam::123456789012:user/ci is not authorized to perform: "
                                     "sagemaker:DescribeTrainingJob"))
    job_with_tensorboard(aws, "ghost-2", s3_path="s3://no-such-bucket-here/tb")
    name = "ghost" if setup == "unknown" else "ghost-2"
    proc = smtrain("tensorboard", name, "--dir", str(tmp_path / "logs"), env=env_for(aws, tmp_path))
    assert proc.returncode == 4, proc.stderr
    line = one_error_line(proc)
    assert all(word in line for word in words), line
    assert "Traceback" not in proc.stderr


def test_an_invalid_job_name_is_refused_before_any_call(aws: MotoServer, tmp_path: Path) -> None:
    proc = smtrain("tensorboard", "../etc", "-o", "json", env=env_for(aws, tmp_path))
    assert proc.returncode == 2 and "invalid job name '../etc' (JOB)" in one_error_line(proc)
    assert aws.control.count("DescribeTrainingJob") == 0


@pytest.mark.slow  # submits through the SageMaker SDK
def test_a_submitted_job_s_event_files_are_found_where_its_request_put_them(aws: MotoServer, tmp_path: Path) -> None:
    env = env_for(aws, tmp_path)
    spec = live_spec(tmp_path, {"tensorboard": f"s3://{BUCKET}/board"})
    submitted = smtrain("submit", str(spec), "--job-name", "submitted-tb", "-o", "json", env=env)
    assert submitted.returncode == 0, submitted.stderr
    put_events(aws, "submitted-tb", s3_path=f"s3://{BUCKET}/board")
    proc = smtrain("tensorboard", "submitted-tb", "--dir", str(tmp_path / "logs"), "-o", "json", env=env)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["source"] == f"s3://{BUCKET}/board/submitted-tb/tensorboard-output/"
    assert tree(tmp_path / "logs") == EVENTS


# --- the parts, without a server ------------------------------------------------------------------

def test_keys_that_would_climb_out_of_the_directory_are_refused() -> None:
    prefix = "out/tensorboard/j/tensorboard-output/"
    assert _relative(prefix + "train/e.v2", prefix) == ("train", "e.v2")
    assert _relative(prefix + "train//e.v2", prefix) == ("train", "e.v2")
    assert _relative(prefix + "train/", prefix) is None  # a "folder"
    assert _relative(prefix + "./train/e.v2", prefix) == ("train", "e.v2")
    for bad in ("../x", "train/../../x", "..", "a/.."):
        with pytest.raises(UserError):
            _relative(prefix + bad, prefix)


def test_the_cache_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert default_directory("j") == tmp_path / "c" / "smtrain" / "tensorboard" / "j"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: only an absolute path counts
    assert default_directory("j") == Path(os.path.expanduser("~")) / ".cache" / "smtrain" / "tensorboard" / "j"
