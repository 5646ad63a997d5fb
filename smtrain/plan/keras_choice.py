"""Which Keras a job's code runs on: the image's own, or Keras 2 asked for with `tensorflow.keras: 2`.

TensorFlow's training images up to 2.15 hold Keras 2 as `tf.keras`; from 2.16, `tf.keras` is Keras 3, and
Keras 2 lives on as the `tf_keras` package, which `tf.keras` becomes when TF_USE_LEGACY_KERAS=1 is set
before TensorFlow is imported. A script written for Keras 2 (`metric.reset_states()`, `Adam(lr=...)`,
`model.save("dir")` for a SavedModel, `keras.optimizers.legacy`) runs as written that way.

For `keras: 2` on a 2.16+ image the job gets TF_USE_LEGACY_KERAS=1 (smtrain.plan.program's variables) and
`tf-keras~=MAJOR.MINOR.0`, matched to the image's TensorFlow, as a line of the bundle's requirements.txt
(smtrain.bundle.job_requirements): the toolkit pip-installs it before the script starts. The 2.18 and 2.19
images already hold tf-keras of their version (aws/deep-learning-containers, the images'
core_packages.json), so pip finds it there; the 2.16 image lists none, and the 2.21 image's list is not
published: there pip installs it. A local run installs the same requirements.txt into the job's own
environment, so it runs the same Keras.
"""

from __future__ import annotations

from dataclasses import dataclass

from smtrain.plan.distribution import version_tuple
from smtrain.spec.model import LoadedSpec
from smtrain.spec.problems import Problem

FIRST_KERAS_3 = (2, 16)  # TensorFlow's first release whose tf.keras is Keras 3
LEGACY_VARIABLE = "TF_USE_LEGACY_KERAS"
_FIELD = ("tensorflow", "keras")


@dataclass(frozen=True)
class KerasChoice:
    """The Keras the job's code imports as tf.keras: major 2 or 3 (None: the image's TensorFlow is not known)."""

    major: int | None
    through: str  # "tf.keras" (the image's own) | "tf_keras" (Keras 2 on a 2.16+ image)
    requirement: str | None  # the line smtrain adds to the bundle's requirements.txt, if any

    def summary(self) -> dict[str, object]:
        return {"major": self.major, "through": self.through, "requirement": self.requirement}


def image_keras(framework_version: str | None) -> int | None:
    """The Keras major that a TensorFlow version's tf.keras is, without TF_USE_LEGACY_KERAS."""
    if not framework_version:
        return None
    return 3 if version_tuple(framework_version)[:2] >= FIRST_KERAS_3 else 2


def choose(loaded: LoadedSpec, framework_version: str | None) -> tuple[KerasChoice, list[Problem], list[Problem]]:
    """The job's Keras, the problems (errors) and the warnings of `tensorflow.keras`."""
    asked = loaded.spec.tensorflow.keras
    native = image_keras(framework_version)
    if asked is None or asked == native:
        return KerasChoice(native, "tf.keras", None), [], []
    if asked == 3:  # the image is Keras 2's (2.15 or older): tf_keras cannot make it Keras 3
        return (KerasChoice(native, "tf.keras", None),
                [loaded.problem(_FIELD, f"TensorFlow {framework_version} has Keras 2 only (Keras 3 comes with "
                                "TensorFlow 2.16 and later): set tensorflow.version to \"2.16\" or later, or "
                                "remove tensorflow.keras")], [])
    if native is None:  # tensorflow.image_uri without a version: the image's TensorFlow is not known here
        return (KerasChoice(2, "tf_keras", "tf-keras"), [],
                [loaded.problem(_FIELD, "the image's TensorFlow version is not known, so tf-keras is added to the "
                                "job's requirements unpinned: pip may pick a tf-keras for another TensorFlow; "
                                "pin it in code.requirements (tf-keras~=MAJOR.MINOR.0 of the image's TensorFlow)")])
    major_minor = ".".join(str(n) for n in version_tuple(framework_version or "")[:2])
    return KerasChoice(2, "tf_keras", f"tf-keras~={major_minor}.0"), [], []
