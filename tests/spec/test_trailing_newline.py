"""Patterns match whole: a value with a newline at its end never passes a pattern check.

Python's `$` also matches before a final newline, so `^...$` with re.match let "name\\n" through.
The test walks every field and key the JSON Schema gives a pattern (the schema is written from
the same field types as the loader), appends a newline, and expects the loader to refuse it at that
field, or (for numbers, sizes and durations, whose text is read into a number) to read it into a
value that holds no newline. `--job-name` and the SageMaker path's own job-name check too.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from smtrain import exit_codes
from smtrain.errors import UserError
from smtrain.sagemaker.create import TRAINING
from smtrain.spec import yaml_source
from smtrain.spec.model import json_schema, load_spec
from smtrain.spec.problems import SpecError, dotted
from tests.support.cli_runner import smtrain
from tests.support.specfiles import BASE, merged

NL = "<NL>"  # where the newline goes in a sample
IMAGE = "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-image:1.0"
VPC = {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"]}
GIT = "https://example.com/team/models.git"
TUNING = {"objective": "validation:accuracy", "ranges": {"training.learning_rate": {"min": 0.001, "max": 0.1}}}

# Every pattern-checked place in the schema: a valid sample for it, and the field a newline there is
# refused at (None: the text is read into a number, so no newline can remain).
MLFLOW_ARN = "arn:aws:sagemaker:us-east-1:123456789012:mlflow-tracking-server/team"
IN_A_VPC = {"network": {"subnets": ["subnet-0abc1234"], "security_groups": ["sg-0abc1234"]}}
SAMPLES: dict[str, tuple[dict[str, Any], str | None]] = {
    "name": ({"name": "mnist<NL>"}, "name"),
    "role": ({"role": "arn:aws:iam::123456789012:role/R<NL>"}, "role"),
    "region": ({"region": "us-east-1<NL>"}, "region"),
    "tensorflow.version": ({"tensorflow": {"version": "2.19<NL>"}}, "tensorflow.version"),
    "tensorflow.python": ({"tensorflow": {"python": "py312<NL>"}}, "tensorflow.python"),
    "tensorflow.image_uri": ({"tensorflow": {"image_uri": IMAGE + NL}}, "tensorflow.image_uri"),
    "compute.instance_type": ({"compute": {"instance_type": "ml.g5.xlarge<NL>"}}, "compute.instance_type"),
    "compute.gpu": ({"compute": {"gpu": "A10G<NL>"}}, "compute.gpu"),
    "compute.gpus_per_node": ({"compute": {"gpus_per_node": "1<NL>"}}, None),
    "compute.min_gpu_memory": ({"compute": {"min_gpu_memory": "16GB<NL>"}}, None),
    "compute.nodes": ({"compute": {"nodes": "1<NL>"}}, None),
    "compute.volume_size": ({"compute": {"volume_size": "30GB<NL>"}}, None),
    "compute.max_run": ({"compute": {"max_run": "6h<NL>"}}, None),
    "compute.max_wait": ({"compute": {"spot": True, "max_wait": "6h<NL>", "max_run": "1h"},
                          "checkpoints": "s3://my-bucket/ck"}, None),
    "compute.keep_alive": ({"compute": {"keep_alive": "0<NL>"}}, None),
    "compute.max_pending": ({"compute": {"max_pending": "2h<NL>"}}, None),
    "compute.max_retry_attempts": ({"compute": {"max_retry_attempts": "3<NL>"}}, None),
    "model_package.group": ({"model_package": {"group": "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/"
                                                         "m<NL>"}}, "model_package.group"),
    "model_package.source": ({"model_package": {
        "group": "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/m",
        "source": "arn:aws:sagemaker:us-east-1:123456789012:model-package/m/1<NL>"}}, "model_package.source"),
    "compute.training_plan": ({"compute": {"training_plan": "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"
                                                            "p5<NL>"}}, "compute.training_plan"),
    "compute.volume_kms_key": ({"compute": {"instance_type": "ml.p3.2xlarge", "volume_kms_key": "alias/v<NL>"}},
                               "compute.volume_kms_key"),
    "output_kms_key": ({"output_kms_key": "alias/o<NL>"}, "output_kms_key"),
    "distribution.processes_per_host": ({"distribution": {"processes_per_host": "1<NL>"}}, None),
    "distribution.mpi_options": ({"distribution": {"mpi_options": "-x A=1<NL>"}}, "distribution.mpi_options"),
    "training.model": ({"training": {"model": "mlp<NL>"}}, "training.model"),
    "training.epochs": ({"training": {"epochs": "2<NL>"}}, None),
    "training.batch_size_per_replica": ({"training": {"batch_size_per_replica": "8<NL>"}}, None),
    "training.learning_rate": ({"training": {"learning_rate": "0.1<NL>"}}, None),
    "training.warmup_epochs": ({"training": {"warmup_epochs": "1<NL>"}}, None),
    "training.steps_per_execution": ({"training": {"steps_per_execution": "2<NL>"}}, None),
    "training.checkpoint_every_steps": ({"training": {"checkpoint_every_steps": "2<NL>"}}, None),
    "training.seed": ({"training": {"seed": "7<NL>"}}, None),
    "training.gradient_accumulation_steps": ({"training": {"gradient_accumulation_steps": "4<NL>"}}, None),
    "training.data": ({"training": {"data": "channels<NL>"}}, "training.data"),
    "code.source_dir": ({"code": {"source_dir": "src<NL>"}}, "code.source_dir"),
    "code.entry_point": ({"code": {"source_dir": "src", "entry_point": "train.py<NL>"}}, "code.entry_point"),
    "code.requirements": ({"code": {"source_dir": "src", "requirements": "req.txt<NL>"}}, "code.requirements"),
    "code.dependencies[0]": ({"code": {"dependencies": ["src<NL>"]}}, "code.dependencies[0]"),
    "code.allow_secrets[0]": ({"code": {"allow_secrets": ["*.pem<NL>"]}}, "code.allow_secrets[0]"),
    "code.max_bundle_size": ({"code": {"max_bundle_size": "100MB<NL>"}}, None),
    "code.git.repository": ({"code": {"git": {"repository": GIT + NL}}}, "code.git.repository"),
    "code.git.branch": ({"code": {"git": {"repository": GIT, "branch": "main<NL>"}}}, "code.git.branch"),
    "code.git.commit": ({"code": {"git": {"repository": GIT, "commit": "abc1234<NL>"}}}, "code.git.commit"),
    "code.git.directory": ({"code": {"git": {"repository": GIT, "directory": "src<NL>"}}}, "code.git.directory"),
    "tuning.objective": ({"tuning": {**TUNING, "objective": "validation:accuracy<NL>"}}, "tuning.objective"),
    "tuning.max_jobs": ({"tuning": {**TUNING, "max_jobs": "4<NL>"}}, None),
    "tuning.max_parallel_jobs": ({"tuning": {**TUNING, "max_parallel_jobs": "2<NL>"}}, None),
    "tuning.max_runtime": ({"tuning": {**TUNING, "max_runtime": "2h<NL>"}}, None),
    "tuning.ranges.<key>": ({"tuning": {**TUNING, "ranges": {"training.learning_rate<NL>": {"min": 0.001, "max": 0.1}}}},
                            "tuning.ranges['training.learning_rate\\n']"),
    "tuning.ranges.<value>.min": ({"tuning": {**TUNING, "ranges": {"training.learning_rate": {"min": "0.001<NL>",
                                                                                              "max": 0.1}}}}, None),
    "tuning.ranges.<value>.max": ({"tuning": {**TUNING, "ranges": {"training.learning_rate": {"min": 0.001,
                                                                                              "max": "0.1<NL>"}}}}, None),
    "inputs.<key>": ({"inputs": {"train<NL>": "s3://my-bucket/t"}}, "inputs['train\\n']"),
    "inputs.<value>": ({"inputs": {"train": "s3://my-bucket/t<NL>"}}, "inputs.train.uri"),
    "checkpoint_local_path": ({"checkpoints": "s3://my-bucket/ck", "checkpoint_local_path": "/ck<NL>"},
                              "checkpoint_local_path"),
    "model_uri": ({"model_uri": "s3://my-bucket/m.tar.gz<NL>"}, "model_uri"),
    "model_channel": ({"model_uri": "s3://my-bucket/m.tar.gz", "model_channel": "warm<NL>"}, "model_channel"),
    "inputs.<value>.file_system.id": ({**IN_A_VPC, "inputs": {"fs": {"file_system": {
        "id": "fs-0123abcd<NL>", "type": "EFS", "directory": "/data"}}}}, "inputs.fs.file_system.id"),
    "inputs.<value>.file_system.directory": ({**IN_A_VPC, "inputs": {"fs": {"file_system": {
        "id": "fs-0123abcd", "type": "EFS", "directory": "/data<NL>"}}}}, "inputs.fs.file_system.directory"),
    "inputs.<value>.uri": ({"inputs": {"train": {"uri": "s3://my-bucket/t<NL>"}}}, "inputs.train.uri"),
    "output": ({"output": "s3://my-bucket/out<NL>"}, "output"),
    "checkpoints": ({"checkpoints": "s3://my-bucket/ck<NL>"}, "checkpoints"),
    "tensorboard": ({"tensorboard": "s3://my-bucket/tb<NL>"}, "tensorboard"),
    "metrics[0]": ({"metrics": ["mae<NL>"]}, "metrics[0]"),
    "hyperparameters.<key>": ({"hyperparameters": {"dropout<NL>": 0.5}}, "hyperparameters['dropout\\n']"),
    "environment.<key>": ({"environment": {"MY_VAR<NL>": "x"}}, "environment['MY_VAR\\n']"),
    "tags.<key>": ({"tags": {"team<NL>": "ml"}}, "tags['team\\n']"),
    "tags.<value>": ({"tags": {"team": "ml<NL>"}}, "tags.team"),
    "network.subnets[0]": ({"network": {**VPC, "subnets": ["subnet-0abc1234<NL>"]}}, "network.subnets[0]"),
    "network.security_groups[0]": ({"network": {**VPC, "security_groups": ["sg-0abc1234<NL>"]}},
                                   "network.security_groups[0]"),
    "tracking.mlflow": ({"tracking": {"mlflow": "http://127.0.0.1:5000<NL>"}}, "tracking.mlflow"),
    "tracking.experiment": ({"tracking": {"mlflow": "http://127.0.0.1:5000", "experiment": "mnist<NL>"}},
                            "tracking.experiment"),
    "tracking.run": ({"tracking": {"mlflow": MLFLOW_ARN, "run": "first<NL>"}}, "tracking.run"),
    "tracking.sagemaker_experiment.experiment": ({"tracking": {"sagemaker_experiment": {"experiment": "e<NL>"}}},
                                                 "tracking.sagemaker_experiment.experiment"),
    "tracking.sagemaker_experiment.trial": ({"tracking": {"sagemaker_experiment": {"experiment": "e",
                                                                                   "trial": "t<NL>"}}},
                                            "tracking.sagemaker_experiment.trial"),
    "tracking.sagemaker_experiment.run": ({"tracking": {"sagemaker_experiment": {"experiment": "e", "run": "r<NL>"}}},
                                          "tracking.sagemaker_experiment.run"),
}


def _resolve(schema: dict[str, Any], node: dict[str, Any]) -> dict[str, Any]:
    while "$ref" in node:
        node = schema["$defs"][node["$ref"].rsplit("/", 1)[1]]
    return node


def _has_pattern(node: dict[str, Any]) -> bool:
    if node.get("pattern") and node["pattern"] != yaml_source.INTERPOLATION_PATTERN:
        return True
    return any(_has_pattern(alt) for alt in node.get("anyOf", []) if "$ref" not in alt)


def pattern_paths(schema: dict[str, Any], node: dict[str, Any], path: str = "") -> set[str]:
    """Dotted places in the schema whose value (or key: <key>) a pattern checks; <value> for any key."""
    node = _resolve(schema, node)
    found = {path} if path and _has_pattern(node) else set()
    for alt in node.get("anyOf", []):
        if "$ref" in alt or "properties" in alt:
            found |= pattern_paths(schema, alt, path)
    for name, sub in node.get("properties", {}).items():
        found |= pattern_paths(schema, sub, f"{path}.{name}" if path else name)
    if isinstance(node.get("additionalProperties"), dict):
        found |= pattern_paths(schema, node["additionalProperties"], f"{path}.<value>")
    if "propertyNames" in node and _has_pattern(node["propertyNames"]):
        found.add(f"{path}.<key>")
    if isinstance(node.get("items"), dict):
        found |= pattern_paths(schema, node["items"], f"{path}[0]")
    return found


def test_the_samples_cover_every_pattern_checked_place():
    assert pattern_paths(json_schema(), json_schema()) == set(SAMPLES)


def _fill(node: Any, text: str) -> Any:
    if isinstance(node, dict):
        return {_fill(k, text): _fill(v, text) for k, v in node.items()}
    if isinstance(node, list):
        return [_fill(v, text) for v in node]
    return node.replace(NL, text) if isinstance(node, str) else node


def _load(tmp_path: Path, fragment: dict[str, Any]) -> Any:
    (tmp_path / "src").mkdir(exist_ok=True)
    for name in ("train.py", "req.txt"):
        (tmp_path / "src" / name).write_text("")
    data = merged(copy.deepcopy(BASE), fragment)
    if "inputs" in fragment:
        data["inputs"] = fragment["inputs"]
    path = tmp_path / "job.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return load_spec(path, env={})


def _value_at(spec: Any, place: str) -> Any:
    node: Any = spec.model_dump()
    for part in place.replace("[0]", ".0").split("."):
        if part in ("<key>", "<value>"):
            node = next(iter(node.keys() if part == "<key>" else node.values()))
        else:
            node = node[int(part)] if part == "0" else node[part]
    return node


@pytest.mark.parametrize("place", sorted(SAMPLES))
def test_a_trailing_newline_never_passes(tmp_path, place):
    fragment, refused_at = SAMPLES[place]
    _load(tmp_path, _fill(fragment, ""))  # the sample itself is valid
    if refused_at is None:  # read into a number: no text, so no newline, reaches the request
        value = _value_at(_load(tmp_path, _fill(fragment, "\n")).spec, place)
        assert isinstance(value, (int, float)) and not isinstance(value, bool), value
        return
    with pytest.raises(SpecError) as info:
        _load(tmp_path, _fill(fragment, "\n"))
    assert refused_at in [dotted(p.path) for p in info.value.problems], [p.render() for p in info.value.problems]


def test_the_sagemaker_path_refuses_a_job_name_with_a_newline():
    TRAINING.check_name("mnist-20250101-000000-abcd")
    with pytest.raises(UserError, match="invalid training job name") as info:
        TRAINING.check_name("mnist-20250101-000000-abcd\n")
    assert info.value.code == exit_codes.USAGE


def test_job_name_option_refuses_a_trailing_newline(tmp_path):
    spec = tmp_path / "job.yaml"
    spec.write_text(yaml.safe_dump(BASE))
    proc = smtrain("submit", str(spec), "--dry-run", "--job-name", "my-job\n")
    assert proc.returncode == 2, proc.stderr
    assert "invalid job name 'my-job\\n' (--job-name): 1-63 letters, digits and hyphens" in proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""
