"""The job's MetricDefinitions read real Horovod output, as SageMaker reads it from CloudWatch.

Under Horovod (and smddp) the ranks run under one `mpirun --tag-output`, so every line of the chief
reaches the log as `[1,0]<stdout>:epoch=...`. A local Horovod run writes exactly those lines to the
first host's log file; each definition's regex is applied to each of them (with Java's rules, as
SageMaker applies it), and must find every epoch's values, the running values of the `progress`
lines for the train metrics that they carry, and nothing else.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from smtrain.local.backend import LocalBackend, local_request
from smtrain.local.demo_data import write_digits
from smtrain.local.supervise import parse_log_line
from smtrain.plan.declared_metrics import metric_definitions
from smtrain.render import java_regex
from tests.local.support import make_plan
from tests.support.horovod_env import rank_output, required_horovod_python

pytestmark = [pytest.mark.slow, pytest.mark.horovod]

EPOCHS = 3
# metric -> the field of the chief's lines it reads, and whether `progress` lines carry it too
FIELDS = {"train:epoch": ("epoch", False), "train:loss": ("loss", True), "train:accuracy": ("accuracy", True),
          "validation:loss": ("val_loss", False), "validation:accuracy": ("val_accuracy", False),
          "train:learning_rate": ("lr", False), "train:examples_per_sec": ("examples_per_sec", True)}


def values(line: str) -> dict[str, str]:
    return dict(part.split("=", 1) for part in line.split() if "=" in part)


def test_every_metric_definition_reads_the_chiefs_lines_behind_mpiruns_tags(tmp_path: Path) -> None:
    python = required_horovod_python()
    write_digits(tmp_path / "digits")
    plan = make_plan(tmp_path, {
        "tensorflow": {"version": "2.12"}, "compute": {"nodes": 2, "instance_type": "ml.p4d.24xlarge", "max_run": 600},
        "distribution": {"strategy": "horovod", "processes_per_host": 1,
                         # each rank's output also goes to its own files, untagged (see rank_output)
                         "mpi_options": f"--output-filename {tmp_path / 'ranks'}"},
        "training": {"model": "mlp", "epochs": EPOCHS, "batch_size_per_replica": 32, "seed": 3},
        "hyperparameters": {"log_every_steps": 10},
        "inputs": {"train": str(tmp_path / "digits" / "train"), "validation": str(tmp_path / "digits" / "validation")},
    }, standin=False)
    backend = LocalBackend(tmp_path / "home")
    stream = io.StringIO()
    job = backend.run(local_request(plan, "hvd-metrics"), stream=stream, grace=5, python=str(python))
    assert job.status == "Completed", stream.getvalue()[-3000:]

    # What the chief printed, untagged: the lines the definitions are meant to read.
    printed = rank_output(tmp_path / "ranks", 0).splitlines()
    epoch_lines = [values(line) for line in printed if line.startswith("epoch=")]
    metric_lines = [values(line.removeprefix("progress ")) for line in printed
                    if line.startswith(("epoch=", "progress epoch="))]
    assert [e["epoch"] for e in epoch_lines] == [str(n) for n in range(1, EPOCHS + 1)], printed
    assert len(metric_lines) > len(epoch_lines)  # progress lines came too

    # What CloudWatch gets: the first host's lines as mpirun tagged them.
    logged = [p[1] for p in map(parse_log_line, (backend.store.log_dir("hvd-metrics") / "algo-1.log")
                                .read_text().splitlines()) if p]
    assert any(line.startswith("[1,0]<stdout>:epoch=1 ") for line in logged), logged
    assert any(line.startswith("[1,0]<stdout>:progress epoch=1 ") for line in logged), logged

    definitions = {d["Name"]: d["Regex"] for d in metric_definitions()}
    assert set(definitions) == {*FIELDS, "train:fit"}
    del definitions["train:fit"]  # the fit call's number: a process's first fit call (this one) leaves it out
    found: dict[str, list[str]] = {}
    for name, regex in definitions.items():
        found[name] = []
        for line in logged:
            compiled = java_regex.compiled(regex, java_regex.bound_for(line))
            assert compiled is not None, regex
            match = compiled.search(line)
            if match:
                found[name].append(match.group(1))
    expected = {name: [v[field] for v in (metric_lines if in_progress else epoch_lines)]
                for name, (field, in_progress) in FIELDS.items()}
    assert found == expected
    assert not any(" fit=" in line for line in logged)
    # So: one epoch number per epoch, none from the progress lines, and each epoch's values
    assert found["train:epoch"] == ["1", "2", "3"]
    assert found["validation:accuracy"] == [e["val_accuracy"] for e in epoch_lines]
