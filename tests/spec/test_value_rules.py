"""The spec's value rules: ranges SageMaker holds to, finite numbers, sizes with units, image references,
channel names, ${VAR} forms, every problem of a file in one run, and text taken as written."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from smtrain.spec.units import parse_duration, parse_since, parse_size
from tests.spec.inprocess import run, strict_json
from tests.support.specfiles import BASE_TEXT as BASE


def load(tmp_path: Path, extra: str = "", overrides=(), env=None, base: str = BASE):
    path = tmp_path / "job.yaml"
    path.write_text(base + extra, encoding="utf-8")
    return load_spec(path, overrides, env=env or {})


def problems(tmp_path: Path, extra: str = "", overrides=(), env=None, base: str = BASE) -> list[str]:
    with pytest.raises(SpecError) as info:
        load(tmp_path, extra, overrides, env, base)
    return [p.render() for p in info.value.problems]


# --- durations SageMaker holds to ----------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "0s", "0m", "0.0"])
def test_max_run_is_at_least_one_second(tmp_path, value):
    out = problems(tmp_path, f"compute:\n  max_run: {value}\n")
    assert len(out) == 1 and ":10:12: compute.max_run:" in out[0] and "at least 1 second" in out[0]


def test_max_wait_over_28_days_is_refused_given_or_by_default(tmp_path):
    spot = "compute:\n  spot: true\n  max_run: {run}\n{wait}checkpoints: s3://my-bucket/ck\n"
    out = problems(tmp_path, spot.format(run="20d", wait="  max_wait: 29d\n"))
    assert any("compute.max_wait: '29d' is over SageMaker's limit of 28 days" in p for p in out)
    out = problems(tmp_path, spot.format(run="15d", wait=""))  # the default: 2 x max_run = 30d
    assert out == [f"{tmp_path / 'job.yaml'}:11:12: compute.max_run: spot training waits 2 x max_run by default "
                   "(30d), over SageMaker's limit of 28 days: set compute.max_wait (from max_run up to 28d)"]
    assert load(tmp_path, spot.format(run="14d", wait="")).spec.compute.max_run == 14 * 86400
    assert load(tmp_path, spot.format(run="20d", wait="  max_wait: 28d\n")).spec.compute.max_wait == 28 * 86400


# --- image references and channel names -------------------------------------------------------------------

@pytest.mark.parametrize("uri", [
    "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-image:1.0",
    "123456789012.dkr.ecr.us-east-1.amazonaws.com/team/my_image",
    "123456789012.dkr.ecr.us-east-1.amazonaws.com/my-image@sha256:" + "a" * 64,
    "registry.example.com:5000/ns/img:2.19-gpu-py312",
    "localhost:5000/img",
])
def test_plausible_image_references_pass(tmp_path, uri):
    assert load(tmp_path, base=BASE.replace('version: "2.21"', f"image_uri: {uri}")).spec.tensorflow.image_uri == uri


@pytest.mark.parametrize("uri", ["a b", "ubuntu", "my-image:1.0", "registry.example.com/Upper/Case",
                                 "registry.example.com/img:bad tag", "registry.example.com/img@sha256:abc",
                                 "registry.example.com/img:1.0\n", " registry.example.com/img", ""])
def test_implausible_image_references_are_refused(tmp_path, uri):
    out = problems(tmp_path, base=BASE.replace('version: "2.21"', f"image_uri: {uri!r}".replace("'", '"')
                                               if "\n" in uri else f"image_uri: '{uri}'"))
    assert any("tensorflow.image_uri" in p and "registry/repository[:tag][@sha256:digest]" in p for p in out), out


@pytest.mark.parametrize("name", [".", ".."])
def test_channels_named_dot_or_dot_dot_are_refused(tmp_path, name):
    out = problems(tmp_path, base=BASE.replace("  train:", f"  '{name}':"))
    assert out == [f"{tmp_path / 'job.yaml'}:7:3: inputs[{name!r}]: {name!r} is not a channel name: 1-64 letters, "
                   "digits, '.', '-' or '_', not . or .."]


def test_channel_names_with_dots_inside_pass(tmp_path):
    assert "train.v2" in load(tmp_path, base=BASE.replace("  train:", "  train.v2:")).spec.inputs


# --- numbers ------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("extra, field", [
    ("training:\n  learning_rate: .inf\n", "training.learning_rate"),
    ("training:\n  learning_rate: .nan\n", "training.learning_rate"),
    ("training:\n  learning_rate: 'inf'\n", "training.learning_rate"),
    ("training:\n  warmup_epochs: .inf\n", "training.warmup_epochs"),
    ("hyperparameters:\n  dropout: .nan\n", "hyperparameters.dropout"),
    ("hyperparameters:\n  clip: -.inf\n", "hyperparameters.clip"),
])
def test_non_finite_numbers_are_refused(tmp_path, extra, field):
    out = problems(tmp_path, extra)
    assert len(out) == 1 and f": {field}: " in out[0], out
    assert "not a finite number" in out[0] or "'inf' is not a number" in out[0], out


def test_plan_json_is_strict_json_for_the_largest_values_allowed(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(BASE + "compute: {nodes: 100, gpus_per_node: 8}\ntraining:\n  learning_rate: 1000\n"
                           "  batch_size_per_replica: 9007199254740991\nhyperparameters: {big: 1.0e+308}\n")
    result = run("plan", "-o", "json", str(path), home=tmp_path)
    assert result.code == 0, result.output
    summary = strict_json(result.stdout)
    assert summary["learning_rate"]["scaled"] > 1000


@pytest.mark.parametrize("extra", ["compute:\n  nodes: true\n", "compute:\n  gpus_per_node: yes\n",
                                   "training:\n  epochs: true\n", "training:\n  learning_rate: true\n",
                                   "compute:\n  spot: 1\ncheckpoints: s3://my-bucket/ck\n", "training:\n  xla: 0\n"])
def test_a_flag_is_never_a_number_nor_a_number_a_flag(tmp_path, extra):
    assert len(problems(tmp_path, extra)) == 1


def test_numbers_and_flags_written_as_text_are_read_as_yaml_would(tmp_path):
    spec = load(tmp_path, overrides=["compute.nodes=3", "compute.spot=true", "checkpoints=s3://my-bucket/ck",
                                     "training.learning_rate=1e-3", "training.xla=on",
                                     "distribution.processes_per_host=2"]).spec
    assert (spec.compute.nodes, spec.compute.spot, spec.training.learning_rate, spec.training.xla) == (3, True, 1e-3,
                                                                                                      True)
    assert spec.distribution.processes_per_host == 2


# --- sizes carry their unit ------------------------------------------------------------------------------------

@pytest.mark.parametrize("field, value", [("compute.min_gpu_memory", "24"), ("compute.volume_size", "100"),
                                          ("code.max_bundle_size", "0"), ("compute.volume_size", "1.5")])
def test_sizes_without_a_unit_are_refused_naming_the_units(tmp_path, field, value):
    section, name = field.split(".")
    for out in (problems(tmp_path, f"{section}:\n  {name}: {value}\n"), problems(tmp_path, overrides=[f"{field}={value}"])):
        assert len(out) == 1 and f"{field}: " in out[0], out
        assert f"has no unit: write it as {value}GB or {value}GiB" in out[0] and "MiB" in out[0]


def test_size_units_read_exactly():
    assert parse_size("24GB") == 24 * 10**9 and parse_size("1.5GiB") == 3 * 2**29 and parse_size("100mb") == 10**8
    assert parse_size("512 B") == 512
    with pytest.raises(ValueError, match="not a whole number of bytes"):
        parse_size("0.5B")
    with pytest.raises(ValueError, match="too large"):
        parse_size("9" * 400 + "GB")
    with pytest.raises(ValueError, match="has no unit"):
        parse_size(24)


def test_durations_read_exactly():
    assert parse_duration("1.5h") == 5400 and parse_duration(" 90m ") == 5400 and parse_duration(3600) == 3600
    with pytest.raises(ValueError, match="too large"):
        parse_duration("9" * 400 + "d")
    with pytest.raises(ValueError, match="reaches back further than any date"):
        parse_since("99999999999d", now=dt.datetime(2025, 1, 1, tzinfo=dt.timezone.utc))


# --- ${VAR} ------------------------------------------------------------------------------------------------------

def test_default_is_used_when_the_variable_is_empty(tmp_path):
    extra = "compute:\n  nodes: ${NODES:-3}\nenvironment:\n  A: ${A:-fallback}\n  B: ${EMPTY}\n"
    spec = load(tmp_path, extra, env={"NODES": "", "A": "", "EMPTY": ""}).spec
    assert spec.compute.nodes == 3 and spec.environment == {"A": "fallback", "B": ""}
    assert load(tmp_path, extra, env={"NODES": "2", "A": "set", "EMPTY": ""}).spec.compute.nodes == 2


@pytest.mark.parametrize("form", ["${A-x}", "${1}", "${", "${A:=x}", "${ A }"])
def test_unsupported_variable_forms_are_refused(tmp_path, form):
    out = problems(tmp_path, f"environment:\n  X: \"{form}\"\n", env={"A": "a"})
    assert len(out) == 1 and out[0].startswith(f"{tmp_path / 'job.yaml'}:10:6: environment.X: ")
    assert "is not a variable: write ${NAME} or ${NAME:-default}" in out[0]


def test_an_unset_variable_hides_no_other_problem(tmp_path):
    extra = "compute:\n  nodes: ${NODES}\n  volume_size: 12\ntraining:\n  lr_scaling: cubic\n  epochs: ${EPOCHS}\n"
    out = problems(tmp_path, extra, base=BASE.replace("name: mnist", "name: ${NAME}"))
    fields = [p.split(": ")[1] for p in out]
    assert fields == ["name", "compute.nodes", "training.epochs", "compute.volume_size", "training.lr_scaling"], out
    assert "NAME is not set" in out[0] and "NODES is not set" in out[1] and "EPOCHS is not set" in out[2]


def test_a_set_value_replaces_an_unset_variable(tmp_path):
    spec = load(tmp_path, base=BASE.replace("name: mnist", "name: ${NAME}"), overrides=["name=from-cli"]).spec
    assert spec.name == "from-cli"


# --- text fields take the text as written ----------------------------------------------------------------------

def test_words_versions_and_environment_values_are_taken_as_written(tmp_path):
    extra = "training:\n  mixed_precision: on\nenvironment:\n  A: on\n  B: 0x1F\n  C: 1.50\ntags:\n  n: 007\n"
    spec = load(tmp_path, extra, base=BASE.replace('"2.21"', "2.10")).spec
    assert spec.tensorflow.version == "2.10" and spec.training.mixed_precision == "on"
    assert spec.environment == {"A": "on", "B": "0x1F", "C": "1.50"} and spec.tags == {"n": "007"}


def test_other_text_fields_keep_yaml_types_as_an_editor_does(tmp_path):
    out = problems(tmp_path, "training:\n  model: 123\n")
    assert out == [f"{tmp_path / 'job.yaml'}:10:10: training.model: 123 is not text"]


@pytest.mark.parametrize("field, value", [("training.model", "mlp\\n"), ("compute.instance_type", "ml.g5.xlarge\\t"),
                                          ("distribution.mpi_options", "-x A\\n-x B"),
                                          ("code.source_dir", "src\\u2028")])
def test_one_line_text_fields_refuse_control_characters(tmp_path, field, value):
    section, name = field.split(".")
    out = problems(tmp_path, f'{section}:\n  {name}: "{value}"\n')
    assert len(out) == 1 and f": {field}: " in out[0] and "control characters" in out[0], out


def test_odd_keys_are_shown_quoted_in_dotted_paths(tmp_path):
    out = problems(tmp_path, 'environment:\n  "A\\n": x\n')
    assert out == [f"{tmp_path / 'job.yaml'}:10:3: environment['A\\n']: 'A\\n' is not an environment variable name: "
                   "letters, digits and _, not starting with a digit"]
