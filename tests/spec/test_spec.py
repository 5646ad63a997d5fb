"""The job spec loader: types, positions, interpolation, overrides, and cross-field rules."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.specfiles import write_spec

GOOD = """\
name: mnist
role: arn:aws:iam::123456789012:role/SageMakerRole
region: us-east-1
tensorflow:
  version: "2.19"
compute:
  nodes: 2
  volume_size: 100GiB
  max_run: 90m
inputs:
  train: s3://my-bucket/train
  validation: {uri: s3://my-bucket/val, mode: FastFile}
output: s3://my-bucket/out
"""


def load_text(tmp_path: Path, text: str, overrides=(), env=None):
    path = tmp_path / "job.yaml"
    path.write_text(text)
    return load_spec(path, overrides, env=env or {})


def problems(tmp_path: Path, text: str, overrides=(), env=None) -> list[str]:
    with pytest.raises(SpecError) as info:
        load_text(tmp_path, text, overrides, env)
    return [p.render() for p in info.value.problems]


def test_good_spec_is_typed(tmp_path):
    spec = load_text(tmp_path, GOOD).spec
    assert spec.compute.nodes == 2
    assert spec.compute.volume_size == 100 * 2**30
    assert spec.compute.max_run == 5400
    assert spec.inputs["train"].uri == "s3://my-bucket/train"
    assert spec.inputs["validation"].mode == "FastFile"
    assert spec.compute.instance_type == "auto" and spec.distribution.strategy == "auto"


def test_unknown_key_did_you_mean_with_position(tmp_path):
    out = problems(tmp_path, GOOD.replace("  nodes: 2", "  nods: 2"))
    assert out == [f"{tmp_path / 'job.yaml'}:7:3: compute.nods: unknown field 'nods' (did you mean 'nodes'?)"]


def test_every_error_of_a_file_at_once(tmp_path):
    text = GOOD.replace("  nodes: 2", "  nodes: two").replace("region: us-east-1", "regin: us-east-1")
    text = text.replace("mode: FastFile", "mode: Fast")
    out = problems(tmp_path, text)
    assert len(out) == 3
    assert any(":7:10: compute.nodes:" in p for p in out)
    assert any(":3:1: regin: unknown field 'regin' (did you mean 'region'?)" in p for p in out)
    assert any("inputs.validation.mode" in p and "'Fast'" in p for p in out)


def test_missing_required_field(tmp_path):
    out = problems(tmp_path, GOOD.replace("output: s3://my-bucket/out\n", ""))
    assert any(p.endswith("output: required field is missing") for p in out)


@pytest.mark.parametrize("text, needle", [
    ("", "the file is empty"),
    ("# only a comment\n", "the file is empty"),
    ("- a\n- b\n", "top level must be a mapping"),
    ("just text\n", "top level must be a mapping"),
    ("name: [unclosed\n", "YAML syntax error"),
])
def test_malformed_files(tmp_path, text, needle):
    out = problems(tmp_path, text)
    assert len(out) == 1 and needle in out[0]
    assert str(tmp_path / "job.yaml") in out[0]


def test_duplicate_key_is_reported_with_the_other_problems(tmp_path):
    out = problems(tmp_path, "name: a\nname: b\n")
    assert out[0] == f"{tmp_path / 'job.yaml'}:2:1: name: duplicate key 'name' (first given on line 1)"
    assert any("role: required field is missing" in p for p in out)


def test_duplicate_key_position(tmp_path):
    out = problems(tmp_path, GOOD.replace("  max_run: 90m", "  max_run: 90m\n  nodes: 3"))
    assert out == [f"{tmp_path / 'job.yaml'}:10:3: compute.nodes: duplicate key 'nodes' (first given on line 7)"]


def test_interpolation_types_and_defaults(tmp_path):
    text = GOOD.replace("nodes: 2", "nodes: ${NODES}").replace("s3://my-bucket/out", "${OUT:-s3://my-bucket/o2}")
    spec = load_text(tmp_path, text, env={"NODES": "4"}).spec
    assert spec.compute.nodes == 4
    assert spec.output == "s3://my-bucket/o2"


def test_unset_variable_is_named(tmp_path):
    out = problems(tmp_path, GOOD.replace("nodes: 2", "nodes: ${NODE_COUNT}"))
    assert len(out) == 1 and "NODE_COUNT is not set" in out[0] and ":7:10:" in out[0]


def test_escaped_dollar_stays_literal(tmp_path):
    spec = load_text(tmp_path, GOOD + "environment:\n  X: $${HOME}\n").spec
    assert spec.environment["X"] == "${HOME}"


def test_overrides_are_typed_by_schema(tmp_path):
    loaded = load_text(tmp_path, GOOD, overrides=["compute.nodes=4", "tensorflow.version=2.10",
                                                  "compute.spot=true", "checkpoints=s3://my-bucket/ck",
                                                  "tags={team: ml}"])
    spec = loaded.spec
    assert spec.compute.nodes == 4 and spec.compute.spot is True
    assert spec.tensorflow.version == "2.10"
    assert spec.tags == {"team": "ml"}


def test_override_errors_name_the_option(tmp_path):
    out = problems(tmp_path, GOOD, overrides=["compute.nodez=4"])
    assert out == ["--set compute.nodez=4: compute.nodez: unknown field 'nodez' (did you mean 'nodes'?)"]
    out = problems(tmp_path, GOOD, overrides=["compute.nodes"])
    assert "write FIELD.PATH=VALUE" in out[0]


def test_unquoted_version_keeps_its_text(tmp_path):
    spec = load_text(tmp_path, GOOD.replace('version: "2.19"', "version: 2.10")).spec
    assert spec.tensorflow.version == "2.10"


@pytest.mark.parametrize("field, value, needle", [
    ("compute.max_run", "6x", "not a duration"),
    ("compute.max_run", "30d", "28 days"),
    ("compute.volume_size", "lots", "not a size"),
    ("compute.min_gpu_memory", "40 parsecs", "not a size"),
    ("role", "SageMakerRole", "full ARN"),
    ("name", "bad_name", "letters, digits and hyphens"),
    ("name", "x" * 43, "up to 42"),
    ("region", "useast1", "not an AWS region"),
    ("output", "http://example/x", "only s3://"),
    ("checkpoints", "s3:/bucket", "not an S3 URI"),
    ("inputs.train", "s3://B_ad/x", "not a valid S3 URI"),
    ("network.subnets", "[subnet-xyz]", "not a subnet id"),
    ("distribution.processes_per_host", "0", "positive whole number"),
])
def test_field_forms(tmp_path, field, value, needle):
    out = problems(tmp_path, GOOD, overrides=[f"{field}={value}"])
    assert any(needle in p for p in out), out


def test_tags_and_env_and_channel_names(tmp_path):
    text = GOOD + "tags: {'aws:owner': x, team: 'a|b'}\nenvironment: {'1BAD': x}\n"
    text = text.replace("  train: s3://my-bucket/train", "  'bad channel': s3://my-bucket/train")
    out = problems(tmp_path, text)
    assert any("tags.aws:owner" in p and "not a tag key" in p for p in out)
    assert any("tags.team" in p and "tag values" in p for p in out)
    assert any("environment.1BAD" in p for p in out)
    assert any("inputs.bad channel" in p and "channel name" in p for p in out)


def test_spot_rules(tmp_path):
    out = problems(tmp_path, GOOD, overrides=["compute.spot=true"])
    assert any("compute.spot" in p and "checkpoints" in p for p in out)
    out = problems(tmp_path, GOOD, overrides=["compute.spot=true", "checkpoints=s3://my-bucket/ck",
                                              "compute.max_run=6h", "compute.max_wait=1h"])
    assert any("compute.max_wait" in p and "at least max_run" in p for p in out)
    out = problems(tmp_path, GOOD, overrides=["compute.max_wait=1h"])
    assert any("only to spot" in p for p in out)


def test_cross_field_rules(tmp_path):
    out = problems(tmp_path, GOOD, overrides=["network.subnets=[subnet-0abc12345]"])
    assert any("security_groups" in p for p in out)
    out = problems(tmp_path, GOOD, overrides=["hyperparameters={epochs: 3}"])
    assert any("set training.epochs" in p for p in out)
    out = problems(tmp_path, GOOD, overrides=["hyperparameters={sagemaker_program: x}"])
    assert any("SageMaker's own" in p for p in out)
    # Neither version nor image_uri: the spec is fine, the plan gives it the newest patched image.
    assert load_text(tmp_path, GOOD, overrides=["tensorflow.version=null"]).spec.tensorflow.version is None


def test_code_paths_are_checked_relative_to_the_spec(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('hi')\n")
    spec = load_text(tmp_path, GOOD + "code: {source_dir: src, entry_point: train.py}\n").spec
    assert spec.code.source_dir == "src"
    out = problems(tmp_path, GOOD + "code: {source_dir: nope}\n")
    assert any("code.source_dir" in p and "not found" in p for p in out)
    out = problems(tmp_path, GOOD + "code: {source_dir: src, entry_point: missing.py}\n")
    assert any("code.entry_point" in p for p in out)


def test_missing_file(tmp_path):
    with pytest.raises(SpecError) as info:
        load_spec(tmp_path / "nope.yaml")
    assert "no such file" in info.value.problems[0].render()


def test_specfiles_helper_roundtrip(tmp_path):
    assert load_spec(write_spec(tmp_path)).spec.name == "test-job"


def test_an_unknown_training_field_is_pointed_to_hyperparameters(tmp_path):
    def problems(changes):
        with pytest.raises(SpecError) as info:
            load_spec(write_spec(tmp_path, changes), env={})
        return [p.render() for p in info.value.problems]

    [out] = problems({"training": {"dropout": 0.5}})
    assert "training.dropout: unknown field 'dropout' (known fields: model, epochs," in out
    assert out.endswith("; a setting for the entry point goes under hyperparameters: instead"), out
    [nested] = problems({"compute": {"dropout": 0.5}})
    assert "hyperparameters" not in nested, nested
