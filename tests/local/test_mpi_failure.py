"""A Horovod job whose rank fails gives that rank's own error as the reason, not mpirun's trailer."""

from __future__ import annotations

import io
import textwrap
from pathlib import Path

import pytest

from smtrain.local.backend import LocalBackend, local_request
from tests.local.support import make_plan
from tests.support.horovod_env import horovod_python

FAILS_ON_RANK_1 = textwrap.dedent('''\
    import time
    import horovod.tensorflow as hvd
    hvd.init()
    print("rank", hvd.rank(), "started", flush=True)
    if hvd.rank() == 1:
        raise ValueError("expected 784 features, got 64")
    time.sleep(60)  # rank 0 waits: mpirun ends it when rank 1 fails
''')


@pytest.mark.horovod
@pytest.mark.skipif(horovod_python() is None, reason="Horovod env not built: make horovod-env")
def test_a_failed_rank_is_the_reason_of_a_failed_horovod_job(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "train.py").write_text(FAILS_ON_RANK_1)
    plan = make_plan(tmp_path, {"tensorflow": {"version": "2.12"},
                                "compute": {"instance_type": "ml.g5.12xlarge", "max_run": 300},
                                "code": {"source_dir": "src", "entry_point": "train.py"},
                                "distribution": {"strategy": "horovod", "processes_per_host": 2}}, standin=False)
    stream = io.StringIO()
    job = LocalBackend(tmp_path / "home").run(local_request(plan, "hvd-fails"), stream=stream, grace=3,
                                              python=str(horovod_python()))
    text = stream.getvalue()
    assert job.status == "Failed", text[-3000:]
    assert "Process name: [[" in text  # mpirun's trailer is the end of the log
    assert 'ErrorMessage "rank 1: ValueError: expected 784 features, got 64"' in job.failure_reason, job.failure_reason


# Lines of that test's jobs here (two runs, one under load, shortened): mpirun forwards each rank's stdout and
# stderr apart, so rank 1's print landed inside its traceback, rank 0's line came in pieces behind rank 1's tag,
# and the exception's line in two tagged pieces.
INTERLEAVED = [
    "[1,1]<stdout>:rank [1,0]<stdout>:rank[1,0]<stdout>: [1,0]<stdout>:0[1,0]<stdout>: [1,0]<stdout>:started"
    "[1,0]<stdout>:",
    "[1,1]<stderr>:Traceback (most recent call last):",
    '[1,1]<stderr>:  File "<frozen runpy>", line 198, in _run_module_as_main',
    "[1,1]<stderr>:    [1,1]<stderr>:main()",
    "[1,1]<stdout>:1 started",
    '[1,1]<stderr>:  File "train.py", line 6, in <module>',
    '[1,1]<stderr>:    raise ValueError("expected 784 features, got 64")',
    "[1,1]<stderr>:ValueError[1,1]<stderr>:: expected 784 features, got 64",
    "--------------------------------------------------------------------------",
    "mpirun detected that one or more processes exited with non-zero status, thus causing",
    "the job to be terminated. The first process to do so was:",
    "",
    "  Process name: [[30619,1],1]",
    "  Exit code:    1",
    "--------------------------------------------------------------------------",
]


def test_the_failed_ranks_error_is_found_among_interleaved_lines() -> None:
    from smtrain.local.mpi_failure import rank_error

    assert rank_error(INTERLEAVED) == (1, "ValueError: expected 784 features, got 64")
    # The same traceback cut into other pieces (a run under load): a frame's indentation and its code on
    # lines of their own, the exception's class and message apart, rank 0 in between.
    cut = [line for line in INTERLEAVED if "main()" not in line and "ValueError[" not in line]
    at = cut.index("[1,1]<stdout>:1 started")
    cut[at:at] = ["[1,1]<stderr>:    ", "[1,1]<stderr>:main()", "[1,0]<stdout>:rank 0 waiting"]
    at = cut.index("-" * 74)
    cut[at:at] = ["[1,1]<stderr>:ValueError[1,0]<stdout>:tick", "[1,1]<stderr>:: expected 784 features, got 64"]
    assert rank_error(cut) == (1, "ValueError: expected 784 features, got 64")
    # A rank killed by a signal: mpirun's other trailer names it; its last line on stderr is the reason.
    killed = ["[1,0]<stderr>:Fatal Python error: Segmentation fault",
              "mpirun noticed that process rank 0 with PID 0 on node host exited on signal 11 (Segmentation fault)."]
    assert rank_error(killed) == (0, "Fatal Python error: Segmentation fault")
    assert rank_error(["no trailer here"]) is None
