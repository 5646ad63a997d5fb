"""inputs.NAME.file_system: an EFS or FSx for Lustre channel (SDK v2's FileSystemInput), its checks and its
refusals, each at its field; a local run refuses it with what to do instead."""

from __future__ import annotations

import pytest

from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.cli_runner import smtrain
from tests.support.specfiles import write_spec

IN_A_VPC = {"network": {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"]}}
LUSTRE = {"id": "fs-0123456789abcdef0", "type": "FSxLustre", "directory": "/abcdefgh/data"}


def problems(tmp_path, changes):
    try:
        load_spec(write_spec(tmp_path, changes), env={})
    except SpecError as exc:
        return [p.render().split(": ", 1)[1] for p in exc.problems]
    return []


def test_a_file_system_channel_in_a_vpc_is_valid(tmp_path):
    assert problems(tmp_path, {**IN_A_VPC, "inputs": {"train": {"file_system": LUSTRE}}}) == []
    assert problems(tmp_path, {**IN_A_VPC, "inputs": {"train": {"file_system": LUSTRE, "mode": "File"}}}) == []


@pytest.mark.parametrize(("channel", "network", "expected"), [
    ({"file_system": LUSTRE}, {}, "inputs.train.file_system: SageMaker mounts a file system inside the job's VPC"),
    ({"file_system": LUSTRE, "mode": "FastFile"}, IN_A_VPC,
     "inputs.train.mode: a file system channel is mounted in the container: File mode only, not FastFile"),
    ({"file_system": LUSTRE, "distribution": "ShardedByS3Key"}, IN_A_VPC,
     "inputs.train.distribution: a file system channel is mounted whole on every host"),
    ({"file_system": LUSTRE, "uri": "s3://my-bucket/x"}, IN_A_VPC,
     "inputs.train: give the channel a uri or a file_system (one of them)"),
    ({"mode": "File"}, {}, "inputs.train: give the channel a uri or a file_system (one of them)"),
    ({"file_system": {**LUSTRE, "type": "NFS"}}, IN_A_VPC, "inputs.train.file_system.type"),
    ({"file_system": {**LUSTRE, "access_mode": "w"}}, IN_A_VPC, "inputs.train.file_system.access_mode"),
    ({"file_system": {**LUSTRE, "directory": "data"}}, IN_A_VPC, "inputs.train.file_system.directory"),
])
def test_what_a_file_system_channel_refuses(tmp_path, channel, network, expected):
    found = problems(tmp_path, {**network, "inputs": {"train": channel}})
    assert len(found) == 1 and found[0].startswith(expected), found


@pytest.mark.parametrize(("fs_id", "ok"), [("fs-0123abc", False), ("fs-0123abcd", True),
                                           ("fs-" + "a" * 18, True), ("fs-" + "a" * 19, False),
                                           ("fs-0123ABCD", False)])
def test_a_file_system_id_is_11_to_21_characters_of_fs_and_hex(tmp_path, fs_id, ok):
    found = problems(tmp_path, {**IN_A_VPC, "inputs": {"t": {"file_system": {**LUSTRE, "id": fs_id}}}})
    assert (found == []) is ok, found


@pytest.mark.parametrize(("length", "ok"), [(4096, True), (4097, False)])
def test_a_directory_is_at_most_4096_characters(tmp_path, length, ok):
    directory = "/" + "d" * (length - 1)
    found = problems(tmp_path, {**IN_A_VPC, "inputs": {"t": {"file_system": {**LUSTRE, "directory": directory}}}})
    assert (found == []) is ok, found


def test_the_dry_run_shows_it_and_a_local_run_refuses_it(tmp_path):
    spec = write_spec(tmp_path, {**IN_A_VPC, "compute": {"instance_type": "ml.g5.xlarge"},
                                 "inputs": {"train": {"file_system": LUSTRE}}})
    dry = smtrain("submit", str(spec), "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert "  input         train: FSxLustre fs-0123456789abcdef0:/abcdefgh/data (ro) (File)" in dry.stdout
    local = smtrain("submit", str(spec), "--local", env={"SMTRAIN_HOME": str(tmp_path / "home")})
    assert local.returncode == 2
    assert ("input channel 'train': a file system (FSxLustre fs-0123456789abcdef0) is mounted on SageMaker's hosts "
            "only; for a local run give the channel a directory here: --set inputs.train=./data") in local.stderr


def test_model_uri_s_channel_is_a_channel_of_its_own(tmp_path):
    found = problems(tmp_path, {"model_uri": "s3://my-bucket/m.tar.gz", "inputs": {"model": "s3://my-bucket/x"}})
    assert found == ["model_channel: inputs has a channel named model too: name model_uri's channel otherwise "
                     "(model_channel) or rename the input"]
    assert problems(tmp_path, {"model_uri": "s3://my-bucket/m.tar.gz", "model_channel": "warm",
                               "inputs": {"model": "s3://my-bucket/x"}}) == []


def test_checkpoint_local_path_needs_checkpoints_and_is_absolute(tmp_path):
    assert problems(tmp_path, {"checkpoint_local_path": "/opt/ml/ck"}) == [
        "checkpoint_local_path: checkpoint_local_path is the directory SageMaker syncs with `checkpoints`: set "
        "checkpoints: s3://... too (or remove it)"]
    found = problems(tmp_path, {"checkpoints": "s3://my-bucket/ck", "checkpoint_local_path": "ck"})
    assert len(found) == 1 and found[0].startswith("checkpoint_local_path: 'ck' is not an absolute path"), found
    assert problems(tmp_path, {"checkpoints": "s3://my-bucket/ck", "checkpoint_local_path": "/ck"}) == []


def test_plan_shows_the_model_to_start_from_the_checkpoint_place_the_mounts_and_the_dependencies(tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "h.py").write_text("X = 1\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print(1)\n")
    spec = write_spec(tmp_path, {**IN_A_VPC, "compute": {"instance_type": "ml.g5.xlarge"},
                                 "code": {"source_dir": "src", "entry_point": "train.py", "dependencies": ["lib"]},
                                 "inputs": {"fs": {"file_system": LUSTRE}}, "model_uri": "s3://my-bucket/m.tar.gz",
                                 "model_channel": "warm", "checkpoints": "s3://my-bucket/ck",
                                 "checkpoint_local_path": "/opt/ml/my-ck"})
    proc = smtrain("plan", str(spec))
    assert proc.returncode == 0, proc.stderr
    for line in ("  starts from   s3://my-bucket/m.tar.gz (channel warm: SM_CHANNEL_WARM)",
                 "  checkpoints   s3://my-bucket/ck synced with /opt/ml/my-ck",
                 "  mounted       fs: FSxLustre fs-0123456789abcdef0:/abcdefgh/data (ro)",
                 "  code also     lib/ (code.dependencies, each at the bundle's root)",
                 "  environment   SMTRAIN_CHECKPOINT_DIR=/opt/ml/my-ck"):
        assert line in proc.stdout.splitlines(), proc.stdout
