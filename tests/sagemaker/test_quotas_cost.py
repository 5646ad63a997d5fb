"""Quotas before spending (submit, plan --check) and cost after (status, list --cost), against the moto
server: Service Quotas values and billable seconds set in the harness (tests/support/moto_quotas.py,
MotoServer.set_billing). Commands run in this process (click's runner): the real exit code and output."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from smtrain import exit_codes
from smtrain.cli.costs import LOCAL, cost_cell, cost_rows
from smtrain.jobs import JobInfo
from smtrain.plan.catalog_files import load_catalog
from smtrain.plan.job_cost import job_cost
from tests.spec.inprocess import run
from tests.support.moto_quotas import quota_code
from tests.support.moto_server import BUCKET, ROLE, THROTTLE, Fault, MotoServer, create_job, live_spec
from tests.support.specfiles import write_spec

G5 = "ml.g5.xlarge for training job usage"
G5_SPOT = "ml.g5.xlarge for spot training job usage"
P4D = "ml.p4d.24xlarge for training job usage"
COST_KEYS = {"billable_seconds", "training_seconds", "instance_type", "instance_count", "spot", "price_per_hour",
             "price_region", "price_note", "usd", "on_demand_usd", "spot_saving_usd", "spot_saving_percent", "cluster"}


def _price(instance_type: str) -> float:
    catalog = load_catalog()
    instance = catalog.get(instance_type)
    assert instance is not None
    per_hour = catalog.price(instance, "us-east-1").per_hour
    assert per_hour
    return per_hour


def _nothing_sent(server: MotoServer) -> None:
    """Nothing uploaded, no job created (the jobs a test made itself aside)."""
    assert server.client("s3").list_objects_v2(Bucket=BUCKET).get("KeyCount", 0) == 0
    assert "quota-job" not in server.jobs()


def _submit(server: MotoServer, tmp_path: Path, spec: Path, *args: str) -> Any:
    return run("submit", str(spec), "--job-name", "quota-job", *args, env=server.env(tmp_path), home=tmp_path)


def _running(server: MotoServer, name: str, count: int, **fields: Any) -> None:
    create_job(server, name, count=count, **fields)
    server.set_status(name, "InProgress")


# --- quotas before spending ---------------------------------------------------------------------


def test_quota_zero_stops_before_the_upload_with_the_numbers_and_the_increase_line(aws, tmp_path):
    aws.control.quotas.set(G5, 0)
    result = _submit(aws, tmp_path, live_spec(tmp_path))
    assert result.code == exit_codes.QUOTA == 5, result.output
    code = quota_code(G5)
    for needle in (f'"{G5}" is 0 in us-east-1 ({code})', "0 in use", "1 wanted", "nothing was uploaded",
                   "a quota of 0 is where a new account starts",
                   f"aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code {code} "
                   "--desired-value 1 --region us-east-1",
                   f"/servicequotas/home/services/sagemaker/quotas/{code}"):
        assert needle in result.stderr, needle
    assert "Traceback" not in result.output
    _nothing_sent(aws)


def test_running_jobs_count_against_the_quota(aws, tmp_path):
    _running(aws, "busy-one", 2)
    _running(aws, "busy-spot", 3, EnableManagedSpotTraining=True)  # the spot quota's, not this one's
    create_job(aws, "done-job", count=4)  # Completed: holds nothing
    aws.set_status("done-job", "Completed")
    aws.control.quotas.set(G5, 3)
    spec = live_spec(tmp_path, {"compute": {"nodes": 2}})
    result = _submit(aws, tmp_path, spec)
    assert result.code == 5, result.output
    assert f'"{G5}" is 3 in us-east-1' in result.stderr
    assert "2 in use (busy-one: 2); 2 wanted" in result.stderr and "--desired-value 4" in result.stderr
    _nothing_sent(aws)

    aws.control.quotas.set(G5, 4)
    result = _submit(aws, tmp_path, spec)
    assert result.code == 0, result.output
    assert "quota" not in result.stderr  # it fits: submit says nothing of it
    assert aws.jobs().count("quota-job") == 1


def test_spot_uses_the_spot_quota(aws, tmp_path):
    aws.control.quotas.set(G5, 10)  # on-demand room does not help a spot job
    aws.control.quotas.set(G5_SPOT, 0)
    spec = live_spec(tmp_path, {"compute": {"spot": True}, "checkpoints": f"s3://{BUCKET}/ckpt"})
    result = _submit(aws, tmp_path, spec)
    assert result.code == 5, result.output
    assert f'"{G5_SPOT}" is 0' in result.stderr and f'"{G5}"' not in result.stderr
    _nothing_sent(aws)


def test_a_heterogeneous_cluster_needs_every_group_s_type_to_fit(aws, tmp_path):
    c5, g5_12 = "ml.c5.18xlarge for training job usage", "ml.g5.12xlarge for training job usage"
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text("import os\nprint(os.environ['SM_CURRENT_INSTANCE_GROUP'])\n")
    spec = live_spec(tmp_path, {"compute": {"instance_type": None, "instance_groups": [
        {"name": "data", "instance_type": "ml.c5.18xlarge", "count": 2},
        {"name": "gpus", "instance_type": "ml.g5.12xlarge", "count": 1},
        {"name": "more_data", "instance_type": "ml.c5.18xlarge", "count": 1}]},
        "code": {"source_dir": "src", "entry_point": "train.py"},
        "inputs": {"train": {"uri": f"s3://{BUCKET}/train", "instance_groups": ["data", "more_data"]}}})
    text = spec.read_text().replace("  instance_type: null\n", "")
    spec.write_text(text)
    aws.client("sagemaker").create_training_job(  # a running cluster of another tool's holds one c5
        TrainingJobName="busy-hetero", RoleArn=ROLE, OutputDataConfig={"S3OutputPath": f"s3://{BUCKET}/out"},
        AlgorithmSpecification={"TrainingImage": "123.dkr.ecr.us-east-1.amazonaws.com/tf:2.19",
                                "TrainingInputMode": "File"},
        ResourceConfig={"VolumeSizeInGB": 30, "InstanceGroups": [
            {"InstanceGroupName": "a", "InstanceType": "ml.c5.18xlarge", "InstanceCount": 1}]},
        StoppingCondition={"MaxRuntimeInSeconds": 3600})
    aws.set_status("busy-hetero", "InProgress")
    aws.control.quotas.set(c5, 3)  # 1 in use by the running cluster, 3 wanted (both c5 groups)
    aws.control.quotas.set(g5_12, 5)  # the GPU group fits: one type short refuses the whole job
    result = _submit(aws, tmp_path, spec)
    assert result.code == 5, result.output
    assert f'"{c5}" is 3 in us-east-1' in result.stderr and "1 in use (busy-hetero: 1); 3 wanted" in result.stderr
    assert f"--quota-code {quota_code(c5)} --desired-value 4" in result.stderr
    assert f"--quota-code {quota_code(g5_12)}" not in result.stderr  # it fits: no increase asked for it
    _nothing_sent(aws)

    aws.control.quotas.set(c5, 4)
    result = _submit(aws, tmp_path, spec)
    assert result.code == 0, result.output
    [received] = [r for r in aws.control.create_requests if r["TrainingJobName"] == "quota-job"]
    assert received["ResourceConfig"]["InstanceGroups"] == [
        {"InstanceGroupName": "data", "InstanceType": "ml.c5.18xlarge", "InstanceCount": 2},
        {"InstanceGroupName": "gpus", "InstanceType": "ml.g5.12xlarge", "InstanceCount": 1},
        {"InstanceGroupName": "more_data", "InstanceType": "ml.c5.18xlarge", "InstanceCount": 1}]
    assert received["InputDataConfig"][0]["DataSource"]["S3DataSource"]["InstanceGroupNames"] == ["data", "more_data"]
    status = run("status", "quota-job", env=aws.env(tmp_path), home=tmp_path)
    assert status.code == 0, status.output
    assert "instances  data: 2 x ml.c5.18xlarge, gpus: 1 x ml.g5.12xlarge, more_data: 1 x ml.c5.18xlarge" in \
        status.stdout, status.stdout
    # Ended, every instance billed the same seconds at its own type's price: a price smtrain knows for each.
    aws.set_status("quota-job", "Completed")
    aws.set_billing("quota-job", billable=3600, training=3600)
    status = run("status", "quota-job", "-o", "json", env=aws.env(tmp_path), home=tmp_path)
    cost = json.loads(status.stdout)["cost"]
    assert cost["usd"] is None and cost["price_note"] == "ml.c5.18xlarge not in the catalog: no price (add it with " \
        "--catalog)" and cost["cluster"] is True, cost


def test_access_denied_is_one_line_and_the_submit_goes_on(aws, tmp_path):
    aws.control.quotas.denied = True
    result = _submit(aws, tmp_path, live_spec(tmp_path))
    assert result.code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "quota" in line.lower()]
    assert len(notes) == 1 and "access denied" in notes[0] and "the quota check is skipped" in notes[0], notes
    assert aws.jobs() == ["quota-job"]


def test_running_jobs_that_cannot_be_counted_leave_the_quota_alone_to_decide(aws, tmp_path):
    denied = Fault("AccessDeniedException", "not authorized to perform: sagemaker:ListTrainingJobs")
    aws.control.quotas.set(G5, 1)
    spec, env = live_spec(tmp_path, {"compute": {"nodes": 2}}), aws.env(tmp_path)
    aws.control.inject("ListTrainingJobs", denied)
    result = run("plan", str(spec), "--check", env=env, home=tmp_path)
    assert result.code == 5 and "in use unknown; 2 wanted" in result.stderr, result.output  # 2 > 1 all the same
    assert "note: cannot count the instances of running training jobs" in result.stderr
    aws.control.inject("ListTrainingJobs", denied)
    result = run("plan", str(spec), "--check", "--set", "compute.nodes=1", env=env, home=tmp_path)
    assert result.code == 0 and "quota: ml.g5.xlarge x 1 may fit" in result.stdout, result.output


def test_a_throttled_listing_is_retried_and_other_errors_are_one_note(aws, tmp_path):
    spec, env = live_spec(tmp_path), aws.env(tmp_path)
    aws.control.quotas.set(G5, 0)
    aws.control.inject("ListServiceQuotas", THROTTLE)  # botocore's standard mode retries it
    result = run("plan", str(spec), "--check", env=env, home=tmp_path)
    assert result.code == 5 and aws.control.quotas.calls.count("ListServiceQuotas") >= 2, result.output
    # The check only advises: an answer it cannot use is one note, and the command goes on.
    aws.control.inject("ListServiceQuotas", Fault("IllegalArgumentException", "Invalid input"))
    result = run("plan", str(spec), "--check", env=env, home=tmp_path)
    assert result.code == 0, result.output
    assert [line.strip() for line in result.output.splitlines() if "quota" in line] == [
        "note: cannot read the account's SageMaker quotas in us-east-1 (Service Quotas): IllegalArgumentException: "
        "Invalid input; the quota check is skipped (--no-quota-check: no check, no note)"]


@pytest.mark.parametrize("fault", [
    Fault("InternalFailure", "<!doctype html>\n<html lang=en>\n<title>500 Internal Server Error</title>\n<h1>Internal "
                             "Server Error</h1>\n</html>", status=500),
    Fault("ThrottlingException", "Rate exceeded", status=400),
    Fault("ServiceUnavailableException", "Service Quotas is not served here", status=503)],
    ids=["html-500", "throttled-beyond-retries", "not-served"])
def test_a_quota_check_that_gets_no_answer_never_stops_the_submit(aws, tmp_path, fault):
    aws.control.quotas.set(G5, 0)  # would refuse, had it answered
    aws.control.inject("ListServiceQuotas", fault, times=10)  # more than botocore's retries
    result = _submit(aws, tmp_path, live_spec(tmp_path))
    assert result.code == 0, result.output
    notes = [line for line in result.stderr.splitlines() if "quota" in line.lower()]
    assert len(notes) == 1 and notes[0].startswith("note: cannot read the account's SageMaker quotas"), notes
    assert "<" not in result.stderr and "the quota check is skipped" in notes[0]
    if fault.status == 500:
        assert "InternalFailure, HTTP 500" in notes[0]
    assert aws.jobs() == ["quota-job"]


def test_no_quota_check_asks_nothing_and_says_nothing(aws, tmp_path):
    aws.control.quotas.denied = True
    result = _submit(aws, tmp_path, live_spec(tmp_path), "--no-quota-check")
    assert result.code == 0, result.output
    assert aws.control.quotas.calls == [] and "quota" not in result.stderr.lower()


def test_a_quota_service_quotas_does_not_know_is_said_and_not_checked(aws, tmp_path):
    aws.control.quotas.forget(G5)
    result = _submit(aws, tmp_path, live_spec(tmp_path))
    assert result.code == 0, result.output
    assert f'no quota named "{G5}" found in us-east-1: not checked' in result.stderr
    # Both listings read to their end (several pages each) before saying so.
    calls = aws.control.quotas.calls
    assert calls.count("ListServiceQuotas") >= 2 and calls.count("ListAWSDefaultServiceQuotas") >= 2


def test_plan_check_text_json_and_the_default_value(aws, tmp_path):
    spec = live_spec(tmp_path)
    env = aws.env(tmp_path)
    result = run("plan", str(spec), env=env, home=tmp_path)
    assert result.code == 0 and "quota" not in result.stdout and aws.control.quotas.calls == []  # offline

    aws.control.quotas.set(G5, 2, applied=False)  # no applied value: AWS's default holds
    result = run("plan", str(spec), "--check", env=env, home=tmp_path)
    assert result.code == 0, result.output
    assert "quota: ml.g5.xlarge x 1 fits" in result.stdout and "AWS's default" in result.stdout

    result = run("plan", str(spec), "--check", "-o", "json", env=env, home=tmp_path)
    assert result.code == 0, result.output
    quotas = json.loads(result.stdout)["quotas"]
    assert quotas["fits"] is True and quotas["region"] == "us-east-1" and quotas["notes"] == []
    assert quotas["choices"] == [{"instance_type": "ml.g5.xlarge", "count": 1, "spot": False, "quota_name": G5,
                                  "quota_code": quota_code(G5), "quota": 2, "quota_is_default": True, "in_use": 0,
                                  "in_use_by": [], "fits": True, "increase_command": None}]

    aws.control.quotas.set(G5, 0)
    result = run("plan", str(spec), "--check", "-o", "json", env=env, home=tmp_path)
    assert result.code == 5 and json.loads(result.stdout)["quotas"]["fits"] is False
    assert "request-service-quota-increase" in result.stderr


def _prefer_spec(tmp_path: Path) -> Path:
    return write_spec(tmp_path, {
        "name": "prefer-job", "role": ROLE, "region": "us-east-1", "tensorflow": {"version": "2.19"},
        "inputs": {"train": f"s3://{BUCKET}/train"}, "output": f"s3://{BUCKET}/out",
        "compute": {"prefer": [{"instance_type": "ml.p4d.24xlarge", "count": 2},
                               {"instance_type": "ml.g5.xlarge", "count": 1}]}})


def test_each_prefer_choice_is_checked_and_only_none_fitting_refuses(aws, tmp_path):
    spec, env = _prefer_spec(tmp_path), aws.env(tmp_path)
    aws.control.quotas.set(P4D, 0)
    aws.control.quotas.set(G5, 1)
    result = run("plan", str(spec), "--check", env=env, home=tmp_path)
    assert result.code == 0, result.output
    assert "quota: ml.p4d.24xlarge x 2 does not fit" in result.stdout
    assert "quota: ml.g5.xlarge x 1 fits" in result.stdout
    assert "1 of 2 choices may run: ml.g5.xlarge x 1" in result.stdout
    result = run("plan", str(spec), "--check", "-o", "json", env=env, home=tmp_path)
    assert [c["fits"] for c in json.loads(result.stdout)["quotas"]["choices"]] == [False, True]

    _running(aws, "holds-the-g5", 1)
    result = _submit(aws, tmp_path, spec)
    assert result.code == 5, result.output
    assert "ml.p4d.24xlarge x 2:" in result.stderr and "ml.g5.xlarge x 1:" in result.stderr
    assert "--desired-value 2" in result.stderr  # p4d: 0 in use + 2; g5: 1 in use + 1
    assert aws.jobs() == ["holds-the-g5"]


# --- cost after ------------------------------------------------------------------------------------


def test_status_cost_of_an_on_demand_job(aws, tmp_path):
    env = aws.env(tmp_path)
    create_job(aws, "od-job", count=2)
    aws.set_status("od-job", "InProgress")
    result = run("status", "od-job", "-o", "json", env=env, home=tmp_path)
    cost = json.loads(result.stdout)["cost"]
    assert set(cost) == COST_KEYS and cost["billable_seconds"] is None and cost["usd"] is None
    assert "not known yet" in run("status", "od-job", env=env, home=tmp_path).stdout

    aws.set_status("od-job", "Completed")
    aws.set_billing("od-job", billable=5400, training=5400)
    result = run("status", "od-job", "-o", "json", env=env, home=tmp_path)
    assert result.code == 0, result.output
    cost = json.loads(result.stdout)["cost"]
    price = _price("ml.g5.xlarge")
    assert cost["usd"] == pytest.approx(1.5 * price * 2, abs=1e-3) and cost["price_per_hour"] == price
    assert cost["instance_count"] == 2 and cost["spot"] is False and cost["price_region"] == "us-east-1"
    assert cost["spot_saving_usd"] is None and cost["spot_saving_percent"] is None
    text = run("status", "od-job", env=env, home=tmp_path).stdout
    assert "5,400 s (1h 30m) per instance" in text and f"${1.5 * price * 2:,.2f} = billable time x 2 x" in text


def test_status_cost_of_a_spot_job_and_its_saving(aws, tmp_path):
    env = aws.env(tmp_path)
    create_job(aws, "spot-job", count=1, EnableManagedSpotTraining=True)
    aws.set_status("spot-job", "Completed")
    aws.set_billing("spot-job", billable=900, training=3600)
    cost = json.loads(run("status", "spot-job", "-o", "json", env=env, home=tmp_path).stdout)["cost"]
    price = _price("ml.g5.xlarge")
    assert cost["spot"] is True and cost["spot_saving_percent"] == 75.0
    assert cost["usd"] == pytest.approx(0.25 * price, abs=1e-3)
    assert cost["on_demand_usd"] == pytest.approx(price, abs=1e-3)
    assert cost["spot_saving_usd"] == pytest.approx(0.75 * price, abs=1e-3)
    assert "(75%) against" in run("status", "spot-job", env=env, home=tmp_path).stdout


def test_list_cost_adds_the_column_only_when_asked(aws, tmp_path):
    env = aws.env(tmp_path)
    create_job(aws, "listed-a", count=2)
    aws.set_status("listed-a", "Completed")
    aws.set_billing("listed-a", billable=3600, training=3600)
    create_job(aws, "listed-b", count=1, EnableManagedSpotTraining=True)
    aws.set_status("listed-b", "Completed")
    aws.set_billing("listed-b", billable=1800, training=3600)
    before = aws.control.count("DescribeTrainingJob")
    plain = run("list", "-o", "json", env=env, home=tmp_path)
    assert all(j["cost"] is None for j in json.loads(plain.stdout)["jobs"])
    assert aws.control.count("DescribeTrainingJob") == before  # no describe without --cost

    priced = {j["name"]: j["cost"] for j in json.loads(run("list", "--cost", "-o", "json", env=env,
                                                           home=tmp_path).stdout)["jobs"]}
    price = _price("ml.g5.xlarge")
    assert priced["listed-a"]["usd"] == pytest.approx(2 * price, abs=1e-3)
    assert priced["listed-b"]["spot_saving_percent"] == 50.0
    table = run("list", "--cost", env=env, home=tmp_path).stdout
    assert "cost" in table and f"${2 * price:,.2f}" in table and "spot -50%" in table
    assert "cost" not in run("list", env=env, home=tmp_path).stdout.split("\n", 1)[0]


# --- the arithmetic and the text, without a server ----------------------------------------------


def test_instances_a_running_job_holds():
    from smtrain.sagemaker.quotas import _instances

    assert _instances({"InstanceType": "ml.g5.xlarge", "InstanceCount": 2}) == [("ml.g5.xlarge", 2)]
    # A fallback list: the type SageMaker picked; before it has picked, nothing to count yet.
    assert _instances({"InstancePreferences": [{}], "SelectedInstanceType": "ml.p5.48xlarge",
                       "SelectedInstanceCount": 1}) == [("ml.p5.48xlarge", 1)]
    assert _instances({"InstancePreferences": [{}]}) == []
    groups = [{"InstanceType": "ml.g5.xlarge", "InstanceCount": 1, "InstanceGroupName": "a"},
              {"InstanceType": "ml.c5.xlarge", "InstanceCount": 3, "InstanceGroupName": "b"}]
    assert _instances({"InstanceGroups": groups}) == [("ml.g5.xlarge", 1), ("ml.c5.xlarge", 3)]


def test_job_cost_when_the_type_has_no_price_or_the_region_another_price():
    catalog = load_catalog()
    job = JobInfo(name="j", backend="sagemaker", status="Completed", instance_type="ml.x9.unknown",
                  instance_count=1, region="us-east-1", billable_seconds=60, training_seconds=60, spot=False)
    cost = job_cost(job, catalog)
    assert cost.usd is None and "not in the catalog" in (cost.price_note or "")
    far = JobInfo(name="j", backend="sagemaker", status="Completed", instance_type="ml.g5.xlarge",
                  instance_count=1, region="ap-east-2", billable_seconds=3600, training_seconds=3600, spot=False)
    cost = job_cost(far, catalog)
    if cost.price_region != "ap-east-2":  # the catalog has no price there: another region's, and it says so
        assert cost.price_note and "ap-east-2 unknown" in cost.price_note


def test_a_cluster_s_cost_is_each_group_s_instances_at_their_own_price():
    groups = [{"name": "small", "instance_type": "ml.g5.xlarge", "count": 3},
              {"name": "big", "instance_type": "ml.p4d.24xlarge", "count": 1}]
    job = JobInfo(name="j", backend="sagemaker", status="Completed", instance_count=4, region="us-east-1",
                  billable_seconds=1800, training_seconds=1800, spot=False, extra={"instance_groups": groups})
    job = dataclasses.replace(job, cost=job_cost(job, load_catalog()))
    assert job.cost is not None
    wanted = round(0.5 * (3 * _price("ml.g5.xlarge") + _price("ml.p4d.24xlarge")), 4)
    assert (job.cost.usd, job.cost.instance_count, job.cost.cluster) == (wanted, 1, True)
    assert cost_rows(job)[1] == ("cost", f"${wanted:,.2f} = billable time x small: 3 x ml.g5.xlarge, big: 1 x "
                                         f"ml.p4d.24xlarge at ${job.cost.price_per_hour:,.2f}/h on demand in us-east-1"
                                         + (f" ({job.cost.price_note})" if job.cost.price_note else ""))


def test_a_local_job_is_no_charge():
    job = JobInfo(name="j", backend="local", status="Completed")
    assert cost_rows(job) == [("cost", LOCAL)] and cost_cell(job) == LOCAL and job.to_dict()["cost"] is None
