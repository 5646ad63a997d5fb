"""Horovod and smdistributed data parallel, for real under `mpirun -np 2`.

They run in the second environment that `make horovod-env` builds once outside the repo
(tensorflow-cpu 2.13.1 with Keras 2, horovod 0.28.1 built against it). smdistributed exists only
inside SageMaker's images, so its path runs on the test double in tests/doubles, which implements
`smdistributed.dataparallel.tensorflow` on top of Horovod.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support.horovod_env import DOUBLES_DIR, rank_output, required_horovod_python, run_two_ranks

from .conftest import ENTRYPOINTS
from .sagemaker_env import make_host, metric_lines, parse_metrics

pytestmark = [pytest.mark.slow, pytest.mark.horovod]

ENTRY = Path(ENTRYPOINTS) / "smtrain_entry.py"
TIMEOUT = 420


@pytest.fixture(scope="module")
def hvd_python() -> Path:
    return required_horovod_python()


def _run_ranks(python: Path, host, extra_env: dict[str, str] | None = None) -> tuple[int, str]:
    env = {**host.env, **(extra_env or {})}
    return run_two_ranks(python, ENTRY, host.args, env, _ranks_dir(host), TIMEOUT)


def _ranks_dir(host) -> Path:
    return host.log_dir / "ranks"


def _rank_lines(host, rank: int) -> str:
    return rank_output(_ranks_dir(host), rank, ("stdout", "stderr"))


def _check_data_parallel_run(code: int, out: str, host, kind: str) -> None:
    assert code == 0, out[-4000:]
    assert not host.failure_file.exists()
    ranks = [_rank_lines(host, r) for r in (0, 1)]
    for text in ranks:
        assert f"config strategy={kind} replicas=2" in text, text[-2000:]
    digests = [re.findall(r"weights_sha256=([0-9a-f]{64})", text) for text in ranks]
    assert len(digests[0]) == 1 and digests[0] == digests[1], "the two ranks ended with different weights"
    # Rank 0 alone reports metrics and writes artifacts.
    assert "saved " in ranks[0] and "saved " not in ranks[1]
    assert not metric_lines(ranks[1])
    lines = metric_lines(ranks[0])
    assert len(lines) == 4
    assert float(parse_metrics(lines[-1])["val_accuracy"]) >= 0.9
    assert (host.model_dir / "1" / "saved_model.pb").is_file()
    assert (host.model_dir / "model.keras").is_file()


HPS = {"epochs": 4, "batch_size_per_replica": 32, "learning_rate": 0.002}


def test_horovod_two_ranks_train_identically(tmp_path: Path, digits_npz, hvd_python: Path) -> None:
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz, hyperparameters=HPS,
                     framework_params={"sagemaker_mpi_enabled": True,
                                       "sagemaker_mpi_num_of_processes_per_host": 2})
    code, out = _run_ranks(hvd_python, host)
    _check_data_parallel_run(code, out, host, "horovod")


def test_smdistributed_path_on_the_test_double(tmp_path: Path, digits_npz, hvd_python: Path) -> None:
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz, hyperparameters=HPS,
                     framework_params={"sagemaker_distributed_dataparallel_enabled": True})
    code, out = _run_ranks(hvd_python, host, {"PYTHONPATH": str(DOUBLES_DIR)})
    _check_data_parallel_run(code, out, host, "smddp")


def test_smddp_without_the_library_fails_naming_it(tmp_path: Path, digits_npz, hvd_python: Path) -> None:
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels=digits_npz, hyperparameters=HPS,
                     framework_params={"sagemaker_distributed_dataparallel_enabled": True})
    code, out = _run_ranks(hvd_python, host)  # no doubles on PYTHONPATH: the real library is absent
    assert code != 0
    reason = host.failure_file.read_text()
    assert "smdistributed" in reason, reason
    assert not any("Traceback" in _rank_lines(host, r) for r in (0, 1)), out[-3000:]
