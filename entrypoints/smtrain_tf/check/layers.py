"""The layers that make a replica's step differ from one device's, whatever the rest of the job does right.

BatchNormalization normalises with the statistics of the batch it is given: under a strategy that is
one replica's share, unless it is synchronized (SyncBatchNormalization, or synchronized=True). Random
layers (dropout, noise, random augmentation) draw a mask or a value per replica.
"""

from __future__ import annotations

from typing import Any, Dict, List

# Keras's layers that draw random numbers when training (the Random* preprocessing layers are found by name).
_RANDOM = ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "AlphaDropout", "GaussianDropout",
           "GaussianNoise")


def _all_layers(model: Any) -> List[Any]:
    flatten = getattr(model, "_flatten_layers", None)
    if callable(flatten):
        return list(flatten(include_self=False, recursive=True))
    return [m for m in getattr(model, "submodules", ()) if hasattr(m, "trainable_weights")]


def _synchronized(layer: Any) -> bool:
    return type(layer).__name__ == "SyncBatchNormalization" or bool(getattr(layer, "synchronized", False))


def _off(layer: Any) -> bool:
    """A random layer that draws nothing (rate or stddev 0)."""
    return any(getattr(layer, name, None) == 0 for name in ("rate", "stddev"))


def switch_off_random(model: Any) -> List[str]:
    """Dropout and noise layers made to do nothing (rate or stddev 0), before the steps are traced; returns
    their names. Random preprocessing layers cannot be: they stay, and the inventory lists them."""
    done = []
    for layer in _all_layers(model):
        name = type(layer).__name__
        if name in _RANDOM:
            setattr(layer, "stddev" if name == "GaussianNoise" else "rate", 0.0)
            done.append(layer.name)
    return done


def inventory(model: Any) -> Dict[str, List[Dict[str, Any]]]:
    """{"batch_norm": [{"name", "class"}], "random": [{"name", "class", "seed"}]}: the layers to look at
    when one step's training loss differs while its inference loss does not."""
    batch_norm, random = [], []
    for layer in _all_layers(model):
        name = type(layer).__name__
        if "BatchNormalization" in name and not _synchronized(layer):
            batch_norm.append({"name": layer.name, "class": name})
        elif (name in _RANDOM and not _off(layer)) or name.startswith("Random"):
            seed = getattr(layer, "seed", None)
            random.append({"name": layer.name, "class": name, "seed": seed if isinstance(seed, int) else None})
    return {"batch_norm": batch_norm, "random": random}
