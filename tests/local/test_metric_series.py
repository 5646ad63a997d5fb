"""`smtrain metrics` on local jobs: the job's MetricDefinitions read from its chief's log, one point per epoch.

A stand-in job (no TensorFlow) makes a real record and host logs in seconds; the metric lines are then
written into the logs as the host processes would have printed them, by the entrypoint's own formatters.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path

from smtrain_tf.training.metrics import epoch_line, progress_line

from smtrain.cli.metrics_command import follow_metrics
from smtrain.cli.metrics_plot import plot_text
from smtrain.local.backend import LocalBackend, local_request
from smtrain.local.supervise import format_log_line
from smtrain.plan.declared_metrics import metric_definitions
from tests.local.support import make_plan
from tests.spec.inprocess import run

START = dt.datetime(2026, 11, 23, 8, 0, tzinfo=dt.timezone.utc)
TRAIN = [{"loss": 1.5, "accuracy": 0.5, "top3": 0.7}, {"loss": 0.8, "accuracy": 0.75, "top3": 0.9},
         {"loss": 0.4, "accuracy": 0.9, "top3": 0.95}]
VALIDATION = [{"loss": 1.2, "accuracy": 0.6, "top3": 0.8}, {"loss": 0.7, "accuracy": 0.8, "top3": 0.92},
              {"loss": 0.5, "accuracy": 0.85, "top3": 0.97}]


def _chief_lines() -> list[str]:
    """What the chief prints over three epochs: progress lines within each, the epoch line at its end (the
    third behind mpirun's tag, as under Horovod), and lines that name an epoch without being metric lines."""
    lines = ["config strategy=mirrored replicas=1 learning_rate=0.002 examples=1437 metrics=accuracy,top3"]
    for epoch, (train, validation) in enumerate(zip(TRAIN, VALIDATION, strict=True), start=1):
        running = {name: value * 2 for name, value in train.items()}
        lines.append(progress_line(epoch, epoch * 10 - 5, running, 500, epoch * 2.0))
        line = epoch_line(epoch, epoch * 10, train, validation, 0.003, 1000 + epoch, epoch * 2.5)
        lines.append(f"[1,0]<stdout>:{line}" if epoch == 3 else line)
        lines.append(f"checkpoint saved /opt/ml/checkpoints/ckpt-{epoch * 10} epoch={epoch} step={epoch * 10}")
    return lines


def _write_log(path: Path, lines: list[str]) -> None:
    with path.open("a", encoding="utf-8") as handle:
        for n, line in enumerate(lines):
            handle.write(format_log_line(START + dt.timedelta(seconds=n), line))


def test_a_local_jobs_series_comes_from_its_chiefs_log_as_sagemaker_reads_it(tmp_path: Path) -> None:
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "metrics": ["top3"]})
    backend = LocalBackend(tmp_path / "home")
    job = backend.run(local_request(plan, "lines"), stream=io.StringIO(), grace=5)
    assert job.status == "Completed"
    # The record keeps the job's MetricDefinitions (the declared top3 among them), as SageMaker keeps them.
    assert backend.store.read("lines")["metric_definitions"] == [dict(d) for d in metric_definitions(("top3",))]
    logs = backend.store.log_dir("lines")
    _write_log(logs / "algo-1.log", _chief_lines())
    _write_log(logs / "algo-2.log", [epoch_line(1, 10, {"loss": 9.0, "accuracy": 0.1, "top3": 0.2}, None, None, 1, 1)])

    shown = run("metrics", "lines", "-o", "json", env={"SMTRAIN_HOME": str(tmp_path / "home")})
    assert shown.code == 0, shown.output
    data = json.loads(shown.stdout)
    assert (data["backend"], data["source"], data["host"], data["hosts"]) == ("local", "log", "algo-1",
                                                                               ["algo-1", "algo-2"])
    assert data["metrics"] == ["train:loss", "train:accuracy", "validation:loss", "validation:accuracy",
                               "train:learning_rate", "train:examples_per_sec", "train:top3", "validation:top3"]
    assert [e["epoch"] for e in data["epochs"]] == [1, 2, 3]  # no point from a progress or checkpoint line
    assert [e["fit"] for e in data["epochs"]] == [1, 1, 1]  # one fit call
    table = run("metrics", "lines", env={"SMTRAIN_HOME": str(tmp_path / "home")}).stdout
    assert "fit call" not in table  # one call: no line for it
    for epoch, train, validation in zip(data["epochs"], TRAIN, VALIDATION, strict=True):
        values = epoch["values"]
        assert [values["train:loss"], values["train:accuracy"], values["train:top3"]] == list(train.values())
        assert [values["validation:loss"], values["validation:accuracy"], values["validation:top3"]] == \
            list(validation.values())
        assert values["train:examples_per_sec"] == 1000 + epoch["epoch"]
    assert data["epochs"][0]["timestamp"] == "2026-11-23T08:00:02Z"  # the epoch line's time
    assert data["final"]["validation:accuracy"] == 0.85

    worker = json.loads(run("metrics", "lines", "--host", "algo-2", "-o", "json",
                            env={"SMTRAIN_HOME": str(tmp_path / "home")}).stdout)
    assert [e["values"]["train:loss"] for e in worker["epochs"]] == [9.0]

    # A record from before the definitions were kept: those every job has.
    record = backend.store.read("lines")
    del record["metric_definitions"]
    backend.store.write("lines", record)
    older = backend.metrics("lines")
    assert "train:top3" not in [s.name for s in older.series] and len(older.series[0].points) == 3


def test_the_plot_draws_loss_and_accuracy_with_train_and_validation_told_apart_without_colour(tmp_path: Path) -> None:
    from smtrain.jobs import JobInfo, JobMetrics, MetricPoint, MetricSeries

    def series(name: str, values: list[float]) -> MetricSeries:
        return MetricSeries(name, tuple(MetricPoint(n, v, None) for n, v in enumerate(values, start=1)))

    metrics = JobMetrics(JobInfo("p", "local", "Completed"), "log", "algo-1", ("algo-1",), (
        series("train:loss", [1.5, 0.8, 0.4, 0.3]), series("validation:loss", [1.2, 0.7, 0.5, 0.45]),
        series("train:accuracy", [0.5, 0.75, 0.9, 0.93]), series("validation:accuracy", [0.6, 0.8, 0.85, 0.86]),
        series("train:learning_rate", [0.003] * 4)))
    text = plot_text(metrics, 90, 16, color=False)
    assert text is not None and "\x1b[" not in text
    lines = text.splitlines()
    assert len(lines) <= 16 and max(map(len, lines)) <= 90
    assert "loss per epoch (algo-1)" in lines[0] and "accuracy per epoch (algo-1)" in lines[0]
    assert text.count("• train") == 2 and text.count("x validation") == 2  # a legend in each chart
    assert "1.50" in text and "0.93" in text  # each chart's highest value on its axis
    assert "learning_rate" not in text
    assert plot_text(JobMetrics(metrics.job, "log", "algo-1", ("algo-1",), ()), 90, 16, color=False) is None
    assert plot_text(metrics, 90, 16, color=True) != text  # colour is a choice, not the default


def test_one_chart_left_is_drawn_and_a_plot_with_no_finite_point_says_so() -> None:
    from smtrain.jobs import JobInfo, JobMetrics, MetricPoint, MetricSeries

    def metrics(*series: tuple[str, list[float]]) -> JobMetrics:
        return JobMetrics(JobInfo("p", "local", "Completed"), "log", "algo-1", ("algo-1",), tuple(
            MetricSeries(name, tuple(MetricPoint(n, v, None) for n, v in enumerate(values, start=1)))
            for name, values in series))

    nan = float("nan")
    loss_only = plot_text(metrics(("train:loss", [1.0, 0.7, 0.5])), 80, 14, color=False)
    assert loss_only is not None and "loss per epoch (algo-1)" in loss_only and "0.5" in loss_only
    diverged = plot_text(metrics(("train:loss", [nan, nan]), ("train:accuracy", [0.1, 0.2])), 80, 14, color=False)
    assert diverged is not None and "accuracy per epoch" in diverged and "loss per epoch" not in diverged
    assert diverged.endswith("not plotted (not a finite number): train:loss epoch 1 (nan), train:loss epoch 2 (nan)")
    nothing = plot_text(metrics(("train:loss", [nan, float("inf")])), 80, 14, color=False)
    assert nothing == "not plotted (not a finite number): train:loss epoch 1 (nan), train:loss epoch 2 (inf)"


def test_not_finite_and_huge_values_and_logged_epochs_are_shown_as_logged(tmp_path: Path, capsys) -> None:
    """The table, JSON and plot of a log whose loss goes nan, inf, ±1e308, whose epochs come out of order, as
    -1 and 0, and (on algo-2) whose lines carry no ` step=` for the bundled train:epoch regex."""
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}})
    backend = LocalBackend(tmp_path / "home")
    assert backend.run(local_request(plan, "wild"), stream=io.StringIO(), grace=5).status == "Completed"
    logs = backend.store.log_dir("wild")
    losses = {1: 1.5, 2: float("nan"), 3: 1e308, 4: float("inf"), 5: -1e308, 6: float("-inf"), 8: -0.0, 7: 0.25}
    lines = [epoch_line(epoch, epoch * 10, {"loss": loss, "accuracy": 0.5}, {"loss": loss, "accuracy": 0.5}, 0.001,
                        100, 1.0) for epoch, loss in losses.items()]
    lines += [epoch_line(-1, 90, {"loss": 0.3, "accuracy": 0.6}, None, None, 100, 1.0),
              epoch_line(0, 95, {"loss": 0.2, "accuracy": 0.7}, None, None, 100, 1.0)]
    _write_log(logs / "algo-1.log", lines)
    # What `smtrain metrics` tells a script to print, without the entrypoint's ` step=`.
    _write_log(logs / "algo-2.log", ["epoch=1 loss=0.5 accuracy=0.5", "epoch=2 loss=nan accuracy=nan",
                                     "epoch=3 loss=1e-320 accuracy=0.7", "epoch=-1 loss=0.1 accuracy=0.9",
                                     "epoch=12345678901234567890123 loss=0.4 accuracy=0.8"])
    env = {"SMTRAIN_HOME": str(tmp_path / "home")}

    shown = run("metrics", "wild", "-o", "json", env=env)
    assert shown.code == 0, shown.output
    data = json.loads(shown.stdout)  # strict JSON: no NaN or Infinity token
    loss = {e["epoch"]: e["values"].get("train:loss") for e in data["epochs"]}
    assert loss == {-1: 0.3, 0: 0.2, 1: 1.5, 2: "nan", 3: 1e308, 4: "inf", 5: -1e308, 6: "-inf", 7: 0.25, 8: -0.0}
    assert {e["epoch"]: e["values"].get("validation:loss") for e in data["epochs"]}[2] == "nan"
    assert "NaN" not in shown.stdout and "Infinity" not in shown.stdout

    worker = json.loads(run("metrics", "wild", "--host", "algo-2", "-o", "json", env=env).stdout)
    assert [(e["epoch"], e["values"]["train:loss"]) for e in worker["epochs"]] == [(-1, 0.1), (1, 0.5), (2, "nan"),
                                                                                   (3, 1e-320)]
    # The 23-digit epoch keys no row: left out, and said so (it was dropped in silence).
    assert worker["notes"] == ["1 metric line left out: no epoch smtrain can count on it (a whole number up to "
                               "2^53), so no row can be keyed by it"]
    said = run("metrics", "wild", "--host", "algo-2", env=env)
    assert "note: 1 metric line left out: no epoch smtrain can count on it" in said.stderr
    assert json.loads(shown.stdout)["notes"] == []  # the chief's lines all have their epoch

    text = run("metrics", "wild", "--plot", env={**env, "COLUMNS": "100"})
    assert text.code == 0, text.output
    table = {line.split()[0]: line.split() for line in text.stdout.splitlines()[2:12]}
    assert [table[e][2] for e in ("-1", "2", "3", "4", "5", "6", "8")] == ["0.3", "nan", "1e+308", "inf", "-1e+308",
                                                                          "-inf", "-0"]
    assert "loss per epoch (algo-1, x1e+308)" in text.stdout  # ±1e308 still drawn, in units the title gives
    assert "not plotted (not a finite number): train:loss epoch 2 (nan), train:loss epoch 4 (inf)" in text.stdout
    assert "validation:loss epoch 6 (-inf)" in text.stdout and "Traceback" not in text.output

    csv_text = run("metrics", "wild", "-o", "csv", env=env).stdout.splitlines()
    assert csv_text[4].split(",")[2] == "nan"  # the header, epochs -1, 0, 1, then 2

    # --follow prints every epoch once, -1 and 0 too, each value as JSON holds it.
    assert follow_metrics(backend, "wild", None, "json").status == "Completed"
    followed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(f["epoch"], f["values"]["train:loss"]) for f in followed][:4] == [(-1, 0.3), (0, 0.2), (1, 1.5), (2, "nan")]


def test_each_fit_calls_epochs_are_rows_of_their_own_in_time_order(tmp_path: Path) -> None:
    """keras.io's multi-GPU guide trains 4 epochs over 3 fit calls: epochs 1-2, then 1, then 1 (fit=2, fit=3)."""
    plan = make_plan(tmp_path, {})
    backend = LocalBackend(tmp_path / "home")
    assert backend.run(local_request(plan, "calls"), stream=io.StringIO(), grace=5).status == "Completed"
    calls = [(1, 1, 0.9), (1, 2, 0.7), (2, 1, 0.6), (3, 1, 0.5)]  # (fit call, epoch, loss)
    lines = [epoch_line(epoch, n * 10, {"loss": loss, "accuracy": 0.5}, None, 0.001, 100, n, fit_call=call)
             for n, (call, epoch, loss) in enumerate(calls, start=1)]
    # A restarted first call (a spot job resumed at its epoch 2): the later line of that epoch wins.
    lines.insert(2, epoch_line(2, 20, {"loss": 0.65, "accuracy": 0.5}, None, 0.001, 100, 2.5))
    _write_log(backend.store.log_dir("calls") / "algo-1.log", lines)
    home = {"SMTRAIN_HOME": str(tmp_path / "home")}

    data = json.loads(run("metrics", "calls", "-o", "json", env=home).stdout)
    assert [(e["fit"], e["epoch"], e["values"]["train:loss"]) for e in data["epochs"]] == [
        (1, 1, 0.9), (1, 2, 0.65), (2, 1, 0.6), (3, 1, 0.5)]
    stamps = [e["timestamp"] for e in data["epochs"]]
    assert stamps == sorted(stamps)
    table = run("metrics", "calls", env=home).stdout.splitlines()
    assert [line for line in table if line.startswith("--")] == ["-- fit call 1 --", "-- fit call 2 --",
                                                                "-- fit call 3 --"]
    assert table.index("-- fit call 2 --") == table.index("-- fit call 1 --") + 3  # after the first call's 2 rows
    csv = run("metrics", "calls", "-o", "csv", env=home).stdout.splitlines()
    assert csv[0].startswith("fit,epoch,timestamp,") and [row.split(",")[:2] for row in csv[1:]] == [
        ["1", "1"], ["1", "2"], ["2", "1"], ["3", "1"]]
    chart = plot_text(backend.metrics("calls"), 100, 12, color=False)
    assert chart is not None and "fit call.epoch" in chart

    followed = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(followed):
        follow_metrics(backend, "calls", None, "json", sleep=lambda s: None)
    assert [(row["fit"], row["epoch"]) for row in map(json.loads, followed.getvalue().splitlines())] == [
        (1, 1), (1, 2), (2, 1), (3, 1)]


def test_a_local_job_s_hosts_are_sampled_while_they_run(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SMTRAIN_USAGE_SECONDS", "0.2")
    backend = LocalBackend(tmp_path / "home")
    plan = make_plan(tmp_path, {"compute": {"nodes": 2}, "hyperparameters": {"ticks": 15}})  # 3 s on each host
    assert backend.run(local_request(plan, "sampled"), stream=io.StringIO(), grace=5).status == "Completed"
    env = {"SMTRAIN_HOME": str(tmp_path / "home")}
    document = json.loads(run("metrics", "sampled", "--system", "-o", "json", env=env).stdout)
    assert (document["source"], document["period_seconds"]) == ("processes", 1)
    hosts = {h["host"]: h for h in document["hosts"]}
    assert sorted(hosts) == ["algo-1", "algo-2"]
    for host in hosts.values():
        assert len(host["series"]["CPUUtilization"]) >= 3, host  # 0.2 s apart over 3 s
        assert host["average"]["MemoryUtilization"] > 0 and host["gpus"] is None and host["verdict"] is None
    table = run("metrics", "sampled", "--system", env=env)
    assert table.code == 0, table.output
    lines = table.stdout.splitlines()
    assert lines[0] == "sampled (Completed), each host's processes sampled here every 1 s (CPU: % of one core, summed):"
    assert lines[-1].startswith("average: algo-1: CPU ") and lines[-1].endswith("no GPU figures")
    assert "utilization" not in run("status", "sampled", env=env).output  # SageMaker's line only


def test_a_local_job_that_left_no_samples_says_so(tmp_path: Path) -> None:
    backend = LocalBackend(tmp_path / "home")
    assert backend.run(local_request(make_plan(tmp_path, {}), "unsampled"), stream=io.StringIO(),
                       grace=5).status == "Completed"
    (backend.store.job_dir("unsampled") / "usage.jsonl").unlink(missing_ok=True)
    shown = run("metrics", "unsampled", "--system", env={"SMTRAIN_HOME": str(tmp_path / "home")})
    assert shown.code == 0 and shown.stdout == "", shown.output
    assert shown.stderr == ("note: no CPU or memory samples for unsampled: smtrain samples a local job's host "
                            "processes while it runs (every SMTRAIN_USAGE_SECONDS seconds, default 5)\n")
