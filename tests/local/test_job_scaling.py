"""`smtrain metrics JOB`'s scaling line: a job's examples/s against the newest earlier one-replica job of its spec,
over real local jobs whose entry point (no TensorFlow) says its layout and epoch lines as smtrain's chief does."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path

import yaml

from smtrain.cli.job_scaling import examples_per_sec
from smtrain.jobs import JobInfo, JobMetrics, MetricPoint, MetricSeries
from tests.support.cli_runner import smtrain

SCRIPT = '''\
import sys
argv = sys.argv[1:]
hp = {argv[i][2:]: argv[i + 1] for i in range(0, len(argv) - 1, 2) if argv[i].startswith("--")}
print(f"config strategy=mirrored replicas={hp['replicas']} workers=1 batch_size_per_replica=32", flush=True)
for epoch, rate in enumerate(hp["rates"].split(","), 1):
    print(f"epoch={epoch} step={epoch * 10} loss=0.5000 accuracy=0.9000 examples_per_sec={rate} elapsed=1.0",
          flush=True)
'''


def _job(tmp_path: Path, replicas: int, rates: str) -> str:
    source = tmp_path / "src"
    source.mkdir(exist_ok=True)
    (source / "train.py").write_text(SCRIPT)
    spec = {"name": "scale", "role": "arn:aws:iam::123456789012:role/SageMakerRole", "region": "us-east-1",
            "compute": {"instance_type": "ml.g5.xlarge", "max_run": 600}, "output": "out",
            "code": {"source_dir": "src", "entry_point": "train.py"},
            "hyperparameters": {"replicas": replicas, "rates": rates}}
    (tmp_path / "job.yaml").write_text(yaml.safe_dump(spec))
    done = smtrain("submit", "job.yaml", "--local", "-o", "json", env={"SMTRAIN_HOME": str(tmp_path / "home")},
                   cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)["job_name"]


def _metrics(tmp_path: Path, job: str, *more: str) -> str:
    shown = smtrain("metrics", job, *more, env={"SMTRAIN_HOME": str(tmp_path / "home")}, cwd=tmp_path, timeout=60)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def test_a_job_of_four_replicas_is_set_against_the_earlier_one_replica_job(tmp_path: Path) -> None:
    first = _job(tmp_path, 4, "40,300,340")
    assert "scaling" not in _metrics(tmp_path, first)  # no one-replica figure yet: no line
    assert json.loads(_metrics(tmp_path, first, "-o", "json"))["scaling"] is None
    single = _job(tmp_path, 1, "90,100,110")
    assert "scaling" not in _metrics(tmp_path, single)  # one replica: nothing to scale
    four = _job(tmp_path, 4, "50,300,340")
    # 320 examples/s (the median after the first epoch) against 105: 3.05x, 76% of 4 replicas
    assert f"scaling  4 replicas: 3.0x one replica ({single}: 105 examples/s), 76% efficiency" in \
        _metrics(tmp_path, four).splitlines()
    assert json.loads(_metrics(tmp_path, four, "-o", "json"))["scaling"] == {
        "replicas": 4, "examples_per_sec": 320.0, "baseline_job": single, "baseline_examples_per_sec": 105.0,
        "speedup": 3.048, "efficiency": 0.762}
    assert not re.search("scaling", _metrics(tmp_path, four, "-o", "csv"))


def _metrics_of(values: list[tuple[int, float, int]]) -> JobMetrics:
    job = JobInfo(name="scale-20261128-120000-abcd", backend="local", status="Completed")
    points = tuple(MetricPoint(epoch, value, dt.datetime(2026, 11, 28, tzinfo=dt.timezone.utc), fit)
                   for epoch, value, fit in values)
    return JobMetrics(job, "log", "algo-1", ("algo-1",), (MetricSeries("train:examples_per_sec", points),))


def test_the_figure_leaves_the_first_epoch_out_and_keeps_to_the_first_fit_call() -> None:
    assert examples_per_sec(_metrics_of([(1, 10.0, 1), (2, 100.0, 1), (3, 120.0, 1)])) == 110.0
    assert examples_per_sec(_metrics_of([(1, 10.0, 1)])) == 10.0  # one epoch: that one
    assert examples_per_sec(_metrics_of([(1, 10.0, 1), (2, 100.0, 1), (1, 999.0, 2), (2, 999.0, 2)])) == 100.0
    assert examples_per_sec(_metrics_of([])) is None
    assert examples_per_sec(_metrics_of([(1, 0.0, 1)])) is None  # no examples counted: no figure
