"""The loss a step differentiates, split into its terms, each named by the script's line that made it.

Under a tf.distribute strategy the replicas' gradients are summed, so a step is one device's only when the
replicas' losses add up to one device's loss on the whole batch: Keras scales what it computes for that
(`self.compute_loss`, a loss object's call and the model's own `add_loss` terms are multiplied by
1/num_replicas_in_sync in keras/src/losses/loss.py's `scale_loss_for_distribution`), a loss function
(`keras.losses.mean_squared_error`) or a term written by hand (`ops.mean(...)`) is not. Rather than guess
from names, the check measures it: while the model's step is traced, the tensor each `tf.GradientTape.gradient`
call differentiates is kept (the tape's own method, wrapped once, records and calls through); the sum it is
made of (`a + b`, `a - b`, `add_n`, Keras's `ops.sum` of a list of losses) is taken apart into its terms, and
each term's value is recorded on every replica. smtrain adds the replicas' values up and sets each term
against the same term on one device at the same weights: 1x is scaled, Nx is summed over N replicas without
being scaled (smtrain.local.check_verdict's scaling cause). Each term is named by the frames of the script
that made its op (an op's traceback is kept by TensorFlow while a function is traced).
"""

from __future__ import annotations

import contextlib
import os
import threading
from typing import Any, Callable, Iterator, List, Optional, Tuple

import tensorflow as tf

# Ops whose value is the sum of their inputs (a term's sign does not matter: each is set against itself).
_SUMS = ("AddV2", "Add", "AddN", "Sub")
_PASS_THROUGH = ("Identity", "Neg")  # tf.identity (an optimizer's scale_loss, Keras's outputs) and a minus
MAX_TERMS = 16  # a loss of more parts is taken apart no further (the rest stay whole)

Place = Callable[[str, int], Optional[str]]  # a frame's file and line -> `train.py:31`, None if not the script's

_CHECK_PACKAGE = os.path.dirname(os.path.abspath(__file__))  # keras_steps' wrapper: the frames below it are the step's
_local = threading.local()  # per thread: MirroredStrategy traces each replica's step in a thread of its own
_installed = False


def _install() -> None:
    """Wrap GradientTape.gradient once: it records its target for a step being traced, and calls through."""
    global _installed
    if _installed:
        return
    _installed = True
    original = tf.GradientTape.gradient

    def gradient(self: Any, target: Any, sources: Any, *args: Any, **kwargs: Any) -> Any:
        found = getattr(_local, "targets", None)
        if found is not None and _any_variable(sources):  # not an inner tape's (WGAN-GP's penalty: by its inputs)
            found.append(target)
        return original(self, target, sources, *args, **kwargs)

    tf.GradientTape.gradient = gradient


def _any_variable(sources: Any) -> bool:
    """Whether a tape differentiates with respect to variables (tf.Variable, or Keras 3's Variable over one)."""
    try:
        flat = tf.nest.flatten(sources)
    except (TypeError, ValueError):
        return False
    return any(isinstance(s, tf.Variable) or "Variable" in type(s).__name__ for s in flat)


@contextlib.contextmanager
def capturing() -> Iterator[List[Any]]:
    """The targets differentiated in this thread while the block runs (the model's own step, being traced)."""
    _install()
    found: List[Any] = []
    previous = getattr(_local, "targets", None)
    _local.targets = found
    try:
        yield found
    finally:
        _local.targets = previous


def _parts(tensor: Any) -> List[Any]:
    op = tensor.op
    if op.type in _SUMS or op.type in _PASS_THROUGH:
        return list(op.inputs)
    if op.type == "Sum" and tensor.shape.rank == 0 and op.inputs[0].op.type == "Pack":
        stacked = list(op.inputs[0].op.inputs)  # ops.sum([loss, *extra]): Keras's compute_loss of several losses
        if all(t.shape.rank == 0 for t in stacked):
            return stacked
    return []


def _where(tensor: Any, place: Place) -> str:
    """The script's innermost frame that made the term (`train.py:31 (train_step)`), and the function of the
    script's that called it there (a loss function of the script's own, called by its train_step). Only the frames
    below smtrain's wrapper of the step count: above it are Keras's fit and the script's own call of it, which one
    device traces in its own thread and MirroredStrategy's replicas in theirs."""
    traceback = list(getattr(tensor.op, "traceback", None) or ())
    below = max((i for i, f in enumerate(traceback) if f.filename.startswith(_CHECK_PACKAGE + os.sep)), default=-1)
    frames = [(place(f.filename, f.lineno), f.name) for f in traceback[below + 1:]]
    inner = next((i for i in range(len(frames) - 1, -1, -1) if frames[i][0] is not None), None)
    if inner is None or frames[inner][1] == "<module>":
        return "Keras's train_step"  # no frame of the script's: Keras's own step (its losses are scaled)
    where, name = frames[inner]
    said = f"{where} ({name})"
    if inner > 0 and frames[inner - 1][0] is not None and frames[inner - 1][1] != "<module>":
        said += f", called at {frames[inner - 1][0]} ({frames[inner - 1][1]})"  # called by the script directly
    return said


def _value(leaf: Any, root: Any) -> Any:
    """A term's value as the gradient counts it: summed over the target's shape (a scalar added to a loss per
    example counts once per example)."""
    try:
        leaf = tf.broadcast_to(leaf, tf.shape(root))
    except (TypeError, ValueError):
        pass
    return tf.cast(tf.reduce_sum(leaf), tf.float32)


def terms(targets: List[Any], place: Place) -> List[Tuple[Any, str]]:
    """Each target's terms in order, as (a scalar float32 tensor, where the script made it). Only a traced target of
    the graph being built counts (an eager step has none to take apart)."""
    graph = tf.compat.v1.get_default_graph()
    found: List[Tuple[Any, str]] = []
    for target in targets:
        for tensor in tf.nest.flatten(target):
            if not tf.is_tensor(tensor) or getattr(tensor, "graph", None) is not graph:
                continue
            if not (tensor.dtype.is_floating and hasattr(tensor, "op")):
                continue
            pending, leaves = [tensor], []
            while pending:
                current = pending.pop(0)
                parts = _parts(current)
                if parts and len(leaves) + len(pending) + len(parts) <= MAX_TERMS:
                    pending[:0] = parts  # in the order written
                else:
                    leaves.append(current)
            found += [(_value(leaf, tensor), _where(leaf, place)) for leaf in leaves]
    return found
