"""Run a job's processes as one group: stream their output, end them all when one fails.

Every process runs in its own session (so Ctrl-C in the terminal reaches only smtrain, which then
ends them on purpose) and is ended through its process group: SIGTERM first, SIGKILL after a
grace period, because TensorFlow ignores SIGTERM while it waits for peers. Each process starts
under a keeper holding the supervisor's lifeline (smtrain.local.lifeline), so that its group dies
with smtrain even when smtrain is SIGKILLed and nothing of it runs any more. Output (stdout and
stderr together, line by line) is drawn as a terminal shows it (smtrain.terminal_text) and masked
(smtrain.redact) before it goes anywhere: to the stream prefixed ``[algo-N]`` and to the host's log
file, one ``<UTC ISO time><TAB><line>`` per line, so that the logs of several hosts merge by time.
TensorFlow's start-up noise (smtrain.local.tf_noise) goes to the log file only, unless the run is
verbose or its host fails.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from smtrain.errors import Terminated, raise_terminated
from smtrain.local.lifeline import Lifeline
from smtrain.local.tf_noise import NoiseFilter, noise_at_the_end
from smtrain.redact import StreamMasker, mask_text
from smtrain.terminal_text import as_shown

MAIN = "main"  # the job is done when every main process has exited 0
AUX = "aux"  # serves the main ones (a parameter server); ended once they are done
TICK = 0.1
DEFAULT_GRACE = 10.0
OWN_EXIT_WAIT = 2.0  # how long a process that wrote output/failure gets to exit by itself
# A failed host's hidden lines shown at most: its processes' start-up lines (a few each, even with
# several ranks), while a warning repeated every epoch cannot flood the terminal; the log has them all.
HIDDEN_SHOWN = 50


@dataclass(frozen=True)
class ProcessSpec:
    host: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path
    role: str = MAIN
    label: str = ""  # tells two processes of one host apart in smtrain's own messages

    @property
    def name(self) -> str:
        return f"{self.host}/{self.label}" if self.label else self.host


@dataclass
class Running:
    spec: ProcessSpec
    popen: subprocess.Popen[bytes]
    reader: threading.Thread
    waiter: threading.Thread | None = None
    # (exit code, wall-clock time of the exit), set once by the waiter thread: the time tells which
    # of several failures came first.
    finished: tuple[int, float] | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    @property
    def exit_code(self) -> int | None:
        return self.finished[0] if self.finished is not None else None

    def _wait(self) -> None:
        code = self.popen.wait()
        self.finished = (code, time.time())


@dataclass
class Outcome:
    """How the group ended. `reason` is set for everything but a completion."""

    status: str  # Completed | Failed | Stopped
    secondary_status: str
    reason: str | None = None  # failure | max_run | stop | interrupt | terminate | log (a host's log could not be written)
    detail: str | None = None  # for `log`: which file and why
    host: str | None = None  # the host whose failure ended the group
    process: str | None = None
    exit_code: int | None = None
    command: list[str] = field(default_factory=list)
    exit_codes: dict[str, int | None] = field(default_factory=dict)


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def format_log_line(when: dt.datetime, message: str) -> str:
    return f"{when.isoformat().replace('+00:00', 'Z')}\t{message}\n"


def parse_log_line(line: str) -> tuple[dt.datetime, str] | None:
    stamp, sep, message = line.rstrip("\n").partition("\t")
    if not sep:
        return None
    try:
        return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")), message
    except ValueError:
        return None


class Output:
    """Where lines go: the stream (prefixed) and one log file per host.

    TensorFlow's start-up noise goes to the log file only, unless `verbose`; `show_hidden(host)`
    shows what a failed host's noise held back.
    """

    def __init__(self, stream: TextIO | None, log_dir: Path, *, verbose: bool = False) -> None:
        self._stream = stream
        self._log_dir = log_dir
        self._verbose = verbose
        self._lock = threading.Lock()
        self._files: dict[str, TextIO] = {}
        self._mask = StreamMasker()  # per host: a private key block printed over several lines
        self._hidden: dict[str, deque[str]] = {}  # per host: the last HIDDEN_SHOWN noise lines held back
        self._hidden_count: dict[str, int] = {}
        self._noise = NoiseFilter()  # follows each host's lines: some noise spans several
        self.write_error: str | None = None  # the first host log write that failed (Supervisor ends the run)
        self._muted = False  # after an interrupt: the hosts' lines go to their logs only
        log_dir.mkdir(parents=True, exist_ok=True)

    def log_file(self, host: str) -> Path:
        return self._log_dir / f"{host}.log"

    def line(self, host: str, message: str) -> None:
        with self._lock:
            message = self._mask(host, message)  # before it is written anywhere: `smtrain logs` reads the file
            self._log(host, message)
            if self._muted:
                return
            if not self._verbose:
                if self._noise(host, message):
                    self._hold_back(host, message)
                    return
                glued = noise_at_the_end(message)
                if glued is not None:
                    self._hold_back(host, message[glued:])
                    message = message[:glued]
            # The terminal gets each line as a terminal would have drawn it: behind the [host] prefix a
            # progress bar's carriage returns would otherwise overwrite the prefix itself.
            self._show(f"[{host}] {as_shown(message)}\n")

    def _log(self, host: str, message: str) -> None:
        """Append to the host's log. A write that fails (a full disk, a file-size limit) is noted once in
        `write_error`, which the supervisor ends the run on; the reader goes on draining the host's pipe (the
        lines still reach the terminal), so the host never blocks on a full pipe meanwhile."""
        if self.write_error is not None:
            return
        path = self.log_file(host)
        try:
            handle = self._files.get(host)
            if handle is None:
                handle = self._files[host] = open(path, "a", encoding="utf-8")  # noqa: SIM115
            handle.write(format_log_line(utc_now(), message))
            handle.flush()
        except OSError as exc:
            self.write_error = f"cannot write the host log {path}: {exc.strerror or exc}"
            broken = self._files.pop(host, None)
            if broken is not None:
                try:
                    broken.close()
                except OSError:
                    pass  # its buffer cannot be written either

    def mute_hosts(self) -> None:
        """After Ctrl-C or SIGTERM: what the hosts print while they are ended (epochs that were under way) goes to
        their logs only, so the terminal stops at once."""
        with self._lock:
            self._muted = True

    def _hold_back(self, host: str, message: str) -> None:
        self._hidden.setdefault(host, deque(maxlen=HIDDEN_SHOWN)).append(message)
        self._hidden_count[host] = self._hidden_count.get(host, 0) + 1

    def show_hidden(self, host: str) -> None:
        """After `host` failed: the noise lines of it that the terminal did not show, the last HIDDEN_SHOWN.

        A failure can be explained by a line that reads like start-up noise (CUDA that did not load, a
        plugin registered twice, the TensorFlow build in use), and a person looking at a failure should
        not have to know that the terminal held lines back. The last ones are shown because they are the
        nearest to the failure; the header says how many there were and which file has them all.
        """
        with self._lock:
            lines = self._hidden.pop(host, deque())
            count = self._hidden_count.pop(host, 0)
            if not lines:
                return
            which = f"the last {len(lines)} of {count}" if count > len(lines) else f"{count}"
            self._show(f"[smtrain] hidden TensorFlow start-up lines of {host} ({which}; all are in "
                       f"{self.log_file(host)}):\n")
            for message in lines:
                self._show(f"[{host}] {message}\n")

    def _show(self, text: str) -> None:
        # A closed terminal or pipe must not stop the readers: a child blocked on a full pipe would hang.
        if self._stream is None:
            return
        try:
            self._stream.write(text)
            self._stream.flush()
        except (OSError, ValueError):
            self._stream = None

    def note(self, message: str) -> None:
        """smtrain's own messages: on the stream only, not in any host's log."""
        with self._lock:
            self._show(f"[smtrain] {mask_text(message)}\n")  # a failure reason may quote the program's secrets

    def close(self) -> None:
        with self._lock:
            for handle in self._files.values():
                try:
                    handle.close()
                except OSError:
                    pass  # a full disk: the write that failed already ended the run with its reason
            self._files.clear()


def _read_lines(popen: subprocess.Popen[bytes], host: str, output: Output) -> None:
    assert popen.stdout is not None
    for raw in iter(popen.stdout.readline, b""):
        output.line(host, raw.decode("utf-8", errors="replace").rstrip("\r\n"))
    popen.stdout.close()


def start(spec: ProcessSpec, output: Output, lifeline: Lifeline | None = None) -> Running:
    """Start one process, in a session of its own; under a keeper of `lifeline` when one is given."""
    argv = lifeline.command(spec.argv) if lifeline is not None else spec.argv
    popen = subprocess.Popen(argv, env=spec.env, cwd=spec.cwd, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True,
                             pass_fds=lifeline.pass_fds if lifeline is not None else ())
    reader = threading.Thread(target=_read_lines, args=(popen, spec.host, output), daemon=True,
                              name=f"smtrain-output-{spec.name}")
    reader.start()
    running = Running(spec, popen, reader)
    running.waiter = threading.Thread(target=running._wait, daemon=True, name=f"smtrain-wait-{spec.name}")
    running.waiter.start()
    return running


def signal_group(pid: int, sig: int) -> None:
    """Signal the process group `pid` leads (its session); gone already is fine."""
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def describe_exit(code: int | None) -> str:
    if code is None:
        return "still running"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


class Supervisor:
    """Start the processes, watch them, end the group; `run()` returns how it ended.

    `failure_files` maps a host to its output/failure: a file appearing there ends the group as a
    non-zero exit would. `stop_file` appearing means someone asked to stop the job.
    """

    def __init__(self, specs: Sequence[ProcessSpec], output: Output, *, failure_files: Mapping[str, Path],
                 max_run: float | None, grace: float = DEFAULT_GRACE, stop_file: Path | None = None,
                 on_started: Callable[[list[Running]], None] = lambda running: None) -> None:
        self.specs = list(specs)
        self.output = output
        self.failure_files = dict(failure_files)
        self.max_run = max_run
        self.grace = grace
        self.stop_file = stop_file
        self.on_started = on_started
        self.running: list[Running] = []
        self.lifeline: Lifeline | None = None

    def run(self) -> Outcome:
        previous = self._catch_sigterm()
        lifeline = self.lifeline = Lifeline()
        try:
            return self._run()
        finally:
            self._kill_all()
            lifeline.close()
            if previous is not None:
                signal.signal(signal.SIGTERM, previous)

    # -- internals -----------------------------------------------------------------------------

    def _catch_sigterm(self) -> signal.Handlers | None:
        if threading.current_thread() is not threading.main_thread():
            return None

        return signal.signal(signal.SIGTERM, raise_terminated)  # type: ignore[return-value]

    def _run(self) -> Outcome:
        began = time.monotonic()
        try:
            for spec in self.specs:
                self.running.append(start(spec, self.output, self.lifeline))
            self.on_started(self.running)
            return self._watch(began)
        except Terminated:  # handled as Ctrl-C is; the caller raises it again once the job is recorded
            self.output.note("smtrain received SIGTERM: ending every process")
            self.output.mute_hosts()
            self._end(interruptible=True)
            return self._outcome("Stopped", "Stopped", reason="terminate")
        except KeyboardInterrupt:
            self.output.note("interrupted: ending every process")
            self.output.mute_hosts()
            self._end(interruptible=True)
            return self._outcome("Stopped", "Stopped", reason="interrupt")

    def _watch(self, began: float) -> Outcome:
        while True:
            failed = self._poll()
            if failed is not None:
                host, running = failed
                code = self._own_exit(running)
                how = describe_exit(code) if code is not None else "output/failure written"
                self.output.note(f"{running.spec.name} failed ({how}): ending the other processes")
                self._end()  # its output read to the end first: every line of the failed host is in
                self.output.show_hidden(host)
                return self._outcome("Failed", "Failed", reason="failure", host=host, failed=running, exit_code=code)
            if self.output.write_error is not None:
                self.output.note(f"{self.output.write_error}: ending every process")
                self._end()
                outcome = self._outcome("Failed", "Failed", reason="log")
                return replace(outcome, detail=self.output.write_error)
            mains = [r for r in self.running if r.spec.role == MAIN]
            if all(r.exit_code == 0 for r in mains):
                # A parameter server serves until its host ends, as the toolkit's does: waiting for it is moot.
                if any(r.exit_code is None for r in self.running):
                    self._end()
                return self._outcome("Completed", "Completed")
            if self.max_run is not None and time.monotonic() - began > self.max_run:
                self.output.note(f"max_run ({self.max_run:g}s) exceeded: ending every process")
                self._end()
                return self._outcome("Stopped", "MaxRuntimeExceeded", reason="max_run")
            if self.stop_file is not None and self.stop_file.exists():
                self.output.note("stop requested: ending every process")
                self._end()
                return self._outcome("Stopped", "Stopped", reason="stop")
            time.sleep(TICK)

    def _own_exit(self, running: Running) -> int | None:
        """The exit code of a process that wrote its failure file: it usually exits right after.

        None if it is still running after a short wait (what ends it then is our doing).
        """
        deadline = time.monotonic() + min(self.grace, OWN_EXIT_WAIT)
        while running.exit_code is None and time.monotonic() < deadline:
            time.sleep(TICK / 4)
        return running.exit_code

    def _poll(self) -> tuple[str, Running] | None:
        """The failure that ends the group: a non-zero exit, or a failure file, the earliest of them.

        When several show at once (a dead peer makes the others fail too), the host with the
        earliest evidence (its process's exit, or its failure file being written) is the cause.
        """
        mains_done = all(r.exit_code == 0 for r in self.running if r.spec.role == MAIN)
        failed = [r for r in self.running if r.exit_code not in (None, 0)
                  and not (r.spec.role == AUX and mains_done)]  # a server ending badly after the work
        evidence: dict[str, float] = {}
        for host, path in self.failure_files.items():
            mtime = _mtime(path)
            if mtime is not None:
                evidence[host] = mtime
        for running in failed:
            assert running.finished is not None
            host = running.spec.host
            evidence[host] = min(evidence.get(host, running.finished[1]), running.finished[1])
        if not evidence:
            return None
        host = min(evidence, key=lambda h: evidence[h])
        failed_here = sorted((r for r in failed if r.spec.host == host),
                             key=lambda r: r.finished[1] if r.finished else 0.0)
        if failed_here:
            return host, failed_here[0]
        on_host = [r for r in self.running if r.spec.host == host]
        return host, ([r for r in on_host if r.exit_code is None] or on_host)[0]

    def _end(self, interruptible: bool = False) -> None:
        """SIGTERM every live group, SIGKILL what is left after the grace period."""
        live = [r for r in self.running if r.popen.poll() is None]
        for running in live:
            signal_group(running.pid, signal.SIGTERM)
        deadline = time.monotonic() + self.grace
        try:
            while time.monotonic() < deadline and any(r.popen.poll() is None for r in live):
                time.sleep(TICK)
        except KeyboardInterrupt:
            if not interruptible:
                raise
            self.output.note("interrupted again: killing now")
        self._kill_all()

    def _kill_all(self) -> None:
        # Every group, even of processes that exited: a child they left behind goes too.
        for running in self.running:
            signal_group(running.pid, signal.SIGKILL)
        for running in self.running:
            if running.waiter is not None:
                running.waiter.join(timeout=30)
            running.reader.join(timeout=5)

    def _outcome(self, status: str, secondary: str, *, reason: str | None = None, host: str | None = None,
                 failed: Running | None = None, exit_code: int | None = None) -> Outcome:
        self._kill_all()
        return Outcome(status=status, secondary_status=secondary, reason=reason, host=host,
                       process=failed.spec.name if failed else None, exit_code=exit_code,
                       command=list(failed.spec.argv) if failed else [],
                       exit_codes={r.spec.name: r.exit_code for r in self.running})


def _mtime(path: Path) -> float | None:
    try:
        return path.stat().st_mtime
    except OSError:
        return None
