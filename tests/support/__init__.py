"""Test support shared by several test folders: the CLI as a subprocess, moto as a real HTTP server,
the network guard, spec files, and the Horovod test env."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]  # the repository
