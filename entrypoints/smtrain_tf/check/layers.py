"""The layers that make a replica's step differ from one device's, whatever the rest of the job does right.

BatchNormalization normalises with the statistics of the batch it is given: under a strategy that is
one replica's share, unless it is synchronized (SyncBatchNormalization, or synchronized=True). Random
layers (dropout, noise, random augmentation) draw a mask or a value per replica. So does a step that draws
from a `keras.random.SeedGenerator` of the model's own (keras.io's GAN draws its latent vectors so): its
state is one variable the strategy mirrors, so every replica draws the same values for its share.
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


def _is_seed_generator(value: Any) -> bool:
    return any(cls.__name__ == "SeedGenerator" and "keras" in cls.__module__ for cls in type(value).__mro__)


def seed_generators(model: Any) -> List[Dict[str, Any]]:
    """The SeedGenerators the script's own model and layer classes hold themselves (Keras's layers are left to the
    random layers' rule): `{"name": "gan.seed_generator", "class": "SeedGenerator", "seed": 1337}`."""
    found, seen = [], set()
    for owner in [model, *_all_layers(model)]:
        name = type(owner).__name__
        if type(owner).__module__.startswith("keras"):
            continue  # Keras's own layers: their draws are the random layers' (an LSTM holds one for its dropout)
        named = {id(v): k for k, v in vars(owner).items() if _is_seed_generator(v)}
        for generator in [*getattr(owner, "_seed_generators", ()), *(v for v in vars(owner).values())]:
            if not _is_seed_generator(generator) or id(generator) in seen:
                continue
            seen.add(id(generator))
            seed = getattr(generator, "_initial_seed", None)  # Keras keeps the seed it was given there
            found.append({"name": f"{getattr(owner, 'name', name)}.{named.get(id(generator), 'seed_generator')}",
                          "class": "SeedGenerator", "seed": seed if isinstance(seed, int) else None})
    return found


def inventory(model: Any) -> Dict[str, List[Dict[str, Any]]]:
    """{"batch_norm": [{"name", "class"}], "random": [{"name", "class", "seed"}]}: the layers to look at
    when the runs part with the same examples, batch and rate."""
    batch_norm, random = [], []
    for layer in _all_layers(model):
        name = type(layer).__name__
        if "BatchNormalization" in name and not _synchronized(layer):
            batch_norm.append({"name": layer.name, "class": name})
        elif (name in _RANDOM and not _off(layer)) or name.startswith("Random"):
            seed = getattr(layer, "seed", None)
            random.append({"name": layer.name, "class": name, "seed": seed if isinstance(seed, int) else None})
    return {"batch_norm": batch_norm, "random": random + seed_generators(model)}
