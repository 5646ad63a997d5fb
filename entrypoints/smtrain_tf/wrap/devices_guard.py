"""tf.config calls a script makes for its devices, after the wrap has set them up and built the strategy.

TensorFlow accepts device set-up only before its runtime starts, and building a Mirrored strategy
starts it. Memory growth is already on for every GPU (smtrain turns it on first), so a script's own
`set_memory_growth(gpu, True)` is let through as done. Other set-up (visible devices, logical
devices) cannot be honoured any more: the failure says why and what to do instead.
"""

from __future__ import annotations

import functools
from typing import Any, Callable

import tensorflow as tf

from . import fit_inputs, tf_names
from .context import Unsupported, WrapContext


def _memory_growth(ctx: WrapContext, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def set_memory_growth(device: Any, enable: bool) -> None:
        try:
            original(device, enable)
        except RuntimeError:
            if not enable:
                raise
            location = fit_inputs.caller_location(1, ctx.settings.script_dir)
            ctx.say_once(f"wrap: note: {location}: memory growth is already on for every GPU (the wrap turned it "
                         "on before building the strategy)")

    return set_memory_growth


def _too_late(ctx: WrapContext, original: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def set_up(*args: Any, **kwargs: Any) -> Any:
        try:
            return original(*args, **kwargs)
        except RuntimeError as exc:
            location = fit_inputs.caller_location(1, ctx.settings.script_dir)
            raise Unsupported(f"{location}: tf.config.{original.__name__} cannot run under the wrap ({exc}): the "
                              f"wrap set up the devices and built the {ctx.kind} strategy before the script "
                              "started; choose GPUs with CUDA_VISIBLE_DEVICES in the job's environment, or turn "
                              "code.wrap off") from None

    return set_up


def patch(ctx: WrapContext) -> None:
    growth = tf.config.experimental.set_memory_growth
    tf_names.replace(growth, _memory_growth(ctx, growth))
    for original, aliases in ((tf.config.set_visible_devices, ()),
                              (tf.config.set_logical_device_configuration, ("set_virtual_device_configuration",))):
        tf_names.replace(original, _too_late(ctx, original), aliases)
