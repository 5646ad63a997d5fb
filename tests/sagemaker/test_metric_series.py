"""`smtrain metrics` on SageMaker jobs: CloudWatch data as SageMaker publishes it, served by the moto server.

Commands run in this process (click's runner) against the live server; the data is put into its
CloudWatch through tests/support/moto_metrics.py.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import json
import threading

import pytest

from smtrain.cli.metrics_command import follow_metrics
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.sagemaker.backend import SageMakerBackend
from tests.spec.inprocess import run
from tests.support.moto_metrics import publish_epochs, set_final
from tests.support.moto_server import REGION, MotoServer, create_job, live_spec

DEFINITIONS = [dict(d) for d in metric_definitions(("mae",))]
CHIEF = [{"train:loss": 0.9, "train:accuracy": 0.7, "validation:loss": 0.8, "validation:accuracy": 0.75,
          "train:mae": 0.5},
         {"train:loss": 0.5, "train:accuracy": 0.85, "validation:loss": 0.6, "validation:accuracy": 0.8,
          "train:mae": 0.3},
         {"train:loss": 0.25, "train:accuracy": 0.93, "validation:loss": 0.4, "validation:accuracy": 0.88,
          "train:mae": 0.2}]
WORKER = [{"train:loss": 1.5}, {"train:loss": 1.25}]


def _job(server: MotoServer, name: str, status: str = "Completed") -> None:
    create_job(server, name, count=2, algorithm={"MetricDefinitions": DEFINITIONS})
    server.set_status(name, status)


# A job of the last three hours is read per second: epochs seconds apart stay apart. An older one is read per
# minute (CloudWatch keeps no finer data by then): epochs minutes apart.
RECENT = {"ago": dt.timedelta(minutes=20), "spacing": dt.timedelta(seconds=10)}
OLDER = {"ago": dt.timedelta(hours=4), "spacing": dt.timedelta(minutes=2)}


@pytest.mark.parametrize("timing", [RECENT, OLDER], ids=["per-second", "per-minute"])
def test_the_chiefs_series_per_epoch_without_progress_points_and_other_hosts_on_request(aws: MotoServer, tmp_path,
                                                                                       timing):
    _job(aws, "m-two-hosts")
    publish_epochs(aws, "m-two-hosts", CHIEF, progress=True, **timing)  # progress values (x10) between epochs
    publish_epochs(aws, "m-two-hosts", WORKER, host="algo-2", **timing)
    set_final(aws, "m-two-hosts", {"validation:accuracy": 0.88})
    env = aws.env(tmp_path)

    shown = run("metrics", "m-two-hosts", "-o", "json", env=env)
    assert shown.code == 0, shown.output
    data = json.loads(shown.stdout)
    assert set(data) == {"job", "backend", "status", "source", "host", "hosts", "metrics", "epochs", "final",
                         "notes", "scaling"}
    assert data["scaling"] is None  # no examples/s, no earlier one-replica job
    assert (data["job"], data["backend"], data["source"], data["host"], data["hosts"]) == \
        ("m-two-hosts", "sagemaker", "cloudwatch", "algo-1", ["algo-1", "algo-2"])
    # In MetricDefinitions order; train:epoch is the rows' key; examples_per_sec was never published.
    assert data["metrics"] == ["train:loss", "train:accuracy", "validation:loss", "validation:accuracy", "train:mae"]
    assert [e["epoch"] for e in data["epochs"]] == [1, 2, 3]
    assert [e["values"] for e in data["epochs"]] == CHIEF  # the progress values were left out
    assert all(e["timestamp"].endswith("Z") for e in data["epochs"])
    assert data["final"] == {"validation:accuracy": 0.88}

    worker = json.loads(run("metrics", "m-two-hosts", "--host", "algo-2", "-o", "json", env=env).stdout)
    assert worker["host"] == "algo-2" and [e["values"] for e in worker["epochs"]] == WORKER

    wrong = run("metrics", "m-two-hosts", "--host", "algo-3", env=env)
    assert wrong.code == 2 and "the job's hosts are algo-1, algo-2" in wrong.stderr


def test_text_csv_and_plot(aws: MotoServer, tmp_path):
    _job(aws, "m-formats")
    publish_epochs(aws, "m-formats", CHIEF)
    env = {**aws.env(tmp_path), "COLUMNS": "100"}

    text = run("metrics", "m-formats", env=env)
    assert text.code == 0, text.output
    lines = text.stdout.splitlines()
    assert lines[0] == "m-formats (Completed), algo-1, from CloudWatch:"
    assert lines[1].split() == ["epoch", "time", "loss", "accuracy", "val_loss", "val_accuracy", "mae"]
    assert lines[2].split()[0] == "1" and lines[2].split()[2:] == ["0.9", "0.7", "0.8", "0.75", "0.5"]
    assert len(lines) == 5

    table = list(csv.reader(io.StringIO(run("metrics", "m-formats", "-o", "csv", env=env).stdout)))
    assert table[0] == ["epoch", "timestamp", "train:loss", "train:accuracy", "validation:loss",
                        "validation:accuracy", "train:mae"]
    assert [row[0] for row in table[1:]] == ["1", "2", "3"]
    assert [float(v) for v in table[3][2:]] == list(CHIEF[2].values())

    plot = run("metrics", "m-formats", "--plot", env=env)
    assert plot.code == 0, plot.output
    chart = plot.stdout.split("\n", 5)[5]  # after the table
    assert "loss per epoch (algo-1)" in chart and "accuracy per epoch (algo-1)" in chart
    assert "• train" in chart and "x validation" in chart and "\x1b[" not in chart  # not a terminal: no colour
    assert max(len(line) for line in chart.splitlines()) <= 100
    assert run("metrics", "m-formats", "--plot", "-o", "json", env=env).code == 2


def test_unknown_job_exits_4_and_a_job_without_metrics_says_so(aws: MotoServer, tmp_path):
    env = aws.env(tmp_path)
    unknown = run("metrics", "no-such-job", env=env)
    assert unknown.code == 4 and "no training job named no-such-job" in unknown.stderr

    _job(aws, "m-empty", status="InProgress")
    empty = run("metrics", "m-empty", env=env)
    assert empty.code == 0 and empty.stdout == ""
    assert "no metrics of m-empty (InProgress) in CloudWatch yet" in empty.stderr
    data = json.loads(run("metrics", "m-empty", "-o", "json", env=env).stdout)
    assert data["epochs"] == [] and data["metrics"] == [] and data["final"] == {}


def test_follow_prints_each_epoch_once_as_it_arrives_until_the_job_ends(aws: MotoServer, tmp_path, monkeypatch,
                                                                       capsys):
    for name, value in aws.env(tmp_path).items():
        monkeypatch.setenv(name, value)
    _job(aws, "m-follow", status="InProgress")
    publish_epochs(aws, "m-follow", CHIEF[:1])
    # Each poll's pause is the moment the job moves on: deterministic, no waiting.
    steps = [lambda: publish_epochs(aws, "m-follow", CHIEF[1:2], first=2),
             lambda: None,  # a poll with nothing new prints nothing
             lambda: (publish_epochs(aws, "m-follow", CHIEF[2:], first=3), aws.set_status("m-follow", "Failed"))]
    pauses = []

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        steps[len(pauses) - 1]()

    job = follow_metrics(SageMakerBackend(REGION), "m-follow", None, "json", sleep=pause)
    assert job.status == "Failed" and len(pauses) == 3
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(line["job"], line["host"], line["epoch"]) for line in lines] == [("m-follow", "algo-1", e) for e in (1, 2, 3)]
    assert [line["values"] for line in lines] == CHIEF

    # The command: the job's own exit code once it has ended (1 Failed).
    assert run("metrics", "m-follow", "--follow", "-o", "csv", env=aws.env(tmp_path)).code == 1


@pytest.mark.parametrize("output", ["json", "text"])
def test_submit_wait_ends_with_the_metrics_summary(aws: MotoServer, tmp_path, output):
    name = f"m-submit-{output}"

    def finish() -> None:  # the job's side: once created, it trains two epochs and completes
        aws.control.wait_created(name)
        publish_epochs(aws, name, CHIEF[:2])
        set_final(aws, name, {"train:loss": 0.5})
        aws.set_status(name, "Completed")

    thread = threading.Thread(target=finish, daemon=True)
    thread.start()
    done = run("submit", str(live_spec(tmp_path)), "--job-name", name, "--wait", "-o", output, env=aws.env(tmp_path))
    thread.join(5)
    assert done.code == 0, done.output
    if output == "json":
        summary = json.loads(done.stdout)["metrics"]
        assert summary["host"] == "algo-1" and summary["epochs"] == 2 and summary["final"] == {"train:loss": 0.5}
        assert summary["last_epoch"]["epoch"] == 2 and summary["last_epoch"]["values"]["train:loss"] == 0.5
    else:
        last = done.stdout.rstrip().splitlines()[-2:]
        assert last[0].startswith("metrics    epoch 2 (algo-1): loss 0.5  accuracy 0.85  val_loss 0.6"), last
        assert last[1].strip() == f"`smtrain metrics {name} --region {REGION}` shows every epoch"


def test_the_epoch_rule_without_train_epoch_and_with_an_epoch_run_twice() -> None:
    from smtrain.jobs import by_epoch

    t = [dt.datetime(2026, 11, 23, 8, 0, s, tzinfo=dt.timezone.utc) for s in range(5)]
    # No train:epoch (a program of its own): each distinct time is the next epoch.
    (loss,) = by_epoch({"train:loss": [(t[1], 0.5), (t[0], 1.0)]}, ["train:loss"])
    assert [(p.epoch, p.value) for p in loss.points] == [(1, 1.0), (2, 0.5)]
    # A job restarted from its checkpoint prints epoch 2 again: the later values win; a value at a time
    # without train:epoch (a progress line) is no epoch's; a metric with no epoch point is no series.
    series = by_epoch({"train:epoch": [(t[0], 1.0), (t[1], 2.0), (t[3], 2.0)], "validation:loss": [(t[2], 9.0)],
                       "train:loss": [(t[0], 1.0), (t[1], 0.6), (t[2], 7.0), (t[3], 0.4)]},
                      ["validation:loss", "train:loss"])
    assert [(s.name, [(p.epoch, p.value) for p in s.points]) for s in series] == [("train:loss", [(1, 1.0), (2, 0.4)])]


def test_the_epoch_is_the_whole_number_logged_and_values_are_kept_as_read() -> None:
    from smtrain.jobs import by_epoch

    t = [dt.datetime(2026, 11, 23, 8, 0, s, tzinfo=dt.timezone.utc) for s in range(8)]
    epochs = [(t[0], 3.0), (t[1], -1.0), (t[2], 0.0), (t[3], float("nan")), (t[4], 2.5), (t[5], 1e300),
              (t[6], float("inf")), (t[7], 1.0)]
    losses = [(stamp, value) for stamp, value in zip(t, [0.3, float("nan"), -0.0, 9.0, 9.0, 9.0, 9.0, 1e308],
                                                     strict=True)]
    (loss,) = by_epoch({"train:epoch": epochs, "train:loss": losses}, ["train:loss"])
    shown = [(p.epoch, p.value) for p in loss.points]
    assert [epoch for epoch, _ in shown] == [-1, 0, 1, 3]  # no epoch from nan, 2.5, 1e300 or inf
    assert str(shown) == str([(-1, float("nan")), (0, -0.0), (1, 1e308), (3, 0.3)])
