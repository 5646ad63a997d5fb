"""`smtrain check` inside Keras's own fit: the model's own `train_step` wrapped, never replaced, and recorded.

A wrapped script's fit runs in a check exactly as in the paid job (Keras's fit with the wrap's repairs,
batches and tuning), each call cut to the check's steps (wrap/check_rest.py). The model's `train_step`
(its own, or Keras's) is wrapped on the instance: Keras's train function looks the method up when it is
traced, inside `strategy.run`, so the wrapper runs on every replica, around the step the job runs. After
the step it hands a `tf.py_function` what that replica saw (a fingerprint of each example's features),
the scalar logs the step returned (its loss, a GAN's d_loss and g_loss), and, from the chief's first replica,
the model's weights: the reference run keeps them per step, the planned run sets them against the
reference's of the same step. So a custom step, two optimizers, a model without a compiled loss or with
several outputs are all compared as they train, and a failure inside the step is the script's failure at
its own line.

Every fit call is recorded, in order, in both runs (a distiller's teacher, then its student); the steps
are numbered across the calls and each says its call. Before a call's first step (Keras has built the
model and its optimizer by then: `make_train_function` follows the build) the planned run starts from the
reference's weights, as every replica of a real run starts from the chief's.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any, Dict, List, Optional

import numpy as np
import tensorflow as tf

from ..keras_support.optimization import current_learning_rate
from . import layers, loss_terms, weights
from .refusal import refuse
from .settings import RECORD, START_WEIGHTS, CheckSettings

# Weights kept per step only for models up to this size (floats): the reference writes one file per step.
PER_STEP_WEIGHTS_LIMIT = 5_000_000
STEP_WEIGHTS = "step-{step}.npz"  # the reference's weights after each step (1-based, across the fit calls)
_INSTALLED = "_smtrain_check_recorder"


def fingerprints(values: Any) -> List[str]:
    """One short hash per example (row) of a batch's features, all inputs together."""
    arrays = [np.asarray(v) for v in values]
    rows = int(arrays[0].shape[0]) if arrays and arrays[0].ndim else 0
    found = []
    for i in range(rows):
        digest = hashlib.blake2b(digest_size=8)
        for array in arrays:
            digest.update(np.ascontiguousarray(array[i]).tobytes())
        found.append(digest.hexdigest())
    return found


def _features(data: Any) -> Any:
    """The inputs of a batch as Keras hands it to train_step: `(x, y[, w])`, or `x` alone."""
    if isinstance(data, (tuple, list)) and 1 <= len(data) <= 3:
        return data[0]
    return data


def _scalar_logs(logs: Any) -> Dict[str, tf.Tensor]:
    if not isinstance(logs, dict):
        return {}
    found = {}
    for name, value in logs.items():
        try:
            found[str(name)] = tf.reduce_mean(tf.cast(value, tf.float32))
        except (TypeError, ValueError):
            continue  # a log that is no number (a string, a structure): not compared
    return found


def _model_size(model: Any) -> int:
    return int(sum(int(np.prod(v.shape)) for v in model.weights))


class Recorder:
    """One per model: what each replica of this worker's steps saw and returned, call by call. The calls of every
    model the script trains go into one list, this worker's record (`calls`, shared)."""

    calls: List[Dict[str, Any]] = []  # every model's, in order: {"location", "steps": {index: {replica: entry}}}
    models = 0  # the models trained so far (each starts alike under its own number)

    def __init__(self, settings: CheckSettings, dist: Any, model: Any, say: Any, place: loss_terms.Place) -> None:
        self.settings, self.dist, self.model, self.say, self.place = settings, dist, model, say, place
        self.started = False
        self.term_places: List[str] = []  # where the script made each term of the loss its step differentiates

    # Around each fit call -------------------------------------------------------------------------------------
    def begin_call(self, location: str) -> None:
        # The terms' places as last traced (Keras keeps its train function from call to call of one model).
        # same_start: the model's first call starts from the reference's weights; a later one from its own
        self.calls.append({"location": location, "steps": {}, "terms": list(self.term_places),
                           "same_start": not self.started})

    def before_first_step(self) -> None:
        """Once Keras has built the model: both runs start alike (the reference's weights), random layers off."""
        if self.started:
            return
        self.started = True
        Recorder.models += 1
        name = START_WEIGHTS if Recorder.models == 1 else f"start-{Recorder.models}.npz"
        try:
            weights.start_alike(self.settings, self.model, name)
        except weights.DifferentModels as exc:
            refuse(self.settings, str(exc))  # says why, and ends the process
        except FileNotFoundError:
            refuse(self.settings, f"the planned run trains a model ({Recorder.models}) the one-device run did not")
        if not self.settings.random_layers:
            off = layers.switch_off_random(self.model)
            self.say(f"check: random layers off: {', '.join(off) or 'none found'}")

    def end_call(self) -> None:
        """This worker's record so far written (each call's end rewrites it, so a later failure keeps it)."""
        record = self._record()
        path = os.path.join(self.settings.directory, RECORD.format(index=self.dist.worker_index))
        with open(path + ".tmp", "w", encoding="utf-8") as out:
            json.dump(record, out)
        os.replace(path + ".tmp", path)
        steps = len(record["steps"])
        self.say(f"check: {steps} steps recorded ({len(self.calls)} fit call{'s' if len(self.calls) != 1 else ''})")

    # Inside the step ------------------------------------------------------------------------------------------
    def wrap(self, original: Any) -> Any:
        recorder = self

        def train_step(data: Any) -> Any:
            with loss_terms.capturing() as targets:
                logs = original(data)  # the model's own step: what the paid job runs
            try:
                terms = loss_terms.terms(targets, recorder.place)
            except Exception:  # noqa: BLE001 - a graph smtrain cannot take apart: no terms, no scaling cause
                terms = []
            recorder.term_places = [where for _, where in terms]  # traced once per replica, alike
            recorder.calls[-1]["terms"] = recorder.term_places
            scalars = _scalar_logs(logs)
            context = tf.distribute.get_replica_context()
            replica = context.replica_id_in_sync_group if context is not None else 0
            features = [tf.convert_to_tensor(t) for t in tf.nest.flatten(_features(data))]
            keep = _model_size(recorder.model) <= PER_STEP_WEIGHTS_LIMIT and recorder.dist.is_chief
            # Read after the step's updates (automatic control dependencies order a read after its writes).
            values = [tf.convert_to_tensor(v) for v in recorder.model.weights] if keep else []
            names = list(scalars)
            inputs = [tf.cast(replica, tf.int32), *[value for value, _ in terms], *scalars.values(), *features,
                      *values]

            def seen(replica_id: Any, *rest: Any) -> int:
                recorder._seen(int(replica_id), [float(t.numpy()) for t in rest[:len(terms)]], names,
                               rest[len(terms):], len(features))
                return 0

            done = tf.py_function(seen, inputs, tf.int32)
            with tf.control_dependencies([done]):
                return tf.nest.map_structure(tf.identity, logs)

        return train_step

    def _seen(self, replica: int, terms: List[float], names: List[str], rest: Any, features: int) -> None:
        losses = {name: float(value.numpy()) for name, value in zip(names, rest[:len(names)])}  # noqa: B905
        arrays = [np.asarray(t.numpy()) for t in rest[len(names):len(names) + features]]
        values = rest[len(names) + features:]
        steps = self.calls[-1]["steps"]
        index = sum(1 for entry in steps.values() if replica in entry)  # this replica's steps in this call
        if index >= self.settings.steps:
            return  # past the check's steps (the call's last epoch runs to its end): not compared
        entry = steps.setdefault(index, {})
        entry[replica] = {"losses": losses, "examples": fingerprints(arrays), "terms": terms}
        if replica == 0:
            entry["learning_rate"] = self._rate()
            if values:
                entry["weights"] = self._step_weights(index, [np.asarray(v.numpy()) for v in values])

    def _rate(self) -> Optional[float]:
        optimizer = getattr(self.model, "optimizer", None)
        try:
            rate = current_learning_rate(optimizer) if optimizer is not None else None
        except Exception:  # noqa: BLE001 - an optimizer of the script's own: no rate to compare
            rate = None
        return None if rate is None else float(f"{rate:.7g}")  # a float32's digits, not its binary tail

    def _step_weights(self, index: int, arrays: List[np.ndarray]) -> Optional[float]:
        """Reference: keep this step's weights. Planned run: their difference from the reference's, relative to the
        reference's norm (None where the reference kept none)."""
        step = sum(len(call["steps"]) for call in self.calls[:-1]) + index + 1
        if self.settings.is_reference:
            np.savez(os.path.join(self.settings.directory, STEP_WEIGHTS.format(step=step)), *arrays)
            return 0.0
        assert self.settings.reference is not None
        path = os.path.join(self.settings.reference, STEP_WEIGHTS.format(step=step))
        if not os.path.exists(path):
            return None
        with np.load(path) as found:
            theirs = [found[f"arr_{i}"] for i in range(len(found.files))]
        if [a.shape for a in theirs] != [a.shape for a in arrays]:
            return None
        difference = np.sqrt(sum(float(np.sum((a.astype(np.float64) - b.astype(np.float64)) ** 2))
                                 for a, b in zip(arrays, theirs)))  # noqa: B905 - same lengths, checked above
        norm = np.sqrt(sum(float(np.sum(b.astype(np.float64) ** 2)) for b in theirs))
        return float(difference / norm) if norm > 0 else float(difference)

    # The record -----------------------------------------------------------------------------------------------
    def _record(self) -> Dict[str, Any]:
        steps: List[Dict[str, Any]] = []
        calls = []
        for number, call in enumerate(self.calls, start=1):
            recorded = [call["steps"][i] for i in sorted(call["steps"])]
            calls.append({"location": call["location"], "first_step": len(steps) + 1, "steps": len(recorded),
                          "terms": list(call["terms"]), "same_start": call.get("same_start", True)})
            for entry in recorded:
                replicas = sorted(k for k in entry if isinstance(k, int))
                losses = [entry[r]["losses"] for r in replicas]
                steps.append({
                    "call": number, "replica_losses": losses, "replica_terms": [entry[r]["terms"] for r in replicas],
                    "learning_rate": entry.get("learning_rate"),
                    "replicas": [entry[r]["examples"] for r in replicas],
                    "weights_relative": entry.get("weights")})
        record: Dict[str, Any] = {
            "worker": self.dist.worker_index, "workers": self.dist.num_workers, "replicas": self.dist.num_replicas,
            "local_replicas": len(steps[0]["replicas"]) if steps else 0, "strategy": self.dist.kind,
            "stands_for": self.settings.stands_for, "layers": layers.inventory(self.model), "steps_per_epoch": 0,
            "calls": calls, "steps": steps}
        if self.dist.is_chief:
            weights.save_end(self.settings, self.model)
            if not self.settings.is_reference:
                try:
                    record["weights"] = weights.compare_end(self.settings, self.model)
                except weights.DifferentModels as exc:
                    record["different_models"] = str(exc)
        return record


def recorder_for(settings: CheckSettings, dist: Any, model: Any, say: Any, place: loss_terms.Place) -> Recorder:
    """The model's recorder, its train_step and make_train_function wrapped on the instance the first time.
    `place`: a frame's file and line as the script's (`train.py:31`), None for a file not the job's code."""
    found = getattr(model, _INSTALLED, None)
    if found is not None:
        return found
    recorder = Recorder(settings, dist, model, say, place)
    original_step = model.train_step
    model.train_step = recorder.wrap(original_step)
    original_make = model.make_train_function

    def make_train_function(*args: Any, **kwargs: Any) -> Any:
        recorder.before_first_step()  # Keras built the model (and its optimizer) before it makes the function
        return original_make(*args, **kwargs)

    model.make_train_function = make_train_function
    object.__setattr__(model, _INSTALLED, recorder)
    return recorder
