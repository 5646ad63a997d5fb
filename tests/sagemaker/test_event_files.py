"""`smtrain tensorboard JOB` for SageMaker jobs, against the live moto server: the event files found
through DescribeTrainingJob's TensorBoardOutputConfig, downloaded with their layout (event files only,
into a directory that is smtrain's, and never over a file smtrain did not write), keys that name no
file inside the directory skipped, and what is said when there are none.

Where a test needs a `tensorboard` program it puts a small stand-in on PATH (tests/support/
fake_tensorboard.py): it stands in for the real program's command line only, recording its arguments;
TensorBoard itself is not installed for the tests.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from smtrain.jobs import is_event_file
from smtrain.sagemaker.event_files import MARKER, default_directory, local_parts
from tests.support import moto_server
from tests.support.cli_runner import smtrain
from tests.support.fake_tensorboard import bin_dir, no_tensorboard_here
from tests.support.moto_server import BUCKET, MotoServer, create_job, live_spec

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
    """Every file under `directory` but smtrain's record of what it wrote there."""
    return {p.relative_to(directory).as_posix(): p.read_bytes() for p in sorted(directory.rglob("*"))
            if p.is_file() and p.name != MARKER}


def everything(directory: Path) -> dict[str, bytes | str]:
    """Every entry under `directory`, links as where they lead, folders as "dir"."""
    found: dict[str, bytes | str] = {}
    for p in sorted(directory.rglob("*")):
        key = p.relative_to(directory).as_posix()
        found[key] = f"-> {os.readlink(p)}" if p.is_symlink() else "dir" if p.is_dir() else p.read_bytes()
    return found


def notes(proc) -> list[str]:
    lines = proc.stderr.strip().splitlines()
    assert all(line.startswith("note: ") for line in lines), proc.stderr
    return lines


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


def test_only_event_files_are_downloaded(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "mixed")
    # Beside the event files: what a script or a plugin may put under its tensorboard folder, a user's
    # file name, and a key whose name only contains "tfevents".
    put_events(aws, "mixed", {**EVENTS, "README.md": b"from S3", "train/checkpoint": b"ckpt",
                              "plugins/profile/2024/algo-1.xplane.pb": b"trace", "train/old.tfevents.bak": b"x"})
    target = tmp_path / "logs"
    proc = smtrain("tensorboard", "mixed", "--dir", str(target), "-o", "json", env=env_for(aws, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"] == 2 and tree(target) == EVENTS
    assert notes(proc) == [f"note: 4 objects under {TB_PATH}/mixed/tensorboard-output/ are not TensorBoard event "
                           "files (events.out.tfevents.*): not downloaded"]


@pytest.mark.parametrize("theirs", [
    {"README.md": b"my notes"},  # the case: S3 has a README.md too
    {"train/events.out.tfevents.1700000000.algo-1.41.0.v2": b"my own run"},  # an event file S3 has too
    {".keep": b""},  # a hidden file alone makes the directory someone's
])
def test_a_dir_holding_files_smtrain_did_not_write_is_refused_before_any_call(aws: MotoServer, tmp_path: Path,
                                                                                theirs: dict[str, bytes]) -> None:
    job_with_tensorboard(aws, "important-job")
    put_events(aws, "important-job", {**EVENTS, "README.md": b"from S3"})
    target = tmp_path / "important"
    for relative, data in theirs.items():
        (target / relative).parent.mkdir(parents=True, exist_ok=True)
        (target / relative).write_bytes(data)
    before = everything(target)
    proc = smtrain("tensorboard", "important-job", "--dir", str(target), "--no-launch", env=env_for(aws, tmp_path))
    assert proc.returncode == 2 and proc.stdout == ""
    line = one_error_line(proc)
    assert f"{target} holds files smtrain did not download (e.g. {sorted(theirs)[0].split('/')[0]!r})" in line
    assert "give a new or empty --dir, or leave --dir out to use smtrain's cache" in line
    assert everything(target) == before and aws.control.count("DescribeTrainingJob") == 0


@no_tensorboard_here
def test_a_second_download_refreshes_smtrain_s_files_and_replaces_no_one_else_s(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "again")
    put_events(aws, "again")
    target, env = tmp_path / "board", env_for(aws, tmp_path)
    target.mkdir()  # an empty directory is as good as a new one
    assert smtrain("tensorboard", "again", "--dir", str(target), "--no-launch", env=env).returncode == 0
    source = f"{TB_PATH}/again/tensorboard-output/"
    record = json.loads((target / MARKER).read_text())
    assert {**record, "files": sorted(record["files"])} == {"kind": "smtrain tensorboard download", "source": source,
                                                            "files": sorted(EVENTS)}
    # What the user adds afterwards is theirs: a file of their own, one where S3 now has a new event file,
    # their copy in place of smtrain's where S3 has a grown one, a link where a new run's folder goes.
    outside = tmp_path / "outside"
    outside.mkdir()
    (target / "notes.txt").write_bytes(b"mine")
    (target / "validation" / "events.out.tfevents.1700000099.algo-1.41.2.v2").write_bytes(b"mine too")
    grown_name = "train/events.out.tfevents.1700000000.algo-1.41.0.v2"
    (target / grown_name).unlink()
    (target / grown_name).write_bytes(b"my edit")
    (target / "eval").symlink_to(outside, target_is_directory=True)
    more = {**EVENTS, grown_name: EVENTS[grown_name] + b"epoch-1",
            "validation/events.out.tfevents.1700000099.algo-1.41.2.v2": b"new on S3",
            "eval/events.out.tfevents.1700000100.algo-1.41.3.v2": b"eval run",
            "test/events.out.tfevents.1700000101.algo-1.41.4.v2": b"test run"}
    put_events(aws, "again", more)
    proc = smtrain("tensorboard", "again", "--dir", str(target), "--no-launch", env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == f"again: 2 TensorBoard event files from {source}"
    assert tree(target) == {"notes.txt": b"mine", "validation/events.out.tfevents.1700000099.algo-1.41.2.v2": b"mine too",
                            grown_name: b"my edit",
                            "validation/events.out.tfevents.1700000000.algo-1.41.1.v2": EVENTS[
                                "validation/events.out.tfevents.1700000000.algo-1.41.1.v2"],
                            "test/events.out.tfevents.1700000101.algo-1.41.4.v2": b"test run"}
    assert list(outside.iterdir()) == []  # the link is not followed
    assert notes(proc) == [f"note: not downloaded: 'eval/events.out.tfevents.1700000100.algo-1.41.3.v2', "
                           f"{grown_name!r}, 'validation/events.out.tfevents.1700000099.algo-1.41.2.v2', whose place "
                           f"in {target} holds something smtrain did not write there (a file, a folder or a link), "
                           "and smtrain never replaces it"]
    # Once the user's copy is gone, the place is smtrain's again: the next call fetches S3's file there.
    (target / grown_name).unlink()
    proc = smtrain("tensorboard", "again", "--dir", str(target), "--no-launch", env=env)
    assert proc.returncode == 0 and (target / grown_name).read_bytes() == EVENTS[grown_name] + b"epoch-1"


def test_the_user_s_copy_of_an_event_file_smtrain_did_not_write_stays(aws: MotoServer, tmp_path: Path) -> None:
    # smtrain wrote train/; the user drops their own run's copy where S3 later has a file of that name.
    job_with_tensorboard(aws, "theirs")
    put_events(aws, "theirs", {"train/events.out.tfevents.1.a.1.v2": b"first"})
    target, env = tmp_path / "board", env_for(aws, tmp_path)
    assert smtrain("tensorboard", "theirs", "--dir", str(target), "--no-launch", env=env).returncode == 0
    (target / "train" / "events.out.tfevents.2.a.1.v2").write_bytes(b"a copy of mine")
    put_events(aws, "theirs", {"train/events.out.tfevents.2.a.1.v2": b"second, longer"})
    proc = smtrain("tensorboard", "theirs", "--dir", str(target), "-o", "json", env=env)
    assert proc.returncode == 0 and json.loads(proc.stdout)["files"] == 1
    assert tree(target) == {"train/events.out.tfevents.1.a.1.v2": b"first",
                            "train/events.out.tfevents.2.a.1.v2": b"a copy of mine"}
    assert len(notes(proc)) == 1 and "smtrain never replaces it" in proc.stderr


def test_a_dir_another_job_was_downloaded_into_is_refused(aws: MotoServer, tmp_path: Path) -> None:
    for job in ("first-job", "second-job"):
        job_with_tensorboard(aws, job)
        put_events(aws, job)
    target, env = tmp_path / "board", env_for(aws, tmp_path)
    assert smtrain("tensorboard", "first-job", "--dir", str(target), "--no-launch", env=env).returncode == 0
    before = everything(target)
    proc = smtrain("tensorboard", "second-job", "--dir", str(target), "--no-launch", env=env)
    assert proc.returncode == 2 and everything(target) == before
    assert (f"{target} holds the event files smtrain downloaded from {TB_PATH}/first-job/tensorboard-output/: give "
            f"{TB_PATH}/second-job/tensorboard-output/ a directory of its own") in one_error_line(proc)


@pytest.mark.parametrize("record", [b"{not json", b'{"source": "s3://b/p/", "files": []}', None])
def test_a_record_smtrain_did_not_write_is_refused(aws: MotoServer, tmp_path: Path, record: bytes | None) -> None:
    job_with_tensorboard(aws, "recorded")
    put_events(aws, "recorded")
    target = tmp_path / "board"
    target.mkdir()
    if record is None:  # a folder in the record's place
        (target / MARKER).mkdir()
    else:
        (target / MARKER).write_bytes(record)
    before = everything(target)
    proc = smtrain("tensorboard", "recorded", "--dir", str(target), env=env_for(aws, tmp_path))
    assert proc.returncode == 2 and everything(target) == before
    assert f"{target / MARKER} is not smtrain's download record" in one_error_line(proc)


def test_the_cache_of_an_earlier_smtrain_is_smtrain_s_own(aws: MotoServer, tmp_path: Path) -> None:
    # An earlier smtrain kept no record in its cache: what is there it wrote, and a refresh replaces it.
    job_with_tensorboard(aws, "cached-before")
    name = "train/events.out.tfevents.1700000000.algo-1.41.0.v2"
    cache = tmp_path / ".cache" / "smtrain" / "tensorboard" / "cached-before"
    (cache / "train").mkdir(parents=True)
    (cache / name).write_bytes(b"old")
    put_events(aws, "cached-before")
    proc = smtrain("tensorboard", "cached-before", "-o", "json", env=env_for(aws, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert tree(cache) == EVENTS and sorted(json.loads((cache / MARKER).read_text())["files"]) == sorted(EVENTS)


def test_a_key_that_is_a_file_and_a_folder_at_once_is_no_event_file(aws: MotoServer, tmp_path: Path) -> None:
    # The case (exit 70 before): `x/train` and `x/train/events...` under the same prefix.
    job_with_tensorboard(aws, "file-and-folder")
    put_events(aws, "file-and-folder", {"x/train": b"a file", "x/train/events.out.tfevents.1": b"an event file"})
    target = tmp_path / "logs"
    proc = smtrain("tensorboard", "file-and-folder", "--dir", str(target), "--no-launch", env=env_for(aws, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert tree(target) == {"x/train/events.out.tfevents.1": b"an event file"}
    assert notes(proc) == [f"note: 1 object under {TB_PATH}/file-and-folder/tensorboard-output/ is not a TensorBoard "
                           "event file (events.out.tfevents.*): not downloaded"]


def test_keys_that_name_no_file_inside_the_directory_are_skipped_with_a_note(aws: MotoServer, tmp_path: Path) -> None:
    job_with_tensorboard(aws, "odd-keys")
    good = {"x/train/events.out.tfevents.1": b"under x/train", "f/events.out.tfevents.1/events.out.tfevents.2": b"deep"}
    put_events(aws, "odd-keys", {
        **EVENTS, **good,
        "x/train": b"a file where a folder goes",  # the case: not an event file
        "f/events.out.tfevents.1": b"a file and a folder at once",
        "../x/events.out.tfevents.1": b"climbs", "e/../../events.out.tfevents.1": b"climbs twice",
        "/abs/events.out.tfevents.1": b"looks absolute", "a//events.out.tfevents.1": b"empty segment",
        "./b/events.out.tfevents.1": b"dot", "c/events.out.tfevents.1/": b"trailing slash",
        "d\\..\\events.out.tfevents.1": b"backslashes"})
    target = tmp_path / "deep" / "logs"
    proc = smtrain("tensorboard", "odd-keys", "--dir", str(target), "-o", "json", env=env_for(aws, tmp_path))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["files"] == 4 and tree(target) == {**EVENTS, **good}
    # Nothing beside or above the directory, and nothing in it but the event files, their folders and the record.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bin", "deep"]  # bin: env_for's empty PATH
    assert set(everything(tmp_path / "deep")) == {"logs", f"logs/{MARKER}", "logs/train", "logs/validation", "logs/x",
                                                  "logs/x/train", "logs/f", "logs/f/events.out.tfevents.1",
                                                  *(f"logs/{name}" for name in {**EVENTS, **good})}
    uri = f"{TB_PATH}/odd-keys/tensorboard-output/"
    [others, unsafe, clash] = notes(proc)
    assert others == (f"note: 1 object under {uri} is not a TensorBoard event file (events.out.tfevents.*): not "
                      "downloaded")
    assert unsafe.startswith("note: skipped '../x/events.out.tfevents.1', './b/events.out.tfevents.1', "  # S3's order
                             f"'/abs/events.out.tfevents.1' and 4 more under {uri}: ")
    assert unsafe.endswith(f"names no file inside {target}")
    assert clash == f"note: skipped 'f/events.out.tfevents.1' under {uri}: S3 holds each as a file and as a folder at once"


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
    # -o json: the failure is the document on stdout, its line on stderr
    assert proc.returncode == 4 and json.loads(proc.stdout)["exit_code"] == 4
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

def test_only_keys_that_name_a_file_inside_the_directory_map_to_one() -> None:
    assert local_parts("train/events.out.tfevents.1.v2") == ("train", "events.out.tfevents.1.v2")
    assert local_parts("events.out.tfevents.1") == ("events.out.tfevents.1",)
    assert local_parts("run 1/é/events.out.tfevents.1") == ("run 1", "é", "events.out.tfevents.1")
    for bad in ("../x", "train/../../x", "..", "a/..", "/etc/x", "train//x", "./train/x", "train/", "",
                "a\\..\\x", "a\0b/x"):
        assert local_parts(bad) is None, bad


def test_event_files_are_named_as_tf_summary_names_them() -> None:
    for name in ("events.out.tfevents.1700000000.algo-1.41.0.v2", "events.out.tfevents.1700000000.host",
                 "events.out.tfevents.1700000000.algo-1.profile-empty"):
        assert is_event_file(name), name
    for name in ("events.out.tfevents.", "README.md", "xevents.out.tfevents.1", "train", "projector_config.pbtxt",
                 "events.out.tfevent.1", MARKER, ".smtrain-download-1-ab"):
        assert not is_event_file(name), name


def test_the_cache_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "c"))
    assert default_directory("j") == tmp_path / "c" / "smtrain" / "tensorboard" / "j"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")  # the XDG spec: only an absolute path counts
    assert default_directory("j") == Path(os.path.expanduser("~")) / ".cache" / "smtrain" / "tensorboard" / "j"
