"""`smtrain metrics --plot`: loss and accuracy per epoch as line charts in the terminal, drawn by plotext.

plotext (MIT, no Python dependencies) is imported here only, and this module only under --plot.
Train and validation are told apart by their markers as well as by colour, so a chart printed
without colour (a pipe, NO_COLOR) still reads.
"""

from __future__ import annotations

from smtrain.jobs import JobMetrics, MetricSeries

MARKERS = {"train": "•", "validation": "x"}
_NOT_PLOTTED = ("loss", "epoch", "learning_rate", "examples_per_sec")


def panels(metrics: JobMetrics) -> list[tuple[str, list[MetricSeries]]]:
    """(title, its series) for the loss chart and the accuracy chart; a model without accuracy gets the chart
    of its first other metric (mae, ...) instead."""
    by_name = {s.name: s for s in metrics.series}
    others = [s.name.partition(":")[2] for s in metrics.series
              if s.name.startswith("train:") and s.name.partition(":")[2] not in _NOT_PLOTTED]
    titles = ["loss", "accuracy" if "accuracy" in others else (others[0] if others else None)]
    found = []
    for title in titles:
        if title is None:
            continue
        series = [by_name[f"{side}:{title}"] for side in MARKERS if f"{side}:{title}" in by_name]
        if series:
            found.append((title, series))
    return found


def plot_text(metrics: JobMetrics, width: int, height: int, *, color: bool) -> str | None:
    """The charts side by side in `width` x `height` terminal cells; None when there is nothing to draw."""
    import plotext

    shown = panels(metrics)
    if not shown:
        return None
    figure = plotext.figure
    figure.clear()
    figure.plot_size(width, height)
    figure.theme("default" if color else "clear")
    figure.subplots(1, len(shown))
    for column, (title, series) in enumerate(shown, start=1):
        panel = figure.subplot(1, column)
        panel.title(f"{title} per epoch ({metrics.host})")
        panel.label("epoch")
        for one in series:
            side = one.name.partition(":")[0]
            signal = panel.signal([p.epoch for p in one.points], [p.value for p in one.points], marker=MARKERS[side])
            signal.label(side)
            signal.lines()
            panel.draw(signal)
        epochs = sorted({p.epoch for one in series for p in one.points})
        step = max(1, -(-len(epochs) // 8))  # whole epochs on the axis, at most about eight
        panel.ruler("x").ticks(epochs[::step], [str(e) for e in epochs[::step]])
        # The legend in the corner the curves leave free: top right when they fall (loss), else bottom right.
        values = [p.value for one in series for p in one.points]
        first = series[0].points
        falling = first[-1].value <= first[0].value
        panel.legend(x=epochs[-1], y=max(values) if falling else min(values), ha="right",
                     va="top" if falling else "bottom", relative=True)
    return str(figure.build().string(colorless=not color)).rstrip()
