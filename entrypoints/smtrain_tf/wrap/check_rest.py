"""During `smtrain check`'s planned run, the wrapped script goes on past the steps it records, cut short.

The first fit call records the check's steps in smtrain's loop (check_fit.py); in the one-device run the
process then ends, as before. In the planned run the script goes on as the paid job would run it, only
shorter: that fit call, and each later one, runs Keras's own fit for one epoch of at most the check's
steps (so the script gets a real History), and evaluate and predict run at most that many batches. What
follows training (evaluate's values unpacked, a save, an export, a second fit) then fails the planned run
at its line where it would fail the job after its training was paid for.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Dict

from ..check import probe
from ..check import settings as check_settings


class _State:
    recorded = False


def planned_run() -> bool:
    found = check_settings.read()
    return found is not None and not found.is_reference


def record(fit: Callable[[], Any]) -> None:
    """Run the recording fit (`fit`): the one-device run ends inside it; the planned run comes back here."""
    if planned_run():
        probe.continue_the_script()
    try:
        fit()
    except probe.Recorded:
        _State.recorded = True


def recorded() -> bool:
    return _State.recorded


def cut(given: Dict[str, Any], steps: int) -> Dict[str, Any]:
    """A fit call's arguments for one epoch of at most `steps` steps (and as many validation steps)."""
    given = dict(given)
    given["epochs"] = int(given.get("initial_epoch") or 0) + 1
    given["steps_per_epoch"] = min(int(given.get("steps_per_epoch") or steps), steps)
    if given.get("validation_data") is not None or given.get("validation_split"):
        given["validation_steps"] = min(int(given.get("validation_steps") or steps), steps)
    return given


def patch(model_class: Any) -> None:
    """evaluate and predict run at most the check's steps in the planned run (their values are not compared)."""
    settings = check_settings.read()
    if settings is None or settings.is_reference:
        return
    # Where `steps` stands among each method's positional arguments (Keras 2 and 3 alike).
    for name, at in (("evaluate", 5), ("predict", 3)):
        original = getattr(model_class, name)

        def shortened(self: Any, *args: Any, __original: Callable[..., Any] = original, __at: int = at,
                      **kwargs: Any) -> Any:
            if len(args) <= __at and kwargs.get("steps") is None:
                kwargs["steps"] = settings.steps
            return __original(self, *args, **kwargs)

        setattr(model_class, name, functools.wraps(original)(shortened))
