"""Model artifacts, written by the chief alone: a SavedModel at <model_dir>/1 and <model_dir>/model.keras.

The trained weights are copied into a fresh, undistributed clone first, so the artifacts carry no
device placement from training (parameter servers, mirrored replicas). The bundled entrypoint's
models get a classification signature (probabilities and classes); a user's model
(smtrain_tf.save) is exported as its Keras version exports it for serving.
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
from typing import Any, Dict, List, Optional, Sequence

import numpy as np
import tensorflow as tf

from ..contract.log import say
from ..keras_support.keras_compat import IS_KERAS3, keras, keras_file_kwargs

SAVED_MODEL_VERSION = "1"  # TF Serving loads <model_dir>/<version>/
KERAS_FILE = "model.keras"


def _clone(model: Any, weights: List[np.ndarray], with_compile: bool) -> Any:
    try:
        clone = keras.models.clone_model(model)
    except (TypeError, ValueError, NotImplementedError) as exc:
        # Subclassed models cannot always be cloned; the original still saves.
        say(f"warning: the model cannot be cloned for export ({exc}); saving it as trained")
        return model
    clone.set_weights(weights)
    if not with_compile and getattr(clone, "compiled", False):
        # Keras 3 compiles a clone as the model was: a compile the program made (its warm-up schedule is
        # smtrain_tf's class) stays out of model.keras, which then loads anywhere Keras does.
        clone.compiled = False
    return clone


def _serving_module(model: Any, input_shape: Sequence[int], from_logits: bool) -> tf.Module:
    root = tf.Module()
    root.model = model

    @tf.function(input_signature=[tf.TensorSpec([None, *input_shape], tf.float32, name="x")])
    def serve(x: tf.Tensor) -> dict:
        outputs = tf.cast(model(x, training=False), tf.float32)
        probabilities = tf.nn.softmax(outputs) if from_logits else outputs
        return {"probabilities": probabilities, "classes": tf.argmax(probabilities, axis=-1)}

    root.serve = serve
    return root


def _replace_dir(tmp: str, final: str) -> None:
    if os.path.exists(final):
        shutil.rmtree(final)
    os.replace(tmp, final)


def save_artifacts(model: Any, weights: List[np.ndarray], model_dir: str, input_shape: Sequence[int],
                   from_logits: bool) -> List[str]:
    """Write both artifacts through temporary names, so a reader never sees half of one. A built-in model
    is saved uncompiled (the program compiled it for training)."""
    os.makedirs(model_dir, exist_ok=True)
    clone = _clone(model, weights, with_compile=False)
    written = []
    saved_model = os.path.join(model_dir, SAVED_MODEL_VERSION)
    tmp = os.path.join(model_dir, f".{SAVED_MODEL_VERSION}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    root = _serving_module(clone, input_shape, from_logits)
    tf.saved_model.save(root, tmp, signatures={"serving_default": root.serve})
    _replace_dir(tmp, saved_model)
    written.append(saved_model)
    keras_path = _save_keras(clone, model_dir)
    if keras_path:
        written.append(keras_path)
    return written


def save_model(model: Any, weights: List[np.ndarray], model_dir: str, with_compile: bool = True) -> List[str]:
    """A user's model: the SavedModel Keras exports for serving (`serving_default`), and model.keras (with its
    compile settings unless `with_compile` is False: a compile the program made for it)."""
    os.makedirs(model_dir, exist_ok=True)
    clone = _clone(model, weights, with_compile)
    saved_model = os.path.join(model_dir, SAVED_MODEL_VERSION)
    tmp = os.path.join(model_dir, f".{SAVED_MODEL_VERSION}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    if IS_KERAS3:
        export = clone.export
        kwargs = {"verbose": False} if "verbose" in inspect.signature(export).parameters else {}
        export(tmp, **kwargs)
    else:
        tf.saved_model.save(clone, tmp)
    _replace_dir(tmp, saved_model)
    written = [saved_model]
    keras_path = _save_keras(clone, model_dir)
    if keras_path:
        written.append(keras_path)
    return written


def _save_keras(model: Any, model_dir: str) -> Optional[str]:
    final = os.path.join(model_dir, KERAS_FILE)
    tmp = os.path.join(model_dir, ".tmp." + KERAS_FILE)  # must still end in .keras
    try:
        model.save(tmp, **keras_file_kwargs())
    except (TypeError, ValueError, NotImplementedError) as exc:
        # Some user models (subclassed, custom layers without get_config) cannot be written this way.
        say(f"warning: could not write {KERAS_FILE} ({exc}); the SavedModel is complete")
        return None
    os.replace(tmp, final)
    return final


def write_summary(output_data_dir: str, summary: Dict[str, Any]) -> str:
    """A small JSON record of the run; SageMaker uploads output/data as output.tar.gz."""
    os.makedirs(output_data_dir, exist_ok=True)
    path = os.path.join(output_data_dir, "training_summary.json")
    with open(path + ".tmp", "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=2, sort_keys=True)
    os.replace(path + ".tmp", path)
    return path
