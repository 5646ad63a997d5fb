"""What a local job reads: channels from a directory, a file:// URI and S3 (moto), and requirements.txt."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import zipfile
from pathlib import Path

import pytest

from smtrain.local.backend import LocalBackend, local_request
from smtrain.local.channels import ChannelSource, prepare_channels
from tests.local.support import make_plan
from tests.support.moto_server import BUCKET, REGION


def channel_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_local_directory_and_file_uri_channels_are_linked_into_every_host(tmp_path: Path) -> None:
    for name in ("train", "validation"):
        (tmp_path / "data" / name / "sub").mkdir(parents=True)
        (tmp_path / "data" / name / "sub" / "a.npz").write_text(name)
    inputs = {"train": "data/train", "validation": (tmp_path / "data" / "validation").as_uri()}
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "inputs": inputs})
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(local_request(plan, "channels"), grace=1)
    assert job.status == "Completed", job.failure_reason
    for host in ("algo-1", "algo-2"):
        data = backend.store.job_dir("channels") / "hosts" / host / "input" / "data"
        assert (data / "train").is_symlink() and (data / "train").resolve() == (tmp_path / "data" / "train")
        assert (data / "validation" / "sub" / "a.npz").read_text() == "validation"


def test_sharded_channel_gives_each_host_its_share(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    for i in range(5):
        (src / f"part-{i}").write_text(str(i))
    hosts = [{"train": tmp_path / f"h{i}" / "train"} for i in range(2)]
    prepare_channels([ChannelSource("train", str(src), sharded=True)], hosts, tmp_path, tmp_path / "cache", None)
    assert channel_files(hosts[0]["train"]) == ["part-0", "part-2", "part-4"]
    assert channel_files(hosts[1]["train"]) == ["part-1", "part-3"]


@pytest.fixture
def s3_env(aws, monkeypatch: pytest.MonkeyPatch):  # noqa: F811 - the moto fixture
    monkeypatch.setenv("AWS_ENDPOINT_URL", aws.url)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    s3 = aws.client("s3")
    for key, body in (("digits/train/part-0.npz", b"t0"), ("digits/train/deep/part-1.npz", b"t1"),
                      ("digits/train/", b""), ("digits/validation/v.npz", b"v"), ("single/file.csv", b"c")):
        s3.put_object(Bucket=BUCKET, Key=key, Body=body)
    return aws


def test_s3_channels_are_downloaded_once_and_linked(tmp_path: Path, s3_env) -> None:
    inputs = {"train": f"s3://{BUCKET}/digits/train", "validation": f"s3://{BUCKET}/digits/validation/",
              "one": f"s3://{BUCKET}/single/file.csv",
              "sharded": {"uri": f"s3://{BUCKET}/digits/train", "distribution": "ShardedByS3Key"}}
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "region": REGION, "inputs": inputs})
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(local_request(plan, "from-s3"), grace=1)
    assert job.status == "Completed", job.failure_reason
    job_dir = backend.store.job_dir("from-s3")
    assert channel_files(job_dir / "input-cache" / "train") == ["deep/part-1.npz", "part-0.npz"]
    config = json.loads((job_dir / "hosts" / "algo-1" / "input" / "config" / "inputdataconfig.json").read_text())
    assert config["sharded"]["S3DistributionType"] == "ShardedByS3Key"
    shares = []
    for host in ("algo-1", "algo-2"):
        data = job_dir / "hosts" / host / "input" / "data"
        assert (data / "train" / "deep" / "part-1.npz").read_bytes() == b"t1"
        assert channel_files(data / "validation") == ["v.npz"]
        assert (data / "one" / "file.csv").read_bytes() == b"c"
        shares.append(channel_files(data / "sharded"))
    assert shares == [["deep/part-1.npz"], ["part-0.npz"]]


def test_model_uri_reaches_every_host_as_its_channel_from_s3_or_here(tmp_path: Path, s3_env) -> None:
    (tmp_path / "previous").mkdir()
    (tmp_path / "previous" / "weights.h5").write_text("w")
    for uri, channel, expected in ((f"s3://{BUCKET}/single/file.csv", "model", ["file.csv"]),
                                   ("previous", "warm", ["weights.h5"])):
        plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "region": REGION, "model_uri": uri,
                                    "model_channel": channel})
        backend = LocalBackend(tmp_path / "home")
        job = backend.run(local_request(plan, f"warm-{channel}"), grace=1)
        assert job.status == "Completed", job.failure_reason
        job_dir = backend.store.job_dir(f"warm-{channel}")
        config = json.loads((job_dir / "hosts" / "algo-2" / "input" / "config" / "inputdataconfig.json").read_text())
        assert config[channel]["ContentType"] == "application/x-sagemaker-model"
        for host in ("algo-1", "algo-2"):
            assert channel_files(job_dir / "hosts" / host / "input" / "data" / channel) == expected


def test_an_empty_s3_prefix_fails_the_job_with_a_client_error(tmp_path: Path, s3_env) -> None:
    plan = make_plan(tmp_path, {"region": REGION, "inputs": {"train": f"s3://{BUCKET}/nothing/here"}})
    job = LocalBackend(tmp_path / "home").run(local_request(plan, "empty"), grace=1)
    assert job.status == "Failed" and job.failure_reason.startswith("ClientError: ")
    assert "no objects" in job.failure_reason


def test_s3_inputs_without_credentials_are_refused_before_the_job_as_submit_refuses(tmp_path: Path, s3_env) -> None:
    from tests.local.support import spec_file
    from tests.support.cli_runner import smtrain

    spec = spec_file(tmp_path, {"region": REGION, "inputs": {"train": f"s3://{BUCKET}/digits/train"}})
    nowhere = str(tmp_path / "no-such-file")
    proc = smtrain("submit", str(spec), "--local", "--job-name", "no-creds", env={
        "SMTRAIN_HOME": str(tmp_path / "home"), "AWS_ENDPOINT_URL": s3_env.url, "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_SHARED_CREDENTIALS_FILE": nowhere, "AWS_CONFIG_FILE": nowhere})
    assert proc.returncode == 4, proc.stdout + proc.stderr
    assert "no AWS credentials found" in proc.stderr and f"s3://{BUCKET}/digits/train" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "home" / "local-jobs" / "no-creds").exists()


def _wheel(directory: Path, name: str = "smtrain_probe", version: str = "0.1") -> Path:
    """A minimal pure-Python wheel, built by hand (no network, no build backend)."""
    dist = f"{name}-{version}.dist-info"
    files = {f"{name}.py": b"VALUE = 42\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
             f"{dist}/WHEEL": b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    record = []
    for path, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{path},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = directory / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, data in files.items():
            archive.writestr(path, data)
    return wheel


def test_requirements_are_installed_into_the_jobs_own_environment(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    wheel = _wheel(src)
    (src / "requirements.txt").write_text(f"./{wheel.name}\nnumpy\n")  # numpy: already there, not reinstalled
    plan = make_plan(tmp_path, {"code": {"requirements": "requirements.txt"},
                                "hyperparameters": {"needs": "smtrain_probe"}})
    backend = LocalBackend(tmp_path / "home")
    stream = io.StringIO()
    job = backend.run(local_request(plan, "reqs"), stream=stream, grace=1)
    assert job.status == "Completed", stream.getvalue()
    venv = backend.store.job_dir("reqs") / "venv"
    assert list(venv.glob("lib/python*/site-packages/smtrain_probe.py"))
    assert not list(venv.glob("lib/python*/site-packages/numpy"))
    assert "[algo-1] pip: " in stream.getvalue()
    import importlib.util

    assert importlib.util.find_spec("smtrain_probe") is None  # smtrain's own environment is untouched


def test_requirements_that_cannot_install_fail_the_job_with_pips_reason(tmp_path: Path) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "requirements.txt").write_text("./no-such-package-dir\n")
    plan = make_plan(tmp_path, {"code": {"requirements": "requirements.txt"}})
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(local_request(plan, "bad-reqs"), grace=1)
    assert job.status == "Failed"
    assert job.failure_reason.startswith("AlgorithmError: InstallRequirementsError: pip install -r requirements.txt")
    assert backend.store.read("bad-reqs")["processes"] == []


def test_a_checkpoint_place_of_sagemaker_s_container_is_not_told_to_a_local_host(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, {"checkpoints": "s3://my-bucket/ck", "checkpoint_local_path": "/opt/ml/my-ck"})
    assert plan.environment["SMTRAIN_CHECKPOINT_DIR"] == "/opt/ml/my-ck"  # what SageMaker's hosts get
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(local_request(plan, "own-ck"), grace=1)
    assert job.status == "Completed", job.failure_reason
    [dump] = (backend.store.job_dir("own-ck") / "hosts" / "algo-1").rglob("env-algo-1-*.json")
    env = json.loads(dump.read_text())["env"]
    assert "SMTRAIN_CHECKPOINT_DIR" not in env  # smtrain_tf.checkpoint_dir(): <SAGEMAKER_BASE_DIR>/checkpoints
    assert Path(env["SAGEMAKER_BASE_DIR"], "checkpoints").is_dir()
