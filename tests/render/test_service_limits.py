"""Issue 10: every CreateTrainingJob limit in botocore's model, checked before anything is sent and
reported at the spec field (file:line:column) that set the value."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.render.checked_plan import checked_plan
from smtrain.render.request_limits import local_only_fields, preview_problems, spec_field
from smtrain.render.service_model import DOCUMENTED_LIMITS, check_request, model_file, service_model
from smtrain.render.training_request import preview_request
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support import ROOT
from tests.support.cli_runner import no_result, smtrain
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
GOOD = {
    "TrainingJobName": "job-1", "RoleArn": "arn:aws:iam::123456789012:role/SageMakerRole",
    "AlgorithmSpecification": {"TrainingInputMode": "File"},
    "OutputDataConfig": {"S3OutputPath": "s3://bucket/out"},
    "ResourceConfig": {"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "VolumeSizeInGB": 30},
    "StoppingCondition": {"MaxRuntimeInSeconds": 3600},
    "HyperParameters": {"epochs": "3"},
    "Tags": [{"Key": "team", "Value": "ml"}],
    "InputDataConfig": [{"ChannelName": "train", "DataSource": {"S3DataSource": {
        "S3DataType": "S3Prefix", "S3Uri": "s3://bucket/train", "S3DataDistributionType": "FullyReplicated"}}}],
}


def changed(path: tuple, value: Any) -> dict:
    request = copy.deepcopy(GOOD)
    node = request
    for part in path[:-1]:
        node = node[part]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return request


_DELETE = object()


# --- the generic checker ---------------------------------------------------------------------------

def test_a_valid_request_breaks_nothing():
    assert check_request(GOOD) == []


@pytest.mark.parametrize(("path", "value", "where", "words"), [
    (("TrainingJobName",), "j" * 64, ("TrainingJobName",), "64 characters, more than the 63"),  # string max
    (("TrainingJobName",), "-job", ("TrainingJobName",), "does not match the pattern"),  # pattern
    (("RoleArn",), "arn:aws:iam::1:r/x", ("RoleArn",), "18 characters, fewer than the 20"),  # string min
    (("ResourceConfig", "InstanceType"), "ml.g5.xlarg", ("ResourceConfig", "InstanceType"), "closest: ml.g5.xlarge"),
    (("ResourceConfig", "KeepAlivePeriodInSeconds"), 21601, ("ResourceConfig", "KeepAlivePeriodInSeconds"),
     "21601 is more than the 21600"),  # integer max
    (("ResourceConfig", "InstanceCount"), -1, ("ResourceConfig", "InstanceCount"), "less than the 0"),
    (("ResourceConfig", "InstanceCount"), True, ("ResourceConfig", "InstanceCount"), "a whole number"),  # type
    (("HyperParameters",), {f"k{i}": "1" for i in range(101)}, ("HyperParameters",), "101 entries"),  # map max
    (("HyperParameters",), {"k": "v" * 2501}, ("HyperParameters", "k"), "2501 characters"),  # map value
    (("Environment",), {"1ABC": "x"}, ("Environment", "1ABC"), "name '1ABC' does not match"),  # map key
    (("Tags",), [{"Key": f"k{i}", "Value": ""} for i in range(51)], ("Tags",), "51 items"),  # list max
    (("Tags", 0, "Value"), _DELETE, ("Tags", 0, "Value"), "missing"),  # required member, nested
    (("Tags", 0, "Value"), "a,b", ("Tags", 0, "Value"), "does not match"),
    (("InputDataConfig", 0, "DataSource", "S3DataSource", "S3Uri"), "ftp://x", ("InputDataConfig", 0, "DataSource",
     "S3DataSource", "S3Uri"), "does not match"),  # deep nesting
    (("InputDataConfig",), [], ("InputDataConfig",), "0 items, fewer than the 1"),  # list min
    (("OutputDataConfig",), _DELETE, ("OutputDataConfig",), "missing"),  # required at the top
    (("Bogus",), 1, ("Bogus",), "unknown parameter"),
])
def test_each_kind_of_constraint_is_checked(path, value, where, words):
    found = check_request(changed(path, value))
    assert [v.path for v in found] == [where], found
    assert words in found[0].message


def test_limits_sagemaker_documents_are_checked_like_the_model_s_own():
    assert DOCUMENTED_LIMITS["MaxRuntimeInSeconds"] == {"max": 2_419_200}
    for member in ("MaxRuntimeInSeconds", "MaxWaitTimeInSeconds"):
        assert check_request(changed(("StoppingCondition", member), 2_419_200)) == []
        found = check_request(changed(("StoppingCondition", member), 2_419_201))
        assert [(v.path, v.message) for v in found] == [
            (("StoppingCondition", member), "2419201 is more than the 2419200 SageMaker accepts")]


def test_everything_botocore_s_own_validator_finds_is_found_too():
    import botocore.session
    from botocore.validate import ParamValidator

    shape = botocore.session.get_session().get_service_model("sagemaker").operation_model(
        "CreateTrainingJob").input_shape
    broken = [changed(("Tags", 0, "Value"), _DELETE), changed(("RoleArn",), "arn:short"),
              changed(("ResourceConfig", "InstanceCount"), "2"), changed(("Bogus",), 1),
              changed(("InputDataConfig",), []), changed(("HyperParameters",), {"k": 5})]
    for request in broken:
        report = ParamValidator().validate(request, shape)
        assert report.has_errors()
        ours = check_request(request)
        assert ours, report.generate_report()


def test_the_model_is_botocore_s_file_read_without_importing_botocore():
    code = ("import sys; from smtrain.render.service_model import check_request, model_file; "
            "assert check_request({'TrainingJobName': 'x' * 64}); print(model_file()); "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('botocore', 'boto3', 'sagemaker')))")
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    path, modules = proc.stdout.splitlines()
    assert path.endswith(".json.gz") and "/botocore/data/sagemaker/" in path and modules == "[]"
    assert model_file().is_file() and service_model().input_shape("CreateTrainingJob") == "CreateTrainingJobRequest"


# --- the preview, checked in checked_plan (build_plan leaves the request to it), reported at spec fields ----

def refused(tmp_path: Path, changes: dict) -> tuple[Path, list]:
    spec = write_spec(tmp_path, changes)
    with pytest.raises(SpecError) as info:
        checked_plan(load_spec(spec, env={}), CATALOG)
    # The plan stage decides, the render stage checks the request it leads to: build_plan alone takes the
    # spec, and its preview breaks exactly the limits checked_plan refuses.
    plan = build_plan(load_spec(spec, env={}), CATALOG)
    assert [(p.path, p.message) for p in preview_problems(plan)] == [(p.path, p.message) for p in
                                                                     info.value.problems]
    return spec, info.value.problems


def line_of(spec: Path, text: str) -> int:
    return next(i for i, line in enumerate(spec.read_text().splitlines(), 1) if text in line)


def test_the_issue_s_spec_is_refused_at_its_fields(tmp_path):
    spec, problems = refused(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "keep_alive": 21601},
                                        "hyperparameters": {f"hp{i}": i for i in range(101)}})
    by_field = {".".join(map(str, p.path)): p for p in problems}
    assert set(by_field) == {"hyperparameters", "compute.keep_alive"}
    keep = by_field["compute.keep_alive"]
    assert (keep.location.source, keep.location.line) == (str(spec), line_of(spec, "keep_alive: 21601"))
    assert "21601 is more than the 21600" in keep.message and "KeepAlivePeriodInSeconds" in keep.message
    hps = by_field["hyperparameters"]
    assert hps.location.line == line_of(spec, "hyperparameters:")
    assert "entries, more than the 100" in hps.message and "added by smtrain for SageMaker" in hps.message


@pytest.mark.parametrize(("changes", "field", "words"), [
    ({"hyperparameters": {"note": "x" * 2499}}, "hyperparameters.note", "2501 characters"),  # JSON quotes count
    ({"hyperparameters": {"k" * 257: 1}}, "hyperparameters." + "k" * 257, "name 257 characters"),
    ({"environment": {"A": "v" * 513}}, "environment.A", "513 characters"),
    ({"environment": {f"V{i}": "1" for i in range(101)}}, "environment", "101 entries"),
    ({"tags": {f"t{i}": "v" for i in range(51)}}, "tags", "51 items"),
    ({"inputs": {"train": "s3://bucket/" + "d" * 1020}}, "inputs.train.uri", "characters, more than the 1024"),
    ({"inputs": {f"c{i}": f"s3://bucket/{i}" for i in range(21)}}, "inputs", "22 items"),  # with BASE's train
    # tensorboard off: <output>/tensorboard, the default, would be a second problem at output
    # (tests/plan/test_tensorboard_place.py).
    ({"output": "s3://bucket/" + "o" * 1020, "tensorboard": False}, "output", "more than the 1024"),
    ({"tensorflow": {"image_uri": "registry.example/" + "i" * 250}}, "tensorflow.image_uri", "more than the 255"),
    ({"model_uri": "s3://bucket/" + "m" * 1020}, "model_uri", "characters, more than the 1024"),
    ({"inputs": {f"c{i}": f"s3://bucket/{i}" for i in range(19)}, "model_uri": "s3://bucket/m"}, "inputs",
     "21 items"),  # with BASE's train and the model's channel
    ({"network": {"subnets": [f"subnet-{i:08x}" for i in range(17)],
                  "security_groups": ["sg-0abc1234"]}}, "network.subnets", "17 items"),
])
def test_each_limit_is_reported_at_the_spec_field_behind_it(tmp_path, changes, field, words):
    spec, problems = refused(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, **changes})
    found = [(".".join(map(str, p.path)), p.message) for p in problems]
    assert [f for f, _ in found] == [field], found
    assert words in found[0][1]
    assert problems[0].location is not None and problems[0].location.source == str(spec)


def test_request_paths_map_back_to_spec_fields(tmp_path):
    plan = build_plan(load_spec(write_spec(tmp_path, {
        "compute": {"instance_type": "ml.g5.xlarge"}, "tags": {"team": "ml"}, "environment": {"A": "1"},
        "hyperparameters": {"extra": 1}, "model_uri": "s3://bucket/m", "model_channel": "warm",
        "network": {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"]},
        "inputs": {"train": {"uri": "s3://bucket/t", "mode": "FastFile"},
                   "fs": {"file_system": {"id": "fs-0abc1234", "type": "EFS", "directory": "/d"}}}}), env={}),
        CATALOG)
    request = preview_request(plan)
    cases = {
        ("HyperParameters", "epochs"): ("training", "epochs"), ("HyperParameters", "extra"): ("hyperparameters", "extra"),
        ("HyperParameters", "sagemaker_job_name"): ("name",), ("HyperParameters", "model_dir"): ("output",),
        ("HyperParameters",): ("hyperparameters",), ("Environment", "A"): ("environment", "A"),
        ("Environment",): ("environment",), ("Tags", 0, "Value"): ("tags", "team"), ("Tags",): ("tags",),
        ("ResourceConfig", "VolumeSizeInGB"): ("compute", "volume_size"),
        ("StoppingCondition", "MaxRuntimeInSeconds"): ("compute", "max_run"),
        ("InputDataConfig", 0, "DataSource", "S3DataSource", "S3Uri"): ("inputs", "train", "uri"),
        ("InputDataConfig", 0, "InputMode"): ("inputs", "train", "mode"), ("InputDataConfig",): ("inputs",),
        ("InputDataConfig", 0): ("inputs", "train"),
        ("OutputDataConfig", "S3OutputPath"): ("output",), ("TrainingJobName",): ("name",),
        ("ResourceConfig", "InstancePreferences", 0): ("compute", "prefer", 0),
        ("ResourceConfig", "InstancePreferences", 1, "InstanceCount"): ("compute", "prefer", 1, "count"),
        ("ResourceConfig", "InstancePreferences", 0, "TrainingPlanArns", 0): ("compute", "prefer", 0, "training_plan"),
        ("VpcConfig", "Subnets", 1): ("network", "subnets", 1),
        ("VpcConfig", "SecurityGroupIds", 0): ("network", "security_groups", 0),
        ("InputDataConfig", 1, "DataSource", "FileSystemDataSource", "DirectoryPath"):
            ("inputs", "fs", "file_system", "directory"),
        ("InputDataConfig", 1, "DataSource", "FileSystemDataSource", "FileSystemId"): ("inputs", "fs", "file_system", "id"),
        ("InputDataConfig", 2, "DataSource", "S3DataSource", "S3Uri"): ("model_uri",),
        ("InputDataConfig", 2): ("model_channel",),
    }
    assert {path: spec_field(path, request, plan.spec) for path in cases} == cases


def test_a_cluster_s_request_paths_map_back_to_its_groups(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print(1)\n")
    plan = build_plan(load_spec(write_spec(tmp_path, {
        "tensorflow": {"version": "2.12"}, "code": {"source_dir": "src", "entry_point": "train.py"},
        "compute": {"instance_groups": [{"name": "cpu", "instance_type": "ml.c5.xlarge"},
                                        {"name": "gpu", "instance_type": "ml.g5.xlarge", "count": 2}]},
        "distribution": {"strategy": "horovod", "instance_groups": ["gpu"]},
        "inputs": {"train": {"uri": "s3://bucket/t", "instance_groups": ["cpu"]}}}), env={}), CATALOG)
    request = preview_request(plan)
    cases = {
        ("ResourceConfig", "InstanceGroups"): ("compute", "instance_groups"),
        ("ResourceConfig", "InstanceGroups", 1): ("compute", "instance_groups", 1),
        ("ResourceConfig", "InstanceGroups", 1, "InstanceGroupName"): ("compute", "instance_groups", 1, "name"),
        ("ResourceConfig", "InstanceGroups", 0, "InstanceType"): ("compute", "instance_groups", 0, "instance_type"),
        ("ResourceConfig", "InstanceGroups", 0, "InstanceCount"): ("compute", "instance_groups", 0, "count"),
        ("InputDataConfig", 0, "DataSource", "S3DataSource", "InstanceGroupNames", 0): ("inputs", "train",
                                                                                        "instance_groups"),
        ("HyperParameters", "sagemaker_distribution_instance_groups"): ("distribution", "instance_groups"),
    }
    assert {path: spec_field(path, request, plan.spec) for path in cases} == cases


def test_too_many_hyperparameters_say_how_many_smtrain_adds(tmp_path):
    # 101 of the spec's, the bundled entrypoint's 11 training fields, the contract's 6 (sagemaker_program,
    # sagemaker_submit_directory, sagemaker_container_log_level, sagemaker_job_name, sagemaker_region, model_dir).
    _, problems = refused(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                     "hyperparameters": {f"hp{i}": i for i in range(101)}})
    assert [p.message for p in problems] == [
        "118 entries, more than the 100 SageMaker accepts; 6 of them are added by smtrain for SageMaker's TensorFlow "
        "contract (HyperParameters in CreateTrainingJob)"]


def test_a_local_output_leaves_the_other_fields_limits_checked(tmp_path):
    # ("hyperparameters",) sorts before the local-only ("output",): only the fields under it are left aside.
    _, problems = refused(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}, "output": "out",
                                     "hyperparameters": {f"hp{i}": i for i in range(101)}})
    assert [p.path for p in problems] == [("hyperparameters",)]


def test_a_request_that_cannot_render_is_left_unchecked_only_beside_other_problems(tmp_path, monkeypatch):
    from smtrain.render import checked_plan as checking
    from smtrain.spec.problems import Problem

    plan = build_plan(load_spec(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}), env={}),
                      CATALOG)
    found = Problem(("compute",), "a problem of the plan")

    def broken(plan):
        raise ValueError("the request cannot render")

    monkeypatch.setattr(checking, "preview_problems", broken)
    monkeypatch.setattr(checking, "plan_with_problems", lambda *a, **k: (plan, [found]))
    assert checking.checked_plan_with_problems(None, CATALOG) == (plan, [found])  # the plan's problems come first
    monkeypatch.setattr(checking, "plan_with_problems", lambda *a, **k: (plan, []))
    with pytest.raises(ValueError, match="cannot render"):  # with none, a request that cannot render is a bug
        checking.checked_plan_with_problems(None, CATALOG)


def test_the_code_channel_of_an_isolated_job_maps_to_the_output(tmp_path):
    # With network isolation the bundle goes in as a channel of its own, under the output: its values are
    # the output's doing, the channel list the inputs'.
    plan = build_plan(load_spec(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                                      "network": {"isolation": True}}), env={}), CATALOG)
    request = preview_request(plan)
    [code] = [i for i, c in enumerate(request["InputDataConfig"]) if c["ChannelName"] == "code"]
    assert spec_field(("InputDataConfig", code), request, plan.spec) == ("inputs",)
    assert spec_field(("InputDataConfig", code, "DataSource", "S3DataSource", "S3Uri"), request, plan.spec) == (
        "output",)


@pytest.mark.parametrize("config", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_every_example_config_passes(config):
    plan = build_plan(load_spec(config, env={}), CATALOG)
    assert preview_problems(plan) == []
    if not local_only_fields(plan.spec):  # local-demo's paths are for --local; the rest is spotless
        assert check_request(preview_request(plan)) == []


# --- local-only specs ---------------------------------------------------------------------------------

def test_local_paths_are_not_refused_but_named(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                 "inputs": {"train": "data/train", "val": "s3://bucket/val"}, "output": "out"})
    plan = build_plan(load_spec(spec, env={}), CATALOG)
    assert local_only_fields(plan.spec) == [("inputs", "train", "uri"), ("output",)]


# --- through the command line ---------------------------------------------------------------------------

def issue_spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "keep_alive": 21601},
                                 "hyperparameters": {f"hp{i}": i for i in range(101)},
                                 "tags": {"team": "ml", "owner": "t" * 200}})


def test_validate_refuses_the_issue_s_spec_with_file_line_column(tmp_path):
    spec = issue_spec(tmp_path)
    proc = smtrain("validate", str(spec))
    assert proc.returncode == 2, proc.stderr
    assert f"{spec}:{line_of(spec, 'keep_alive: 21601')}:" in proc.stderr
    assert "compute.keep_alive: 21601 is more than the 21600 SageMaker accepts" in proc.stderr
    assert f"{spec}:{line_of(spec, 'hyperparameters:')}:" in proc.stderr and ": hyperparameters: " in proc.stderr
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr and proc.stdout == ""
    data = json.loads(smtrain("validate", str(spec), "-o", "json").stdout)
    assert data["valid"] is False
    assert {p["field"] for p in data["problems"]} == {"compute.keep_alive", "hyperparameters"}
    assert all(p["line"] and p["column"] for p in data["problems"])


def test_plan_refuses_it_too(tmp_path):
    proc = smtrain("plan", str(issue_spec(tmp_path)), "-o", "json")
    assert proc.returncode == 2 and "compute.keep_alive" in proc.stderr and no_result(proc.stdout)


def test_validate_says_valid_for_local_only_with_the_fields(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                 "inputs": {"train": "data/train"}, "output": "file:///tmp/out"})
    proc = smtrain("validate", str(spec))
    assert proc.returncode == 0, proc.stderr
    assert "valid for --local only" in proc.stdout
    assert "inputs.train.uri" in proc.stdout and "output" in proc.stdout
    assert f"{spec}:{line_of(spec, 'train: data/train')}:" in proc.stderr  # each field with its place
    data = json.loads(smtrain("validate", str(spec), "-o", "json").stdout)
    assert data["valid"] is True and data["local_only"] is True
    assert [f["field"] for f in data["local_only_fields"]] == ["inputs.train.uri", "output"]
    s3 = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}, name="s3.yaml")
    proc = smtrain("validate", str(s3))
    assert proc.returncode == 0 and "--local only" not in proc.stdout and ": valid (" in proc.stdout
    assert json.loads(smtrain("validate", str(s3), "-o", "json").stdout)["local_only"] is False



def test_a_dry_run_of_a_local_only_spec_names_each_local_field(tmp_path):
    # It used to blame code.source_dir for the output's problem; now every field on this machine is named.
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"},
                                 "inputs": {"train": "data/train"}, "output": "file:///tmp/out"})
    proc = smtrain("submit", str(spec), "--dry-run")
    assert proc.returncode == 2 and proc.stdout == ""
    errors = [line for line in proc.stderr.splitlines() if line.startswith("error: ")]
    assert [e.split(": ")[2] for e in errors] == ["inputs.train.uri", "output"]
    assert "code.source_dir" not in proc.stderr and "submit --local" in errors[1]
    assert f"{spec}:{line_of(spec, 'train: data/train')}:" in errors[0]
