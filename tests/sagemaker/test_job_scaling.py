"""`smtrain metrics JOB`'s scaling line for SageMaker jobs, against the moto server: the replicas from each job's
CloudWatch log (its chief's config line), examples/s from its CloudWatch metrics, the one-replica job found
among the spec's earlier jobs (ListTrainingJobs). The local jobs' side is tests/local/test_job_scaling.py's."""

from __future__ import annotations

import json

from smtrain.plan.declared_metrics import metric_definitions
from tests.spec.inprocess import run
from tests.support.moto_metrics import publish_epochs
from tests.support.moto_server import MotoServer, create_job

DEFINITIONS = [dict(d) for d in metric_definitions()]


def _job(server: MotoServer, name: str, replicas: int, rates: list[float]) -> None:
    create_job(server, name, algorithm={"MetricDefinitions": DEFINITIONS})
    server.set_status(name, "Completed")
    server.put_logs(name, "algo-1", ["gpus: 4 x A10G", f"config strategy=mirrored replicas={replicas} workers=1 "
                                     "batch_size_per_replica=32 global_batch_size=128"])
    publish_epochs(server, name, [{"train:loss": 0.5, "train:examples_per_sec": rate} for rate in rates])


def test_a_sagemaker_job_is_set_against_the_specs_earlier_one_replica_job(aws: MotoServer, tmp_path) -> None:
    single, four = "digits-20261128-100000-aaaa", "digits-20261128-110000-bbbb"
    _job(aws, single, 1, [90.0, 100.0, 110.0])
    _job(aws, "digits-20261128-103000-cccc", 2, [60.0, 150.0, 150.0])  # two replicas: no baseline
    _job(aws, "other-20261128-104500-dddd", 1, [10.0, 10.0])  # another spec's one-replica job
    _job(aws, four, 4, [50.0, 300.0, 340.0])
    env = aws.env(tmp_path)
    shown = run("metrics", four, env=env)
    assert shown.code == 0, shown.output
    assert f"scaling  4 replicas: 3.0x one replica ({single}: 105 examples/s), 76% efficiency" in \
        shown.stdout.splitlines()
    assert json.loads(run("metrics", four, "-o", "json", env=env).stdout)["scaling"]["baseline_job"] == single
    assert "scaling" not in run("metrics", single, env=env).stdout  # one replica: nothing to set against
