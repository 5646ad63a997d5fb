"""Saving under the wrap: one writer for the job's shared places (the chief), and every process says what it saved.

Each SageMaker host has its own disk: what a host writes to its working directory (`./ckpt`, a
checkpoint the script later restores from) is that host's, so such a save stays where the script
wrote it, on every host, and the script finds it there again. Only the job's shared places need one
writer: SM_MODEL_DIR (SageMaker uploads the model from it), the output data directory, the checkpoint
directory (SageMaker syncs /opt/ml/checkpoints of every host to one S3 prefix, and a resumed job downloads
it to every host), and a remote URI (s3://...). MultiWorkerMirrored needs every worker to run a save (a
SavedModel reads variables in sync), so a non-chief's save there is not skipped: it goes to a temporary
directory instead, and the log says where; the launcher removes those directories when the script
ends. After each save the script itself makes, every process logs `weights_sha256=<hex>` of the
model's weights: equal digests across workers mean identical models. Saves made by Keras on the
script's behalf (ModelCheckpoint every epoch) log nothing more: their files are the record. A save
inside another (Model.save calling tf.saved_model.save) is left to the outer one.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import os
import shutil
import sys
import tempfile
import threading
from typing import Any, Callable, Optional

import tensorflow as tf

from ..training import metrics
from . import tf_names
from .context import WrapContext

_nested = threading.local()


class _Redirect:
    """Where a non-chief's saves go: a fresh numbered directory each time, keeping the file's own name."""

    def __init__(self) -> None:
        self._root: Optional[str] = None
        self._count = 0

    def path_for(self, path: Any) -> Any:
        if not isinstance(path, (str, bytes, os.PathLike)):
            return path  # an open file or h5py group: nothing to move
        path = os.fsdecode(path)
        if self._root is None:
            self._root = tempfile.mkdtemp(prefix="smtrain-worker-saves-")
        self._count += 1
        directory = os.path.join(self._root, str(self._count))
        os.makedirs(directory)
        name = os.path.basename(os.fspath(path).rstrip("/\\")) or "saved"
        return os.path.join(directory, name)

    def remove(self) -> None:
        """A non-chief's saves exist only for the collective ops they ran: none is kept."""
        if self._root is not None:
            shutil.rmtree(self._root, ignore_errors=True)
            self._root = None


_redirects: "list[_Redirect]" = []


def remove_worker_saves() -> None:
    for redirect in _redirects:
        redirect.remove()


def _called_by_keras() -> bool:
    """Whether the save at hand comes from Keras itself (a callback), two frames above this one."""
    module = sys._getframe(2).f_globals.get("__name__", "")
    return module.startswith(("keras", "tf_keras", "tensorflow"))


def _digest_line(model: Any) -> Optional[str]:
    get_weights = getattr(model, "get_weights", None)
    if not callable(get_weights):
        return None
    return f"weights_sha256={metrics.weights_digest(metrics.weights_list(model))}"


def _inside(path: str, directory: str) -> bool:
    directory = os.path.realpath(directory)
    return path == directory or path.startswith(directory.rstrip(os.sep) + os.sep)


def shared_place(ctx: WrapContext, path: Any) -> bool:
    """Whether a save to `path` lands in one of the job's shared places (one writer), not on this host alone."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        return False  # an open file or h5py group: this process's own
    text = os.fspath(path)
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    if "://" in text:
        return True  # s3://, gs://, hdfs://: every host would write the same object
    real = os.path.realpath(text)
    places = (ctx.contract.model_dir, ctx.contract.output_data_dir, ctx.contract.checkpoint_dir)
    return any(_inside(real, place) for place in places if place)


def redirecting(ctx: WrapContext, redirect: _Redirect, original: Callable[..., Any], what: str, model_arg: str,
                path_arg: str) -> Callable[..., Any]:
    """`original` with its `path_arg` moved on a non-chief and the digest of its `model_arg` logged."""
    signature = inspect.signature(original)

    @functools.wraps(original)
    def save(*args: Any, **kwargs: Any) -> Any:
        if getattr(_nested, "depth", 0):
            return original(*args, **kwargs)
        bound = signature.bind(*args, **kwargs)
        if not ctx.is_chief and path_arg in bound.arguments and shared_place(ctx, bound.arguments[path_arg]):
            wanted = bound.arguments[path_arg]
            moved = redirect.path_for(wanted)
            if moved is not wanted:
                bound.arguments[path_arg] = moved
                ctx.say(f"wrap: worker {ctx.dist.worker_index} is not the chief: {what} writes {moved} "
                        f"instead of {os.fspath(wanted)}")
        by_keras = _called_by_keras()
        _nested.depth = 1
        try:
            result = original(*bound.args, **bound.kwargs)
        finally:
            _nested.depth = 0
        line = None if by_keras else _digest_line(bound.arguments.get(model_arg))
        if line is not None:
            ctx.say(line)
        return result

    return save


def _first_param(function: Callable[..., Any], index: int) -> str:
    return list(inspect.signature(function).parameters)[index]


def patch_model(model_class: Any, ctx: WrapContext, redirect: _Redirect) -> None:
    for method in ("save", "save_weights", "export"):
        original = getattr(model_class, method, None)
        if original is None:
            continue  # Keras 2 has no export
        setattr(model_class, method, redirecting(ctx, redirect, original, f"model.{method}",
                                                 _first_param(original, 0), _first_param(original, 1)))


def patch_functions(keras: Any, ctx: WrapContext, redirect: _Redirect) -> None:
    """keras.models.save_model / keras.saving.save_model(model, path), where the Keras has them."""
    for namespace in (getattr(keras, "models", None), getattr(keras, "saving", None)):
        original = getattr(namespace, "save_model", None)
        if original is not None and not getattr(original, "__smtrain_wrapped__", False):
            wrapped = redirecting(ctx, redirect, original, "save_model", _first_param(original, 0),
                                  _first_param(original, 1))
            wrapped.__smtrain_wrapped__ = True  # type: ignore[attr-defined]
            namespace.save_model = wrapped


def patch_saved_model(ctx: WrapContext, redirect: _Redirect) -> None:
    """tf.saved_model.save, under every name it is loaded as.

    `import tensorflow.saved_model...` (Keras's export does it) loads a second copy of the public
    module in place of tf.saved_model: load it now, then replace the function everywhere.
    """
    try:
        importlib.import_module("tensorflow.saved_model")
    except ImportError:
        pass
    original = tf.saved_model.save
    wrapped = redirecting(ctx, redirect, original, "tf.saved_model.save", _first_param(original, 0),
                          _first_param(original, 1))
    tf_names.replace(original, wrapped)
    tf.saved_model.save = wrapped


def new_redirect() -> _Redirect:
    redirect = _Redirect()
    _redirects.append(redirect)
    return redirect
