"""Write scikit-learn's digits or diabetes data (real data shipped with scikit-learn) as train/validation channels.

    python -m smtrain.local.demo_data OUT_DIR [--dataset digits|diabetes] [--validation N] [--seed 0]

digits (the default): OUT_DIR/train/digits.npz and OUT_DIR/validation/digits.npz, each with arrays
`x` (8x8 float32 images scaled to [0, 1]) and `y` (int64 labels), the NPZ layout the bundled
entrypoint reads.

diabetes (a regression: ten measurements, the disease's progression a year later): CSV files with
a header, OUT_DIR/train/part-0.csv and part-1.csv (two files, so that two workers can each read
their own) and OUT_DIR/validation/part-0.csv, which configs/code/diabetes.py's data hook reads.

Needs scikit-learn, which the `local` extra installs (pip install 'smtrain[local]').
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

VALIDATION_EXAMPLES = 360
DIABETES_VALIDATION = 90


def write_digits(out_dir: str | os.PathLike[str], validation: int = VALIDATION_EXAMPLES, seed: int = 0) -> dict[str, int]:
    """Shuffle the 1,797 digits with `seed`, hold out `validation` of them; examples written per channel."""
    out_dir = Path(out_dir)  # a notebook passes a string
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


def write_diabetes(out_dir: Path, validation: int = DIABETES_VALIDATION, seed: int = 0) -> dict[str, int]:
    """Shuffle the 442 patients with `seed`, hold out `validation`; the training rows go into two files."""
    import numpy as np
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    order = np.random.default_rng(seed).permutation(len(data.target))
    x, y = data.data[order].astype(np.float32), data.target[order].astype(np.float32)
    header = ",".join([*data.feature_names, "target"])
    parts = {"train": np.array_split(np.arange(validation, len(y)), 2), "validation": [np.arange(validation)]}
    counts = {}
    for channel, pieces in parts.items():
        directory = out_dir / channel
        directory.mkdir(parents=True, exist_ok=True)
        for i, rows in enumerate(pieces):
            np.savetxt(directory / f"part-{i}.csv", np.column_stack([x[rows], y[rows]]), delimiter=",",
                       header=header, comments="", fmt="%.6g")
        counts[channel] = sum(len(rows) for rows in pieces)
    return counts


WRITERS = {"digits": (write_digits, VALIDATION_EXAMPLES), "diabetes": (write_diabetes, DIABETES_VALIDATION)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m smtrain.local.demo_data", description=__doc__.splitlines()[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--dataset", choices=sorted(WRITERS), default="digits")
    parser.add_argument("--validation", type=int, default=None,
                        help=f"examples held out (digits: {VALIDATION_EXAMPLES}, diabetes: {DIABETES_VALIDATION})")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    write, held_out = WRITERS[args.dataset]
    try:
        counts = write(args.out_dir, held_out if args.validation is None else args.validation, args.seed)
    except ImportError:
        print("scikit-learn is needed: pip install 'smtrain[local]' (or pip install scikit-learn)", file=sys.stderr)
        return 2
    print(f"wrote {counts['train']} training and {counts['validation']} validation {args.dataset} examples to "
          f"{args.out_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
