"""The request preview (validate, plan) against the SDK's own rendering (dry run, submit): same fields,
same limits, same verdict, so that neither path can accept what the other refuses."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from smtrain.bundle.request import make_request, new_job_name
from smtrain.plan import build
from smtrain.plan.build import build_plan
from smtrain.plan.catalog import load_catalog
from smtrain.plan.request_limits import request_problems
from smtrain.plan.request_preview import job_name_template, preview_request, source_uri_template
from smtrain.sagemaker import submit as submission
from smtrain.sagemaker.estimator import render_request
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support import ROOT, moto_server
from tests.support.cli_runner import smtrain
from tests.support.moto_server import BUCKET, MotoServer, live_spec
from tests.support.specfiles import write_spec

moto_session = moto_server.moto_session
aws = moto_server.aws

CATALOG = load_catalog()
JOB = "preview-job-20260101-000000-abcd"


def held_fields_differ(preview: Any, rendered: Any, path: str = "") -> list[str]:
    """Where `rendered` differs from `preview` on what the preview holds (lists: item by item, all of them)."""
    if isinstance(preview, dict):
        if not isinstance(rendered, dict):
            return [f"{path}: {rendered!r} is not a mapping"]
        out = []
        for key, value in preview.items():
            if key not in rendered:
                out.append(f"{path}.{key}: not in the SDK's request")
            else:
                out += held_fields_differ(value, rendered[key], f"{path}.{key}")
        if path == ".HyperParameters" and set(rendered) != set(preview):  # every hyperparameter counts
            out.append(f"{path}: SDK keys {sorted(set(rendered) ^ set(preview))} differ")
        return out
    if isinstance(preview, list):
        if not isinstance(rendered, list) or len(rendered) != len(preview):
            return [f"{path}: {rendered!r} != {preview!r}"]
        return [d for i, (p, r) in enumerate(zip(preview, rendered, strict=True)) for d in held_fields_differ(p, r,
                                                                                                           f"{path}[{i}]")]
    return [] if preview == rendered else [f"{path}: SDK {rendered!r} != preview {preview!r}"]


def s3_twin(config: Path, tmp_path: Path) -> Path:
    """The config with s3:// places for local ones (local-demo), written next to its original's code."""
    data = yaml.safe_load(config.read_text())
    data["output"] = data["output"] if str(data["output"]).startswith("s3://") else "s3://my-bucket/out"
    data["inputs"] = {name: (uri if str(uri).startswith("s3://") else f"s3://my-bucket/{name}")
                      for name, uri in data.get("inputs", {}).items()}
    path = tmp_path / config.name
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


VARIED: dict[str, dict[str, Any]] = {
    "plain": {"compute": {"instance_type": "ml.g5.xlarge"}},
    "everything": {
        "compute": {"instance_type": "ml.g5.12xlarge", "spot": True, "max_run": "6h", "max_wait": "9h",
                    "keep_alive": "30m", "volume_size": "150GiB"},
        "checkpoints": "s3://my-bucket/ck", "environment": {"NCCL_DEBUG": "WARN", "A_B": "x y"},
        "tags": {"team": "ml", "cost center": "été 42"},
        "network": {"subnets": ["subnet-0abc1234", "subnet-0abc1235"], "security_groups": ["sg-0abc1234"],
                    "isolation": True, "encrypt_inter_container_traffic": True},
        "inputs": {"train": {"uri": "s3://my-bucket/train", "mode": "FastFile", "distribution": "ShardedByS3Key"},
                   "eval": {"uri": "s3://my-bucket/eval", "mode": "File"}, "extra": "s3://my-bucket/x"},
        "hyperparameters": {"note": "héllo \"q\" \\ 😀", "rate": 1e-5, "flag": True, "n": 3},
        "training": {"seed": 7, "steps_per_execution": 4},
    },
    "horovod": {"tensorflow": {"version": "2.12"}, "compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2},
                "distribution": {"strategy": "horovod", "processes_per_host": 2, "mpi_options": "-x NCCL_DEBUG=INFO"}},
    "smddp": {"tensorflow": {"version": "2.11"}, "compute": {"instance_type": "ml.p4d.24xlarge", "nodes": 2},
              "distribution": {"strategy": "smddp", "mpi_options": "-x A=1"}},
    "parameter_server": {"compute": {"instance_type": "ml.g5.2xlarge", "nodes": 3},
                         "distribution": {"strategy": "parameter_server"}},
    "mwms": {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2}},
    "own_image": {"tensorflow": {"version": "2.21", "image_uri": "123456789012.dkr.ecr.us-east-1.amazonaws.com/tf:2.21"},
                  "compute": {"instance_type": "ml.g5.xlarge"}},
    "slashes": {"compute": {"instance_type": "ml.g5.xlarge"}, "output": "s3://my-bucket//a//b/"},
    "own_code": {"compute": {"instance_type": "ml.g5.xlarge"}, "code": {"source_dir": "src", "entry_point": "train.py"},
                 "inputs": {"stream": {"uri": "s3://my-bucket/stream", "mode": "Pipe"}}},
    "own_code_settings": {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2, "allow_cpu": True},
                          "code": {"source_dir": "src", "entry_point": "train.py"},
                          "training": {"epochs": 3, "gradient_accumulation_steps": 2},
                          "hyperparameters": {"epochs": 2, "learning_rate": 0.1}, "environment": {"A": "1"}},
    "wrapped": {"compute": {"instance_type": "ml.g5.12xlarge"},
                "code": {"source_dir": "src", "entry_point": "train.py", "wrap": True, "wrap_batch": "global"},
                "training": {"lr_scaling": "sqrt"}, "hyperparameters": {"epochs": 2}, "environment": {"A": "1"}},
    "bundled_accumulating": {"compute": {"instance_type": "ml.g5.12xlarge", "allow_cpu": True},
                             "training": {"gradient_accumulation_steps": 4}},
    "tensorboard_own": {"compute": {"instance_type": "ml.g5.xlarge"}, "tensorboard": "s3://my-bucket/tb/"},
    "tensorboard_off": {"compute": {"instance_type": "ml.g5.xlarge"}, "tensorboard": False},
}


def assert_preview_is_the_sdk_request(spec_path: Path) -> None:
    plan = build_plan(load_spec(spec_path, env={}), CATALOG)
    request = make_request(plan, JOB)
    rendered = render_request(submission.estimator_spec(request), JOB)
    preview = preview_request(plan, JOB, request.source_uri)
    assert held_fields_differ(preview, rendered) == []
    # Both or neither: the preview leaving out a field the SDK sends would pass the check above.
    assert preview.get("TensorBoardOutputConfig") == rendered.get("TensorBoardOutputConfig")
    # The fields the spec decides are all there, each one held.
    assert {"TrainingJobName", "RoleArn", "HyperParameters", "ResourceConfig", "StoppingCondition",
            "OutputDataConfig", "AlgorithmSpecification"} <= set(preview)


@pytest.mark.parametrize("config", sorted((ROOT / "configs").glob("*.yaml")), ids=lambda p: p.name)
def test_preview_is_the_sdk_request_for_every_config(config, tmp_path):
    twin = s3_twin(config, tmp_path)
    for item in ("src", "code"):  # configs that bring code name it relative to themselves
        if (config.parent / item).exists():
            (tmp_path / item).symlink_to(config.parent / item)
    assert_preview_is_the_sdk_request(twin)


@pytest.mark.parametrize("name", sorted(VARIED))
def test_preview_is_the_sdk_request_for_varied_specs(name, tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    spec = write_spec(tmp_path, VARIED[name])
    assert_preview_is_the_sdk_request(spec)
    preview = preview_request(build_plan(load_spec(spec, env={}), CATALOG))
    if name == "tensorboard_off":
        assert "TensorBoardOutputConfig" not in preview
    if name == "everything":
        assert {"CheckpointConfig", "TensorBoardOutputConfig", "VpcConfig", "Environment", "Tags", "InputDataConfig",
                "EnableManagedSpotTraining", "EnableNetworkIsolation",
                "EnableInterContainerTrafficEncryption"} <= set(preview)
        assert preview["ResourceConfig"]["KeepAlivePeriodInSeconds"] == 1800


def test_a_wrapped_job_through_the_sdk_runs_the_wrap_with_exactly_the_specs_hyperparameters(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "nodes": 2},
                                 "code": {"source_dir": "src", "entry_point": "train.py", "wrap": True},
                                 "training": {"epochs": 5}, "hyperparameters": {"epochs": 2, "batch-size": 32},
                                 "environment": {"NCCL_DEBUG": "WARN"}})
    plan = build_plan(load_spec(spec, env={}), CATALOG)
    request = make_request(plan, JOB)
    rendered = render_request(submission.estimator_spec(request), JOB)
    hps = {k: json.loads(v) for k, v in rendered["HyperParameters"].items()}
    assert hps["sagemaker_program"] == "smtrain_wrap.py"
    assert {k: v for k, v in hps.items() if not k.startswith("sagemaker_")} == {
        "epochs": 2, "batch-size": 32, "model_dir": f"s3://my-bucket/out/{JOB}/model"}
    assert rendered["Environment"] == {"NCCL_DEBUG": "WARN", "SMTRAIN_WRAP_SCRIPT": "train.py",
                                       "SMTRAIN_WRAP_BATCH": "per_replica"}
    assert rendered["AlgorithmSpecification"]["MetricDefinitions"]
    # The bundle holds the wrap, its package and the user's script, all at its root.
    assert {"smtrain_wrap.py", "smtrain_entry.py", "smtrain_tf/__init__.py", "train.py"} <= \
        {f.path for f in request.bundle.files}


def test_templates_have_the_length_of_what_submit_makes(tmp_path):
    plan = build_plan(load_spec(write_spec(tmp_path, VARIED["plain"]), env={}), CATALOG)
    assert len(job_name_template(plan.spec.name)) == len(new_job_name(plan.spec.name))
    real = make_request(plan).source_uri
    assert re.sub("[0-9a-f]{64}", "0" * 64, real) == source_uri_template(plan.spec.output)


# --- the same verdict on specs built to hit limits ----------------------------------------------------

CORPUS: dict[str, tuple[dict[str, Any], set[str]]] = {
    "too_many_hyperparameters": ({"hyperparameters": {f"h{i}": i for i in range(90)}}, {"hyperparameters"}),
    "keep_alive_over_max": ({"compute": {"keep_alive": 21601}}, {"compute.keep_alive"}),
    "too_many_variables": ({"environment": {f"V{i}": "1" for i in range(101)}}, {"environment"}),
    "long_variable": ({"environment": {"LONG": "v" * 513}}, {"environment.LONG"}),
    "too_many_tags": ({"tags": {f"t{i}": "v" for i in range(51)}}, {"tags"}),
    "long_hyperparameter": ({"hyperparameters": {"note": "n" * 2499}}, {"hyperparameters.note"}),
    "long_input_uri": ({"inputs": {"train": "s3://my-bucket/" + "d" * 1010}}, {"inputs.train.uri"}),
    "too_many_channels": ({"inputs": {f"c{i}": f"s3://my-bucket/{i}" for i in range(21)}}, {"inputs"}),
    "long_image": ({"tensorflow": {"image_uri": "registry.example/" + "i" * 250}}, {"tensorflow.image_uri"}),
    "long_tensorboard": ({"tensorboard": "s3://my-bucket/" + "t" * 1010}, {"tensorboard"}),
    # <output>/tensorboard, the default, outgrows SageMaker's limit where the output itself fits.
    "long_default_tensorboard": ({"output": "s3://my-bucket/" + "o" * 1000}, {"output"}),
    "too_many_subnets": ({"network": {"subnets": [f"subnet-{i:08x}" for i in range(17)],
                                      "security_groups": ["sg-0abc1234"]}}, {"network.subnets"}),
}


def corpus_spec(tmp_path: Path, name: str) -> Path:
    changes = {"compute": {"instance_type": "ml.g5.xlarge", **CORPUS[name][0].get("compute", {})}}
    return write_spec(tmp_path, {**CORPUS[name][0], **changes}, name=f"{name}.yaml")


def fields_in(stderr: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^error: \S+:\d+:\d+: (\S+): ", stderr, re.M)}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_validate_and_the_dry_run_refuse_alike(name, tmp_path):
    spec = corpus_spec(tmp_path, name)
    validate = smtrain("validate", str(spec))
    dry = smtrain("submit", str(spec), "--dry-run", "-o", "json")
    assert (validate.returncode, dry.returncode) == (2, 2), validate.stderr + dry.stderr
    assert fields_in(validate.stderr) == fields_in(dry.stderr) == CORPUS[name][1]
    assert dry.stdout == "" and "Traceback" not in validate.stderr + dry.stderr


@pytest.fixture
def preview_unchecked(monkeypatch):
    """build_plan without its preview check: what is left to refuse is the rendered request's check."""
    monkeypatch.setattr(build, "preview_problems", lambda plan: [])


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_rendered_request_alone_reaches_the_preview_s_verdict(name, tmp_path, preview_unchecked):
    plan = build_plan(load_spec(corpus_spec(tmp_path, name), env={}), CATALOG)
    expected = request_problems(plan, preview_request(plan))
    with pytest.raises(SpecError) as info:
        submission.dry_run(plan, "limits-job")
    assert {".".join(map(str, p.path)) for p in info.value.problems} == CORPUS[name][1]
    assert [(p.path, p.location) for p in info.value.problems] == [(p.path, p.location) for p in expected]


@pytest.mark.slow
def test_submit_refuses_before_uploading_or_creating(aws: MotoServer, tmp_path, preview_unchecked, monkeypatch):
    for key, value in aws.env(tmp_path).items():
        monkeypatch.setenv(key, value)
    plan = build_plan(load_spec(live_spec(tmp_path, {"compute": {"keep_alive": 21601}}), env={}), CATALOG)
    with pytest.raises(SpecError) as info:
        submission.submit(plan, "never-sent")
    assert [p.path for p in info.value.problems] == [("compute", "keep_alive")]
    assert aws.jobs() == [] and aws.client("s3").list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0
