"""Device set-up that must happen before TensorFlow runs its first op."""

from __future__ import annotations

from typing import List, Optional

import tensorflow as tf

from ..contract.errors import ConfigurationError


def physical_gpus() -> List[tf.config.PhysicalDevice]:
    """Listing physical devices does not start the runtime, so it is safe before configuration."""
    return tf.config.list_physical_devices("GPU")


def configure(cpu_replicas: int, pin_gpu: Optional[int] = None) -> None:
    """Pin one GPU (Horovod/smddp local rank), allow memory growth, or split the CPU for tests."""
    gpus = physical_gpus()
    try:
        if pin_gpu is not None and gpus:
            if pin_gpu >= len(gpus):
                raise ConfigurationError(f"local rank {pin_gpu} has no GPU: this host has {len(gpus)} "
                                         "(start one process per GPU)")
            tf.config.set_visible_devices(gpus[pin_gpu], "GPU")
            gpus = [gpus[pin_gpu]]
        for gpu in gpus:
            # Several processes may share a host (ps beside a worker, MPI ranks): do not grab all memory.
            tf.config.experimental.set_memory_growth(gpu, True)
        if not gpus and cpu_replicas > 1:
            cpu = tf.config.list_physical_devices("CPU")[0]
            if len(tf.config.get_logical_device_configuration(cpu) or []) == cpu_replicas:
                return  # split already (a local run's start-up hook splits it for scripts of any kind)
            tf.config.set_logical_device_configuration(
                cpu, [tf.config.LogicalDeviceConfiguration() for _ in range(cpu_replicas)])
    except RuntimeError as exc:
        # TensorFlow refuses once the runtime has started: a programming error, but say so plainly.
        raise ConfigurationError(f"devices could not be configured before TensorFlow started: {exc}") from None


def training_devices() -> List[str]:
    """Logical devices a MirroredStrategy should span: the GPUs, else the (possibly split) CPUs."""
    gpus = tf.config.list_logical_devices("GPU")
    if gpus:
        return [d.name for d in gpus]
    return [d.name for d in tf.config.list_logical_devices("CPU")]


def supports_fast_float16() -> bool:
    """mixed_float16 pays off on GPUs of compute capability 7.0 (Volta) and newer."""
    visible = tf.config.get_visible_devices("GPU")
    if not visible:
        return False
    for gpu in visible:
        details = tf.config.experimental.get_device_details(gpu)
        capability = details.get("compute_capability") or (0, 0)
        if tuple(capability) < (7, 0):
            return False
    return True
