"""`smtrain tensorboard JOB` for local jobs: the event files where the chief host (algo-1) wrote them.

A real local run makes the job (its record, its hosts' directories), with a stand-in program in place
of TensorFlow that writes event-like files into <SM_OUTPUT_DIR>/tensorboard, the place the bundled
entrypoint and smtrain_tf.fit write theirs (their own tests check the event files themselves).
"""

from __future__ import annotations

import io
import json
from pathlib import Path

from smtrain.local.backend import LocalBackend, local_request
from tests.local.support import make_plan
from tests.support.cli_runner import smtrain
from tests.support.fake_tensorboard import bin_dir, no_tensorboard_here

WRITER = """\
import os, sys
argv = sys.argv[1:]
hp = {argv[i][2:]: argv[i + 1] for i in range(0, len(argv) - 1, 2) if argv[i].startswith("--")}
host = os.environ["SM_CURRENT_HOST"]
board = os.path.join(os.environ["SM_OUTPUT_DIR"], "tensorboard")
if hp.get("write") == "yes":
    for part in ("train", "validation"):
        os.makedirs(os.path.join(board, part), exist_ok=True)
        with open(os.path.join(board, part, f"events.out.tfevents.1700000000.{host}.1.v2"), "wb") as f:
            f.write(b"event of " + host.encode())
    # Not event files, though TensorBoard's plugins write such files beside them: not counted.
    os.makedirs(os.path.join(board, "plugins", "profile"), exist_ok=True)
    for other in ("projector_config.pbtxt", os.path.join("plugins", "profile", host + ".xplane.pb")):
        with open(os.path.join(board, other), "w") as f:
            f.write("not an event file")
print(f"{host} done", flush=True)
"""

def run_writer(tmp_path: Path, name: str, write: str) -> Path:
    """A finished two-host local job whose hosts each wrote event files (or not); the SMTRAIN_HOME."""
    src = tmp_path / "src"
    src.mkdir(exist_ok=True)
    (src / "writer.py").write_text(WRITER)
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "code": {"source_dir": "src", "entry_point": "writer.py"},
                                "hyperparameters": {"write": write}}, standin=False)
    home = tmp_path / "home"
    job = LocalBackend(home).run(local_request(plan, name), stream=io.StringIO(), grace=1.0)
    assert job.status == "Completed", job.failure_reason
    return home


def test_a_local_job_s_event_files_are_read_in_place_from_the_chief_host(tmp_path: Path) -> None:
    home = run_writer(tmp_path, "local-tb-1", "yes")
    proc = smtrain("tensorboard", "local-tb-1", "-o", "json", env={"SMTRAIN_HOME": str(home)})
    assert proc.returncode == 0, proc.stderr
    logdir = home / "local-jobs" / "local-tb-1" / "hosts" / "algo-1" / "output" / "tensorboard"
    found = json.loads(proc.stdout)
    assert {k: found[k] for k in ("job", "source", "logdir", "files")} == {
        "job": "local-tb-1", "source": "local", "logdir": str(logdir), "files": 2}  # algo-2's are not the chief's,
    assert (logdir / "projector_config.pbtxt").is_file()  # and the plugins' files are no event files
    assert set(found) == {"job", "source", "logdir", "files", "tensorboard"}


@no_tensorboard_here
def test_tensorboard_runs_on_the_chief_host_s_directory(tmp_path: Path) -> None:
    home = run_writer(tmp_path, "local-tb-2", "yes")
    record = tmp_path / "argv.json"  # written by the stand-in `tensorboard` (its command line only)
    # --dir is for downloads: a local job is read where it is, and the command says so.
    proc = smtrain("tensorboard", "local-tb-2", "--dir", str(tmp_path / "unused"),
                   env={"SMTRAIN_HOME": str(home), "PATH": str(bin_dir(tmp_path, fake=True)),
                        "FAKE_TENSORBOARD_RECORD": str(record)})
    assert proc.returncode == 0, proc.stderr
    logdir = home / "local-jobs" / "local-tb-2" / "hosts" / "algo-1" / "output" / "tensorboard"
    assert json.loads(record.read_text()) == ["--logdir", str(logdir)]
    assert proc.stdout.splitlines()[0] == f"local-tb-2: 2 TensorBoard event files in {logdir}"
    assert "--dir is for SageMaker jobs" in proc.stderr and not (tmp_path / "unused").exists()


def test_a_local_job_without_event_files_says_so_with_exit_4(tmp_path: Path) -> None:
    home = run_writer(tmp_path, "local-tb-3", "no")
    proc = smtrain("tensorboard", "local-tb-3", env={"SMTRAIN_HOME": str(home)})
    assert proc.returncode == 4 and proc.stdout == ""
    logdir = home / "local-jobs" / "local-tb-3" / "hosts" / "algo-1" / "output" / "tensorboard"
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(f"error: no TensorBoard event files of local-tb-3 in {logdir} yet: ")


def test_the_local_run_says_where_its_event_files_stay_when_the_request_names_s3(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "writer.py").write_text(WRITER)
    plan = make_plan(tmp_path, {"code": {"source_dir": "src", "entry_point": "writer.py"},
                                "output": "s3://my-bucket/out"}, standin=False)
    stream = io.StringIO()
    job = LocalBackend(tmp_path / "home").run(local_request(plan, "local-tb-4"), stream=stream, grace=1.0)
    assert job.status == "Completed", job.failure_reason
    assert ("TensorBoard event files stay in algo-1's output/tensorboard (`smtrain tensorboard local-tb-4`): a "
            "local run does not upload them to s3://my-bucket/out/tensorboard") in stream.getvalue()
