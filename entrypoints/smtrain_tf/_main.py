"""The program: read the contract, build the strategy, train, export; on failure explain in one line."""

from __future__ import annotations

import sys
import time
import traceback
from typing import Any, List, Optional, Sequence

from .contract import container as contract_mod
from .contract import failure, known_failures, mlflow_run
from .contract.errors import TrainingFailure
from .contract.log import say
from .models import names as model_names
from .training.watchdog import Watchdog, exit_now

# Seconds a multi-process job may go without progress beyond the collective timeout.
_HANG_MARGIN = 300.0


class _Run:
    """What the exit path needs to know about how far the run got."""

    hard_exit = False
    library: Any = None


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    run = _Run()
    try:
        code = _train(args, run)
    except TrainingFailure as known:
        code = _fail(known.reason, known.exit_code)
    except KeyboardInterrupt:
        code = _fail("interrupted", 130)
    except Exception as exc:  # noqa: BLE001 - the last resort must catch everything
        recognised = known_failures.recognise(exc)
        if recognised is not None:
            code = _fail(recognised.reason, recognised.exit_code)
        else:
            traceback.print_exc()
            text = str(exc).strip().splitlines()
            code = _fail(f"unexpected error: {type(exc).__name__}: {text[0] if text else ''}", 1)
    mlflow_run.end(code)  # before a hard exit, which runs no atexit
    _shutdown_library(run)
    if run.hard_exit:
        exit_now(code)
    return code


def _fail(reason: str, code: int) -> int:
    failure.report(reason)
    return code


def _shutdown_library(run: _Run) -> None:
    shutdown = getattr(getattr(run.library, "module", None), "shutdown", None)
    if callable(shutdown):
        try:
            shutdown()
        except Exception:  # noqa: BLE001 - shutting down is best effort
            pass


def _on_hang(what: str) -> None:
    _fail(f"no progress while waiting for {what}: a peer process is probably dead or unreachable", 1)
    exit_now(1)


def _train(args: List[str], run: _Run) -> int:
    started_at = time.time()
    contract = contract_mod.read(args)
    model_names.check_name(contract.hp("model"))

    from .distribute import choice as strategy_choice

    # Parameter-server workers and ps tasks read no data themselves; everyone else needs the channels.
    if not strategy_choice.decide(contract, 1).serves_only:
        contract_mod.require_channels(contract)
        contract_mod.require_writable(contract)

    # TensorFlow is imported only now, so contract mistakes fail fast; the GPUs seen are the first line.
    from .distribute import distribution, gpu_check

    gpu_check.check(contract, say)
    for name in contract.hyperparameters.unknown:
        say(f"note: hyperparameter {name} is not one of the entrypoint's; it is passed to model hooks only")

    choice = distribution.choose(contract)
    if choice.serves_only:
        from .distribute import ps_servers

        run.hard_exit = True  # TensorFlow's server threads never end on their own
        assert choice.role is not None
        return ps_servers.serve(choice.role, contract.hp("startup_timeout"), say)
    if choice.kind in strategy_choice.COLLECTIVE_LIBS and not contract.under_mpi:
        say(f"note: strategy {choice.kind} was not started by mpirun; it runs as a single process")
    library = distribution.start_library_if_needed(choice)
    run.library = library
    distribution.configure_devices(contract, library)
    from .training.session import TrainingSession

    watchdog = Watchdog(_on_hang) if (choice.kind in (strategy_choice.MWMS, strategy_choice.PS) or library) \
        else None
    if watchdog is not None:
        watchdog.expect(contract.hp("startup_timeout"), "the cluster to form and the first steps to run")
    # A process that lost its peers may have TensorFlow threads stuck on them: leave without joining.
    run.hard_exit = choice.kind in (strategy_choice.MWMS, strategy_choice.PS)
    session = TrainingSession(contract, choice, library, started_at=started_at, say=say)
    hang_limit = contract.hp("collective_timeout") + _HANG_MARGIN

    def heartbeat() -> None:
        if watchdog is not None:
            watchdog.expect(hang_limit, "a training step, evaluation or checkpoint")

    session.run(heartbeat)
    if watchdog is not None:
        watchdog.stop()
    return 0

