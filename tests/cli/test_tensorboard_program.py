"""Finding TensorBoard (an optional extra, not installed for the tests) and running it on a logdir."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from smtrain.cli.tensorboard_program import run, tensorboard_command
from tests.support.fake_tensorboard import bin_dir, no_tensorboard_here


@no_tensorboard_here
def test_not_installed_is_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(bin_dir(tmp_path, fake=False)))
    assert tensorboard_command(tmp_path / "logs") is None


@no_tensorboard_here
def test_a_tensorboard_on_path_is_found_and_run_with_its_exit_code(monkeypatch: pytest.MonkeyPatch,
                                                                    tmp_path: Path) -> None:
    found = bin_dir(tmp_path, fake=True)  # the stand-in: the real program's command line only
    monkeypatch.setenv("PATH", str(found))
    monkeypatch.setenv("FAKE_TENSORBOARD_RECORD", str(tmp_path / "argv.json"))
    monkeypatch.setenv("FAKE_TENSORBOARD_EXIT", "5")
    command = tensorboard_command(tmp_path / "logs")
    assert command == [str(found / "tensorboard"), "--logdir", str(tmp_path / "logs")]
    assert run(command) == 5
    assert json.loads((tmp_path / "argv.json").read_text()) == ["--logdir", str(tmp_path / "logs")]
