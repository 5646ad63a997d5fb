"""smtrain.Job: a training job (or tuning job) on SageMaker or run here, as the API hands it back from submit or
finds it by name (Job.attach): its status, a wait, its logs and metrics, a stop, its model's place."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from smtrain.api.backends import backend_for_job
from smtrain.api.display import fields_table
from smtrain.api.metrics import Metrics
from smtrain.api.waiting import wait_for
from smtrain.errors import WaitTimeout
from smtrain.jobs import Backend, EventFiles, JobCost, JobInfo, exit_code_for
from smtrain.redact import StreamMasker, mask_text

if TYPE_CHECKING:
    from smtrain.api.live import LiveView
    from smtrain.plan.catalog import Catalog


LAST_LINES_SECONDS = 30.0  # how long a wait that has seen the end still reads the job's last log lines


class Job:
    """One job, by name, and the backend that knows it (SageMaker's in `region`, or the local one).

    Nothing here prints: `wait(show=True)` (the default in Jupyter) draws a live status in the cell instead.
    Values meant for display (the repr, logs, metrics) pass through smtrain's secret masking.
    """

    def __init__(self, name: str, backend: Backend, *, region: str | None = None,
                 info: JobInfo | None = None, submitted: Any = None, warnings: list[str] | None = None) -> None:
        self.name = name
        self.backend = backend
        self.region = region
        self.submitted = submitted  # what submit sent (smtrain.sagemaker.submit.Submitted), when it came from there
        # What the CLI would have said before sending it (the plan's, the bundle's and the code's warnings).
        self.warnings = list(warnings or [])
        self._info = info

    @classmethod
    def attach(cls, name: str, region: str | None = None) -> Job:
        """The job of that name: a local run of it, else SageMaker's (region: the default one when None).
        A tuning job's name works too. UserError (exit 4) when no backend knows it."""
        backend = backend_for_job(name, region)
        # The region the backend settled on (AWS_REGION, ~/.aws/config) when none was given; None for a local job.
        job = cls(name, backend, region=region or getattr(backend, "region", None))
        job.describe()  # an unknown name fails here, not at the first use
        return job

    @property
    def local(self) -> bool:
        """Whether the job runs here (the local backend) rather than on SageMaker."""
        return type(self.backend).__module__.startswith("smtrain.local")

    def describe(self) -> JobInfo:
        """The job as its backend reports it now (status, times, instances, failure, model artifacts)."""
        self._info = self.backend.describe(self.name)
        return self._info

    def status(self) -> str:
        """InProgress, Completed, Failed, Stopping or Stopped, read now."""
        return self.describe().status

    @property
    def info(self) -> JobInfo:
        """The last JobInfo read (describe() when none was)."""
        return self._info if self._info is not None else self.describe()

    @property
    def model_uri(self) -> str | None:
        """Where the model went: model.tar.gz's S3 URI for a SageMaker job, the model directory for a local one;
        None until the job has written it."""
        return self.describe().model_artifacts

    @property
    def exit_code(self) -> int:
        """The CLI's exit code for the job's last state read: 0 Completed (or running), 1 Failed, 3 Stopped."""
        return exit_code_for(self.info)

    def wait(self, timeout: float | str | None = None, *, show: bool | None = None) -> JobInfo:
        """Stay until the job ends; its last JobInfo (a Failed job is returned, not raised: see `.exit_code`).
        WaitTimeout after `timeout` seconds, the job left running.

        `show` (default: True in Jupyter; nothing is shown outside a kernel) draws a live view in the cell: the
        status, read at each poll, and a training job's epoch lines and latest log line as they come."""
        from smtrain.api.arguments import timeout_arg
        from smtrain.api.live import LiveView, in_notebook

        timeout = timeout_arg(timeout)
        view = LiveView(self.name, self.warnings) if show is not False and in_notebook() else None
        stop = threading.Event()
        lines = None
        if view is not None and not hasattr(self.info, "tuning"):  # a tuning job's logs are its trials'
            lines = threading.Thread(target=self._lines_into, args=(view, stop), daemon=True)
            lines.start()
        ended = False
        try:
            self._info = wait_for(self.backend, self.name, timeout=timeout,
                                  on_change=view.status if view is not None else lambda job: None)
            ended = True
        except WaitTimeout as exc:
            self._info = exc.job
            raise
        finally:
            if lines is not None:
                if ended:
                    lines.join(LAST_LINES_SECONDS)  # the lines the job wrote last, read after it ended
                stop.set()  # a wait that ran out or was interrupted leaves at once; the thread stops reading
            if view is not None:
                view.close(self._info, None if ended else "still running: the wait ended, the job did not")
        return self._info

    def _lines_into(self, view: LiveView, stop: threading.Event) -> None:
        """The job's log lines into `view` until it ends or `stop` is set (a thread of wait's: the poll stays with
        the status)."""
        lines = self.logs(follow=True)
        try:
            for line in lines:
                if stop.is_set():
                    break
                view.write(line + "\n")
        except Exception as exc:  # the view says it; the wait goes on with the status alone
            view.write(mask_text(f"(its log could not be read: {exc})") + "\n")
        finally:
            lines.close()

    def logs(self, follow: bool = False) -> Iterator[str]:
        """The job's log lines, every host merged by time, each as `algo-1: message`, secrets masked. With
        `follow`, the lines keep coming until the job ends."""
        masker = StreamMasker()  # one across the stream: a private key block spans lines
        for event in self.backend.logs(self.name, follow=follow):
            yield f"{event.host}: {masker(event.host, event.message)}"

    def metrics(self, host: str | None = None) -> Metrics:
        """The metrics per epoch (rows for pandas.DataFrame; `.plot()` with matplotlib) of the chief, or `host`."""
        found = self.backend.metrics(self.name, host)
        self._info = found.job
        return Metrics(found)

    def event_files(self, directory: str | os.PathLike[str] | None = None) -> EventFiles:
        """The job's TensorBoard event files: a local job's where its chief wrote them, a SageMaker job's
        downloaded (into `directory`, default smtrain's cache) from S3; `.logdir` is what TensorBoard takes."""
        return self.backend.event_files(self.name, Path(directory) if directory is not None else None)

    def cost(self, catalog: Catalog | str | os.PathLike[str] | None = None) -> JobCost | None:
        """What the job cost (billable time x the catalog's price; None for a local run or a tuning job)."""
        from smtrain.api.listing import priced
        from smtrain.api.planning import catalog_of

        return priced(self.describe(), catalog_of(catalog)).cost

    def stop(self) -> JobInfo:
        """Ask the backend to stop the job (SageMaker: Stopping, then Stopped); a job that has ended is left."""
        self._info = self.backend.stop(self.name)
        return self._info

    def to_dict(self) -> dict[str, Any]:
        """The job as `smtrain status -o json` prints it."""
        return self.info.to_dict()

    def __repr__(self) -> str:
        where = "local" if self.local else f"sagemaker {self.region or ''}".strip()
        state = f" {self._info.status}" if self._info is not None else ""
        return mask_text(f"<Job {self.name} ({where}){state}>")

    def _repr_html_(self) -> str:
        info = self.info
        rows = [("status", info.status_text),
                ("backend", info.backend), ("instances", f"{info.instance_count or '-'} x {info.instance_type or '-'}"),
                ("created", info.created), ("ended", info.ended), ("failure", info.failure_reason),
                ("model", info.model_artifacts), ("console", info.console_url)]
        return fields_table(f"job {self.name}", [(k, v) for k, v in rows if v is not None])
