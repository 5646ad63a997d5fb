"""The wrap's program: read the contract, build and set the strategy, patch Keras, run the user's script.

Exit status: the script's own (SystemExit passes through), 1 when it raises, the contract's
error codes when the job cannot start. On failure one line goes to `<output>/failure`, which
SageMaker shows as the job's FailureReason; an exception from the script also prints its
traceback, as `python script.py` would.
"""

from __future__ import annotations

import functools
import os
import sys
import time
import traceback
from typing import List, Optional, Sequence

from ..check import settings as check_settings
from ..contract import container, failure, known_failures, mlflow_run
from ..contract.errors import TrainingFailure
from ..contract.log import say, track_lines
from ..distribute.choice import DEFAULT, MWMS
from . import notebook_lines, script, settings, strategy
from .context import WrapContext


def _fail(reason: str, code: int) -> int:
    failure.report(reason)
    return code


def _set_up(args: List[str], code_dir: str, started_at: float) -> WrapContext:
    wanted = settings.read(os.environ, code_dir)
    contract = container.read(args, os.environ, own_script=True)
    dist = strategy.build(contract, say)  # TensorFlow is imported from here on
    ctx = WrapContext(contract=contract, settings=wanted, dist=dist, started_at=started_at, say=say)
    from ..distribute.seeding import seed_the_workers

    # Before the script draws any random number; by one rule in the paid run and in both runs of a check.
    seed_the_workers(int(contract.hp("seed")), dist.num_workers, check_settings.read() is not None, say)
    from .. import _api
    from . import fit_inputs

    # One strategy per process: the script's own smtrain_tf calls, and smtrain_tf.fit, get this one.
    _api.adopt(dist, functools.partial(fit_inputs.script_place, script_dir=wanted.script_dir))
    shown = os.path.relpath(wanted.script, code_dir) if wanted.script.startswith(code_dir + os.sep) else wanted.script
    say(strategy.describe(dist, shown))
    if dist.is_chief:
        mlflow_run.begin({"replicas": dist.num_replicas, "workers": dist.num_workers, "strategy": dist.kind}, say)
    if dist.kind != DEFAULT:
        import tensorflow as tf

        # The script's Keras then builds its variables under the strategy without any scope() of its own.
        tf.distribute.experimental_set_strategy(dist.strategy)
    from . import patches, repeated_warnings

    patches.install(ctx)
    repeated_warnings.show_once()
    return ctx


def _exit_status(exc: SystemExit) -> int:
    """What `python script.py` would exit with; a message (sys.exit("...")) is printed and gives 1."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        code = exc.code
        return code if code == 0 else _fail(f"the script exited with status {code}", code)
    print(exc.code, file=sys.stderr, flush=True)
    return _fail(f"the script exited with status 1: {exc.code}", 1)


def _script_failed(exc: BaseException, ctx: WrapContext) -> int:
    sys.stderr.write("".join(script.user_traceback(exc, ctx.settings.script)))
    sys.stderr.flush()
    known = known_failures.recognise(exc)  # a lost peer, memory exhausted: said plainly
    if known is not None:
        return _fail(known.reason, known.exit_code)
    reason = f"{type(exc).__name__}: {exc}"
    cell = notebook_lines.innermost(exc.__traceback__, ctx.settings.script)
    line = script.innermost_line(exc.__traceback__, ctx.settings.script)
    if cell is not None:  # the job's FailureReason names the notebook's cell, as the traceback does
        reason += f" (at {cell})"
    elif line is not None:  # and a script's line (`smtrain check` reports it as where the planned run failed)
        reason += f" (at {os.path.relpath(ctx.settings.script, ctx.settings.script_dir)}:{line})"
    if "Mixing different tf.distribute.Strategy objects" in reason:
        reason += (f" (the script builds a strategy of its own, but the wrap already runs it under {ctx.kind}: "
                   "leave the strategy to the wrap, or turn code.wrap off)")
    return _fail(reason, 1)


def _run_script(ctx: WrapContext, args: List[str], code_dir: str) -> int:
    try:
        script.run(ctx.settings.script, args, code_dir)
    except SystemExit as exc:
        return _exit_status(exc)
    except TrainingFailure as known:  # the wrap's refusals, smtrain_tf.fit's known failures
        return _fail(known.reason, known.exit_code)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except Exception as exc:  # noqa: BLE001 - whatever the script raises ends the job with its reason
        return _script_failed(exc, ctx)
    return 0


def main(code_dir: str, argv: Optional[Sequence[str]] = None) -> int:
    """Run the script named by SMTRAIN_WRAP_SCRIPT (relative to `code_dir`) with `argv` (default sys.argv[1:])."""
    started_at = time.time()
    # Before the script prints anything: smtrain's metric lines must start lines of their own.
    track_lines()
    args = list(sys.argv[1:] if argv is None else argv)
    code_dir = os.path.abspath(code_dir)
    try:
        ctx = _set_up(args, code_dir, started_at)
    except TrainingFailure as known:
        return _fail(known.reason, known.exit_code)
    except Exception as exc:  # noqa: BLE001 - the job must still end with a reason
        traceback.print_exc()
        return _fail(f"the wrap could not start the script: {type(exc).__name__}: {exc}", 1)
    code = _run_script(ctx, args, code_dir)
    mlflow_run.end(code)  # before a hard exit, which runs no atexit
    from .saving import remove_worker_saves

    remove_worker_saves()
    if ctx.kind == MWMS:
        from ..training.watchdog import exit_now

        # TensorFlow's collective threads may wait on a peer that is gone: leave without joining them.
        exit_now(code)
    return code
