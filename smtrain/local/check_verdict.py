"""Two check runs set side by side: equivalent, or where they part and the likely cause, found by what differs.

The one-device run (the reference) and the planned run start from the same weights and, when the job
is right, train on the same examples per step at the same rate. Then only float32 rounding separates
them: each replica sums its share of the batch, the shares are added across replicas and hosts, so
the same numbers are added in another order. The tolerances below are set for that, with room: the
differences they allow are orders of magnitude above what rounding gives over a few dozen steps
(typically 1e-7 to 1e-5) and orders below what any of the mistakes below gives (1e-3 and more).

Causes, in the order they are looked for; every one found is reported, in this order (the data only where the
batches match, the layers only where the same examples still part):
    global_batch   the steps train on another number of examples than one device with the planned batch
    data           the workers' examples are not one device's: some taken twice, some never (counted)
    learning_rate  the rate differs from the planned one (scaled twice, or not at all)
    loss_scaling   a term of the loss the step differentiates adds up over the replicas to N times one device's
                   (computed whole on each replica, then summed), or to 1/N (scaled twice): named at its line
    batch_norm     BatchNormalization normalises per replica
    randomness     dropout or noise drawn per replica
    scope          the planned run failed: a model or optimizer made outside the strategy's scope
    failed         the planned run failed where one device did not, for another reason
    unexplained    they part, and none of the above shows why
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from smtrain.local.check_records import RunRecord, StepRecord

LOSS_TOLERANCE = 1e-4  # relative, each step's loss
WEIGHTS_TOLERANCE = 1e-3  # relative to the weights' norm, after the last step
RATE_TOLERANCE = 1e-6
# A loss term's value summed over the replicas against one device's, at the same weights and examples: exactly 1x
# when it is scaled for the replicas, Nx when it is not, but for what acts per replica (BatchNormalization's
# statistics, dropout), which moves it by far less than this; 1x and 2x (the nearest N) are far apart.
SCALING_TOLERANCE = 0.05
TOLERANCE_WHY = ("float32 sums added in another order (per replica, then across replicas and hosts) differ in their "
                 "last bits, and the differences grow a little with each step; the mistakes the check looks for "
                 "differ by 1e-3 or more from the first step they act on")


@dataclass(frozen=True)
class Cause:
    kind: str
    says: str
    fix: str
    counts: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Verdict:
    equivalent: bool
    steps: int
    loss_difference: float | None  # the largest relative difference of a step's loss (None: no step to compare)
    loss_step: int  # where (1-based)
    weights_difference: float | None  # the weights' difference after the last step, relative to their norm
    weights_name: str | None  # the weight that differs most
    first_step: int | None  # the first step where the runs part (1-based), None when equivalent
    causes: tuple[Cause, ...] = ()
    per_step: tuple[dict[str, float], ...] = ()
    loss_tolerance: float = LOSS_TOLERANCE
    weights_tolerance: float = WEIGHTS_TOLERANCE
    tolerance_why: str = TOLERANCE_WHY
    notes: tuple[str, ...] = ()  # what the verdict covered and what it saw beside its causes

    def to_dict(self) -> dict[str, Any]:
        """The verdict as JSON takes it: a number that is not finite (a NaN loss) is null."""
        return _finite(asdict(self))


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def relative(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.inf
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale > 0 else 0.0


def plural(count: int, word: str) -> str:
    """`1 step`, `2 steps`."""
    return f"{count} {word}" + ("" if count == 1 else "s")


def _batch_cause(one: RunRecord, planned: RunRecord) -> Cause | None:
    mine, theirs = planned.steps[0].examples, one.steps[0].examples
    if mine == theirs:
        return None
    per_replica = mine / max(planned.replicas, 1)
    planned_per_replica = theirs / max(planned.replicas, 1)
    says = (f"global batch: each step of the planned run trains on {mine} examples ({per_replica:g} per replica, "
            f"{plural(planned.replicas, 'replica')}), one device with the planned batch on {theirs} "
            f"({planned_per_replica:g} per replica)")
    if mine < theirs:
        fix = (f"a batch meant for one replica is used as the whole job's: multiply it by the replicas (in a script, "
               f"dataset.batch(n * strategy.num_replicas_in_sync)), or, if {mine} is meant for the whole job, say so "
               "(code.wrap_batch: global for a wrapped script)")
    else:
        fix = ("a global batch is multiplied by the replicas again: give smtrain the per-replica batch "
               "(training.batch_size_per_replica, smtrain_tf.fit's batch_size_per_replica), or batch the data once "
               "with the global size")
    return Cause("global_batch", says, fix, {"planned_run": mine, "one_device": theirs})


def _examples(step: StepRecord) -> Counter[str]:
    return Counter(e for replica in step.replicas for e in replica)


# Chance meetings an unseeded shuffle's examples would have with one device's before a difference with none is
# taken for augmentation: e^-7 (about 1e-3) is the chance of none by luck.
MEETINGS_FOR_AUGMENTATION = 7.0


def _meetings_expected(one: RunRecord, unmatched: int, distinct: int) -> float:
    """How many of `unmatched` examples, drawn at random from the data, would be among one device's `distinct`
    ones; 0 when the size of the data is not known."""
    size = one.steps_per_epoch * (one.steps[0].examples if one.steps else 0)
    return unmatched * distinct / size if size else 0.0


def _data_cause(one: RunRecord, planned: RunRecord, steps: int) -> Cause | None:
    wanted: Counter[str] = Counter()
    taken: Counter[str] = Counter()
    unmatched: Counter[str] = Counter()  # what a step of the planned run took that the same step of one device did not
    first, overlapping, common = None, 0, 0
    for i, (mine, theirs) in enumerate(zip(planned.steps[:steps], one.steps[:steps])):  # noqa: B905 - both have it
        mine_examples, theirs_examples = _examples(mine), _examples(theirs)
        if first is None and mine_examples != theirs_examples:
            first, common = i, sum((mine_examples & theirs_examples).values())
        wanted += theirs_examples
        taken += mine_examples
        unmatched += mine_examples - theirs_examples
        seen_by: Counter[str] = Counter()
        for replica in mine.replicas:
            seen_by.update(set(replica))
        overlapping += sum(1 for count in seen_by.values() if count > 1)
    if first is None:
        return None
    extra = sum((taken - wanted).values())
    missing = sum((wanted - taken).values())
    total = sum(taken.values())
    counts = {"first_step": first + 1, "examples": total, "taken_again": extra, "never_taken": missing,
              "same_step_overlaps": overlapping}
    size = planned.steps[first].examples
    if not overlapping and not any(example in wanted for example in unmatched) and \
            _meetings_expected(one, sum(unmatched.values()), len(wanted)) >= MEETINGS_FOR_AUGMENTATION:
        # What the steps took apart from one device's is nothing one device took at any step, no two replicas
        # share an example, and another choice from the same data would have met one device's examples many times
        # over: the features themselves changed at random in the input pipeline, per worker (augmentation).
        changed = sum(unmatched.values())
        says = (f"per-replica randomness in the data: {changed} of the {total} examples the planned run's "
                f"{plural(planned.replicas, 'replica')} took in {plural(steps, 'step')} are like none one device "
                "took: the input pipeline changes them at random (augmentation), with each worker's own random "
                "state")
        fix = ("expected of random augmentation, which one device cannot reproduce step by step; to compare the "
               "rest, seed the augmentation for the check (tf.random.Generator.from_seed, stateless ops), or move it "
               "into the model as Keras preprocessing layers and check with --random-layers off")
        return Cause("randomness", says, fix, {**counts, "changed": changed})
    if extra or missing or overlapping:
        maybe = ("" if overlapping or any(example in wanted for example in unmatched) else
                 "; or, as none of them is one device's, the input pipeline changes examples at random per worker "
                 "(augmentation): more steps (--check-steps) tell the two apart")
        says = (f"data: in {plural(steps, 'step')} the planned run's {plural(planned.replicas, 'replica')} took "
                f"{total} examples: {extra} of them more often than one device did (duplicated) and {missing} of one "
                f"device's never; {overlapping} times two replicas got the same example in the same step")
        fix = ("the workers do not share one order of the data: a shuffle (tf.data or NumPy) without a seed before "
               "the data is split between workers gives each worker its own order, so they overlap and miss "
               "examples; give the shuffle a seed (dataset.shuffle(n, seed=...)), or split first (by file) and "
               "shuffle each worker's share") + maybe
    else:
        says = (f"data order: the planned run takes the same examples as one device in another order (step "
                f"{first + 1} shares {common} of its {size} examples with one device's)")
        fix = ("the order depends on the layout: seed the shuffle (dataset.shuffle(n, seed=...)) and shuffle before "
               "batching, so that every layout reads one order")
    return Cause("data", says, fix, counts)


def _rate_cause(one: RunRecord, planned: RunRecord, spec_scaling: str | None) -> Cause | None:
    """The rates differ. The reference stands for the planned replicas, so the spec's scaling (training.lr_scaling,
    `spec_scaling`; None where the spec scales nothing for this program) gives it the planned rate too: what is
    left is the script's own doing, and the fix says who scales what."""
    mine, theirs = planned.steps[0].learning_rate, one.steps[0].learning_rate
    if mine is None or theirs is None or relative(mine, theirs) <= RATE_TOLERANCE:
        return None
    ratio = mine / theirs if theirs else math.inf
    says = (f"learning rate: the planned run trains at {mine:g}, one device with the planned batch at {theirs:g} "
            f"({ratio:g}x)")
    by_script = ("the script scales the rate with the replicas itself (a rate times num_replicas_in_sync, or "
                 "smtrain_tf.scaled_learning_rate)")
    if ratio > 1 and spec_scaling:
        fix = (f"the rate is scaled for the replicas twice: by the spec (training.lr_scaling: {spec_scaling}) and by "
               f"the script ({by_script[len('the script '):]}); keep one of them")
    elif ratio > 1:
        fix = (f"{by_script}, and the spec scales nothing (training.lr_scaling is not set): the planned run trains "
               "at a higher rate than one device on the same batches. If that is the rule you want (linear scaling "
               "for the larger global batch), it is expected, and it is all the check finds here; to compare the "
               "rest, scale in one place: set training.lr_scaling and leave the script's rate as one device's")
    elif spec_scaling:
        fix = (f"the rate is not scaled as the plan says: the spec scales it (training.lr_scaling: {spec_scaling}) "
               "and the planned run trains at less, so the script sets its own rate after smtrain's or undoes it: "
               "keep one of them")
    else:
        fix = ("the rate is not scaled as the plan says: the script's rate falls with the replicas and the spec "
               "scales nothing; set training.lr_scaling (linear or sqrt) or scale it in the script, not both")
    return Cause("learning_rate", says, fix, {"planned_run": mine, "one_device": theirs, "ratio": ratio})


def _term_ratios(one: RunRecord, planned: RunRecord) -> list[tuple[str, float]]:
    """Each loss term's replicas' sum over one device's value, at the first step of each model's first fit call
    (where the runs start from the same weights), named by where the script made it."""
    found: list[tuple[str, float]] = []
    for mine_call, their_call in zip(planned.calls, one.calls):  # noqa: B905 - the calls both made
        if not mine_call.get("same_start", True):
            continue  # a model's later call starts from its own weights, which may part already
        places = list(mine_call.get("terms") or ())
        if not places or places != list(their_call.get("terms") or ()):
            continue
        if not mine_call.get("steps") or not their_call.get("steps"):
            continue
        mine_at, their_at = int(mine_call["first_step"]) - 1, int(their_call["first_step"]) - 1
        if mine_at >= len(planned.steps) or their_at >= len(one.steps):
            continue
        mine, theirs = planned.steps[mine_at].terms, one.steps[their_at].terms
        if mine is None or theirs is None or not len(mine) == len(theirs) == len(places):
            continue
        for where, value, reference in zip(places, mine, theirs):  # noqa: B905 - same lengths, checked
            if reference and math.isfinite(value / reference):
                found.append((where, value / reference))
    return found


def _scaling_cause(one: RunRecord, planned: RunRecord) -> Cause | None:
    """A term of the loss the step differentiates that the replicas add up to N times (or 1/N) one device's: the
    all-reduce sums the replicas' gradients, so each replica's loss must be 1/N of its share's (Keras scales
    self.compute_loss and a loss object's call so; a loss function or ops.mean by hand it does not)."""
    replicas = planned.replicas
    if replicas < 2:
        return None
    whole: dict[str, float] = {}
    twice: dict[str, float] = {}
    for where, ratio in _term_ratios(one, planned):
        if abs(ratio / replicas - 1.0) <= SCALING_TOLERANCE:
            whole.setdefault(where, ratio)
        elif abs(ratio * replicas - 1.0) <= SCALING_TOLERANCE:
            twice.setdefault(where, ratio)
    if not whole and not twice:
        return None
    said, fixes = [], []
    if whole:
        places = "; ".join(whole)
        said.append(f"the loss term{'s' if len(whole) > 1 else ''} made at {places} add{'' if len(whole) > 1 else 's'} "
                    f"up over the {replicas} replicas to {replicas}x one device's at the same weights: each replica "
                    f"computes it whole for its share, not 1/{replicas} of it, and the replicas' gradients are summed, "
                    f"so it weighs {replicas} times what it does on one device")
        fixes.append("scale every term for the replicas as Keras scales its own: compute it with self.compute_loss "
                     "or a loss object (keras.losses.MeanSquaredError()(y, y_pred)), which Keras multiplies by "
                     "1/num_replicas_in_sync under a strategy, or divide the hand-written term by "
                     "tf.distribute.get_strategy().num_replicas_in_sync (a loss function such as "
                     "keras.losses.mean_squared_error, and ops.mean by hand, are not scaled); a loss with "
                     "reduction=\"sum\": divide it by the global batch (under Keras 2, tf_keras, only compute_loss "
                     "and compiled losses are scaled: a loss object called in the step is not, and takes "
                     "reduction=SUM there)")
    if twice:
        places = "; ".join(twice)
        said.append(f"the loss term{'s' if len(twice) > 1 else ''} made at {places} add{'' if len(twice) > 1 else 's'} "
                    f"up over the {replicas} replicas to 1/{replicas} of one device's: scaled for the replicas twice")
        fixes.append("divide by num_replicas_in_sync once: self.compute_loss (and under Keras 3 a loss object's "
                     "call) is already scaled by Keras, so leave out the script's own division for it")
    counts = {"replicas": replicas,
              "terms": [{"at": where, "ratio": ratio} for where, ratio in {**whole, **twice}.items()]}
    return Cause("loss_scaling", "loss scaling: " + "; and ".join(said), "; ".join(fixes), counts)


def _layer_causes(planned: RunRecord) -> list[Cause]:
    found = []
    if planned.batch_norm and planned.replicas > 1:
        names = ", ".join(planned.batch_norm)
        found.append(Cause(
            "batch_norm",
            f"per-replica statistics: BatchNormalization ({names}) normalises each replica's share of the batch "
            f"({plural(planned.replicas, 'replica')}), one device the whole batch",
            "use synchronized batch normalization: tf.keras.layers.BatchNormalization(synchronized=True) "
            "(SyncBatchNormalization: tf.keras.layers.experimental.SyncBatchNormalization before TensorFlow 2.12)",
            {"layers": list(planned.batch_norm)}))
    generators = [item for item in planned.random_layers if item.get("class") == "SeedGenerator"]
    if generators and planned.replicas > 1:
        names = ", ".join(f"'{item['name']}'" for item in generators)
        found.append(Cause(
            "randomness",
            f"per-replica randomness: the step draws from the model's own SeedGenerator ({names}), whose state is "
            f"one variable the strategy mirrors: every one of the {planned.replicas} replicas draws the same values "
            "for its share of the batch, where one device draws the whole batch's",
            "one device cannot draw the replicas' values step by step, so the weights part by this much even when "
            "all else is right; the global batch repeats each draw on every replica: to give each replica its own, "
            "draw them in the input pipeline (a dataset of random inputs zipped with the data) or fold the replica "
            "into a stateless seed (tf.random.stateless_normal(shape, seed=[step, tf.distribute."
            "get_replica_context().replica_id_in_sync_group]))",
            {"seed_generators": [dict(item) for item in generators]}))
    layers = [item for item in planned.random_layers if item.get("class") != "SeedGenerator"]
    if layers:
        seeded = [layer for layer in layers if layer.get("seed") is not None]
        names = ", ".join(f"{layer['class']} layer '{layer['name']}'" for layer in layers)
        off = ("to compare the rest, check with the layers off: `smtrain check --random-layers off` (`submit --check "
               "--random-layers off`; random_layers=\"off\" from Python)")
        if seeded:
            fix = ("a fixed seed in a layer gives every replica the same random mask for its share, so the masks "
                   "repeat across the global batch: leave the layer's seed out (seed the job with training.seed); "
                   + off)
        else:
            fix = ("one device cannot draw the replicas' masks step by step, so this much is expected; note that "
                   "under Keras 3 a layer's seed state is a variable the strategy mirrors, so every replica may draw "
                   "the same mask for its share (masks repeating across the global batch), which Keras 2's "
                   "per-replica random state does not; " + off)
        one = len(layers) == 1
        found.append(Cause("randomness", f"per-replica randomness: {names} draw{'s its' if one else ' their'} "
                           "random values on each replica, for that replica's share of the batch",
                           fix, {"layers": [dict(layer) for layer in layers]}))
    return found


def _first_parting(one: RunRecord, planned: RunRecord, steps: int) -> int | None:
    for i in range(steps):
        if relative(planned.steps[i].loss, one.steps[i].loss) > LOSS_TOLERANCE:
            return i
    return None


def _weights_each_step(planned: RunRecord, steps: int) -> bool:
    return steps > 0 and all(step.weights_relative is not None for step in planned.steps[:steps])


def _first_weights_parting(planned: RunRecord, steps: int) -> int | None:
    """Recorded in Keras's fit: the first step after which the weights differ from one device's."""
    for i in range(steps):
        found = planned.steps[i].weights_relative
        if found is not None and found > WEIGHTS_TOLERANCE:
            return i
    return None


def _loss_notes(one: RunRecord, planned: RunRecord, steps: int) -> list[str]:
    """The step's logged loss parts from one device's while every step's weights agree: a log, not the training."""
    ratios = [planned.steps[i].loss / one.steps[i].loss for i in range(steps) if one.steps[i].loss]
    replicas = max(planned.replicas, 1)
    if ratios and replicas > 1 and all(abs(r * replicas - 1.0) <= 10 * LOSS_TOLERANCE * replicas for r in ratios):
        return [f"the weights agree with one device's after every step, but the loss the step logs is 1/{replicas} of "
                f"one device's at every step: the train_step logs the value of self.compute_loss (or of a loss "
                f"object), which Keras scales by 1/num_replicas_in_sync for the gradients under a strategy; its "
                f"History, progress bar and metric lines show the loss {replicas} times too small (log "
                f"`loss * tf.distribute.get_strategy().num_replicas_in_sync`, or leave the loss to Keras's metrics)"]
    return ["the weights agree with one device's after every step, but the loss the step logs does not: what the "
            "step returns as its loss is not what one device's returns (the training itself is the same)"]


def _call_notes(planned: RunRecord, steps: int) -> list[str]:
    if not planned.calls:
        return []
    said = [f"call {n} at {call['location']} (steps {call['first_step']}-{call['first_step'] + call['steps'] - 1})"
            if call["steps"] else f"call {n} at {call['location']} (no step)"
            for n, call in enumerate(planned.calls, start=1)]
    return [f"compared {plural(len(planned.calls), 'fit call')} inside Keras's own fit, the model's own train_step "
            f"recorded, {plural(steps, 'step')} in all: " + "; ".join(said)]


def _per_step(one: RunRecord, planned: RunRecord, steps: int) -> tuple[dict[str, float], ...]:
    rows = []
    for i, (mine, theirs) in enumerate(zip(planned.steps[:steps], one.steps[:steps]), start=1):  # noqa: B905
        row = {"step": i, "one_device": theirs.loss, "planned_run": mine.loss,
               "relative": relative(mine.loss, theirs.loss)}
        if mine.weights_relative is not None:  # recorded in Keras's fit: the weights after the step too
            row["weights_relative"] = mine.weights_relative
        rows.append(row)
    return tuple(rows)


def _first_step(causes: list[Cause], parting: int | None, steps: int) -> int:
    """Where the runs part: the first step whose loss differs, else the step the cause shows at."""
    if parting is not None:
        return parting + 1
    if causes[0].kind == "data":
        return int(causes[0].counts["first_step"])
    return 1 if causes[0].kind in ("global_batch", "learning_rate", "loss_scaling") else steps


def _weights_difference(rows: tuple[dict[str, Any], ...]) -> dict[str, Any] | None:
    """All the weights' difference relative to all their norm, and the weight that differs most.

    Over all weights, not each alone: a weight whose true gradient is zero (a bias before BatchNormalization)
    moves by rounding noise alone, which Adam scales up to full steps, so its own relative difference means
    nothing; the model's does.
    """
    if not rows:
        return None
    difference = math.sqrt(sum(row["difference"] ** 2 for row in rows))
    norm = math.sqrt(sum(row.get("norm", 0.0) ** 2 for row in rows))
    worst = max(rows, key=lambda row: row["difference"])
    return {"relative": difference / norm if norm > 0 else difference, "name": worst["name"]}


def compare(one: RunRecord, planned: RunRecord, spec_scaling: str | None = None) -> Verdict:
    """The verdict on two runs' records (the reference's and the planned run's), with every cause found, the
    most certain first: the batch, the data, the rate (each measured), then the layers that act per replica
    (read from the model, and only where the same examples at the same rate still part). The data is compared
    only between steps of the same size: with another batch, every step's examples differ by that alone.
    `spec_scaling`: training.lr_scaling where the spec scales this program's rate (for the rate's fix)."""
    steps = min(len(one.steps), len(planned.steps))
    per_step = _per_step(one, planned, steps)
    worst = max(per_step, key=lambda row: row["relative"]) if per_step else {"relative": 0.0, "step": 0}
    weights = _weights_difference(planned.weights)
    parting = _first_parting(one, planned, steps)
    notes = _call_notes(planned, steps)
    if _weights_each_step(planned, steps):
        # Recorded in Keras's fit: the weights after each step decide; the loss is what the step chose to log.
        loss_parting, parting = parting, _first_weights_parting(planned, steps)
        if loss_parting is not None and parting is None:
            notes += _loss_notes(one, planned, steps)
    weights_part = weights is not None and weights["relative"] > WEIGHTS_TOLERANCE
    causes: list[Cause] = []
    if steps:
        batch = _batch_cause(one, planned)
        data = None if batch is not None else _data_cause(one, planned, steps)
        rate = _rate_cause(one, planned, spec_scaling)
        causes += [found for found in (batch, data, rate) if found is not None]
        if batch is None and data is None and (parting is not None or weights_part):
            scaling = _scaling_cause(one, planned)
            if scaling is not None:
                causes.append(scaling)
            causes.extend(_layer_causes(planned))  # the same examples, batch and rate: what trains per replica
    equivalent = not causes and parting is None and not weights_part
    if not equivalent and not causes:
        where = f"step {parting + 1}" if parting is not None else f"the weights after step {steps}"
        causes.append(Cause("unexplained", f"the runs part at {where}, with the same examples, batch and rate",
                            "run `smtrain submit --local` on the planned layout and compare its loss with a "
                            "one-device run; report it if the job's code does nothing per replica"))
    first = None
    if not equivalent:
        first = _first_step(causes, parting, steps)
    return Verdict(equivalent=equivalent, steps=steps, loss_difference=float(worst["relative"]),
                   loss_step=int(worst["step"]), weights_difference=float(weights["relative"]) if weights else None,
                   weights_name=weights["name"] if weights else None, first_step=first, causes=tuple(causes),
                   per_step=per_step, notes=tuple(notes))


_SCOPE_SIGNS = ("not created under the job's strategy", "inside \"with strategy.scope()\"", "strategy.scope()")


def _last_error(reason: str) -> str:
    """A script's failure as SageMaker words it (ExecuteUserScriptError, its traceback's lines joined by " / "):
    its last line, the exception itself."""
    message = re.search(r'ErrorMessage "(.*?)"\s*(?:\nCommand|$)', reason, re.DOTALL)
    if message is None:
        return reason.strip()
    lines = [line.strip() for line in message.group(1).split(" / ") if line.strip()]
    return lines[-1] if lines else reason.strip()


def failed(reason: str) -> Verdict:
    """The planned run failed where one device did not: a model or optimizer made outside the strategy's scope
    (which one device never minds), or whatever its reason says."""
    reason = _last_error(reason)
    if any(sign in reason for sign in _SCOPE_SIGNS):
        cause = Cause("scope", f"a model or optimizer created outside the strategy's scope: {reason}",
                      "build and compile the model (and its optimizer) inside `with strategy.scope():` (smtrain_tf: "
                      "`with smtrain_tf.strategy().scope():`), after the strategy is made")
    else:
        cause = Cause("failed", f"the planned run failed where one device did not: {reason}",
                      "fix what the reason names; `smtrain submit --local` runs the planned layout with all its output")
    return Verdict(equivalent=False, steps=0, loss_difference=None, loss_step=0, weights_difference=None,
                   weights_name=None, first_step=1, causes=(cause,), per_step=())


def failed_after_training(reason: str, compared: Verdict, one_device: str | None = None,
                          planned: bool = True) -> Verdict:
    """The planned run recorded its steps, then the rest of the script failed (evaluate, a save, a second fit):
    the paid job would fail there after its training was paid for. The steps' own causes, if any, follow.
    `one_device`: the one-device run's failure after its steps, if it failed too; `planned=False`: only it did."""
    said = _last_error(reason).removeprefix("AlgorithmError: ")  # SageMaker's (and a local run's) failure class
    if not planned:
        where = "the one-device run fails after training, where the planned run does not"
    elif one_device is not None and _last_error(one_device) == _last_error(reason):
        where = "the planned run fails after training, as one device does"
    else:
        where = "the planned run fails after training"
    cause = Cause("after-training", f"{where}: {said}",
                  "fix the line it names (the job would fail there after training); `smtrain submit --local` runs "
                  "the whole script in the planned layout")
    return replace(compared, equivalent=False, causes=(cause, *compared.causes))
