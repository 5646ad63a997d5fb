"""`smtrain import LAUNCHER`: SDK v2 decides what correct is. Each launcher of tests/api/launchers/ (the forms users
write) is run by SDK v2 itself against moto, and its CreateTrainingJob request taken (tests.support.launcher_oracle);
the same launcher is imported, never run, and the spec's dry run must equal that request field by field but the
differences README documents ("Coming from the SageMaker SDK"). What the import cannot carry is named with its line.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import smtrain
from smtrain.api.importing import import_launcher
from smtrain.bundle.request import check_bundle
from smtrain.sagemaker.job_import import smtrain_files
from tests.render.test_sdk_oracle import differences
from tests.support import ROOT, launcher_oracle
from tests.support.cli_runner import smtrain as run_smtrain

LAUNCHERS = ROOT / "tests" / "api" / "launchers"
VARIABLES = {"SMTRAIN_ROLE": launcher_oracle.ROLE, "SMTRAIN_BUCKET": launcher_oracle.DEFAULT_BUCKET}
# Documented differences (README "Coming from the SageMaker SDK"): smtrain sends no Debugger hook or rules and no
# profiler, its own metric definitions and metrics time series, TensorBoard output by default, and its code under
# its own key; the container's defaults are written out where the SDK leaves them unsaid.
SMTRAIN_OWN = ("DebugHookConfig", "DebugRuleConfigurations", "ProfilerConfig", "ProfilerRuleConfigurations")


@pytest.fixture(autouse=True)
def _region(monkeypatch):
    """The region the SDK ran in: a launcher's spec takes the environment's, as the launcher does."""
    monkeypatch.setenv("AWS_REGION", launcher_oracle.REGION)


def comparable(request: dict[str, Any], *, sdk_has_tensorboard: bool) -> dict[str, Any]:
    """The request less the documented differences, each container default written out as smtrain writes it."""
    r = copy.deepcopy(request)
    for key in SMTRAIN_OWN:
        r.pop(key, None)
    if not sdk_has_tensorboard:
        r.pop("TensorBoardOutputConfig", None)
    algorithm = r["AlgorithmSpecification"]
    algorithm.pop("MetricDefinitions", None)
    algorithm.pop("EnableSageMakerMetricsTimeSeries", None)
    mode = algorithm.pop("TrainingInputMode", "File")
    for channel in r.get("InputDataConfig", []):  # the mode each channel gets, wherever it is written
        channel["InputMode"] = channel.get("InputMode", mode)
    hps = r["HyperParameters"]
    hps.pop("sagemaker_submit_directory")
    if hps.get("sagemaker_mpi_enabled") == "true":  # unsaid, the container starts 1 process, no options
        hps.setdefault("sagemaker_mpi_num_of_processes_per_host", "1")
        hps.setdefault("sagemaker_mpi_custom_mpi_options", '""')
    output = r["OutputDataConfig"]  # a bucket's root: smtrain writes s3://bucket, the SDK s3://bucket/
    output["S3OutputPath"] = output["S3OutputPath"].rstrip("/") if output["S3OutputPath"].count("/") == 3 else \
        output["S3OutputPath"]
    for channel in r.get("InputDataConfig", []):
        if channel["ChannelName"] == "code" and r.get("EnableNetworkIsolation"):
            # Network isolation: the code comes as a channel, smtrain's under its own key and always as files
            # (the SDK gives it the job's input mode, Pipe included, where the toolkit reads files).
            channel["DataSource"]["S3DataSource"].pop("S3Uri")
            channel.pop("InputMode")
    if "CheckpointConfig" in r:
        r["CheckpointConfig"].setdefault("LocalPath", "/opt/ml/checkpoints")
        # A place of one's own: smtrain tells its own code (smtrain_tf.checkpoint_dir()) through the environment.
        environment = r.get("Environment", {})
        if environment.get("SMTRAIN_CHECKPOINT_DIR") == r["CheckpointConfig"]["LocalPath"]:
            del environment["SMTRAIN_CHECKPOINT_DIR"]
            if not environment:
                del r["Environment"]
    return r


def imported_request(launcher: Path, tmp_path: Path, job_name: str) -> tuple[dict[str, Any], Any]:
    """The dry run of the spec `smtrain import` writes for `launcher` (copied with its code into tmp_path)."""
    work = tmp_path / "project"
    shutil.copytree(LAUNCHERS, work)
    result = import_launcher(work / launcher.name)
    loaded = smtrain.load(result.spec_file, env=VARIABLES)
    return smtrain.dry_run(loaded, job_name=job_name)["request"], result


def assert_imports_as_the_sdk_runs(name: str, tmp_path: Path, *, skip_channels: tuple[str, ...] = ()) -> Any:
    launcher = LAUNCHERS / name
    sdk = (launcher_oracle.notebook_request(launcher) if launcher.suffix == ".ipynb"
           else launcher_oracle.script_request(launcher))
    sdk_files = sdk.pop(launcher_oracle.CODE_FILES, None)
    ours, result = imported_request(launcher, tmp_path, sdk["TrainingJobName"])
    if sdk_files is not None:  # the same code ships: the SDK's archive's files, smtrain's own aside
        own = smtrain_files()
        bundled = check_bundle(smtrain.plan(smtrain.load(result.spec_file, env=VARIABLES)).plan).files
        assert sorted(f.path for f in bundled if f.path.split("/")[0] not in own) == sdk_files
    sdk = comparable(sdk, sdk_has_tensorboard="TensorBoardOutputConfig" in sdk)
    sdk["InputDataConfig"] = [c for c in sdk.get("InputDataConfig", []) if c["ChannelName"] not in skip_channels]
    if not sdk["InputDataConfig"]:
        del sdk["InputDataConfig"]
    ours = comparable(ours, sdk_has_tensorboard="TensorBoardOutputConfig" in sdk)
    assert differences(ours, sdk) == [], result.spec_file.read_text()
    return result


def test_a_notebook_launcher_with_the_default_bucket_and_role(tmp_path):
    result = assert_imports_as_the_sdk_runs("mnist_notebook.ipynb", tmp_path)
    assert result.variables == ("SMTRAIN_BUCKET", "SMTRAIN_ROLE")
    text = result.spec_file.read_text()
    assert "  training: s3://${SMTRAIN_BUCKET}/sagemaker/DEMO-tensorflow-mnist/train\n" in text
    assert any("the launcher uploads data to s3://${SMTRAIN_BUCKET}/sagemaker/DEMO-tensorflow-mnist/train" in n
               for n in result.notes), result.notes
    assert "strategy: none\n" in text
    # Where each looked-up value is written: the notebook's cell and line.
    assert any(n.startswith("mnist_notebook.ipynb, cell 4, line 4: role:") for n in result.notes), result.notes


def test_a_script_with_argparse_around_the_estimator(tmp_path):
    result = assert_imports_as_the_sdk_runs("argparse_launcher.py", tmp_path)
    assert result.taken == (
        "argparse_launcher.py:21: role: 'arn:aws:iam::123456789012:role/SageMakerRole', --role's default, line 12",
        "argparse_launcher.py:22: instance_type: 'ml.g5.12xlarge', --instance-type's default, line 9",
        "argparse_launcher.py:23: instance_count: 2, --instance-count's default, line 10")
    assert result.variables == ()


@pytest.mark.parametrize("name", ["horovod_launcher.py", "horovod_defaults_launcher.py", "parameter_server_launcher.py",
                                  "smddp_launcher.py"])
def test_each_strategy(name, tmp_path):
    assert_imports_as_the_sdk_runs(name, tmp_path)


def test_a_heterogeneous_cluster(tmp_path):
    result = assert_imports_as_the_sdk_runs("hetero_launcher.py", tmp_path)
    text = result.spec_file.read_text()
    assert "  instance_groups:\n  - name: data_group\n    instance_type: ml.c5.18xlarge\n    count: 2\n" in text
    assert "  instance_groups:\n  - dnn_group\n" in text, text
    assert result.notes == ("hetero_launcher.py:13: role: sagemaker.get_execution_role(): the notebook's or instance's "
                            "role, looked up when the launcher runs: the spec reads ${SMTRAIN_ROLE}",)


def test_spot_with_checkpoints_and_training_inputs(tmp_path):
    result = assert_imports_as_the_sdk_runs("spot_launcher.py", tmp_path)
    assert "checkpoint_local_path: /opt/ml/checkpoints/spot\n" in result.spec_file.read_text()
    assert result.notes == ("spot_launcher.py:11: role: sagemaker.get_execution_role(): the notebook's or instance's "
                            "role, looked up when the launcher runs: the spec reads ${SMTRAIN_ROLE}",)


def test_vpc_tags_environment_and_an_estimator_input_mode(tmp_path):
    result = assert_imports_as_the_sdk_runs("vpc_tags_launcher.py", tmp_path)
    assert "  sagemaker_experiment:\n    experiment: churn\n    trial: vpc-runs\n    run: pipe-1\n" in \
        result.spec_file.read_text()
    assert result.notes == ("vpc_tags_launcher.py:23: input_mode: Pipe written as each channel's mode (the same mode, "
                            "set per channel)",)


def test_dependencies_and_a_string_input_named(tmp_path):
    result = assert_imports_as_the_sdk_runs("dependencies_launcher.py", tmp_path)
    assert result.notes == (
        "dependencies_launcher.py:4: entry_point: no source_dir: the SDK packs train.py alone, the spec packs its "
        "directory (code)",
        "dependencies_launcher.py:12: metric_definitions: left out: smtrain writes the job's MetricDefinitions from "
        "its own epoch lines",
        "dependencies_launcher.py:14: job_name: smtrain names each job <name>-<time>-<4 hex>; the spec's name is its "
        "prefix (smtrain submit --job-name NAME gives one exact name)")


def test_an_fsx_input(tmp_path):
    result = assert_imports_as_the_sdk_runs("fsx_launcher.py", tmp_path)
    assert result.notes == ()
    assert "  train:\n    file_system:\n      id: fs-0123456789abcdef0\n      type: FSxLustre\n" in \
        result.spec_file.read_text()


def test_a_custom_image(tmp_path):
    result = assert_imports_as_the_sdk_runs("custom_image_launcher.py", tmp_path)
    assert "  image_uri: 123456789012.dkr.ecr.us-east-1.amazonaws.com/my-tf:2.16-gpu\n" in result.spec_file.read_text()


def test_computed_values_are_named_with_their_lines(tmp_path):
    _, result = imported_request(LAUNCHERS / "computed_launcher.py", tmp_path, "computed-1")
    assert result.notes == (
        "computed_launcher.py:11: role: sagemaker.get_execution_role(): the notebook's or instance's role, looked "
        "up when the launcher runs: the spec reads ${SMTRAIN_ROLE}",
        "computed_launcher.py:12: instance_count: not imported: int(os.environ.get('NODES', '1')): computed when the "
        "launcher runs",
        "computed_launcher.py:13: instance_type: not imported: os.environ.get('INSTANCE_TYPE', 'ml.g5.xlarge'): "
        "computed when the launcher runs",
        "computed_launcher.py:13: instance_type: not known: compute.instance_type is auto (smtrain picks the "
        "cheapest GPU instance that fits)",
        "computed_launcher.py:16: hyperparameters['run-id']: not imported: os.environ.get('RUN_ID', 'a'): computed "
        "when the launcher runs",
        "computed_launcher.py:18: model_uri: s3://${SMTRAIN_BUCKET}/models/previous.tar.gz: the spec reads "
        "${SMTRAIN_BUCKET} (looked up by the launcher when it runs)")


def test_the_cli_writes_the_spec_and_says_what_it_left(tmp_path):
    work = tmp_path / "project"
    shutil.copytree(LAUNCHERS, work)
    proc = run_smtrain("import", "dependencies_launcher.py", cwd=work)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[0] == "wrote job.yaml from dependencies_launcher.py"
    assert "  dependencies_launcher.py:12: metric_definitions: left out" in proc.stdout
    again = run_smtrain("import", "dependencies_launcher.py", "-o", "json", cwd=work)
    assert again.returncode == 2 and json.loads(again.stdout)["error"].startswith("job.yaml exists: pass --force")
    proc = run_smtrain("import", "argparse_launcher.py", "mnist.yaml", "-o", "json", cwd=work)
    document = json.loads(proc.stdout)
    assert proc.returncode == 0 and document["spec_file"] == "mnist.yaml"
    assert len(document["taken_from_defaults"]) == 3 and document["variables"] == []
    checked = run_smtrain("validate", "mnist.yaml", cwd=work, env={"AWS_REGION": "us-east-1"})
    assert checked.returncode == 0, checked.stdout + checked.stderr
