"""Failures the program knows how to explain in one line (no traceback needed)."""

from __future__ import annotations


class TrainingFailure(Exception):
    """A known reason to stop: the message becomes SageMaker's FailureReason."""

    exit_code = 1

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class ConfigurationError(TrainingFailure):
    """The container contract or a hyperparameter is missing or wrong."""

    exit_code = 2


class DataError(TrainingFailure):
    """A data channel is missing, empty or malformed."""


class NonFiniteLoss(TrainingFailure):
    """The loss became NaN or infinite."""


class PeerFailure(TrainingFailure):
    """Another process of the job died or stopped answering."""
