"""configs/own-script-*.yaml: a plain Keras script run unchanged (wrapped) and the same script ported
to smtrain_tf, each trained for real on two local hosts (MultiWorkerMirrored, Keras 3).
"""

from __future__ import annotations

import difflib
import io
import re
import tarfile
from pathlib import Path

import pytest

from smtrain.local.backend import LocalBackend, local_request
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.spec.model import load_spec
from tests.support import ROOT
from tests.support.docs import section

CODE = ROOT / "configs" / "code"


def _changed_lines(before: str, after: str) -> list[str]:
    """The lines of `after` that are not in `before` (added or rewritten), as a diff counts them."""
    diff = difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
    return [line[1:] for line in diff if line.startswith("+") and not line.startswith("+++")]


def test_the_helper_port_changes_at_most_five_lines_and_the_readme_shows_them() -> None:
    plain = (CODE / "digits_keras.py").read_text(encoding="utf-8")
    ported = (CODE / "digits_smtrain_tf.py").read_text(encoding="utf-8")
    changed = _changed_lines(plain, ported)
    assert 1 <= len(changed) <= 5, changed
    guide = section("With the helper: `import smtrain_tf`")
    for line in changed:
        assert f"+{line}\n" in guide, f"the guide's diff lacks: {line}"


@pytest.mark.slow
@pytest.mark.parametrize("config, saved", [("own-script-wrapped.yaml", {"model.keras"}),
                                           ("own-script-helper.yaml", {"1/saved_model.pb", "model.keras"})])
def test_the_example_trains_on_two_local_hosts_and_keeps_one_model(config: str, saved: set[str], tmp_path: Path,
                                                                   digits: Path) -> None:
    env = {"SMTRAIN_DEMO_DATA": str(digits), "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out")}
    loaded = load_spec(ROOT / "configs" / config, env=env)
    plan = build_plan(loaded, load_catalog())
    assert plan.strategy == "multi_worker_mirrored" and plan.nodes == 2
    stream = io.StringIO()
    job = LocalBackend(tmp_path / "home").run(local_request(plan, "own-script"), stream=stream, grace=5)
    text = stream.getvalue()
    assert job.status == "Completed", text[-4000:]
    digests = re.findall(r"\[(algo-\d)\] .*weights_sha256=(\w+)", text)
    assert {host for host, _ in digests} == {"algo-1", "algo-2"}, text[-4000:]
    assert len({digest for _, digest in digests}) == 1  # both workers ended with the same weights
    accuracy = [float(v) for v in re.findall(r"\[algo-1\] epoch=\d+ .*val_accuracy=([0-9.]+)", text)]
    assert len(accuracy) == 8 and accuracy[-1] >= 0.85, text[-4000:]
    with tarfile.open(job.model_artifacts) as tar:
        files = {n for n in tar.getnames() if "." in Path(n).name or n.endswith(".pb")}
    assert saved <= files
    # One model: the chief's. The other worker's model directory stays empty.
    other = LocalBackend(tmp_path / "home").store.job_dir("own-script") / "hosts" / "algo-2" / "model"
    assert not other.exists() or not any(other.iterdir())


@pytest.mark.slow
@pytest.mark.parametrize("config, strategy_line", [
    ("own-script-wrapped.yaml", r"\[algo-1\] wrap: batch_size 32 per replica -> global 64 \(2 replicas\)"),
    ("own-script-helper.yaml", r"\[algo-1\] config strategy=mirrored replicas=2 .*global_batch_size=64")])
def test_the_example_runs_mirrored_over_two_cpu_replicas_on_one_local_host(config: str, strategy_line: str,
                                                                            tmp_path: Path, digits: Path) -> None:
    # On SageMaker this spec gets four GPUs and MirroredStrategy; here the CPU is split in two.
    env = {"SMTRAIN_DEMO_DATA": str(digits), "SMTRAIN_DEMO_OUTPUT": str(tmp_path / "out")}
    loaded = load_spec(ROOT / "configs" / config, ["compute.nodes=1", "compute.instance_type=ml.g5.12xlarge",
                                                   "hyperparameters.epochs=3"], env=env)
    plan = build_plan(loaded, load_catalog())
    assert plan.strategy == "mirrored"
    stream = io.StringIO()
    job = LocalBackend(tmp_path / "home").run(local_request(plan, "mirrored"), stream=stream, grace=5,
                                              replicas_per_host=2)
    text = stream.getvalue()
    assert job.status == "Completed", text[-4000:]
    assert re.search(strategy_line, text), text[-4000:]
    with tarfile.open(job.model_artifacts) as tar:
        assert "model.keras" in tar.getnames()
