"""The job's one MLflow run, logged by the chief when the spec names a target (`tracking.mlflow`).

smtrain puts MLflow's own MLFLOW_TRACKING_URI (and MLFLOW_EXPERIMENT_NAME) in the job's environment, and
SMTRAIN_MLFLOW, a JSON object of what the container cannot know: the run's name, the image, smtrain's version,
the output path (the model's S3 location is <output>/<job>/output/model.tar.gz) and, for a trial of a tuning
job, the tuning job's name. Only the chief logs (the bundled entrypoint, smtrain_tf.fit and the wrap each call
`begin` there), so a job of any number of hosts and replicas is one run:

- params: the job's name, instance type, GPUs per host, hosts, replicas, strategy, global batch, learning rate
  (as scaled), image, TensorFlow's version, the code's sha256 (from the bundle's S3 key), smtrain's version,
  and each of the user's hyperparameters as `hp.NAME`;
- one metric per value of each epoch line, step = epoch: the same lines, so the same values, `smtrain metrics`
  reads, under its names (train:loss, validation:accuracy, train:learning_rate, train:examples_per_sec; the step
  and seconds as global_step and elapsed_seconds; a process's second fit call's as `fit2/train:loss`, ...);
- the tag `model_uri` at the end, and the run's status: FINISHED, FAILED (a failure reported, an exception
  that ended the script, a non-zero exit) or KILLED (SIGTERM: SageMaker stopping the job, a spot interruption).

A trial of a tuning job is a child run (MLflow's `mlflow.parentRunId` tag) of one parent run named for the
tuning job: the first trial makes it (`tune --local` runs its trials one after another). Two trials that make
one at once (SageMaker's parallel trials) both keep the earliest made and the other is deleted; trials whose
hosts' clocks disagree may each keep their own for a while, and each moves under the earliest as it ends.

The run is MlflowClient's, never the fluent API's active run: a script that logs to MLflow itself keeps its own
run, in the same experiment (MLflow reads MLFLOW_EXPERIMENT_NAME too), and at the end the two runs name each
other in a tag. Tracking is advisory: MLflow missing or its server unreachable is one line, and the training
goes on. MLflow's HTTP retries are shortened (3 retries 1, 2 and 4 s apart, 30 s a request) where the job
has not set its own (MLflow's own default waits minutes on a server that is down).
"""

from __future__ import annotations

import atexit
import json
import os
import re
import signal
import sys
import time
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

SETTINGS = "SMTRAIN_MLFLOW"
_PARAM_CHARS = 500  # MLflow 1.x servers keep at most 500 characters of a param's value
_KEY = re.compile(r"[^\w.\- :/]")  # MLflow's allowed characters in a key
_SHA256 = re.compile(r"/([0-9a-f]{64})/")
_BATCH = 100  # MLflow's log_batch takes at most 100 params


def _settings(environ: Mapping[str, str]) -> Optional[Dict[str, Any]]:
    if not environ.get("MLFLOW_TRACKING_URI") or SETTINGS not in environ or environ.get("SMTRAIN_CHECK_DIR"):
        return None  # `smtrain check`'s runs are a rehearsal: they leave no run in the experiment
    try:
        found = json.loads(environ[SETTINGS])
    except ValueError:
        return None
    return found if isinstance(found, dict) else None


class _Run:
    def __init__(self, client: Any, run_id: str, settings: Dict[str, Any], say: Callable[[str], None]) -> None:
        self.client, self.run_id, self.settings, self.say = client, run_id, settings, say
        self.params: Dict[str, str] = {}
        self.status = "FINISHED"
        self.experiment_id = ""
        self.parent_id: Optional[str] = None
        self.made_parent = False
        self.ended = False


_state: Dict[str, Any] = {"run": None, "off": False}


def _key(name: str) -> str:
    return _KEY.sub("_", str(name))[:250]


def _off(say: Callable[[str], None], what: str, exc: BaseException) -> None:
    _state["off"] = True
    text = " ".join(str(exc).split())[:300]
    say(f"tracking: MLflow {what} failed ({type(exc).__name__}: {text}); training goes on without the run")


def _common_params(settings: Mapping[str, Any], environ: Mapping[str, str]) -> Dict[str, Any]:
    params: Dict[str, Any] = {"job": environ.get("TRAINING_JOB_NAME", "")}
    try:  # resourceconfig.json as SageMaker's toolkit passes it on
        resources = json.loads(environ.get("SM_RESOURCE_CONFIG") or "{}")
    except ValueError:
        resources = {}
    resources = resources if isinstance(resources, dict) else {}
    params["instance_type"] = resources.get("current_instance_type", "")
    params["hosts"] = len(resources.get("hosts") or [])
    params["gpus_per_host"] = environ.get("SM_NUM_GPUS", "")
    params["image"] = settings.get("image") or ""
    params["smtrain_version"] = settings.get("smtrain") or ""
    tf = sys.modules.get("tensorflow")
    params["tensorflow_version"] = getattr(tf, "__version__", "") if tf is not None else ""
    found = _SHA256.search(environ.get("SM_MODULE_DIR", "") + "/")
    params["code_sha256"] = found.group(1) if found else ""
    try:
        hps = json.loads(environ.get("SM_HPS") or "{}")
    except ValueError:
        hps = {}
    for name, value in (hps.items() if isinstance(hps, dict) else ()):
        if not str(name).startswith("sagemaker_") and name != "model_dir":
            params[f"hp.{name}"] = value if isinstance(value, str) else json.dumps(value)
    return params


def _experiment_id(client: Any, environ: Mapping[str, str]) -> str:
    name = environ.get("MLFLOW_EXPERIMENT_NAME")
    if not name:
        return environ.get("MLFLOW_EXPERIMENT_ID") or "0"  # MLflow's Default experiment
    found = client.get_experiment_by_name(name)
    if found is not None:
        return found.experiment_id
    try:
        return client.create_experiment(name)
    except Exception:  # noqa: BLE001 - another job made it first: read it again
        found = client.get_experiment_by_name(name)
        if found is None:
            raise
        return found.experiment_id


def _parents(client: Any, experiment_id: str, tuning: str) -> List[Any]:
    """The tuning job's live parent runs, the one to keep first: the earliest made (then the smallest id)."""
    query = f"tags.`smtrain.tuning_job` = '{tuning}' and tags.`smtrain.parent` = 'yes'"
    runs = client.search_runs([experiment_id], filter_string=query, max_results=50)
    return sorted(runs, key=lambda r: (r.info.start_time, r.info.run_id))


def _parent(client: Any, experiment_id: str, tuning: str) -> Tuple[str, bool]:
    """The tuning job's parent run, found or made, and whether this trial made it. Two trials that make one at
    once both see both and keep the earliest; the other's maker deletes it."""
    found = _parents(client, experiment_id, tuning)
    if found:
        return found[0].info.run_id, False
    made = client.create_run(experiment_id, run_name=tuning,
                             tags={"smtrain.tuning_job": tuning, "smtrain.parent": "yes"}).info.run_id
    kept = _parents(client, experiment_id, tuning)[0].info.run_id
    if kept != made:
        client.delete_run(made)
    return kept, kept == made


def _settle_parent(run: "_Run") -> None:
    """At a trial's end: if another parent is now the one to keep (trials on hosts whose clocks differ may each
    have kept their own), the trial moves under it, and the parent it made, if any, goes."""
    kept = _parents(run.client, run.experiment_id, str(run.settings["tuning"]))
    if not kept or kept[0].info.run_id == run.parent_id:
        return
    run.client.set_tag(run.run_id, "mlflow.parentRunId", kept[0].info.run_id)
    if run.made_parent and run.parent_id:
        run.client.delete_run(run.parent_id)
    run.parent_id = kept[0].info.run_id


def begin(params: Mapping[str, Any], say: Callable[[str], None], environ: Optional[Mapping[str, str]] = None) -> None:
    """On the chief: start the job's run (once per process) and log `params` beside the common ones; a later
    call logs only params not logged yet (MLflow keeps a param's first value)."""
    env = os.environ if environ is None else environ
    settings = _settings(env)
    if settings is None or _state["off"]:
        return
    if _state["run"] is None:
        for name, value in (("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "3"), ("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "1"),
                            ("MLFLOW_HTTP_REQUEST_TIMEOUT", "30")):
            os.environ.setdefault(name, value)
        try:
            from mlflow.tracking import MlflowClient
        except ImportError as exc:
            _off(say, "import", exc)
            return
        try:
            client = MlflowClient()
            experiment_id = _experiment_id(client, env)
            tags = {"smtrain.job": env.get("TRAINING_JOB_NAME", ""), "smtrain.host": env.get("SM_CURRENT_HOST", "")}
            parent_id, made_parent = None, False
            if settings.get("tuning"):
                parent_id, made_parent = _parent(client, experiment_id, str(settings["tuning"]))
                tags.update({"mlflow.parentRunId": parent_id, "smtrain.tuning_job": str(settings["tuning"])})
            name = settings.get("run") or env.get("TRAINING_JOB_NAME") or None
            made = client.create_run(experiment_id, run_name=name, tags=tags)
        except Exception as exc:  # noqa: BLE001 - advisory: any MLflow error leaves training alone
            _off(say, "run start", exc)
            return
        run = _Run(client, made.info.run_id, settings, say)
        run.experiment_id, run.parent_id, run.made_parent = experiment_id, parent_id, made_parent
        _state["run"] = run
        _watch_the_end()
        say(f"tracking: MLflow run {run.run_id} ({name or 'unnamed'}) in experiment {experiment_id}")
        params = {**_common_params(settings, env), **params}
    log_params(params)



def log_params(params: Mapping[str, Any]) -> None:
    run = _state["run"]
    if run is None:
        return
    # A number as the epoch line writes lr= (6 significant digits): a float32 rate is not 0.0010000000474974513.
    new = {_key(k): (f"{v:.6g}" if isinstance(v, float) else str(v))[:_PARAM_CHARS] for k, v in params.items()
           if _key(k) not in run.params}
    if not new:
        return
    from mlflow.entities import Param

    items = [Param(k, v) for k, v in new.items()]
    try:
        for at in range(0, len(items), _BATCH):
            run.client.log_batch(run.run_id, params=items[at:at + _BATCH])
        run.params.update(new)
    except Exception as exc:  # noqa: BLE001
        _stop(run, "params", exc)


# The epoch line's names as the job's MetricDefinitions (and so `smtrain metrics`) name them.
_NAMED = {"lr": "train:learning_rate", "examples_per_sec": "train:examples_per_sec", "step": "global_step",
          "elapsed": "elapsed_seconds"}


def metric_name(name: str) -> str:
    """`loss` -> train:loss, `val_auc` -> validation:auc, `lr` -> train:learning_rate (metric_definitions.json)."""
    if name in _NAMED:
        return _NAMED[name]
    return f"validation:{name[4:]}" if name.startswith("val_") else f"train:{name}"


def epoch(values: Mapping[str, str], fit_call: int = 1) -> None:
    """An epoch line's name=value pairs (training/metrics.fields): each number a metric at step = epoch, named
    as `smtrain metrics` names it; a process's second fit call's as `fit2/train:loss`, ..."""
    run = _state["run"]
    if run is None:
        return
    from mlflow.entities import Metric

    prefix = f"fit{fit_call}/" if fit_call > 1 else ""
    now = int(time.time() * 1000)
    items = []
    try:
        step = int(values.get("epoch", 0))
        for name, text in values.items():
            if name in ("epoch", "fit"):
                continue
            try:
                number = float(text)
            except ValueError:
                continue  # not a number: nothing to plot
            items.append(Metric(_key(prefix + metric_name(name)), number, now, step))
        run.client.log_batch(run.run_id, metrics=items)
    except Exception as exc:  # noqa: BLE001
        _stop(run, "metrics", exc)


def failed() -> None:
    """A failure was reported: the run ends FAILED (a SIGTERM's KILLED stays)."""
    run = _state["run"]
    if run is not None and run.status == "FINISHED":
        run.status = "FAILED"


def end(exit_code: Optional[int] = None) -> None:
    """End the run (once): its model_uri tag and its status; a non-zero `exit_code` is FAILED."""
    run = _state["run"]
    if run is None or run.ended:
        return
    run.ended = True
    if exit_code:
        failed()
    output = str(run.settings.get("output") or "").rstrip("/")
    job = os.environ.get("TRAINING_JOB_NAME", "")
    try:
        if output and job and run.status == "FINISHED":
            run.client.set_tag(run.run_id, "model_uri", f"{output}/{job}/output/model.tar.gz")
        _meet_the_scripts_run(run)
        run.client.set_terminated(run.run_id, status=run.status)
        if run.parent_id:  # the parent ends with its last trial: each trial's end moves its end time on
            _settle_parent(run)
            run.client.set_terminated(run.parent_id, status="FINISHED")
    except Exception as exc:  # noqa: BLE001
        _stop(run, "run end", exc)
        return
    run.say(f"tracking: MLflow run {run.run_id} {run.status}")


def _meet_the_scripts_run(run: _Run) -> None:
    """A script that logs to MLflow itself (mlflow.start_run, autolog) keeps its run; the two point at each other:
    smtrain's run's `smtrain.script_run` tag names the script's, the script's `smtrain.job_run` names smtrain's."""
    fluent = sys.modules.get("mlflow")
    last = getattr(fluent, "last_active_run", None)
    found = last() if callable(last) else None
    if found is None or found.info.run_id == run.run_id:
        return
    run.client.set_tag(run.run_id, "smtrain.script_run", found.info.run_id)
    run.client.set_tag(found.info.run_id, "smtrain.job_run", run.run_id)


def _stop(run: _Run, what: str, exc: BaseException) -> None:
    _state["run"] = None
    _off(run.say, what, exc)


def _watch_the_end() -> None:
    """A script of the user's own ends without smtrain's program around it: the exception that ends it makes
    the run FAILED, interpreter exit ends it, and SIGTERM (a stopped job) ends it KILLED before the process
    goes as SIGTERM would take it."""
    atexit.register(end)
    before = sys.excepthook

    def excepthook(kind: Any, value: Any, trace: Any) -> None:
        if not issubclass(kind, KeyboardInterrupt):
            failed()
        before(kind, value, trace)

    sys.excepthook = excepthook
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        return  # the script's or a library's own handler stays in charge; atexit still ends the run
    try:
        signal.signal(signal.SIGTERM, _on_sigterm)
    except ValueError:
        pass  # not the main thread: no handler can be set here


def _on_sigterm(signum: int, frame: Any) -> None:
    run = _state["run"]
    if run is not None:
        run.status = "KILLED"
        end()
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.kill(os.getpid(), signal.SIGTERM)
