"""The process-group supervisor on its own, with tiny Python programs as hosts."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path

import pytest

from smtrain.local.supervise import AUX, MAIN, Output, ProcessSpec, Supervisor, parse_log_line
from tests.local.support import alive

IGNORE_TERM = "import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); "


def spec(tmp_path: Path, host: str, code: str, role: str = MAIN, label: str = "") -> ProcessSpec:
    return ProcessSpec(host, [sys.executable, "-c", code], dict(os.environ), tmp_path, role=role, label=label)


def supervise(tmp_path: Path, specs: list[ProcessSpec], **kwargs: object) -> tuple[Supervisor, object, str]:
    stream = io.StringIO()
    failure_files = kwargs.pop("failure_files", {})
    supervisor = Supervisor(specs, Output(stream, tmp_path / "logs"), failure_files=failure_files,
                            max_run=kwargs.pop("max_run", 60), grace=kwargs.pop("grace", 1.0))
    return supervisor, supervisor.run(), stream.getvalue()


def test_output_is_prefixed_and_logged_with_times(tmp_path: Path) -> None:
    both = "import sys; print('one', flush=True); print('err', file=sys.stderr, flush=True)"
    _, outcome, text = supervise(tmp_path, [spec(tmp_path, "algo-1", both), spec(tmp_path, "algo-2", "print('two')")])
    assert outcome.status == "Completed"
    assert "[algo-1] one\n" in text and "[algo-1] err\n" in text and "[algo-2] two\n" in text
    lines = (tmp_path / "logs" / "algo-1.log").read_text().splitlines()
    parsed = [parse_log_line(line) for line in lines]
    assert [p[1] for p in parsed if p] == ["one", "err"] and all(p and p[0].tzinfo for p in parsed)


def test_the_first_failure_is_the_cause_even_when_a_peer_reports_one_just_after(tmp_path: Path) -> None:
    failure = tmp_path / "b-output" / "failure"
    failure.parent.mkdir()
    started, go = tmp_path / "a-keeper.pid", tmp_path / "go"
    # algo-1 dies once its peer is watching; the peer reports only after algo-1's keeper (its
    # parent) is gone, i.e. reaped by the supervisor, which notes the exit's time right then. The
    # pause after that covers file times, which the kernel keeps at a coarser grain.
    killed = (f"import os, signal, time; open({str(started)!r} + '.tmp', 'w').write(str(os.getppid())); "
              f"os.rename({str(started)!r} + '.tmp', {str(started)!r})\n"
              f"while not os.path.exists({str(go)!r}): time.sleep(0.01)\n"
              "os.kill(os.getpid(), signal.SIGKILL)")
    peer = (IGNORE_TERM + f"import os, time\nwhile not os.path.exists({str(started)!r}): time.sleep(0.01)\n"
            f"keeper = int(open({str(started)!r}).read()); open({str(go)!r}, 'w').close()\n"
            "def gone():\n    try:\n        os.kill(keeper, 0)\n    except ProcessLookupError:\n        return True\n"
            "    return False\n"
            "while not gone(): time.sleep(0.01)\n"
            f"time.sleep(0.05); open({str(failure)!r}, 'w').write('lost contact'); time.sleep(60)")
    supervisor, outcome, text = supervise(tmp_path, [spec(tmp_path, "algo-1", killed), spec(tmp_path, "algo-2", peer)],
                                          failure_files={"algo-2": failure})
    assert outcome.status == "Failed" and outcome.host == "algo-1" and outcome.exit_code == -9
    assert outcome.exit_codes["algo-2"] == -9  # the SIGTERM-ignoring peer was SIGKILLed after the grace period
    assert "algo-1 failed (killed by SIGKILL): ending the other processes" in text
    assert not any(alive(r.pid) for r in supervisor.running)


def test_a_failure_file_ends_the_group_while_its_process_still_runs(tmp_path: Path) -> None:
    failure = tmp_path / "failure"
    writes = IGNORE_TERM + f"open({str(failure)!r}, 'w').write('bad data'); import time; time.sleep(60)"
    _, outcome, text = supervise(tmp_path, [spec(tmp_path, "algo-1", "import time; time.sleep(60)"),
                                            spec(tmp_path, "algo-2", writes)], failure_files={"algo-2": failure})
    assert outcome.status == "Failed" and outcome.host == "algo-2" and outcome.exit_code is None
    assert "algo-2 failed (output/failure written)" in text


def test_a_process_that_writes_its_failure_file_then_exits_reports_its_own_code(tmp_path: Path) -> None:
    failure = tmp_path / "failure"
    writes = f"import time; open({str(failure)!r}, 'w').write('bad data'); time.sleep(0.3); raise SystemExit(4)"
    _, outcome, _ = supervise(tmp_path, [spec(tmp_path, "algo-1", "import time; time.sleep(60)"),
                                         spec(tmp_path, "algo-2", writes)], failure_files={"algo-2": failure})
    assert outcome.host == "algo-2" and outcome.exit_code == 4


def test_servers_are_ended_once_the_workers_are_done_and_fail_nothing(tmp_path: Path) -> None:
    # The worker ends only once the server ignores SIGTERM: otherwise the server, still starting,
    # could be ended by the SIGTERM itself and the test would see -15 instead of the SIGKILL.
    ready = tmp_path / "server-ready"
    server = IGNORE_TERM + f"import time; open({str(ready)!r}, 'w').close(); time.sleep(60)"
    worker = f"import os, time\nwhile not os.path.exists({str(ready)!r}): time.sleep(0.01)\nprint('trained')"
    supervisor, outcome, _ = supervise(tmp_path, [spec(tmp_path, "algo-1", server, role=AUX, label="ps"),
                                                  spec(tmp_path, "algo-1", worker)], grace=0.5)
    assert outcome.status == "Completed"
    assert outcome.exit_codes == {"algo-1/ps": -9, "algo-1": 0}
    assert not any(alive(r.pid) for r in supervisor.running)


def test_a_server_that_dies_while_workers_run_fails_the_job(tmp_path: Path) -> None:
    _, outcome, _ = supervise(tmp_path, [spec(tmp_path, "algo-1", "raise SystemExit(2)", role=AUX, label="ps"),
                                         spec(tmp_path, "algo-1", "import time; time.sleep(60)")])
    assert outcome.status == "Failed" and outcome.process == "algo-1/ps" and outcome.exit_code == 2


def test_max_run(tmp_path: Path) -> None:
    _, outcome, _ = supervise(tmp_path, [spec(tmp_path, "algo-1", "import time; time.sleep(60)")], max_run=0.5)
    assert (outcome.status, outcome.secondary_status, outcome.reason) == ("Stopped", "MaxRuntimeExceeded", "max_run")


def test_a_closed_stream_does_not_stall_the_hosts(tmp_path: Path) -> None:
    stream = io.StringIO()
    stream.close()
    supervisor = Supervisor([spec(tmp_path, "algo-1", "print('x' * 100000); print('done')")],
                            Output(stream, tmp_path / "logs"), failure_files={}, max_run=30)
    assert supervisor.run().status == "Completed"
    assert (tmp_path / "logs" / "algo-1.log").read_text().endswith("\tdone\n")


def test_secret_values_are_masked_on_the_stream_and_in_the_log(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_API_TOKEN", "tok-1234567890-secret")  # set after earlier outputs: read at each use
    _, outcome, text = supervise(tmp_path, [spec(tmp_path, "algo-1", "print('token tok-1234567890-secret')")])
    assert "tok-1234567890-secret" not in text and "[algo-1] token ****" in text
    # `smtrain logs` reads the log file: the line is masked before it is written anywhere.
    assert (tmp_path / "logs" / "algo-1.log").read_text().endswith("\ttoken ****\n")


def test_a_host_log_that_cannot_be_written_ends_the_run_promptly_with_its_cause(tmp_path: Path) -> None:
    """A full disk, for real: the host's log is /dev/full, where every write fails with ENOSPC. The host prints
    far more than a pipe holds (64 KiB), so a reader that stopped reading would leave it blocked until max_run."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "algo-1.log").symlink_to("/dev/full")
    chatty = "import sys, time\nfor i in range(20000):\n    print('line', i, 'x' * 40)\ntime.sleep(60)\n"
    supervisor, outcome, text = supervise(tmp_path, [spec(tmp_path, "algo-1", chatty)], max_run=60)
    assert (outcome.status, outcome.reason) == ("Failed", "log"), outcome
    assert outcome.detail == f"cannot write the host log {tmp_path / 'logs' / 'algo-1.log'}: No space left on device"
    assert f"[smtrain] {outcome.detail}: ending every process" in text
    assert not any(alive(r.pid) for r in supervisor.running)
    assert all(not r.reader.is_alive() for r in supervisor.running)  # no reader left behind, none died


def test_after_an_interrupt_the_hosts_lines_go_to_their_logs_only(tmp_path: Path) -> None:
    """A host that goes on printing while it is ended (it ignores SIGTERM, as a training loop between epochs
    may): the terminal stops at the interrupt, the log keeps every line."""
    ticking = IGNORE_TERM + "import time\ni = 0\nwhile True:\n    print('tick', i, flush=True)\n    i += 1\n" \
                            "    time.sleep(0.02)\n"

    def interrupt(running: list) -> None:
        log = tmp_path / "logs" / "algo-1.log"
        while not log.exists() or log.read_text().count("tick") < 5:
            time.sleep(0.02)
        raise KeyboardInterrupt

    stream = io.StringIO()
    supervisor = Supervisor([spec(tmp_path, "algo-1", ticking)], Output(stream, tmp_path / "logs"), failure_files={},
                            max_run=60, grace=1.0, on_started=interrupt)
    outcome = supervisor.run()
    assert outcome.reason == "interrupt"
    text = stream.getvalue()
    shown = text.split("[smtrain] interrupted: ending every process\n")
    assert len(shown) == 2 and "tick" not in shown[1], text  # nothing of the host after the interrupt
    logged = [p[1] for p in map(parse_log_line, (tmp_path / "logs" / "algo-1.log").read_text().splitlines()) if p]
    assert len(logged) > shown[0].count("tick")  # the grace period's lines are in the log
