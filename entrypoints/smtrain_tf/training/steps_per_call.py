"""Several training steps per tf.function call in Keras's own fit (Keras 3's `steps_per_execution`), for one call.

Keras builds its train, test and predict functions with the count in them; a fit call made with another count
needs them made again, and the script's own count and functions back afterwards (its evaluate and predict,
whose `steps` the count would round up, run as written). The functions traced for a count are kept per model,
so the next fit of the same compiled model at that count does not trace again.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable, Tuple


def largest_divisor(count: int, at_most: int) -> int:
    """The largest d <= at_most dividing count (Keras runs whole calls: an epoch of 150 in calls of 20 trains 160)."""
    return max(d for d in range(1, min(count, at_most) + 1) if count % d == 0)


_Functions = Tuple[Any, Any, Any]
# The tuned functions kept per model, outside it: an attribute set on a Keras 3 model is tracked, and the
# compile-made metrics kept with them would join model.metrics (evaluate would return each twice).
_TUNED: "weakref.WeakKeyDictionary[Any, Tuple[int, Tuple[Any, Any, Any], _Functions]]" = weakref.WeakKeyDictionary()


def _functions(model: Any) -> _Functions:
    return model.train_function, model.test_function, model.predict_function


def _compiled_as(model: Any) -> Tuple[Any, Any, Any]:
    # What a compile call makes anew: the functions kept for a count belong to this compiled model only.
    return (getattr(model, "_compile_loss", None), getattr(model, "_compile_metrics", None),
            getattr(model, "optimizer", None))


def tunable(model: Any) -> bool:
    """Keras 3 keeps the count as a plain int (tf_keras keeps it in a variable of its own, read at every call)."""
    return isinstance(getattr(model, "steps_per_execution", None), int)


def apply(model: Any, steps: int) -> Callable[[], None]:
    """Give the model `steps` per call (with the functions kept from an earlier fit at that count); return what
    puts the script's count and functions back."""
    written, theirs = model.steps_per_execution, _functions(model)
    kept = _TUNED.get(model)
    model.steps_per_execution = steps
    same_compile = kept is not None and all(a is b for a, b in zip(kept[1], _compiled_as(model)))  # noqa: B905
    if kept is not None and kept[0] == steps and same_compile:  # (zip's strict= needs Python 3.10)
        model.train_function, model.test_function, model.predict_function = kept[2]
    else:
        # Keras builds these with the count in them; fit makes them again.
        model.train_function = model.test_function = model.predict_function = None

    def restore() -> None:
        _TUNED[model] = (steps, _compiled_as(model), _functions(model))
        model.steps_per_execution = written
        model.train_function, model.test_function, model.predict_function = theirs

    return restore
