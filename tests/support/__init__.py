"""Test support shared by several test folders: the CLI as a subprocess, moto as a real HTTP server,
the network guard, spec files, the documents and their sections (docs), the Horovod test env, the SageMaker SDK
envs (sdk_envs), the digits demo's channels (demo_digits), a real `mlflow server` (mlflow_server), and smtrain's
wheel with fresh venvs to install it in (wheel, also used by `make bench`)."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def like_a_terminal() -> None:
    """preexec_fn for a process a test will interrupt: SIGINT back to its default, as a terminal
    starts a program. A background job of a non-interactive shell (how CI may start the suite)
    starts with SIGINT ignored; Python keeps it ignored and never raises KeyboardInterrupt."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)


_reserved: list[object] = []  # this test process's reservation (smtrain.local.ports), made on first use


def free_ports(count: int) -> list[int]:
    """Ports of 127.0.0.1 reserved for this test process's whole life (smtrain.local.ports, as local runs reserve
    theirs): no other test worker, no local run and no `bind(0)` of any program is handed one, so a server or a
    TF_CONFIG a test starts on it cannot lose it in between."""
    from smtrain.local.ports import Reserved

    if not _reserved:
        _reserved.append(Reserved())
    return _reserved[0].take(count)  # type: ignore[attr-defined]


def free_port() -> int:
    """One port of free_ports()."""
    return free_ports(1)[0]
