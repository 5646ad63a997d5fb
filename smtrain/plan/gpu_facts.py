"""What each GPU model in the catalog is to TensorFlow: its CUDA compute capability, and whether
SageMaker's TensorFlow training images can drive it.

Compute capabilities are NVIDIA's (developer.nvidia.com/cuda-gpus). For the Blackwell parts the same
figures appear where compilers learned them: 10.0 for B100/B200 and 12.0 for the RTX Blackwell cards
(openxla/xla#21684, bitsandbytes-foundation/bitsandbytes#1481), 10.3 for B300 (CUDA 12.9 added
sm_103: Dao-AILab/causal-conv1d#60). The RTX PRO 4500 / RTX PRO 6000 Server in g7 / g7e are RTX
Blackwell (GB20x) parts, 12.0 like the GeForce RTX 50 series (tensorflow/tensorflow#103531 reports
the RTX PRO Blackwell line failing exactly as the RTX 50 cards do).

Why Blackwell is out of reach of SageMaker's TensorFlow images:
- The images install TensorFlow's own release wheel (aws/deep-learning-containers,
  tensorflow/training/docker/2.19/py3/cu125/Dockerfile.gpu: TF_URL = the storage.googleapis.com
  manylinux x86_64 wheel), so their GPU kernels are the wheel's.
- TensorFlow's release builds compile for HERMETIC_CUDA_COMPUTE_CAPABILITIES =
  "sm_60,sm_70,sm_80,sm_89,compute_90" (tensorflow/tensorflow .bazelrc, config cuda_clang: "the same
  as the official TensorFlow builds"): machine code up to 8.9 and PTX for 9.0, nothing for 10.x/12.x.
- On Blackwell the wheels fail at the first kernel: CUDA_ERROR_INVALID_PTX / INVALID_HANDLE on
  compute capability 12.0 with TF 2.16 to 2.20 (tensorflow/tensorflow#89272, #90291, #97387, #99592,
  #101746), and XLA's JIT aborts with "PTX version 8.5 does not support target sm_120" in 2.21-era
  builds (#111958, labelled 2.21.0; fixes #112039 and openxla/xla#47978 closed unmerged). As of
  July 2026 the official build config still leaves sm_100/sm_120 out (#123945), and users report
  TensorFlow "almost unusable" on B200 without CUDA 13 (#106653).
So a capability of 10.0 or more is treated as one the images cannot drive; so is one below 6.0 (the
K80 of ml.p2, 3.7), for which the same wheels carry no code at all. A type whose capability is unknown
(a GPU model from a user's catalog that this table lacks) is not refused: nothing is known.
"""

from __future__ import annotations

__all__ = [
    "COMPUTE_CAPABILITY",
    "TF_IMAGES_MAX_CAPABILITY",
    "TF_IMAGES_MIN_CAPABILITY",
    "compute_capability",
    "fast_float16",
    "fast_bfloat16",
    "mixed_precision",
    "tensorflow_drives",
    "tensorflow_note",
]

# GPU model as the catalog names it (EC2's GpuInfo name) -> CUDA compute capability (major, minor).
COMPUTE_CAPABILITY: dict[str, tuple[int, int]] = {
    "K80": (3, 7),
    "V100": (7, 0),
    "T4": (7, 5),
    "A100": (8, 0),
    "A10G": (8, 6),
    "L4": (8, 9),
    "L40S": (8, 9),
    "H100": (9, 0),
    "H200": (9, 0),
    "B200": (10, 0),
    "GB200": (10, 0),
    "B300": (10, 3),
    "RTX PRO 4500": (12, 0),
    "RTX PRO Server 6000": (12, 0),
}

# The newest capability the images' TensorFlow carries code for: machine code to 8.9 and PTX for 9.0,
# which the driver compiles for 9.x (H100/H200 run it). Anything newer has no kernels (see above).
TF_IMAGES_MAX_CAPABILITY = (9, 0)
TF_IMAGES_MIN_CAPABILITY = (6, 0)  # the oldest machine code the wheels carry (sm_60)


def _key(gpu: str) -> str:
    key = gpu.strip().lower()
    return key[len("nvidia") :].strip() if key.startswith("nvidia") else key


_BY_KEY = {_key(name): cc for name, cc in COMPUTE_CAPABILITY.items()}


def compute_capability(gpu: str) -> tuple[int, int] | None:
    """The model's compute capability ("A100" -> (8, 0)), or None when this table does not know it."""
    return _BY_KEY.get(_key(gpu))


def tensorflow_drives(gpu: str) -> bool | None:
    """Whether SageMaker's TensorFlow training images can run on this GPU; None when unknown."""
    cc = compute_capability(gpu)
    if cc is None:
        return None
    return TF_IMAGES_MIN_CAPABILITY <= cc and cc[0] <= TF_IMAGES_MAX_CAPABILITY[0]


def tensorflow_note(gpu: str) -> str | None:
    """Why SageMaker's TensorFlow images cannot drive this GPU, or None when they can (or nobody knows)."""
    if tensorflow_drives(gpu) is not False:
        return None
    major, minor = compute_capability(gpu) or (0, 0)
    if (major, minor) < TF_IMAGES_MIN_CAPABILITY:
        return (f"SageMaker's TensorFlow images cannot drive the {gpu} (compute capability {major}.{minor}): "
                "TensorFlow's release wheels carry CUDA kernels from 6.0 up only")
    return (
        f"SageMaker's TensorFlow images cannot drive the {gpu} (Blackwell, compute capability {major}.{minor}): "
        "TensorFlow's release wheels carry CUDA kernels up to 8.9 and PTX for 9.0 only, and fail on Blackwell "
        "(tensorflow/tensorflow#89272, #111958)"
    )


def fast_float16(gpu: str) -> bool | None:
    """mixed_float16 pays off from compute capability 7.0 (tensor cores), as the entrypoint decides
    `mixed_precision: auto` at run time (smtrain_tf/distribute/devices.py); None when unknown."""
    cc = compute_capability(gpu)
    return None if cc is None else cc >= (7, 0)


def fast_bfloat16(gpu: str) -> bool | None:
    """bfloat16 runs at tensor-core speed from compute capability 8.0 (Ampere); None when unknown."""
    cc = compute_capability(gpu)
    return None if cc is None else cc >= (8, 0)


def mixed_precision(setting: str, gpu: str) -> str:
    """The policy the bundled entrypoint will set for `training.mixed_precision` on this GPU, as the plan
    shows it: "mixed_float16", "float32", or, for a GPU this table lacks, that the host decides."""
    if setting in ("on", "off"):
        return "mixed_float16" if setting == "on" else "float32"
    fast = fast_float16(gpu)
    if fast is None:
        return "decided on the host from the GPU's compute capability (mixed_float16 from 7.0)"
    return "mixed_float16" if fast else "float32"
