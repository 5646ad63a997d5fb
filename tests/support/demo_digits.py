"""The digits demo's channels (train/, validation/) written once per test module, as `make demo` writes them.

A test asks for it by name: tests/conftest.py registers it."""

from __future__ import annotations

from pathlib import Path

import pytest

from smtrain.local.demo_data import write_digits


@pytest.fixture(scope="module")
def digits(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("digits")
    write_digits(root)
    return root
