"""Which values each local trial gets: a seeded random search, or every combination of a grid.

SageMaker's Random strategy draws each trial's values on its own; here the same draws come from
`random.Random(seed)`, one range after another in the spec's order, so a seed gives the same trials
on any machine. How a value is drawn follows the range's ScalingType: Linear (and Auto, whose choice
AWS keeps to itself) uniformly, Logarithmic uniformly in log space, ReverseLogarithmic uniformly in
log(1 - x); integer ranges include both bounds; a categorical range picks each value alike. Grid
search, as AWS runs it, takes categorical ranges only and tries every combination once.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Sequence
from typing import Any

from smtrain.plan.tuning import TunedRange

SIGNIFICANT_DIGITS = 4  # a drawn real is kept to this many digits: readable in the table, exact in --set
_REDRAWS = 50  # tries for an assignment not drawn before, when the space is small


def _real(r: TunedRange, rng: random.Random) -> float:
    low, high = float(r.min or 0), float(r.max or 0)
    if r.scaling == "Logarithmic":
        value = math.exp(rng.uniform(math.log(low), math.log(high)))
    elif r.scaling == "ReverseLogarithmic":
        value = 1 - math.exp(rng.uniform(math.log(1 - high), math.log(1 - low)))
    else:
        value = rng.uniform(low, high)
    return min(max(float(f"{value:.{SIGNIFICANT_DIGITS}g}"), low), high)


def _integer(r: TunedRange, rng: random.Random) -> int:
    low, high = int(r.min or 0), int(r.max or 0)
    if r.scaling == "Logarithmic":
        # uniform in log space over [low, high + 1): each whole number gets its share of the log scale
        return min(int(math.exp(rng.uniform(math.log(low), math.log(high + 1)))), high)
    return rng.randint(low, high)


def draw(r: TunedRange, rng: random.Random) -> Any:
    """One value of range `r`."""
    if r.kind == "categorical":
        return rng.choice(r.values)
    if r.kind == "integer":
        return _integer(r, rng)
    return _real(r, rng)


def random_assignments(ranges: Sequence[TunedRange], count: int, seed: int) -> list[dict[str, Any]]:
    """`count` trials' values ({range key: value}), drawn with `seed`; a repeat is drawn again while
    the space has untried points (a categorical or integer space can be smaller than `count`)."""
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for _ in range(count):
        for _attempt in range(_REDRAWS):
            assignment = {r.key: draw(r, rng) for r in ranges}
            if assignment not in out:
                break
        out.append(assignment)
    return out


def grid_assignments(ranges: Sequence[TunedRange]) -> list[dict[str, Any]]:
    """Every combination of the categorical values, the first range varying slowest; ValueError for a
    min/max range (AWS's Grid strategy refuses them too)."""
    numeric = [r.key for r in ranges if r.kind != "categorical"]
    if numeric:
        raise ValueError(f"grid search takes categorical ranges only: {', '.join(numeric)} has min/max")
    keys = [r.key for r in ranges]
    return [dict(zip(keys, combination, strict=True)) for combination in itertools.product(*(r.values for r in ranges))]
