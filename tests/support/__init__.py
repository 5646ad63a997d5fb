"""Test support shared by several test folders: the CLI as a subprocess, moto as a real HTTP server,
the network guard, spec files, and the Horovod test env."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository


def like_a_terminal() -> None:
    """preexec_fn for a process a test will interrupt: SIGINT back to its default, as a terminal
    starts a program. A background job of a non-interactive shell (how CI may start the suite)
    starts with SIGINT ignored; Python keeps it ignored and never raises KeyboardInterrupt."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)
