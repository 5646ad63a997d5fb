"""smtrain.Metrics: a job's metrics per epoch as rows pandas takes as they are, a table in Jupyter, and a plot
with matplotlib (imported only then). Built from a JobMetrics as a backend reports it: no training here."""

from __future__ import annotations

import datetime as dt
import sys

import pytest

import smtrain
from smtrain.jobs import JobInfo, JobMetrics, MetricPoint, MetricSeries

T0 = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.timezone.utc)
VALUES = {
    "train:loss": [0.9, 0.5, 0.3],
    "train:accuracy": [0.6, 0.8, 0.9],
    "validation:loss": [1.0, 0.6, None],  # the last epoch has no validation value
    "validation:accuracy": [0.55, 0.75, None],
    "train:learning_rate": [0.01, 0.01, 0.005],
}


def job_metrics(status: str = "Completed") -> JobMetrics:
    series = tuple(
        MetricSeries(name, tuple(MetricPoint(epoch, value, T0 + dt.timedelta(minutes=epoch))
                                 for epoch, value in enumerate(values, start=1) if value is not None))
        for name, values in VALUES.items())
    job = JobInfo(name="digits-20260102-030405-abcd", backend="local", status=status)
    return JobMetrics(job, "log", "algo-1", ("algo-1", "algo-2"), series, final={"train:loss": 0.3})


def test_rows_are_dicts_per_epoch_with_keras_names() -> None:
    metrics = smtrain.Metrics(job_metrics())
    assert isinstance(metrics, list) and len(metrics) == 3
    assert metrics[0] == {"epoch": 1, "loss": 0.9, "accuracy": 0.6, "val_loss": 1.0, "val_accuracy": 0.55,
                          "learning_rate": 0.01, "time": T0 + dt.timedelta(minutes=1)}
    assert metrics[2]["val_loss"] is None and metrics[2]["loss"] == 0.3
    assert metrics.names == ["loss", "accuracy", "val_loss", "val_accuracy", "learning_rate"]
    assert metrics.final == {"loss": 0.3} and metrics.host == "algo-1"
    assert repr(metrics) == ("<Metrics of digits-20260102-030405-abcd: 3 epochs of loss, accuracy, val_loss, "
                             "val_accuracy, learning_rate>")


def test_pandas_takes_the_rows_as_they_are() -> None:
    pandas = pytest.importorskip("pandas")
    frame = pandas.DataFrame(smtrain.Metrics(job_metrics()))
    assert list(frame.columns) == ["epoch", "loss", "accuracy", "val_loss", "val_accuracy", "learning_rate", "time"]
    assert frame["epoch"].tolist() == [1, 2, 3] and frame["loss"].tolist() == [0.9, 0.5, 0.3]
    assert frame["val_loss"].isna().tolist() == [False, False, True]


def test_html_is_a_table_of_the_epochs() -> None:
    html = smtrain.Metrics(job_metrics())._repr_html_()
    assert "<table>" in html and html.count("<tr>") == 4  # the headings and three epochs
    assert "<th>val_loss</th>" in html and "<td>0.55</td>" in html and "<td>-</td>" in html
    assert "digits-20260102-030405-abcd (Completed), algo-1" in html


def test_plot_draws_a_line_per_metric_of_learning() -> None:
    matplotlib = pytest.importorskip("matplotlib")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.axes import Axes

    ax = smtrain.Metrics(job_metrics()).plot()
    try:
        assert isinstance(ax, Axes)
        lines = {line.get_label(): line for line in ax.get_lines()}
        assert sorted(lines) == ["accuracy", "loss", "val_accuracy", "val_loss"]  # not the learning rate
        assert list(lines["loss"].get_xdata()) == [1, 2, 3]
        assert list(lines["val_loss"].get_xdata()) == [1, 2] and lines["val_loss"].get_linestyle() == "--"
        assert ax.get_xlabel() == "epoch"
        # on an Axes of the caller's own
        _, own = plt.subplots()
        assert smtrain.Metrics(job_metrics()).plot(ax=own) is own and len(own.get_lines()) == 4
    finally:
        plt.close("all")


def test_plot_without_matplotlib_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # an import of it now fails as if not installed
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(smtrain.UserError) as caught:
        smtrain.Metrics(job_metrics()).plot()
    assert caught.value.code == 2 and "pip install matplotlib" in str(caught.value)
