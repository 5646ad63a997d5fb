"""Gradient accumulation, for real: k accumulated micro-batches make the same step as one batch k times larger."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from .sagemaker_env import Host, make_host, parse_metrics

pytestmark = pytest.mark.slow

TIMEOUT = 240

# One plain SGD step (no momentum, no shuffling) from the same seeded initial weights.
ONE_STEP = {"epochs": 1, "max_steps_per_epoch": 1, "optimizer": "sgd", "momentum": 0, "shuffle_buffer": 0,
            "hidden_units": "32", "learning_rate": 0.5, "lr_scaling": "none"}


def _train(root: Path, name: str, channels: dict[str, Path], hps: dict, env: dict[str, str] | None = None) -> Host:
    host = make_host(root / name, "algo-1", ["algo-1"], channels=channels, hyperparameters={**ONE_STEP, **hps})
    host.env.update(env or {})
    code = host.start().wait(TIMEOUT)
    assert code == 0, f"{name} exited {code}\n{host.stdout()[-2000:]}\n{host.stderr()[-3000:]}"
    return host


def _config(host: Host) -> dict[str, str]:
    return parse_metrics(next(line for line in host.stdout().splitlines() if line.startswith("config ")))


def _weights(host: Host) -> list[np.ndarray]:
    import tensorflow as tf

    return tf.keras.models.load_model(str(host.model_dir / "model.keras")).get_weights()


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(np.allclose(x, y, rtol=1e-5, atol=1e-6) for x, y in zip(a, b, strict=True))


def test_four_accumulated_steps_of_8_equal_one_step_of_32(tmp_path: Path, digits_npz: dict[str, Path]) -> None:
    train = {"train": digits_npz["train"]}
    accumulated = _train(tmp_path, "accumulated", train, {"batch_size_per_replica": 8},
                         env={"SMTRAIN_GRADIENT_ACCUMULATION_STEPS": "4"})  # the environment's fallback
    whole = _train(tmp_path, "whole", train, {"batch_size_per_replica": 32})
    single = _train(tmp_path, "single", train, {"batch_size_per_replica": 8})
    config = _config(accumulated)
    assert (config["strategy"], config["global_batch_size"], config["gradient_accumulation_steps"],
            config["effective_batch_size"]) == ("default", "8", "4", "32")
    assert _config(whole)["effective_batch_size"] == "32"
    assert _same(_weights(accumulated), _weights(whole))
    # The comparison can fail: one micro-batch alone makes another step.
    assert not _same(_weights(single), _weights(whole))


def test_accumulation_under_mirrored_over_two_cpu_replicas(tmp_path: Path, digits_npz: dict[str, Path]) -> None:
    train = {"train": digits_npz["train"]}
    # Linear scaling counts replicas x micro-batches: both runs end up at the rate 0.5.
    accumulated = _train(tmp_path, "accumulated", train, {"batch_size_per_replica": 4, "cpu_replicas": 2,
                                                          "gradient_accumulation_steps": 4, "lr_scaling": "linear",
                                                          "learning_rate": 0.5 / 8})
    whole = _train(tmp_path, "whole", train, {"batch_size_per_replica": 16, "cpu_replicas": 2,
                                              "lr_scaling": "linear", "learning_rate": 0.5 / 2})
    config = _config(accumulated)
    assert (config["strategy"], config["replicas"], config["global_batch_size"], config["effective_batch_size"],
            config["learning_rate"]) == ("mirrored", "2", "8", "32", "0.5")
    assert _config(whole)["learning_rate"] == "0.5"
    assert _same(_weights(accumulated), _weights(whole))
