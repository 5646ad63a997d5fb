"""Write scikit-learn's digits (real data shipped with the package) as train/validation NPZ channels.

    python -m smtrain.local.demo_data OUT_DIR [--validation 360] [--seed 0]

Writes OUT_DIR/train/digits.npz and OUT_DIR/validation/digits.npz, each with arrays `x` (8x8
float32 images scaled to [0, 1]) and `y` (int64 labels), the NPZ layout the bundled entrypoint
reads. Needs scikit-learn (the `test` extra; `make install` installs it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

VALIDATION_EXAMPLES = 360


def write_digits(out_dir: Path, validation: int = VALIDATION_EXAMPLES, seed: int = 0) -> dict[str, int]:
    """Shuffle the 1,797 digits with `seed`, hold out `validation` of them; examples written per channel."""
    import numpy as np
    from sklearn.datasets import load_digits

    digits = load_digits()
    x = (digits.images / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = x[order], y[order]
    counts = {}
    for channel, part in (("train", slice(validation, None)), ("validation", slice(0, validation))):
        directory = out_dir / channel
        directory.mkdir(parents=True, exist_ok=True)
        np.savez(directory / "digits.npz", x=x[part], y=y[part])
        counts[channel] = len(y[part])
    return counts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m smtrain.local.demo_data", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--validation", type=int, default=VALIDATION_EXAMPLES, help="examples held out")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    try:
        counts = write_digits(args.out_dir, args.validation, args.seed)
    except ImportError:
        print("scikit-learn is needed: pip install scikit-learn (or `make install`)", file=sys.stderr)
        return 2
    print(f"wrote {counts['train']} training and {counts['validation']} validation digits to {args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
