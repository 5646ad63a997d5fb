"""What the wrap's patches share: the job's strategy, the wrap's settings, and the log."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Set

from ..contract.container import Contract
from ..contract.errors import TrainingFailure
from .settings import WrapSettings


@dataclass
class WrapContext:
    contract: Contract
    settings: WrapSettings
    dist: Any  # smtrain_tf.distribute.distribution.Distribution (imports TensorFlow)
    started_at: float
    say: Callable[[str], None]
    _said: Set[str] = field(default_factory=set)

    @property
    def kind(self) -> str:
        return self.dist.kind

    @property
    def replicas(self) -> int:
        return self.dist.num_replicas

    @property
    def planned_replicas(self) -> int:
        """The replicas the batch and rate rules count: in a check's one-device run, those it stands for."""
        from ..check.settings import stands_for

        return self.dist.num_replicas * stands_for()

    @property
    def is_chief(self) -> bool:
        return self.dist.is_chief

    def say_once(self, line: str) -> None:
        """A script may call fit or compile in a loop: say each distinct thing once per process."""
        if line not in self._said:
            self._said.add(line)
            self.say(line)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


class Unsupported(TrainingFailure):
    """A call the wrap cannot run as the script wrote it; the reason names the call and what to change."""
