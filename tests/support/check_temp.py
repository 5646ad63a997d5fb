"""The temporary directory of a test that runs `smtrain check`: its work directories go under the test's own, where
the test can count what is left behind. A module of such tests asks for it in every test:
`pytestmark = [..., pytest.mark.usefixtures("own_temp")]` (tests/conftest.py registers it)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest


@pytest.fixture
def own_temp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The check's work directories go under the test's own temporary directory (and are counted there)."""
    place = tmp_path / "tmp"
    place.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(place))
    monkeypatch.setenv("TMPDIR", str(place))
    return place
