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


def free_port() -> int:
    """A port on 127.0.0.1 the kernel handed out and that was released again: for a server a test starts (which
    could lose it to another process in between; none here asks for a port of its own)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
