"""Every limit of the spec at, below and past it: the value at a limit is accepted, one step past it is refused
at its field. The limits are written here, not read from smtrain (a changed bound in the code is a failure
here), and the schema's bounded fields are held to this table, so a new bound comes with its test."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from smtrain.spec.model import json_schema, load_spec
from smtrain.spec.problems import SpecError
from tests.support.specfiles import merged, write_spec

UNBOUNDED = 2**53 - 1  # JSON Schema's maximum for a whole number with no upper limit of its own

SPOT = {"compute": {"spot": True}, "checkpoints": "s3://my-bucket/ck"}
TUNING = {"tuning": {"objective": "validation:accuracy",
                     "ranges": {"training.learning_rate": {"min": 0.0001, "max": 0.01}}}}


def _with(field: str, value: Any, context: dict[str, Any] | None = None) -> dict[str, Any]:
    """The changes that set the dotted `field` to `value`, merged into `context`."""
    out: dict[str, Any] = {}
    for key, sub in (context or {}).items():
        out[key] = dict(sub) if isinstance(sub, dict) else sub
    node = out
    *parents, last = field.split(".")
    for key in parents:
        node = node.setdefault(key, {})
    node[last] = value
    return out


def _problems(tmp_path: Path, changes: dict[str, Any]) -> list[str]:
    try:
        load_spec(write_spec(tmp_path, changes), env={})
    except SpecError as error:
        return [p.render() for p in error.problems]
    return []


# field: (lowest accepted, highest accepted or None, context). Numbers as a user writes them.
NUMBERS: dict[str, tuple[Any, Any, dict[str, Any] | None]] = {
    "compute.nodes": (1, 100, None),
    "compute.gpus_per_node": (1, None, None),
    "compute.max_run": (1, 2419200, None),
    "compute.max_wait": (1, 2419200, merged(SPOT, {"compute": {"max_run": 1}})),
    "compute.keep_alive": (0, None, None),
    "compute.max_pending": (1800, 2419200, None),
    "compute.max_retry_attempts": (1, 30, None),
    "distribution.processes_per_host": (1, None, {"distribution": {"strategy": "horovod"},
                                                  "tensorflow": {"version": "2.12"}}),
    "training.epochs": (1, None, None),
    "training.batch_size_per_replica": (1, None, None),
    "training.learning_rate": (None, 1000, None),  # above 0: tested below
    "training.warmup_epochs": (0, None, None),
    "training.steps_per_execution": (1, None, None),
    "training.checkpoint_every_steps": (0, None, None),
    "training.seed": (0, None, None),
    "training.gradient_accumulation_steps": (1, None, None),
    "tuning.max_jobs": (1, None, TUNING),
    "tuning.max_parallel_jobs": (1, None, TUNING),
    "tuning.max_runtime": (120, 15768000, TUNING),
}

# field: (longest accepted value, context); one character more is refused.
ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/"
GROUP = "arn:aws:sagemaker:us-east-1:123456789012:model-package-group/"
PACKAGE = "arn:aws:sagemaker:us-east-1:123456789012:model-package/"
LENGTHS: dict[str, tuple[str, dict[str, Any] | None]] = {
    "name": ("a" * 42, None),
    "compute.training_plan": (ARN + "p" * (2048 - len(ARN)), {"compute": {"instance_type": "ml.p4d.24xlarge"}}),
    "compute.volume_kms_key": ("k" * 2048, None),
    "output_kms_key": ("k" * 2048, None),
    "code.git.branch": ("b" * 255, {"code": {"git": {"repository": "https://example.com/team/repo.git"}}}),
    "checkpoint_local_path": ("/" + "c" * 4095, {"checkpoints": "s3://my-bucket/ck"}),
    "model_package.group": (GROUP + "g" * (2048 - len(GROUP)), None),
    "model_package.source": (PACKAGE + "p" * (2048 - len(PACKAGE)), {"model_package": {"group": GROUP + "g"}}),
}


@pytest.mark.parametrize("field", sorted(NUMBERS))
def test_a_number_at_its_limits_is_accepted_and_one_past_them_refused(tmp_path: Path, field: str) -> None:
    low, high, context = NUMBERS[field]
    step = 0.001 if isinstance(low, float) or field == "training.learning_rate" else 1
    name = field.split(".")[-1]
    for accepted in (v for v in (low, high) if v is not None):
        assert _problems(tmp_path, _with(field, accepted, context)) == [], (field, accepted)
    for refused in ([low - step] if low is not None else []) + ([high + step] if high is not None else []):
        out = _problems(tmp_path, _with(field, refused, context))
        assert len(out) == 1 and f"{field}:" in out[0] and name in out[0], (field, refused, out)


@pytest.mark.parametrize("value, accepted", [(0, False), (-0.001, False), (1e-12, True), (0.001, True)])
def test_the_learning_rate_is_above_zero(tmp_path: Path, value: float, accepted: bool) -> None:
    out = _problems(tmp_path, {"training": {"learning_rate": value}})
    assert (out == []) is accepted, out


@pytest.mark.parametrize("field", sorted(LENGTHS))
def test_a_text_at_its_longest_is_accepted_and_one_character_more_refused(tmp_path: Path, field: str) -> None:
    longest, context = LENGTHS[field]
    assert _problems(tmp_path, _with(field, longest, context)) == [], field
    out = _problems(tmp_path, _with(field, longest + longest[-1], context))
    assert len(out) == 1 and f"{field}:" in out[0], (field, out)


@pytest.mark.parametrize("size, accepted", [("999MB", False), ("1GB", True), ("16TB", True)])
def test_a_volume_is_at_least_1gb(tmp_path: Path, size: str, accepted: bool) -> None:
    out = _problems(tmp_path, {"compute": {"volume_size": size}})
    assert (out == []) is accepted, out
    if not accepted:
        assert len(out) == 1 and "compute.volume_size: a training volume needs at least 1GB" in out[0], out


def test_a_metric_name_is_at_most_64_characters(tmp_path: Path) -> None:
    assert _problems(tmp_path, {"metrics": ["m" * 64]}) == []
    out = _problems(tmp_path, {"metrics": ["m" * 65]})
    assert len(out) == 1 and "metrics[0]" in out[0], out


def _cluster(groups: list[dict[str, Any]], named: list[str] | None = None) -> dict[str, Any]:
    """A heterogeneous cluster running an own script (src/train.py, made by the test), horovod on `named`."""
    out: dict[str, Any] = {"compute": {"instance_groups": groups}, "code": {"source_dir": "src", "entry_point": "train.py"}}
    if named is not None:
        out["distribution"] = {"strategy": "horovod", "instance_groups": named}
        out["tensorflow"] = {"version": "2.12"}
    return out


def test_an_instance_group_s_count_is_1_to_100_its_name_1_to_64_characters_and_a_job_has_1_to_5(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("print('train')\n")

    def group(name: str = "g", count: int = 1) -> dict[str, Any]:
        return {"name": name, "instance_type": "ml.g5.xlarge", "count": count}

    assert _problems(tmp_path, _cluster([group(count=1)])) == []
    assert _problems(tmp_path, _cluster([group(count=100)])) == []
    for count in (0, 101):
        out = _problems(tmp_path, _cluster([group(count=count)]))
        assert len(out) == 1 and "compute.instance_groups[0].count" in out[0], out
    assert _problems(tmp_path, _cluster([group("n" * 64)], ["n" * 64])) == []
    out = _problems(tmp_path, _cluster([group("n" * 65)]))
    assert len(out) == 1 and "compute.instance_groups[0].name" in out[0], out
    out = _problems(tmp_path, _cluster([group("n")], ["n" * 65]))
    assert len(out) == 1 and "distribution.instance_groups[0]" in out[0], out
    out = _problems(tmp_path, _cluster([group("")]))
    assert len(out) == 1 and "compute.instance_groups[0].name" in out[0], out
    assert _problems(tmp_path, _cluster([group(f"g{i}") for i in range(5)])) == []
    out = _problems(tmp_path, _cluster([group(f"g{i}") for i in range(6)]))
    assert len(out) == 1 and out[0].endswith(":11:3: compute.instance_groups: SageMaker takes at most 5 instance "
                                             "groups, not 6"), out
    out = _problems(tmp_path, _cluster([]))
    assert len(out) == 1 and "instance_groups needs at least one" in out[0], out


def test_a_preference_s_count_is_1_to_100_and_its_plan_at_most_2048_characters(tmp_path: Path) -> None:
    def prefer(count: int, **more: str) -> dict[str, Any]:
        return {"compute": {"prefer": [{"instance_type": "ml.p4d.24xlarge", "count": count, **more}]}}

    assert _problems(tmp_path, prefer(1)) == [] and _problems(tmp_path, prefer(100)) == []
    for count in (0, 101):
        out = _problems(tmp_path, prefer(count))
        assert len(out) == 1 and "compute.prefer[0].count" in out[0], out
    longest = LENGTHS["compute.training_plan"][0]
    assert _problems(tmp_path, prefer(1, training_plan=longest)) == []
    out = _problems(tmp_path, prefer(1, training_plan=longest + "p"))
    assert len(out) == 1 and "compute.prefer[0].training_plan" in out[0], out


def _ranges(count: int) -> dict[str, Any]:
    return {f"hyperparameters.hp{i}": {"min": 1, "max": 2} for i in range(count)}


def test_tuning_takes_at_most_30_ranges(tmp_path: Path) -> None:
    def tuning(ranges: dict[str, Any]) -> dict[str, Any]:
        return {"hyperparameters": {f"hp{i}": 1 for i in range(31)},
                "tuning": {"objective": "validation:accuracy", "ranges": ranges}}

    assert _problems(tmp_path, tuning(_ranges(30))) == []
    out = _problems(tmp_path, tuning(_ranges(31)))
    assert len(out) == 1 and "at most 30 ranges" in out[0], out


@pytest.mark.parametrize("count, accepted", [(0, False), (1, True), (30, True), (31, False)])
def test_a_categorical_range_has_1_to_30_values(tmp_path: Path, count: int, accepted: bool) -> None:
    changes = {"tuning": {"objective": "validation:accuracy",
                          "ranges": {"training.batch_size_per_replica": {"values": list(range(1, count + 1))}}}}
    out = _problems(tmp_path, changes)
    assert (out == []) is accepted, out
    if not accepted:
        assert len(out) == 1 and "give 1 to 30 values" in out[0], out


def _bounded_fields(schema: dict[str, Any]) -> set[str]:
    defs = schema.get("$defs", {})
    found: set[str] = set()

    def walk(node: dict[str, Any], path: str) -> None:
        if "$ref" in node:
            walk(defs[node["$ref"].split("/")[-1]], path)
            return
        for key in ("anyOf", "allOf", "oneOf"):
            for sub in node.get(key, []):
                walk(sub, path)
        for name, sub in node.get("properties", {}).items():
            walk(sub, f"{path}.{name}" if path else name)
        if isinstance(node.get("items"), dict):
            walk(node["items"], path + "[]")
        bounds = {k: v for k, v in node.items() if k in ("minimum", "maximum", "exclusiveMinimum", "maxLength")}
        if bounds and bounds != {"maximum": UNBOUNDED}:
            found.add(path)

    walk(schema, "")
    return found


def test_every_bounded_field_of_the_schema_is_tested_here() -> None:
    tested = set(NUMBERS) | set(LENGTHS) | {"metrics[]", "compute.prefer[].count", "compute.prefer[].training_plan",
                                            "compute.instance_groups[].count", "compute.instance_groups[].name",
                                            "distribution.instance_groups[]",
                                            # tests/spec/test_tracking.py: at and past each
                                            "tracking.experiment", "tracking.run",
                                            "tracking.sagemaker_experiment.experiment",
                                            "tracking.sagemaker_experiment.trial", "tracking.sagemaker_experiment.run"}
    assert _bounded_fields(json_schema()) == tested


def test_a_spec_mapping_is_counted_as_the_yaml_reader_counts_nodes() -> None:
    from smtrain.spec.model import _more_values_than

    data = {"a": [1, 2]}  # the mapping, its key, the list, its two items: 5 values
    assert _more_values_than(data, 5) is False and _more_values_than(data, 4) is True
    assert _more_values_than({}, 1) is False and _more_values_than({}, 0) is True


def test_a_spec_mapping_within_the_limit_loads(tmp_path: Path) -> None:
    from smtrain.spec.model import load_spec_data
    from tests.support.specfiles import BASE

    assert load_spec_data(BASE, tmp_path).spec.name == "test-job"


def test_a_long_set_override_is_quoted_at_80_characters_each_side(tmp_path: Path) -> None:
    key, value = "training." + "k" * 100, "v" * 100 + "yz"
    try:
        load_spec(write_spec(tmp_path), [f"{key}={value}"], env={})
    except SpecError as error:
        [problem] = error.problems
    assert problem.location is not None
    assert problem.location.source == f"--set {key[:75]}...{key[-2:]}={value[:75]}...yz"

