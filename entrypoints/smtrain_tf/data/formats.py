"""Reading a channel's files (NPZ, TFRecord, CSV): find them, check them, and describe them.

Every problem names the file it was found in. Layouts (also in entrypoints/README.md):
- NPZ: arrays `x` (N, ...) numeric and `y` (N,) integer class ids; loaded into memory.
- TFRecord: tf.train.Example records with float_list `x` (the example flattened), optional
  int64_list `shape` (x's shape, e.g. [8, 8, 1]) and int64 `y`; `.gz` means GZIP.
- CSV: numeric columns, the class id in the last one, an optional header row; `.gz` means GZIP.
"""

from __future__ import annotations

import gzip
import io
import os
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Tuple

import numpy as np
import tensorflow as tf

from ..contract.errors import DataError

EXTENSIONS = {
    ".npz": "npz",
    ".tfrecord": "tfrecord",
    ".tfrecords": "tfrecord",
    ".tfr": "tfrecord",
    ".csv": "csv",
}


@dataclass
class ChannelData:
    """A checked channel: enough to build its tf.data pipeline and size the model."""

    name: str
    format: str
    files: List[str]
    element_shape: Tuple[int, ...]
    num_examples: int
    max_label: int
    size_bytes: int
    arrays: Optional[Tuple[np.ndarray, np.ndarray]] = None
    # Per-format reading details (TFRecord feature length, CSV column count and headers).
    details: Dict[str, object] = field(default_factory=dict)

    @property
    def in_memory(self) -> bool:
        return self.arrays is not None


def _compression(path: str) -> str:
    return "GZIP" if path.endswith(".gz") else ""


def _format_of(path: str) -> Optional[str]:
    name = path[:-3] if path.endswith(".gz") else path
    return EXTENSIONS.get(os.path.splitext(name)[1].lower())


def list_files(channel: str, directory: str, data_format: str) -> Tuple[str, List[str]]:
    """The channel's data files (recursively, hidden ones skipped) and their common format."""
    found: List[str] = []
    for root, dirs, names in os.walk(directory, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(os.path.join(root, n) for n in sorted(names) if not n.startswith("."))
    if not found:
        raise DataError(f"channel '{channel}' ({directory}) is empty")
    if data_format != "auto":
        # An explicit format reads every file, extension or not (e.g. part-00000).
        if data_format == "npz" and any(f.endswith(".gz") for f in found):
            raise DataError(f"channel '{channel}': NPZ files cannot be gzipped ({found[0]})")
        return data_format, found
    formats: Dict[str, List[str]] = {}
    for path in found:
        fmt = _format_of(path)
        if fmt is not None:
            formats.setdefault(fmt, []).append(path)
    if not formats:
        raise DataError(f"channel '{channel}' ({directory}) has no .npz, .tfrecord or .csv files "
                        f"(found e.g. {found[0]}); set data_format to read other names")
    if len(formats) > 1:
        examples = ", ".join(f"{paths[0]} ({fmt})" for fmt, paths in sorted(formats.items()))
        raise DataError(f"channel '{channel}' mixes formats: {examples}; keep one format per channel")
    (fmt, paths), = formats.items()
    return fmt, paths


def load_channel(channel: str, directory: str, data_format: str) -> ChannelData:
    fmt, files = list_files(channel, directory, data_format)
    loader: Callable[[str, List[str]], ChannelData] = {"npz": _load_npz, "tfrecord": _load_tfrecord,
                                                        "csv": _load_csv}[fmt]
    data = loader(channel, files)
    if data.num_examples == 0:
        raise DataError(f"channel '{channel}' ({directory}) has no examples in {len(files)} file(s), "
                        f"e.g. {files[0]}")
    return data


# --- NPZ ---------------------------------------------------------------------------------------

def _labels(path: str, y: np.ndarray) -> np.ndarray:
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise DataError(f"{path}: 'y' must hold one class id per example, got shape {y.shape}")
    if not np.issubdtype(y.dtype, np.number) and y.dtype != np.bool_:
        raise DataError(f"{path}: 'y' must be integer class ids, got dtype {y.dtype}")
    if y.size and (not np.all(np.isfinite(y)) or np.any(np.mod(y, 1) != 0)):
        raise DataError(f"{path}: 'y' must be whole-number class ids")
    if y.size and y.min() < 0:
        raise DataError(f"{path}: 'y' has a negative class id ({int(y.min())})")
    return y.astype(np.int64)


def _load_npz(channel: str, files: List[str]) -> ChannelData:
    xs, ys = [], []
    shape: Optional[Tuple[int, ...]] = None
    for path in files:
        try:
            with np.load(path, allow_pickle=False) as archive:
                missing = [k for k in ("x", "y") if k not in archive.files]
                if missing:
                    raise DataError(f"{path}: NPZ needs arrays 'x' and 'y', missing {', '.join(missing)} "
                                    f"(has {', '.join(archive.files) or 'none'})")
                x, y = archive["x"], archive["y"]
        except DataError:
            raise
        except Exception as exc:  # numpy raises many kinds for a damaged archive
            raise DataError(f"{path}: not a readable NPZ file ({type(exc).__name__}: {exc})") from None
        if x.ndim < 1 or not (np.issubdtype(x.dtype, np.number) or x.dtype == np.bool_):
            raise DataError(f"{path}: 'x' must be a numeric array with one row per example, got {x.dtype} {x.shape}")
        if len(x) != len(y):
            raise DataError(f"{path}: 'x' has {len(x)} examples but 'y' has {len(y)}")
        if shape is not None and tuple(x.shape[1:]) != shape:
            raise DataError(f"{path}: examples of shape {tuple(x.shape[1:])}, other files have {shape}")
        shape = tuple(int(d) for d in x.shape[1:])
        xs.append(x.astype(np.float32, copy=False))
        ys.append(_labels(path, y))
    x_all = np.concatenate(xs) if len(xs) > 1 else xs[0]
    y_all = np.concatenate(ys) if len(ys) > 1 else ys[0]
    if x_all.ndim == 1:
        x_all = x_all[:, None]
        shape = (1,)
    if not np.all(np.isfinite(x_all)):
        raise DataError(f"channel '{channel}': 'x' holds NaN or infinite values ({files[0]}...)")
    return ChannelData(name=channel, format="npz", files=files, element_shape=tuple(shape or (1,)),
                       num_examples=int(len(y_all)), max_label=int(y_all.max()) if len(y_all) else -1,
                       size_bytes=int(x_all.nbytes + y_all.nbytes), arrays=(x_all, y_all))


# --- TFRecord ----------------------------------------------------------------------------------

def _first_record(path: str) -> Optional[bytes]:
    try:
        for raw in tf.data.TFRecordDataset(path, compression_type=_compression(path)).take(1):
            return bytes(raw.numpy())
    except (tf.errors.DataLossError, tf.errors.InvalidArgumentError, tf.errors.OutOfRangeError) as exc:
        raise DataError(f"{path}: not a readable TFRecord file ({exc.message.splitlines()[0]})") from None
    return None


def _example_shape(path: str, raw: bytes) -> Tuple[int, ...]:
    try:
        example = tf.train.Example.FromString(raw)
    except Exception as exc:  # protobuf's DecodeError and friends
        raise DataError(f"{path}: the first record is not a tf.train.Example ({exc})") from None
    features = example.features.feature
    for key, kind in (("x", "float_list"), ("y", "int64_list")):
        if key not in features:
            raise DataError(f"{path}: tf.train.Example needs a feature '{key}' ({kind}); has "
                            f"{', '.join(sorted(features)) or 'none'}")
        if features[key].WhichOneof("kind") != kind:
            raise DataError(f"{path}: feature '{key}' must be a {kind}, got {features[key].WhichOneof('kind')}")
    if len(features["y"].int64_list.value) != 1:
        raise DataError(f"{path}: feature 'y' must hold exactly one class id")
    length = len(features["x"].float_list.value)
    if "shape" in features:
        shape = tuple(int(d) for d in features["shape"].int64_list.value)
        if not shape or int(np.prod(shape)) != length:
            raise DataError(f"{path}: feature 'shape' {list(shape)} does not match {length} values in 'x'")
        return shape
    return (length,)


def tfrecord_parser(shape: Tuple[int, ...]) -> Callable[[tf.Tensor], Tuple[tf.Tensor, tf.Tensor]]:
    spec = {
        "x": tf.io.FixedLenFeature([int(np.prod(shape))], tf.float32),
        "y": tf.io.FixedLenFeature([], tf.int64),
    }

    def parse(serialized: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        parsed = tf.io.parse_single_example(serialized, spec)
        return tf.reshape(parsed["x"], shape), parsed["y"]

    return parse


def tfrecord_reader(shape: Tuple[int, ...]) -> Callable[[tf.Tensor], tf.data.Dataset]:
    parse = tfrecord_parser(shape)

    def read(path: tf.Tensor) -> tf.data.Dataset:
        compression = tf.where(tf.strings.regex_full_match(path, r".*\.gz"), "GZIP", "")
        return tf.data.TFRecordDataset(path, compression_type=compression).map(parse)

    return read


def _scan(channel: str, path: str, dataset: tf.data.Dataset) -> Tuple[int, int]:
    """Count examples and find the largest label of one file, naming it if it is damaged."""
    labels = dataset.map(lambda x, y: y).batch(8192)
    big = tf.constant(np.iinfo(np.int64).max, tf.int64)

    def step(state: Tuple[tf.Tensor, tf.Tensor, tf.Tensor], y: tf.Tensor) -> Tuple[tf.Tensor, ...]:
        return (state[0] + tf.size(y, out_type=tf.int64),
                tf.minimum(state[1], tf.reduce_min(tf.concat([y, [big]], 0))),
                tf.maximum(state[2], tf.reduce_max(tf.concat([y, [-1]], 0))))

    try:
        count, low, top = labels.reduce((tf.constant(0, tf.int64), big, tf.constant(-1, tf.int64)), step)
    except (tf.errors.InvalidArgumentError, tf.errors.DataLossError, tf.errors.OutOfRangeError) as exc:
        first = exc.message.strip().splitlines()[0] if exc.message else type(exc).__name__
        raise DataError(f"{path}: malformed {channel} data ({first})") from None
    if int(count) and int(low) < 0:
        raise DataError(f"{path}: negative class id {int(low)} in 'y'")
    return int(count), int(top)


def _load_tfrecord(channel: str, files: List[str]) -> ChannelData:
    shape: Optional[Tuple[int, ...]] = None
    used, count, top = [], 0, -1
    for path in files:
        raw = _first_record(path)
        if raw is None:
            continue  # an empty shard is allowed; an empty channel is not
        file_shape = _example_shape(path, raw)
        if shape is not None and file_shape != shape:
            raise DataError(f"{path}: examples of shape {list(file_shape)}, other files have {list(shape)}")
        shape = file_shape
        dataset = tf.data.TFRecordDataset(path, compression_type=_compression(path)).map(tfrecord_parser(shape))
        n, label = _scan(channel, path, dataset)
        used.append(path)
        count += n
        top = max(top, label)
    if shape is None:
        raise DataError(f"channel '{channel}': every TFRecord file is empty (e.g. {files[0]})")
    return ChannelData(name=channel, format="tfrecord", files=used, element_shape=shape, num_examples=count,
                       max_label=top, size_bytes=sum(os.path.getsize(f) for f in used))


# --- CSV ---------------------------------------------------------------------------------------

def _first_line(path: str) -> str:
    try:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rb") as raw:  # type: ignore[operator]
            line = io.TextIOWrapper(raw, encoding="utf-8", errors="strict").readline()
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: not a readable CSV text file ({exc})") from None
    return line.strip()


def _is_number(text: str) -> bool:
    try:
        float(text)
        return True
    except ValueError:
        return False


def csv_reader(columns: int, headers: Dict[str, bool]) -> Callable[[tf.Tensor], tf.data.Dataset]:
    """A per-file reader; files with a header row skip it."""
    with_header = tf.constant(sorted(p for p, h in headers.items() if h) or [""])

    def read(path: tf.Tensor) -> tf.data.Dataset:
        skip = tf.cast(tf.reduce_any(tf.equal(with_header, path)), tf.int64)
        compression = tf.where(tf.strings.regex_full_match(path, r".*\.gz"), "GZIP", "")
        lines = tf.data.TextLineDataset(path, compression_type=compression).skip(skip)
        return lines.filter(lambda line: tf.strings.length(tf.strings.strip(line)) > 0).map(csv_parser(columns))

    return read


def csv_parser(columns: int) -> Callable[[tf.Tensor], Tuple[tf.Tensor, tf.Tensor]]:
    defaults = [tf.constant([], tf.float32)] * columns  # every field required

    def parse(line: tf.Tensor) -> Tuple[tf.Tensor, tf.Tensor]:
        fields = tf.io.decode_csv(line, record_defaults=defaults)
        x = tf.stack(fields[:-1], axis=-1)
        y = tf.cast(fields[-1], tf.int64)
        return x, y

    return parse


def _load_csv(channel: str, files: List[str]) -> ChannelData:
    columns: Optional[int] = None
    headers: Dict[str, bool] = {}
    used, count, top = [], 0, -1
    for path in files:
        line = _first_line(path)
        if not line:
            continue
        fields = [f.strip() for f in line.split(",")]
        header = not all(_is_number(f) for f in fields)
        if len(fields) < 2:
            raise DataError(f"{path}: a CSV row needs at least one feature and the label (last column)")
        if columns is not None and len(fields) != columns:
            raise DataError(f"{path}: {len(fields)} columns, other files have {columns}")
        columns = len(fields)
        headers[path] = header
        lines = tf.data.TextLineDataset(path, compression_type=_compression(path)).skip(int(header))
        lines = lines.filter(lambda text: tf.strings.length(tf.strings.strip(text)) > 0)
        n, label = _scan(channel, path, lines.map(csv_parser(columns)))
        used.append(path)
        count += n
        top = max(top, label)
    if columns is None:
        raise DataError(f"channel '{channel}': every CSV file is empty (e.g. {files[0]})")
    return ChannelData(name=channel, format="csv", files=used, element_shape=(columns - 1,), num_examples=count,
                       max_label=top, size_bytes=sum(os.path.getsize(f) for f in used),
                       details={"columns": columns, "headers": headers})


# --- synthetic ---------------------------------------------------------------------------------

def synthetic(shape: Tuple[int, ...], num_examples: int, num_classes: int, seed: int,
              max_bytes: int = 256 * 2**20) -> ChannelData:
    """Learnable random data: labels come from a fixed random linear teacher.

    A pool of at most `max_bytes` is generated and cycled, so ResNet-sized shapes stay in memory.
    """
    rng = np.random.default_rng(seed)
    per_example = int(np.prod(shape)) * 4
    pool = int(max(1, min(num_examples, max_bytes // max(per_example, 1))))
    x = rng.standard_normal((pool, *shape), dtype=np.float32)
    teacher = rng.standard_normal((int(np.prod(shape)), num_classes), dtype=np.float32)
    y = np.argmax(x.reshape(pool, -1) @ teacher, axis=1).astype(np.int64)
    return ChannelData(name="synthetic", format="synthetic", files=[], element_shape=tuple(shape),
                       num_examples=num_examples, max_label=num_classes - 1, size_bytes=int(x.nbytes),
                       arrays=(x, y))
