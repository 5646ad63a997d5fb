"""Issue 14: compute.prefer, training_plan, max_pending, max_retry_attempts, the KMS keys: each refusal at its
file:line, with what to do."""

from __future__ import annotations

import pytest

from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.support.specfiles import BASE_TEXT

PLAN_ARN = "arn:aws:sagemaker:us-east-1:123456789012:training-plan/p5-week"


def problems(tmp_path, compute: str, extra: str = "") -> list[tuple[str, int, str]]:
    path = tmp_path / "job.yaml"
    path.write_text(BASE_TEXT + "compute:\n" + compute + extra)
    with pytest.raises(SpecError) as info:
        load_spec(path, env={})
    return [(".".join(map(str, p.path)), p.location.line if p.location else 0, p.message)
            for p in info.value.problems]


FIRST = BASE_TEXT.count("\n") + 2  # the line after `compute:`
LIST = "  prefer:\n    - {instance_type: ml.p5.48xlarge, count: 2}\n    - {instance_type: ml.p4d.24xlarge, count: 4}\n"


@pytest.mark.parametrize(("compute", "field", "line", "words"), [
    (LIST + "  spot: true\n", "compute.spot", FIRST + 3, "never managed spot"),  # checkpoints: below
    ("  instance_type: ml.g5.xlarge\n" + LIST, "compute.instance_type", FIRST, "own instance_type"),
    ("  nodes: 2\n" + LIST, "compute.nodes", FIRST, "own count"),
    (LIST + f"  training_plan: {PLAN_ARN}\n", "compute.training_plan", FIRST + 3, "compute.prefer[i].training_plan"),
    ("  prefer:\n    - {instance_type: ml.p5.48xlarge}\n    - {instance_type: ml.p5.48xlarge, count: 2}\n",
     "compute.prefer.1.instance_type", FIRST + 2, "already choice 1"),
    ("  prefer: []\n", "compute.prefer", FIRST, "at least one"),
    ("  prefer:\n    - {count: 2}\n", "compute.prefer.0.instance_type", FIRST + 1, "required"),
    ("  prefer:\n    - {instance_type: ml.p5.48xlarge, count: 0}\n", "compute.prefer.0.count", FIRST + 1, "at least 1"),
    ("  training_plan: arn:aws:sagemaker:us-east-1:123:training-plan/x\n", "compute.training_plan", FIRST,
     "not a training plan ARN"),
    ("  max_pending: 10m\n", "compute.max_pending", FIRST, "at least 1800"),
    ("  max_pending: 29d\n", "compute.max_pending", FIRST, "over SageMaker's limit of 28 days"),
    ("  max_retry_attempts: 31\n", "compute.max_retry_attempts", FIRST, "at most 30"),
    ("  max_retry_attempts: 0\n", "compute.max_retry_attempts", FIRST, "at least 1"),
    ("  volume_kms_key: 'my key'\n", "compute.volume_kms_key", FIRST, "not a KMS key"),
])
def test_refusals_are_at_their_line(tmp_path, compute, field, line, words):
    found = problems(tmp_path, compute, "checkpoints: s3://my-bucket/ck\n")
    assert [(f, n) for f, n, _ in found] == [(field, line)], found
    assert words in found[0][2]


def test_output_kms_key_is_a_top_level_field(tmp_path):
    found = problems(tmp_path, "  instance_type: ml.g5.xlarge\n", "output_kms_key: 'a b'\n")
    assert [(f, n) for f, n, _ in found] == [("output_kms_key", FIRST + 1)]


def test_a_valid_list_and_every_field(tmp_path):
    path = tmp_path / "job.yaml"
    path.write_text(BASE_TEXT + "output_kms_key: alias/out\ncompute:\n" + LIST.replace(
        "count: 2}", f"count: 2, training_plan: '{PLAN_ARN}'}}") + "  max_pending: 2h\n  max_retry_attempts: 3\n"
        "  volume_kms_key: arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab\n")
    c = load_spec(path, env={}).spec.compute
    assert [(p.instance_type, p.count, p.training_plan) for p in c.prefer] == [
        ("ml.p5.48xlarge", 2, PLAN_ARN), ("ml.p4d.24xlarge", 4, None)]
    assert (c.max_pending, c.max_retry_attempts) == (7200, 3)


def test_an_unknown_field_in_a_preference_suggests_the_right_one(tmp_path):
    found = problems(tmp_path, "  prefer:\n    - {instance_type: ml.p5.48xlarge, cuont: 2}\n")
    assert found[0][:2] == ("compute.prefer.0.cuont", FIRST + 1) and "did you mean 'count'" in found[0][2]
