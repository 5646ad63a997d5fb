"""smtrain_tf's public face: the functions a training script may call, and an import that stays light."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import smtrain_tf  # noqa: E402
from smtrain_tf.contract.errors import DataError  # noqa: E402

from .conftest import ENTRYPOINTS
from .sagemaker_env import make_host

PUBLIC = {"strategy", "global_batch_size", "scaled_learning_rate", "is_chief", "model_dir", "checkpoint_dir",
          "channel", "hyperparameters", "fit", "save"}

# Run in a fresh interpreter: this test session has imported TensorFlow long ago.
LIGHT_IMPORT = """
import json, sys
import smtrain_tf
after_import = sorted(m for m in ("tensorflow", "keras", "numpy") if m in sys.modules)
import smtrain_tf.scaling
after_scaling = sorted(m for m in ("tensorflow", "keras", "numpy") if m in sys.modules)
print(json.dumps({"import": after_import, "scaling": after_scaling,
                  "smtrain_tf": sorted(m for m in sys.modules if m.startswith("smtrain_tf")),
                  "smtrain": "smtrain" in sys.modules}))
"""


def _run(code: str, env: dict[str, str], args: tuple[str, ...] = (), timeout: float = 60) -> str:
    env = {**env, "PYTHONPATH": ENTRYPOINTS}
    done = subprocess.run([sys.executable, "-c", code, *args], env=env, capture_output=True, text=True,
                          timeout=timeout, cwd=ENTRYPOINTS)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_importing_the_package_imports_no_tensorflow() -> None:
    found = json.loads(_run(LIGHT_IMPORT, dict(os.environ)).strip().splitlines()[-1])
    assert found["import"] == [] and found["scaling"] == []
    # Nothing but the package and the maths module: the CLI imports it at plan time.
    assert found["smtrain_tf"] == ["smtrain_tf", "smtrain_tf.scaling"]
    assert found["smtrain"] is False


def test_reading_the_contract_imports_no_tensorflow(tmp_path: Path) -> None:
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels={"train": tmp_path}, hyperparameters={"epochs": 3})
    code = ("import sys, smtrain_tf\n"
            "smtrain_tf.model_dir(); smtrain_tf.hyperparameters(); smtrain_tf.channel('train')\n"
            "smtrain_tf.global_batch_size(64, 8); smtrain_tf.scaled_learning_rate(0.1, 'sqrt', 4)\n"
            "print('tensorflow' in sys.modules)\n")
    assert _run(code, host.env, tuple(host.args)).strip() == "False"


def test_all_lists_exactly_the_public_functions() -> None:
    assert len(smtrain_tf.__all__) == len(PUBLIC) and set(smtrain_tf.__all__) == PUBLIC
    for name in smtrain_tf.__all__:
        function = getattr(smtrain_tf, name)
        assert callable(function), name
        assert function.__doc__ and function.__doc__.strip(), f"{name} has no docstring"
        assert function.__module__ == "smtrain_tf._api"
    assert PUBLIC <= set(dir(smtrain_tf))
    assert smtrain_tf.__version__
    with pytest.raises(AttributeError, match="no attribute 'train'"):
        smtrain_tf.train  # noqa: B018 - the lookup is the test
    # Everything else in the package is private: underscored, or inside a subpackage.
    package = Path(smtrain_tf.__file__).parent
    top = {p.stem for p in package.glob("*.py")} - {"__init__"}
    assert {name for name in top if not name.startswith("_")} == {"scaling"}


def _contract_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *argv: str) -> Path:
    for key in list(os.environ):
        if key.startswith(("SM_", "SAGEMAKER_", "TF_CONFIG", "SMTRAIN_")):
            monkeypatch.delenv(key)
    train = tmp_path / "data" / "train"
    train.mkdir(parents=True)
    monkeypatch.setenv("SAGEMAKER_BASE_DIR", str(tmp_path / "ml"))
    monkeypatch.setenv("SM_MODEL_DIR", str(tmp_path / "model"))
    monkeypatch.setenv("SM_CHANNELS", json.dumps(["train"]))
    monkeypatch.setenv("SM_CHANNEL_TRAIN", str(train))
    monkeypatch.setenv("SM_HPS", json.dumps({"epochs": 7, "width": 32, "layers": [64, 32], "dropout": 0.5,
                                             "sagemaker_program": "train.py", "sagemaker_mpi_enabled": False}))
    monkeypatch.setattr(sys, "argv", ["train.py", *argv])
    return train


def test_contract_functions_answer_for_the_users_own_script(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # The toolkit passes SM_HPS again as arguments (str() of each); the script's own may differ.
    train = _contract_env(monkeypatch, tmp_path, "--epochs", "3", "--width", "32", "--dropout", "0.5",
                          "--layers", "[64, 32]", "--optimizer", "rmsprop", "--seed", "abc", "--model_dir", "s3://b/m",
                          "--sagemaker_program", "train.py")
    assert smtrain_tf.model_dir() == str(tmp_path / "model")
    assert smtrain_tf.checkpoint_dir() == str(tmp_path / "ml" / "checkpoints")
    assert smtrain_tf.channel("train") == str(train)
    with pytest.raises(DataError, match=r"no 'validation' channel \(channels given: train\)"):
        smtrain_tf.channel("validation")
    # The user's hyperparameters only: SM_HPS's JSON types where the argument says the same, the
    # argument (a string) where it differs, no sagemaker_* keys; smtrain's table is not in it.
    assert smtrain_tf.hyperparameters() == {"epochs": "3", "width": 32, "dropout": 0.5, "layers": [64, 32],
                                            "optimizer": "rmsprop", "seed": "abc", "model_dir": "s3://b/m"}
    hps = smtrain_tf.hyperparameters()
    hps["width"] = 99
    assert smtrain_tf.hyperparameters()["width"] == 32
    # smtrain's settings reach an own script through the environment, never its arguments.
    monkeypatch.setattr(sys, "argv", ["train.py", "--checkpoint_dir", str(tmp_path / "ignored")])
    assert smtrain_tf.checkpoint_dir() == str(tmp_path / "ml" / "checkpoints")
    monkeypatch.setenv("SMTRAIN_CHECKPOINT_DIR", str(tmp_path / "ckpt"))
    assert smtrain_tf.checkpoint_dir() == str(tmp_path / "ckpt")


def test_maths_with_replicas_given_builds_no_strategy() -> None:
    assert smtrain_tf.global_batch_size(64, 8) == 512
    assert smtrain_tf.scaled_learning_rate(0.001, "linear", 8) == pytest.approx(0.008)
    assert smtrain_tf.scaled_learning_rate(0.001, "sqrt", replicas=16) == pytest.approx(0.004)
    from smtrain_tf import _api

    assert _api._built is None


STRATEGY = """
import math, sys
import smtrain_tf
strategy = smtrain_tf.strategy()
assert smtrain_tf.strategy() is strategy
print(type(strategy).__name__, strategy.num_replicas_in_sync, smtrain_tf.is_chief(),
      smtrain_tf.global_batch_size(32), math.isclose(smtrain_tf.scaled_learning_rate(0.001, "sqrt"),
                                                     0.001 * math.sqrt(2)))
"""


@pytest.mark.slow
def test_strategy_is_the_one_the_entrypoint_builds(tmp_path: Path) -> None:
    # The script's own hyperparameters, with names and values smtrain's table would refuse, change nothing.
    host = make_host(tmp_path, "algo-1", ["algo-1"], channels={},
                     hyperparameters={"optimizer": "rmsprop", "seed": "abc", "strategy": "mine"})
    host.env["SMTRAIN_CPU_REPLICAS"] = "2"
    out = _run(STRATEGY, host.env, tuple(host.args), timeout=240).strip().splitlines()
    assert out[0] == "gpus: none seen by TensorFlow " + out[0].split()[5] + " (the job asked for 0)"
    assert out[-1] == "MirroredStrategy 2 True 64 True"


def test_each_output_line_is_one_write(monkeypatch: pytest.MonkeyPatch) -> None:
    # mpirun --tag-output forwards what a rank writes chunk by chunk: a line written in two pieces
    # (print() under PYTHONUNBUFFERED writes the text, then the newline) can be cut by another rank.
    from smtrain_tf.contract.log import say

    writes: list[str] = []

    class Recorder:
        def write(self, text: str) -> int:
            writes.append(text)
            return len(text)

        def flush(self) -> None:
            writes.append("<flush>")

    monkeypatch.setattr(sys, "stdout", Recorder())
    say("epoch=1 loss=0.5")
    assert writes == ["epoch=1 loss=0.5\n", "<flush>"]
