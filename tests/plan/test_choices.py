"""Issue 14: compute.prefer's choices as the plan decides them: one request for all, each choice's strategy,
replicas and batch/learning-rate maths as the container will find them, and every combination that cannot
work for every choice refused at its field."""

from __future__ import annotations

import json
from typing import Any

import pytest
from smtrain_tf.scaling import global_batch_size, scaled_learning_rate

from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.render.checked_plan import checked_plan
from smtrain.render.request_limits import preview_problems, sagemaker_only_notes, spec_field
from smtrain.render.training_request import preview_request
from smtrain.spec.model import load_spec
from smtrain.spec.problems import SpecError
from tests.spec.inprocess import run
from tests.support.specfiles import write_spec

CATALOG = load_catalog()


def plan_of(tmp_path, prefer: list[dict[str, Any]], **changes: Any) -> Any:
    compute = {"prefer": prefer, **changes.pop("compute", {})}
    # checked_plan: the plan's own refusals and the request's limits (6 choices, more than the API's 5).
    return checked_plan(load_spec(write_spec(tmp_path, {"compute": compute, **changes}), env={}), CATALOG)


def refused(tmp_path, prefer: list[dict[str, Any]], **changes: Any) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as info:
        plan_of(tmp_path, prefer, **changes)
    assert all(p.location is not None and p.location.line for p in info.value.problems)
    return [(".".join(map(str, p.path)), p.message) for p in info.value.problems]


def test_each_choice_has_the_maths_the_entrypoint_will_use_there(tmp_path):
    plan = plan_of(tmp_path, [{"instance_type": "ml.p4d.24xlarge", "count": 2},
                              {"instance_type": "ml.g5.12xlarge", "count": 1},
                              {"instance_type": "ml.g5.xlarge", "count": 1}], training={"learning_rate": 0.002})
    assert [(c.instance.name, c.nodes, c.strategy, c.replicas) for c in plan.choices] == [
        ("ml.p4d.24xlarge", 2, "multi_worker_mirrored", 16), ("ml.g5.12xlarge", 1, "multi_worker_mirrored", 4),
        ("ml.g5.xlarge", 1, "multi_worker_mirrored", 1)]
    for c in plan.choices:  # the entrypoint's own functions, on the replicas that choice will have
        assert c.global_batch == global_batch_size(64, c.replicas)
        assert c.scaled_learning_rate == scaled_learning_rate(0.002, "linear", c.replicas)
        assert c.cost.per_hour == pytest.approx(CATALOG.price(c.instance, "us-east-1").per_hour * c.nodes)
    # Choice 1 is the plan's instance; the request holds the whole list and one distribution.
    assert (plan.instance.name, plan.nodes, plan.replicas) == ("ml.p4d.24xlarge", 2, 16)
    assert plan.distribution == {"multi_worker_mirrored_strategy": {"enabled": True}}
    assert "one worker here" in plan.choices[1].strategy_reason
    assert [p["InstanceType"] for p in preview_request(plan)["ResourceConfig"]["InstancePreferences"]] == [
        "ml.p4d.24xlarge", "ml.g5.12xlarge", "ml.g5.xlarge"]


def test_one_node_choices_need_no_distribution(tmp_path):
    plan = plan_of(tmp_path, [{"instance_type": "ml.g5.12xlarge"}, {"instance_type": "ml.g5.xlarge"}])
    assert [(c.strategy, c.replicas) for c in plan.choices] == [("mirrored", 4), ("none", 1)]
    assert plan.distribution is None


def test_horovod_leaves_processes_per_host_to_each_host_when_the_gpus_differ(tmp_path):
    plan = plan_of(tmp_path, [{"instance_type": "ml.g5.12xlarge", "count": 2}, {"instance_type": "ml.g5.48xlarge"}],
                   tensorflow={"version": "2.12"}, distribution={"strategy": "horovod"})
    assert [(c.processes_per_host, c.replicas) for c in plan.choices] == [(4, 8), (8, 8)]
    # sagemaker-training's runner defaults processes_per_host to SM_NUM_GPUS when the request has none.
    assert plan.distribution == {"mpi": {"enabled": True, "custom_mpi_options": ""}}
    hps = preview_request(plan)["HyperParameters"]
    assert "sagemaker_mpi_num_of_processes_per_host" not in hps and hps["sagemaker_mpi_enabled"] == "true"


@pytest.mark.parametrize(("prefer", "changes", "field", "words"), [
    ([{"instance_type": "ml.g5.12xlarge", "count": 2}, {"instance_type": "ml.g5.48xlarge"}],
     {"tensorflow": {"version": "2.12"}, "distribution": {"strategy": "horovod", "processes_per_host": 8}},
     "distribution.processes_per_host", "choice 1 (ml.g5.12xlarge x2): 8 processes per host"),
    ([{"instance_type": "ml.p4d.24xlarge", "count": 2}], {"tensorflow": {"version": "2.11"},
                                                          "distribution": {"strategy": "smddp"}},
     "distribution.strategy", "smddp cannot run a fallback list"),
    ([{"instance_type": "ml.g5.12xlarge", "count": 2}, {"instance_type": "ml.g5.48xlarge"}],
     {"distribution": {"strategy": "parameter_server"}}, "distribution.strategy",
     "choice 2 (ml.g5.48xlarge x1): parameter_server needs compute.nodes of 2"),
    ([{"instance_type": "ml.p3.16xlarge"}, {"instance_type": "ml.p4d.24xlarge", "count": 2}],
     {"compute": {"volume_kms_key": "alias/vol"}}, "compute.prefer.1.instance_type",
     "ml.p4d.24xlarge has local NVMe storage"),
    ([{"instance_type": "ml.g5.xlarge"}, {"instance_type": "ml.g5.xlarge-typo"}], {},
     "compute.prefer.1.instance_type", "unknown instance type"),
    # botocore's model: at most 5 preferences (InstancePreferenceList max 5).
    ([{"instance_type": t} for t in ("ml.g5.xlarge", "ml.g5.2xlarge", "ml.g5.4xlarge", "ml.g5.8xlarge",
                                     "ml.g5.16xlarge", "ml.g6.xlarge")], {}, "compute.prefer",
     "6 items, more than the 5"),
])
def test_what_cannot_work_for_every_choice_is_refused(tmp_path, prefer, changes, field, words):
    found = refused(tmp_path, prefer, **changes)
    assert any(f == field and words in m for f, m in found), found


def test_request_limits_lead_back_to_the_preference(tmp_path):
    plan = plan_of(tmp_path, [{"instance_type": "ml.g5.xlarge"}, {"instance_type": "ml.g5.2xlarge", "count": 2}])
    request = preview_request(plan)
    prefs = ("ResourceConfig", "InstancePreferences")
    assert spec_field(prefs + (1, "InstanceCount"), request, plan.spec) == ("compute", "prefer", 1, "count")
    assert spec_field(prefs + (0, "TrainingPlanArns", 0), request, plan.spec) == ("compute", "prefer", 0,
                                                                                  "training_plan")
    assert spec_field(("StoppingCondition", "MaxPendingTimeInSeconds"), request, plan.spec) == ("compute",
                                                                                             "max_pending")
    assert spec_field(("RetryStrategy", "MaximumRetryAttempts"), request, plan.spec) == ("compute",
                                                                                      "max_retry_attempts")
    assert spec_field(("OutputDataConfig", "KmsKeyId"), request, plan.spec) == ("output_kms_key",)
    # A limit the spec cannot break itself, forced into the request: reported at the preference's line.
    request["ResourceConfig"]["InstancePreferences"][1]["InstanceCount"] = -1
    from smtrain.render.request_limits import request_problems

    [problem] = request_problems(plan, request)
    assert problem.path == ("compute", "prefer", 1, "count") and problem.location.line
    assert preview_problems(plan) == []


def test_plan_shows_each_choice_and_a_local_run_notes_what_it_ignores(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"prefer": [{"instance_type": "ml.g5.48xlarge"},
                                                        {"instance_type": "ml.g5.12xlarge", "count": 2}],
                                             "max_pending": "1h", "max_retry_attempts": 2},
                                 "output_kms_key": "alias/out"})
    text = run("plan", str(spec))
    assert text.code == 0, text.output
    assert "SageMaker runs the first with capacity" in text.stdout
    assert "1. ml.g5.48xlarge x 1: multi_worker_mirrored, 8 replicas, batch 512 global" in text.stdout
    assert "2. ml.g5.12xlarge x 2: multi_worker_mirrored, 8 replicas" in text.stdout
    assert "waits at most 1h for capacity; retried up to 2 times" in text.stdout
    data = json.loads(run("plan", str(spec), "-o", "json").stdout)
    assert [(c["instance_type"], c["nodes"], c["replicas"], c["batch"]["global"]) for c in data["choices"]] == [
        ("ml.g5.48xlarge", 1, 8, 512), ("ml.g5.12xlarge", 2, 8, 512)]
    notes = sagemaker_only_notes(load_spec(spec, env={}).spec)
    assert [n.split(" ")[0] for n in notes] == ["compute.prefer", "compute.max_pending",
                                                "compute.max_retry_attempts", "output_kms_key"]


def test_without_a_list_there_is_one_choice_the_plan_itself(tmp_path):
    plan = build_plan(load_spec(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2}}),
                                env={}), CATALOG)
    [choice] = plan.choices
    assert (choice.instance, choice.nodes, choice.strategy, choice.replicas, choice.global_batch, choice.cost) == (
        plan.instance, plan.nodes, plan.strategy, plan.replicas, plan.global_batch, plan.cost)


def test_the_sagemaker_only_switches_are_told_to_a_local_run(tmp_path):
    spec = write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge", "remote_debug": True,
                                             "infra_check": True},
                                 "output_compression": False, "session_tag_chaining": True,
                                 "checkpoints": "s3://my-bucket/ck", "checkpoint_local_path": "/ck",
                                 "model_package": {"group": "arn:aws:sagemaker:us-east-1:123456789012:"
                                                            "model-package-group/m"}})
    notes = sagemaker_only_notes(load_spec(spec, env={}).spec)
    assert [n.split(" ")[0] for n in notes] == ["compute.remote_debug", "compute.infra_check", "session_tag_chaining",
                                                "model_package", "checkpoint_local_path", "output_compression:"]
    assert sagemaker_only_notes(load_spec(write_spec(tmp_path, {}), env={}).spec) == []
