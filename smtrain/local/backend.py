"""The local backend: a job's bundle run on this machine under SageMaker's container contract.

`LocalBackend().run(request)` gives each of the job's N hosts a directory laid out as the
container's /opt/ml (config files as SageMaker writes them, channels, the bundle unpacked as
the code directory), starts each host's processes as the TensorFlow container's toolkit would
(TF_CONFIG on 127.0.0.1 ports, a parameter server beside each worker, one mpirun for Horovod and
smddp), streams their output prefixed [algo-N], ends the whole group when one fails or max_run
passes, and leaves model.tar.gz and output.tar.gz where SageMaker would put them:

* spec.output a local directory (or file:// URI): <output>/<job>/output/{model,output}.tar.gz,
  the layout SageMaker uses under an S3 output, and the bundle at <output>/source/<sha256>/; a run
  whose <output>/<job> already exists (a job of that name under another SMTRAIN_HOME) is refused;
* spec.output an s3:// URI: nothing is uploaded; both archives stay in <job dir>/output/.

The job's record lives under ${SMTRAIN_HOME:-~/.smtrain}/local-jobs/<job>/ (see local_jobs), so
`status`, `list`, `logs` and `stop` work on local jobs as on SageMaker ones.
"""

from __future__ import annotations

import builtins
import datetime as dt
import json
import os
import shutil
import signal
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from smtrain import exit_codes
from smtrain.errors import Terminated, UserError
from smtrain.jobs import EventFiles, JobInfo, JobMetrics, LogEvent, SystemUsage, is_event_file, poll_interval
from smtrain.local import replica_layout
from smtrain.local.records import (
    STOP_FILE,
    JobStore,
    RecordUnreadable,
    alive,
    follow_logs,
    iso,
    job_info,
    process_start,
    read_logs,
    unreadable_info,
)
from smtrain.local.supervise import (
    DEFAULT_GRACE,
    Outcome,
    Output,
    ProcessSpec,
    Running,
    Supervisor,
    describe_exit,
    signal_group,
)
from smtrain.local.usage_sampler import USAGE_FILE, UsageSampler
from smtrain.plan import launch
from smtrain.redact import mask_text
from smtrain.terminal_text import as_shown, physical_lines

if TYPE_CHECKING:  # the run path's modules load when a job runs: status/list/logs stay quick
    from smtrain.bundle.request import Request
    from smtrain.local.channels import ChannelSource
    from smtrain.local.contract import HostLayout
    from smtrain.local.hosts import Hosts
    from smtrain.local.places import Place
    from smtrain.local.tf_install import Found
    from smtrain.plan.build import Plan

__all__ = ["LocalBackend", "local_request"]


def local_request(plan: Plan, job_name: str | None = None) -> Request:
    """The Request a local run of `plan` starts from (see smtrain.local.request)."""
    from smtrain.local.request import local_request as make

    return make(plan, job_name)


# What a signal that ended a host's program usually means, for its failure reason.
_SIGNAL_MEANING = {signal.SIGSEGV: " (a crash in native code: TensorFlow's C++ or a library's)",
                   signal.SIGABRT: " (native code aborted: TensorFlow's C++ checks or a library's)",
                   signal.SIGKILL: " (killed from outside: often the kernel's out-of-memory killer)",
                   signal.SIGBUS: " (a crash in native code: bad memory access)"}
FAILURE_REASON_MAX = 1024  # SageMaker keeps the first 1024 characters of output/failure
LOG_POLL_DEFAULT = 0.5
MPI_LOG_LINES = 5000  # where a failed rank's traceback is looked for: the end of the log, other ranks' lines included


class _JobFailed(Exception):
    """Preparing the job failed; the message is its failure reason."""


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.timezone.utc)


def _job_output(request: Request) -> Path | None:
    """<output>/<job>: the job's place under a local output, as under an S3 one; None for an s3:// output."""
    from smtrain.local.request import output_root

    root = output_root(request.plan)
    return root / request.job_name if root is not None else None


def _artifacts_dir(request: Request, job_dir: Path) -> Path:
    """Where model.tar.gz and output.tar.gz go: <output>/<job>/output, else (s3:// output) the job's own."""
    job_output = _job_output(request)
    return job_output / "output" if job_output is not None else job_dir / "output"


def _channel_sources(body: dict[str, Any]) -> list[ChannelSource]:
    from smtrain.local.channels import ChannelSource

    return [ChannelSource(c["ChannelName"], c["DataSource"]["S3DataSource"]["S3Uri"],
                          c["DataSource"]["S3DataSource"].get("S3DataDistributionType") == "ShardedByS3Key")
            for c in body.get("InputDataConfig", [])]


def _tail(path: Path, lines: int) -> list[str]:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return []
    return [as_shown(line.partition("\t")[2]) for line in physical_lines(text)[-lines:]]


class LocalBackend:
    """Local jobs: run one (`run`), and describe/list/logs/stop those recorded under the home."""

    def __init__(self, home: Path | None = None) -> None:
        self.store = JobStore(home)

    # -- Backend protocol ------------------------------------------------------------------------

    def has(self, name: str) -> bool:
        return self.store.has(name)

    def describe(self, name: str) -> JobInfo:
        return job_info(self._current(name))

    def list(self, *, status: str | None = None, name_contains: str | None = None,
             since: dt.datetime | None = None, limit: int = 20) -> list[JobInfo]:
        jobs = []
        for name in self.store.names():
            try:
                job = self.describe(name)
            except RecordUnreadable as exc:  # listed as such: one bad file hides no job, and stops no listing
                job = unreadable_info(name, exc.cause)
            if status and job.status != status:
                continue
            if name_contains and name_contains not in job.name:
                continue
            if since and (job.created is None or job.created < since):
                continue
            jobs.append(job)
        epoch = dt.datetime.min.replace(tzinfo=dt.timezone.utc)
        jobs.sort(key=lambda j: (j.created or epoch, j.name), reverse=True)
        return jobs[:limit]

    def logs(self, name: str, *, follow: bool = False) -> Iterator[LogEvent]:
        self._require(name)
        log_dir = self.store.log_dir(name)
        if not follow:
            return iter(read_logs(log_dir))
        return follow_logs(log_dir, lambda: self.describe(name).done, time.sleep, poll_interval(LOG_POLL_DEFAULT))

    def stop(self, name: str) -> JobInfo:
        job = self.describe(name)
        if job.done:
            return job
        self.store.request_stop(name)
        record = self.store.read(name)
        supervisor = record.get("supervisor") or {}
        if alive(supervisor.get("pid"), supervisor.get("start")):
            return self.describe(name)  # Stopping: the supervisor ends the group within its grace period
        return job_info(self._end_orphan(name, record))

    def event_files(self, name: str, directory: Path | None = None) -> EventFiles:
        """The job's TensorBoard event files where its chief host (algo-1) wrote them, read in place
        (`directory` is for downloads: a local job needs none)."""
        from smtrain.local.contract import HostLayout

        record = self._current(name)
        chief = (record.get("hosts") or launch.host_names(1))[0]  # rank 0 / the chief worker runs there
        logdir = HostLayout(self.store.hosts_dir(name) / chief).tensorboard_dir
        files = sum(1 for p in logdir.rglob("*") if p.is_file() and is_event_file(p.name)) if logdir.is_dir() else 0
        return EventFiles(name, "local", logdir, files)

    def system(self, name: str, gpus: int | None = None) -> SystemUsage:
        """Each host's CPU and memory as sampled while the job ran (smtrain.local.usage_sampler); no GPU figures."""
        from smtrain.local.usage_sampler import read_usage

        job = self.describe(name)
        hosts = tuple(self.store.read(name).get("hosts") or launch.host_names(1))
        return read_usage(self.store.job_dir(name) / USAGE_FILE, job, hosts)

    def metrics(self, name: str, host: str | None = None) -> JobMetrics:
        """The job's metric series for `host` (default algo-1): its MetricDefinitions read from that host's log."""
        from smtrain.local.metric_series import read_metrics

        record = self._current(name)
        return read_metrics(record, job_info(record), self.store.log_dir(name), host)

    # -- running a job ---------------------------------------------------------------------------

    def run(self, request: Request, *, stream: TextIO | None = None, replicas_per_host: int | None = None,
            grace: float = DEFAULT_GRACE, python: str | None = None, verbose: bool = False,
            extra_environment: Mapping[str, str] | None = None) -> JobInfo:
        """Run the job to its end here and return its final state (Completed, Failed or Stopped).

        Each host trains with the plan's replicas, logical CPU devices standing in for its GPUs;
        `replicas_per_host` runs fewer (smtrain.local.replica_layout). `extra_environment` is added to every
        host's (`smtrain check` says what to record through it).

        TensorFlow's start-up lines reach `stream` only when `verbose` or when their host fails;
        the host logs keep every line.

        Problems found before anything starts (a refused setting, a missing mpirun) raise
        UserError and leave no job behind. Ctrl-C ends every process, records the job as
        Stopped, and then raises KeyboardInterrupt.
        """
        from smtrain.local import stray_writes, tf_install
        from smtrain.local.channels import check_s3_sources
        from smtrain.local.job_env import REQUIREMENTS, check_python
        from smtrain.local.launch import check_mpi
        from smtrain.local.request import render_local

        plan, name = request.plan, request.job_name  # its secrets were registered when the spec was read
        if os.path.lexists(self.store.job_dir(name)):
            raise self._taken(name)
        job_output = _job_output(request)
        if job_output is not None and job_output.is_dir():
            # Another SMTRAIN_HOME's job of this name (or a record since removed) wrote there: its
            # model.tar.gz would be replaced without a word.
            raise UserError(f"output {job_output} already exists: job {name} would write its model.tar.gz and "
                            "output.tar.gz over what is there; pick another --job-name, or move that directory away",
                            exit_codes.USAGE)
        body = render_local(request)
        hyperparameters = dict(body["HyperParameters"])
        environment = dict(body.get("Environment") or {})
        # checkpoint_local_path is a place in SageMaker's container: here each host keeps checkpoints in its own
        # checkpoints/ directory, where smtrain_tf.checkpoint_dir() finds them without it.
        environment.pop("SMTRAIN_CHECKPOINT_DIR", None)
        layout = replica_layout.choose(plan, replicas_per_host)
        # An environment variable, not a hyperparameter: an own script's arguments are its own (its
        # argparse may refuse any other), and smtrain_tf reads SMTRAIN_<NAME> for every program.
        environment.update(layout.environment)
        environment.update(extra_environment or {})
        base_python = python or sys.executable
        has_requirements = any(f.path == REQUIREMENTS for f in request.bundle.files)
        if python is not None:
            check_python(python, needs_venv=has_requirements)
        if plan.strategy in ("horovod", "smddp") and not has_requirements:
            check_mpi(plan.strategy, base_python)
        tensorflow = tf_install.probe(base_python)
        if not has_requirements:  # else its requirements.txt may bring TensorFlow into the job's environment
            tf_install.require(tensorflow, chosen=python is not None)
        check_s3_sources(_channel_sources(body), plan.region)
        opt_ml = stray_writes.list_files()  # what a script writing a literal /opt/ml path would change
        output = self._open_job(request, body, stream, verbose)
        started = time.monotonic()
        try:
            outcome, layouts = self._run(request, body, hyperparameters, environment, base_python, output, grace,
                                         tensorflow, layout)
        except _JobFailed as exc:
            outcome, layouts = Outcome("Failed", "Failed", reason="prepare"), {}
            self.store.update(name, failure_reason=mask_text(str(exc))[:FAILURE_REASON_MAX])
            output.note(f"failed: {exc}")
        except KeyboardInterrupt:  # while preparing: nothing runs yet
            self._finish(name, Outcome("Stopped", "Stopped", reason="interrupt"), {}, None)
            output.close()
            raise
        except BaseException as exc:
            self._finish(name, Outcome("Failed", "Failed", reason="internal"), {},
                         f"InternalError: smtrain failed while running the job: {type(exc).__name__}: {exc}")
            output.close()
            raise
        model_dir = json.loads(hyperparameters.get("model_dir", "null"))
        strays, saved = stray_writes.written(opt_ml, stray_writes.list_files()), stray_writes.model_dir_files(model_dir)
        if strays or saved:  # where a summary saying "model none" should point
            self.store.update(name, model_elsewhere=model_dir if saved else
                              os.path.commonpath([os.path.dirname(p) for p in strays]))
        job = self._finish(name, outcome, layouts, self.store.read(name).get("failure_reason"))
        output.note(f"{name} {job.status}" + (f" ({job.secondary_status})" if job.secondary_status != job.status
                                                 else "") + f" after {time.monotonic() - started:.1f}s")
        if job.failure_reason:
            output.note(f"reason: {job.failure_reason}")
        for label, path in (("model", job.model_artifacts), ("output", job.extra.get("output_artifacts"))):
            if path:
                output.note(f"{label}: {path}")
        for note in (stray_writes.stray_note(strays), stray_writes.model_dir_note(saved, model_dir)):
            if note:
                output.note(note)
        output.close()
        if outcome.reason == "interrupt":
            raise KeyboardInterrupt
        if outcome.reason == "terminate":
            raise Terminated
        return job

    def _taken(self, name: str) -> UserError:
        return UserError(f"a local job named {name} already exists in {self.store.root}: pick another --job-name",
                         exit_codes.USAGE)

    def _places(self, request: Request) -> builtins.list[Place]:  # `list` here is the method below
        """The directories the run writes in before and after its job: the jobs' home, a local output's."""
        from smtrain.local.places import FILE, Place
        from smtrain.local.request import output_root

        places = [Place(self.store.root, "SMTRAIN_HOME", self.store.root.parent,
                        "set SMTRAIN_HOME to a directory you can write (default ~/.smtrain)")]
        root = output_root(request.plan)
        if root is not None:
            remedy = "point the spec's output at a directory you can write (it is made if missing)"
            places += [Place(Path(request.source_uri), "output", root, remedy, FILE),
                       Place(_artifacts_dir(request, self.store.job_dir(request.job_name)), "output", root, remedy)]
        return places

    def _open_job(self, request: Request, body: dict[str, Any], stream: TextIO | None, verbose: bool) -> Output:
        """The job's places checked and made, its directory and first record written: all, or nothing left."""
        from smtrain.bundle.own_places import mark
        from smtrain.local.places import check, make, unmake

        name = request.job_name
        places = self._places(request)
        check(places)
        made = make(places)
        try:
            job_dir = self.store.create(name)
        except FileExistsError:
            unmake(made)
            raise self._taken(name) from None
        except OSError as exc:
            unmake(made)
            raise places[0].refusal(f"cannot create {self.store.job_dir(name)}: {exc.strerror or exc}") from None
        try:
            output = Output(stream, self.store.log_dir(name), verbose=verbose)
            self.store.write(name, self._first_record(request, body, job_dir))
            job_output = _job_output(request)
            if job_output is not None:  # wholly this run's: no later bundle takes them in (own_places.py)
                mark(job_output)
                mark(Path(request.source_uri).parent)
        except BaseException:
            shutil.rmtree(job_dir, ignore_errors=True)
            unmake(made)
            raise
        return output

    def _first_record(self, request: Request, body: dict[str, Any], job_dir: Path) -> dict[str, Any]:
        plan = request.plan
        artifacts = _artifacts_dir(request, job_dir)
        return {
            "name": request.job_name, "status": "InProgress", "secondary_status": "Starting",
            "created": iso(_utc_now()), "started": None, "ended": None,
            "instance_type": body["ResourceConfig"]["InstanceType"],
            "instance_count": body["ResourceConfig"]["InstanceCount"],
            "region": plan.region, "strategy": plan.strategy, "hosts": launch.host_names(plan.nodes),
            "failure_reason": None, "model_artifacts": None, "output_artifacts": None,
            "artifacts_dir": str(artifacts), "job_dir": str(job_dir), "log_dir": str(job_dir / "logs"),
            "output": plan.spec.output, "source": request.source_uri, "bundle_sha256": request.bundle.sha256,
            "max_run_seconds": body["StoppingCondition"]["MaxRuntimeInSeconds"],
            # what `smtrain metrics` reads the host logs with, as SageMaker reads the job's output
            "metric_definitions": body["AlgorithmSpecification"].get("MetricDefinitions") or [],
            "supervisor": {"pid": os.getpid(), "start": process_start(os.getpid())}, "processes": [],
            "exit_code": None, "failed_host": None,
        }

    def _run(self, request: Request, body: dict[str, Any], hyperparameters: dict[str, str],
             environment: dict[str, str], base_python: str, output: Output, grace: float,
             tensorflow: Found, replicas: replica_layout.ReplicaLayout) -> tuple[Outcome, dict[str, HostLayout]]:
        from smtrain.local.channels import prepare_channels
        from smtrain.local.hosts import lay_out, write_bundle
        from smtrain.local.job_env import RequirementsError, install_requirements
        from smtrain.local.launch import host_processes
        from smtrain.local.ports import Reserved
        from smtrain.local.tf_install import probe, version_note

        plan, name = request.plan, request.job_name
        job_dir = self.store.job_dir(name)
        output.note(f"{name}: {plan.nodes} host(s), {plan.strategy}, in {job_dir}")
        from smtrain.render.request_limits import sagemaker_only_notes

        for note in sagemaker_only_notes(plan.spec):
            output.note(note)
        if plan.spec.output.startswith("s3://"):
            output.note(f"output is {plan.spec.output}: a local run uploads nothing; the archives stay in "
                        f"{job_dir / 'output'}")
        if body.get("CheckpointConfig"):
            output.note("checkpoints stay in each host's checkpoints/ directory: a local run does not sync them to "
                        f"{body['CheckpointConfig']['S3Uri']}")
        bundle = Path(request.source_uri) if not request.source_uri.startswith("s3://") \
            else job_dir / "sourcedir.tar.gz"
        try:
            write_bundle(request.bundle.data, bundle)
        except OSError as exc:  # as SageMaker fails a job whose code it cannot download
            raise _JobFailed(f"ClientError: cannot write the code bundle {bundle}: {exc.strerror or exc}") from exc
        hosts = lay_out(name, plan.region, body, hyperparameters, self.store.hosts_dir(name), bundle,
                        environment=environment, python_path=replicas.python_path)
        output.note(replicas.summary(hosts.machine.num_gpus))
        first = hosts.names[0]
        if body.get("TensorBoardOutputConfig"):
            output.note(f"TensorBoard event files stay in {first}'s output/tensorboard (`smtrain tensorboard {name}`): "
                        f"a local run does not upload them to {body['TensorBoardOutputConfig']['S3OutputPath']}")

        self.store.update(name, secondary_status="Downloading")
        sources = _channel_sources(body)
        try:
            prepare_channels(sources, [{s.name: hosts.layouts[h].channel(s.name) for s in sources}
                                       for h in hosts.names], plan.base_dir, job_dir / "input-cache", plan.region)
        except UserError as exc:
            raise _JobFailed(f"ClientError: {exc}") from exc
        try:
            python = install_requirements(hosts.layouts[first].code_dir, job_dir / "venv", base_python,
                                          lambda line: output.line(first, line), tensorflow=tensorflow.tensorflow)
        except RequirementsError as exc:
            raise _JobFailed(f"AlgorithmError: {exc}") from exc
        note = version_note(tensorflow if python == base_python else probe(python), plan.framework_version)
        if note:
            output.note(note)
        with Reserved() as ports:  # TF_CONFIG's ports, no other run's, held until the hosts end
            try:
                specs = host_processes(plan.strategy, hosts.names, {h: hosts.layouts[h].code_dir for h in hosts.names},
                                       hosts.env_for, entry_point=plan.entry_point, python=python,
                                       args_for=hosts.args_for, processes_per_host=plan.processes_per_host,
                                       mpi_options=plan.spec.distribution.mpi_options, ports=ports)
            except UserError as exc:
                raise _JobFailed(f"ClientError: {exc}") from exc
            except OSError as exc:  # no free port: the run cannot start, as a host without a network
                raise _JobFailed(f"ClientError: {exc.strerror or exc}") from exc
            return self._supervise(name, job_dir, specs, hosts, body, output, grace)

    def _supervise(self, name: str, job_dir: Path, specs: builtins.list[ProcessSpec], hosts: Hosts, body: dict[str, Any],
                   output: Output, grace: float) -> tuple[Outcome, dict[str, HostLayout]]:
        sampler = UsageSampler(job_dir / USAGE_FILE)  # each host's CPU and memory, for `metrics --system`

        def on_started(running: list[Running]) -> None:
            self.store.update(name, secondary_status="Training", started=iso(_utc_now()),
                              processes=[{"name": r.spec.name, "host": r.spec.host, "pid": r.pid,
                                          "start": process_start(r.pid)} for r in running])
            sampler.start({r.spec.host: r.pid for r in reversed(running)})  # a host's first process: its root

        supervisor = Supervisor(specs, output, failure_files={h: lay.failure_file for h, lay in hosts.layouts.items()},
                                max_run=float(body["StoppingCondition"]["MaxRuntimeInSeconds"]), grace=grace,
                                stop_file=job_dir / STOP_FILE, on_started=on_started)
        try:
            return supervisor.run(), hosts.layouts
        finally:
            sampler.stop()

    def _finish(self, name: str, outcome: Outcome, layouts: dict[str, HostLayout],
                reason: str | None) -> JobInfo:
        """Write what the toolkit and SageMaker leave after a job: success/failure files, archives, the record."""
        from smtrain.local.artifacts import write_archive

        record = self.store.read(name)
        if outcome.reason == "failure" and outcome.host is not None:
            reason = self._failure_reason(outcome, layouts[outcome.host], Path(record["log_dir"]))
        elif outcome.reason == "log":
            reason = outcome.detail
        elif outcome.reason == "max_run":
            reason = (f"MaxRuntimeExceeded: Training job runtime exceeded MaxRuntimeInSeconds provided "
                      f"({record.get('max_run_seconds')}s)")
        if outcome.status == "Completed":
            for layout in layouts.values():
                (layout.output_dir / "success").touch()
        changes: dict[str, Any] = {"secondary_status": "Uploading"}
        if layouts:
            self.store.update(name, **changes)
            artifacts = Path(record["artifacts_dir"])
            ordered = [layouts[h] for h in record["hosts"]]
            target = artifacts / "output.tar.gz"
            try:
                data = write_archive([lay.output_data_dir for lay in ordered], target)
                changes.update(output_artifacts=str(data))
                if any(any(lay.model_dir.iterdir()) for lay in ordered if lay.model_dir.is_dir()):
                    # A job that saved nothing has no model (an empty archive would read as one).
                    target = artifacts / "model.tar.gz"
                    model = write_archive([lay.model_dir for lay in ordered], target)
                    changes.update(model_artifacts=str(model))
            except OSError as exc:
                # As SageMaker fails a job whose upload fails: the training ran, its archive could not be kept.
                outcome = replace(outcome, status="Failed", secondary_status="Failed", reason="archive")
                reason = (f"cannot write {target}: {exc.strerror or exc} (what the hosts saved is still in "
                          f"{self.store.hosts_dir(name)})")
        changes.update(status=outcome.status, secondary_status=outcome.secondary_status, ended=iso(_utc_now()),
                       # masked whole, then cut: a cut secret would no longer be recognised
                       failure_reason=mask_text(reason)[:FAILURE_REASON_MAX] if reason else None,
                       exit_code=outcome.exit_code, failed_host=outcome.host)
        return job_info(self.store.update(name, **changes))

    @staticmethod
    def _failure_reason(outcome: Outcome, layout: HostLayout, log_dir: Path) -> str:
        """AlgorithmError: and the host's output/failure, which the toolkit writes when the program did not."""
        try:
            text = layout.failure_file.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            text = ""
        if not text:
            last = " / ".join(line for line in _tail(log_dir / f"{outcome.host}.log", 3) if line.strip())
            if outcome.command and Path(outcome.command[0]).name == "mpirun":
                from smtrain.local.mpi_failure import rank_error

                # mpirun's last lines are its trailer ("Process name: [[27333,1],1] / Exit code: 1"): the
                # reason is the failed rank's own error.
                found = rank_error(_tail(log_dir / f"{outcome.host}.log", MPI_LOG_LINES))
                last = f"rank {found[0]}: {found[1]}" if found else last
            if outcome.exit_code is not None and outcome.exit_code < 0:
                # A signal, not the program's own exit: its last lines rarely say why (a crash inside
                # TensorFlow's C++ prints nothing); name the signal first.
                last = f"{describe_exit(outcome.exit_code)}{_SIGNAL_MEANING.get(-outcome.exit_code, '')}" + \
                    (f" / {last}" if last else "")
            text = (f"ExecuteUserScriptError:\nExitCode {outcome.exit_code}\nErrorMessage \"{last}\"\n"
                    f"Command \"{' '.join(outcome.command)}\"")
            layout.failure_file.parent.mkdir(parents=True, exist_ok=True)
            # Masked like everything smtrain writes: the command line carries the hyperparameters.
            text = mask_text(text)
            layout.failure_file.write_text(text + "\n", encoding="utf-8")
        return f"AlgorithmError: {text}"

    # -- records of jobs whose smtrain process is gone ---------------------------------------------

    def _require(self, name: str) -> None:
        if not self.store.has(name):
            raise UserError(f"no local job named {name} (in {self.store.root})", exit_codes.USAGE)

    def _current(self, name: str) -> dict[str, Any]:
        self._require(name)
        record = self.store.read(name)
        if record["status"] not in ("InProgress", "Stopping"):
            return record
        supervisor = record.get("supervisor") or {}
        if not alive(supervisor.get("pid"), supervisor.get("start")):
            return self._end_orphan(name, record)
        if self.store.stop_requested(name):
            return {**record, "status": "Stopping", "secondary_status": "Stopping"}
        return record

    def _end_orphan(self, name: str, record: dict[str, Any]) -> dict[str, Any]:
        """The smtrain process that ran the job is gone: end what it left running, record the end."""
        for process in record.get("processes", []):
            if alive(process.get("pid"), process.get("start")):
                signal_group(process["pid"], signal.SIGKILL)
        if self.store.stop_requested(name):
            changes = {"status": "Stopped", "secondary_status": "Stopped"}
        else:
            changes = {"status": "Failed", "secondary_status": "Failed",
                       "failure_reason": f"the smtrain process that ran this job (pid "
                                         f"{(record.get('supervisor') or {}).get('pid')}) ended before the job did"}
        try:
            return self.store.update(name, ended=iso(_utc_now()), **changes)
        except OSError:  # a full or read-only disk: the end is told now, and recorded by a later reader
            return {**record, "ended": iso(_utc_now()), **changes}

