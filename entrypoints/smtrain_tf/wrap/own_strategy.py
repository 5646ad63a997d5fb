"""A script's own `tf.distribute.MirroredStrategy()` (or MultiWorkerMirroredStrategy()) is the wrap's strategy.

Every tutorial builds its strategy itself (`strategy = tf.distribute.MirroredStrategy()`, then
`with strategy.scope(): ...`). Under the wrap a second strategy cannot work: TensorFlow refuses to
mix it with the one already set ("Mixing different tf.distribute.Strategy objects") once there are
two replicas, and across hosts the script's MirroredStrategy would train each host apart. So, once
the wrap has set a strategy, those names build nothing: calling them returns the wrap's strategy
(on one host the same devices; across hosts the wrap's MultiWorkerMirrored), and the log says so at
the script's line. `isinstance(s, tf.distribute.MirroredStrategy)` keeps TensorFlow's own answer.

What the script gets answers as the class it asked for would on this layout: on one host,
`MultiWorkerMirroredStrategy()` is the wrap's MirroredStrategy answering as TensorFlow's own
MultiWorkerMirroredStrategy does there (its `cluster_resolver` a TFConfigClusterResolver read from
TF_CONFIG, whose task_type and task_id are None without one; `extended.experimental_between_graph`
True; isinstance of the class asked for); every other attribute and method is the wrap's strategy's.
`MirroredStrategy()` across hosts is the wrap's MultiWorkerMirrored, which has every public attribute
a MirroredStrategy has.

A call the wrap cannot stand for (explicit devices, an explicit cluster resolver) fails at its line
with the reason; preflight refuses the same before the job is paid for. Options about how gradients
travel (cross_device_ops, communication options) are left to the wrap's strategy, with a note.

The wrap's strategy records the batches a script makes with `num_replicas_in_sync`
(distribute/replica_count.py), so that such a batch is taken as global.
"""

from __future__ import annotations

import sys
from typing import Any, Dict, Tuple

import tensorflow as tf

from ..distribute.replica_count import mark_replica_count
from . import fit_inputs
from .context import Unsupported, WrapContext

# Arguments that name what to run on: the wrap's strategy already decided that from the job's layout.
_PLACEMENT = ("devices", "cluster_resolver")
# Arguments about how replicas exchange gradients: the wrap's strategy keeps its own choice.
_TRANSPORT = ("cross_device_ops", "communication_options", "communication")
# tf.distribute.MultiWorkerMirroredStrategy is a class of another name.
_PUBLIC_NAMES = {"CollectiveAllReduceStrategy": "MultiWorkerMirroredStrategy",
                 "_CollectiveAllReduceStrategyExperimental": "experimental.MultiWorkerMirroredStrategy"}


def _bound(original: type, args: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Dict[str, Any]:
    import inspect

    bound = inspect.signature(original.__init__).bind(None, *args, **kwargs)
    return {name: value for name, value in list(bound.arguments.items())[1:] if value is not None}


_MWMS_NAMES = ("CollectiveAllReduceStrategy", "_CollectiveAllReduceStrategyExperimental")


class _ExtendedAsAsked:
    """A MirroredStrategy's `extended`, answering as a one-host MultiWorkerMirroredStrategy's would."""

    def __init__(self, extended: Any) -> None:
        object.__setattr__(self, "_smtrain_extended", extended)

    @property
    def experimental_between_graph(self) -> bool:
        return True

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_smtrain_extended"), name)


class _MultiWorkerAsAsked:
    """The wrap's MirroredStrategy handed to a script that asked for MultiWorkerMirroredStrategy() on one host.

    `scope()`, `run()`, `num_replicas_in_sync` and the rest are the wrap's strategy's own (Keras sees that
    one); what differs on this layout answers as TensorFlow's MultiWorkerMirroredStrategy would."""

    def __init__(self, strategy: Any, asked: type) -> None:
        object.__setattr__(self, "_smtrain_strategy", strategy)
        object.__setattr__(self, "_smtrain_asked", asked)
        object.__setattr__(self, "_smtrain_resolver", tf.distribute.cluster_resolver.TFConfigClusterResolver())
        object.__setattr__(self, "_smtrain_extended", _ExtendedAsAsked(strategy.extended))

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # isinstance(s, tf.distribute.MultiWorkerMirroredStrategy), as TensorFlow's
        return object.__getattribute__(self, "_smtrain_asked")

    @property
    def cluster_resolver(self) -> Any:
        return object.__getattribute__(self, "_smtrain_resolver")

    @property
    def extended(self) -> Any:
        return object.__getattribute__(self, "_smtrain_extended")

    def __getattr__(self, name: str) -> Any:
        return getattr(object.__getattribute__(self, "_smtrain_strategy"), name)

    def __repr__(self) -> str:
        return repr(object.__getattribute__(self, "_smtrain_strategy"))


def _as_asked(original: type, strategy: Any) -> Any:
    """The wrap's strategy as the class the script asked for would answer on this layout."""
    wanted_multi_worker = original.__name__ in _MWMS_NAMES
    if wanted_multi_worker and not isinstance(strategy, tf.distribute.MultiWorkerMirroredStrategy):
        return _MultiWorkerAsAsked(strategy, original)
    return strategy


def _stand_in(original: type, ctx: WrapContext) -> type:
    """A class under `original`'s name whose call returns the wrap's strategy; isinstance stays TensorFlow's."""

    def call(cls: type, *args: Any, **kwargs: Any) -> Any:
        location = fit_inputs.caller_location(1, ctx.settings.script_dir)
        given = _bound(original, args, kwargs)
        shown = _PUBLIC_NAMES.get(original.__name__, original.__name__)
        for name in _PLACEMENT:
            if name in given:
                raise Unsupported(
                    f"{location}: tf.distribute.{shown}({name}=...): the wrap runs the script under the job's "
                    f"{ctx.kind} strategy over every device of every host, and cannot stand for a strategy on chosen "
                    f"{'devices' if name == 'devices' else 'cluster'}; call tf.distribute.{shown}() without "
                    f"{name}, or turn code.wrap off")
        for name in _TRANSPORT:
            if name in given:
                ctx.say_once(f"wrap: note: {location}: {shown}({name}=...) is not used: the wrap's {ctx.kind} "
                             "strategy chooses how the replicas exchange gradients")
        ctx.say_once(f"wrap: {location}: tf.distribute.{shown}() is the wrap's {ctx.kind} strategy "
                     f"({ctx.dist.num_workers} worker(s), {ctx.replicas} replica(s) in all)")
        return _as_asked(original, ctx.dist.strategy)

    def instancecheck(cls: type, instance: Any) -> bool:
        return isinstance(instance, original)

    def subclasscheck(cls: type, subclass: type) -> bool:
        return issubclass(subclass, original)

    meta = type(f"{original.__name__}Meta", (type(original),),
                {"__call__": call, "__instancecheck__": instancecheck, "__subclasscheck__": subclasscheck})
    return meta(original.__name__, (original,), {"__module__": original.__module__, "__doc__": original.__doc__,
                                                 "__qualname__": original.__qualname__})


def _replace_public(original: type, replacement: type) -> None:
    """`original` becomes `replacement` in TensorFlow's public modules (tf.distribute...), not in its own
    module: TensorFlow's internals keep constructing and checking the real class."""
    for module_name, module in list(sys.modules.items()):
        if module is None or not module_name.startswith("tensorflow") or module_name.startswith("tensorflow.python"):
            continue
        for name, value in list(vars(module).items()):
            if value is original:
                setattr(module, name, replacement)


def patch(ctx: WrapContext) -> None:
    """Only under a strategy the wrap set: on one device the script's own strategy is the one it builds."""
    mark_replica_count(ctx.dist.strategy)
    for original in (tf.distribute.MirroredStrategy, tf.distribute.MultiWorkerMirroredStrategy,
                     getattr(tf.distribute.experimental, "MultiWorkerMirroredStrategy", None)):
        if isinstance(original, type):
            _replace_public(original, _stand_in(original, ctx))
