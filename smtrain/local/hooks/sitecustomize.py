"""Local runs of a hand-written script: split the CPU into SMTRAIN_CPU_REPLICAS logical devices.

Python imports `sitecustomize` at start-up from the first directory on its path that has one;
smtrain's local runs put this directory on the hosts' PYTHONPATH (after the code) only when the
job's program is the user's own script and the plan gives each process several GPUs. Right after
TensorFlow's own import finishes, and before the script can run an op, the CPU is split as the job
would see its GPUs: `MirroredStrategy()` then finds that many devices. On SageMaker nothing of this
runs. Any other sitecustomize that this one shadows is run after it.
"""

import importlib.abc
import importlib.util
import os
import sys


def _split_cpu(tf):
    count = int(os.environ.get("SMTRAIN_CPU_REPLICAS") or 0)
    if count < 2 or tf.config.list_physical_devices("GPU"):
        return
    cpu = tf.config.list_physical_devices("CPU")[0]
    try:
        tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * count)
    except RuntimeError:  # the runtime started during the import: nothing to do but leave it
        pass


class _AfterTensorFlow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)  # once: the real finders locate TensorFlow
        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        run = spec.loader.exec_module

        def exec_module(module):
            run(module)
            _split_cpu(module)

        spec.loader.exec_module = exec_module
        return spec


def _run_shadowed():
    """The sitecustomize this one hides (a distribution's own), if there is one further on the path."""
    here = os.path.dirname(os.path.abspath(__file__))
    for entry in sys.path:
        if os.path.abspath(entry or ".") == here:
            continue
        candidate = os.path.join(entry or ".", "sitecustomize.py")
        if os.path.isfile(candidate):
            spec = importlib.util.spec_from_file_location("_smtrain_shadowed_sitecustomize", candidate)
            if spec is not None and spec.loader is not None:
                spec.loader.exec_module(importlib.util.module_from_spec(spec))
            return


if "tensorflow" not in sys.modules:
    sys.meta_path.insert(0, _AfterTensorFlow())
_run_shadowed()
