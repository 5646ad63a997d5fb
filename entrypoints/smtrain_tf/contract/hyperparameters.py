"""The hyperparameter table and its parsing: `--name value` arguments, SM_HPS, SMTRAIN_<NAME>, defaults.

SageMaker's toolkit passes user hyperparameters as `--name value` (values through `str()`, so
booleans arrive as `True`/`False`) and also as JSON in SM_HPS. It adds `--model_dir s3://...`
and other values of its own, which are tolerated and kept aside.

Every row may also come from the environment as SMTRAIN_<NAME> (SMTRAIN_EPOCHS, ...). For the
bundled entrypoint an argument wins over SM_HPS, which wins over the environment. A script of the
user's own (`own_script=True`) keeps its arguments and SM_HPS to itself: the table then comes from
the environment alone, where smtrain puts its settings for such jobs.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from ..scaling import LR_SCALING_RULES
from .errors import ConfigurationError

_TRUE = {"true", "1", "yes", "on", "y", "t"}
_FALSE = {"false", "0", "no", "off", "n", "f", "none", ""}

STRATEGIES = ("auto", "default", "mirrored", "multi_worker_mirrored", "parameter_server", "horovod", "smddp")


def parse_bool(text: str) -> bool:
    value = str(text).strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ValueError("expected a boolean (true/false/1/0)")


def parse_int(text: str) -> int:
    value = str(text).strip()
    try:
        return int(value)
    except ValueError:
        # JSON round trips can turn 10 into 10.0.
        number = float(value)
        if not number.is_integer():
            raise ValueError("expected a whole number") from None
        return int(number)


def parse_float(text: str) -> float:
    number = float(str(text).strip())
    if math.isnan(number):
        raise ValueError("NaN is not allowed")
    return number


def parse_str(text: str) -> str:
    return str(text).strip()


def _choice(*choices: str, aliases: Optional[Mapping[str, str]] = None) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = str(text).strip().lower()
        value = (aliases or {}).get(value, value)
        if value not in choices:
            raise ValueError("expected one of " + ", ".join(choices))
        return value

    parse.choices = choices  # type: ignore[attr-defined]
    return parse


def _at_least(parse: Callable[[str], Any], low: float) -> Callable[[str], Any]:
    def checked(text: str) -> Any:
        value = parse(text)
        if value < low:
            raise ValueError(f"must be >= {low:g}")
        return value

    return checked


def _on_off_auto(text: str) -> str:
    value = str(text).strip().lower()
    if value == "auto":
        return "auto"
    return "on" if parse_bool(value) else "off"


_HOOK = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$")


def is_hook(text: str) -> bool:
    """`module:function`: a model or data hook in the user's source directory."""
    return bool(_HOOK.match(text))


def _data_source(text: str) -> str:
    value = str(text).strip()
    if value.lower() in ("channels", "synthetic"):
        return value.lower()
    if is_hook(value):
        return value
    raise ValueError(f"expected channels, synthetic or module:function, got {text!r}")


@dataclass(frozen=True)
class Hyperparameter:
    name: str
    parse: Callable[[str], Any]
    default: Any
    help: str


# One row per hyperparameter; entrypoints/README.md documents the same table.
TABLE: Tuple[Hyperparameter, ...] = (
    Hyperparameter("model", parse_str, "mlp", "mlp, cnn, resnet50, or module:function"),
    Hyperparameter("epochs", _at_least(parse_int, 1), 10, "passes over the training data"),
    Hyperparameter("batch_size_per_replica", _at_least(parse_int, 1), 64, "examples per replica per step"),
    Hyperparameter("learning_rate", _at_least(parse_float, 0.0), 0.001, "learning rate for one replica"),
    Hyperparameter("lr_scaling", _choice(*LR_SCALING_RULES), "linear", "how the rate grows with replicas"),
    Hyperparameter("warmup_epochs", _at_least(parse_float, 0.0), 0.0, "linear warm-up length in epochs"),
    Hyperparameter("optimizer", _choice("adam", "sgd"), "adam", "adam or sgd"),
    Hyperparameter("momentum", _at_least(parse_float, 0.0), 0.9, "SGD momentum"),
    Hyperparameter("mixed_precision", _on_off_auto, "auto", "auto (on for GPUs >= 7.0), on, off"),
    Hyperparameter("xla", parse_bool, False, "jit-compile the forward/backward pass"),
    Hyperparameter("steps_per_execution", _at_least(parse_int, 1), 20, "training steps per tf.function call"),
    Hyperparameter("checkpoint_every_steps", _at_least(parse_int, 0), 0, "also checkpoint every N steps (0: epochs only)"),
    Hyperparameter("checkpoint_dir", parse_str, "", "default <SAGEMAKER_BASE_DIR or /opt/ml>/checkpoints"),
    Hyperparameter("keep_checkpoints", _at_least(parse_int, 1), 3, "checkpoints kept"),
    Hyperparameter("strategy", _choice(*STRATEGIES, aliases={"none": "default", "mwms": "multi_worker_mirrored",
                                                             "ps": "parameter_server"}),
                   "auto", "force a distribution strategy"),
    Hyperparameter("data", _data_source, "channels",
                   "read channels, generate data, or module:function returning tf.data datasets"),
    Hyperparameter("data_format", _choice("auto", "npz", "tfrecord", "csv"), "auto", "file format of the channels"),
    Hyperparameter("num_classes", _at_least(parse_int, 0), 0, "classes (0: largest training label + 1)"),
    Hyperparameter("shuffle_buffer", _at_least(parse_int, 0), 10000, "examples in the shuffle buffer (0: no shuffle)"),
    Hyperparameter("cache", _on_off_auto, "auto", "cache parsed file data in memory (auto: when small)"),
    Hyperparameter("cache_max_mb", _at_least(parse_float, 0.0), 1024.0, "largest channel cached by cache=auto"),
    Hyperparameter("synthetic_examples", _at_least(parse_int, 1), 8192, "examples per epoch for data=synthetic"),
    Hyperparameter("synthetic_shape", parse_str, "", "example shape for data=synthetic (default per model)"),
    Hyperparameter("hidden_units", parse_str, "256,128", "mlp hidden layer sizes"),
    Hyperparameter("seed", parse_int, 42, "random seed"),
    Hyperparameter("cpu_replicas", _at_least(parse_int, 0), 0, "split the CPU into N logical devices (tests)"),
    Hyperparameter("collective_timeout", _at_least(parse_float, 1.0), 600.0,
                   "seconds without progress (a step, an evaluation, a checkpoint) before the watchdog ends a "
                   "multi-process run"),
    Hyperparameter("startup_timeout", _at_least(parse_float, 1.0), 1800.0, "seconds allowed to form the cluster"),
    Hyperparameter("max_steps_per_epoch", _at_least(parse_int, 0), 0, "cap on steps per epoch (0: no cap)"),
    Hyperparameter("fail_on_nan", parse_bool, True, "stop when the loss is NaN or infinite"),
    Hyperparameter("log_every_steps", _at_least(parse_int, 0), 0, "progress line every N steps (0: epochs only)"),
    Hyperparameter("allow_cpu", parse_bool, False, "train on the CPU when the job asked for GPUs and none is seen"),
    Hyperparameter("gradient_accumulation_steps", _at_least(parse_int, 1), 1,
                   "micro-batches whose gradients make one optimizer step"),
    Hyperparameter("tensorboard_dir", parse_str, "",
                   "where the chief writes TensorBoard scalars (default <SM_OUTPUT_DIR>/tensorboard; off: none)"),
)

ENV_PREFIX = "SMTRAIN_"

BY_NAME: Dict[str, Hyperparameter] = {hp.name: hp for hp in TABLE}


def env_name(name: str) -> str:
    """The environment variable that may carry hyperparameter `name`: SMTRAIN_<NAME>."""
    return ENV_PREFIX + name.upper()


@dataclass(frozen=True)
class Parsed:
    """Typed values of the table, plus everything else that arrived.

    extras: for the bundled entrypoint, the names outside the table as strings (for model hooks);
    for an own script, every hyperparameter the job was given (SM_HPS with its JSON types, then
    arguments), since all of them are the user's.
    """

    values: Dict[str, Any]
    extras: Dict[str, Any]
    unknown: Tuple[str, ...]

    def __getitem__(self, name: str) -> Any:
        return self.values[name]


def _split_unknown(rest: Sequence[str]) -> Dict[str, str]:
    """`--name value` pairs that are not in the table (the toolkit's own, or the user's)."""
    extras: Dict[str, str] = {}
    i = 0
    while i < len(rest):
        token = rest[i]
        if token.startswith("--") and len(token) > 2:
            name = token[2:]
            if "=" in name:
                name, value = name.split("=", 1)
                extras[name] = value
            elif i + 1 < len(rest) and not rest[i + 1].startswith("--"):
                extras[name] = rest[i + 1]
                i += 1
            else:
                extras[name] = "true"
        i += 1
    return extras


def _sm_hps(raw: Optional[str]) -> Dict[str, Any]:
    if not raw:
        return {}
    try:
        hps = json.loads(raw)
    except ValueError as exc:
        raise ConfigurationError(f"SM_HPS is not valid JSON ({exc})") from None
    if not isinstance(hps, dict):
        raise ConfigurationError("SM_HPS must be a JSON object of hyperparameters")
    return hps


def _as_text(value: Any) -> str:
    # SM_HPS holds decoded JSON: give the parsers the same text the command line would carry.
    if isinstance(value, (dict, list)):
        return json.dumps(value)
    return str(value)


_MISSING = object()


def _typed(raw: Any, text: str) -> Any:
    """An argument's value, with SM_HPS's JSON type when the toolkit's str() of it gives the same text."""
    return raw if raw is not _MISSING and _as_text(raw) == text else text


def _from_table(environ: Mapping[str, str], given: Mapping[str, Tuple[str, str]]) -> Dict[str, Any]:
    """Typed values: `given` (name -> (text, source)) first, then SMTRAIN_<NAME>, then the default."""
    values: Dict[str, Any] = {}
    for hp in TABLE:
        text, source = given.get(hp.name, (None, ""))
        if text is None and environ.get(env_name(hp.name)) is not None:
            text, source = environ[env_name(hp.name)], env_name(hp.name)
        if text is None:
            values[hp.name] = hp.default
            continue
        try:
            values[hp.name] = hp.parse(text)
        except ValueError as exc:
            if source.startswith(ENV_PREFIX):
                raise ConfigurationError(f"{source}={text!r} (hyperparameter {hp.name}): {exc}") from None
            raise ConfigurationError(f"hyperparameter {hp.name}={text!r} ({source}): {exc}") from None
    return values


def parse(argv: Sequence[str], sm_hps: Optional[str] = None, environ: Optional[Mapping[str, str]] = None,
          own_script: bool = False) -> Parsed:
    """Command-line values win over SM_HPS, which wins over SMTRAIN_<NAME>, which wins over the defaults.

    With own_script, arguments and SM_HPS are the user's: they only fill `extras`.
    """
    env = environ or {}
    fallback = _sm_hps(sm_hps)
    if own_script:
        arguments = _split_unknown(list(argv))
        extras: Dict[str, Any] = dict(fallback)
        for name, text in arguments.items():
            extras[name] = _typed(fallback.get(name, _MISSING), text)
        return Parsed(values=_from_table(env, {}), extras=extras, unknown=())
    parser = argparse.ArgumentParser(add_help=False, allow_abbrev=False)
    for hp in TABLE:
        parser.add_argument(f"--{hp.name}", dest=hp.name, default=None)
    try:
        known, rest = parser.parse_known_args(list(argv))
    except SystemExit:
        raise ConfigurationError("could not read the command-line hyperparameters: " + " ".join(argv)) from None
    given: Dict[str, Tuple[str, str]] = {}
    for hp in TABLE:
        if getattr(known, hp.name) is not None:
            given[hp.name] = (getattr(known, hp.name), "argument")
        elif hp.name in fallback:
            given[hp.name] = (_as_text(fallback[hp.name]), "SM_HPS")
    values = _from_table(env, given)
    extras = {k: _as_text(v) for k, v in fallback.items() if k not in BY_NAME}
    extras.update(_split_unknown(rest))
    unknown = tuple(sorted(k for k in extras if not k.startswith("sagemaker_") and k != "model_dir"))
    return Parsed(values=values, extras=extras, unknown=unknown)


def describe_table() -> List[Tuple[str, str, str]]:
    """(name, default, help) rows, for documentation checks."""
    return [(hp.name, str(hp.default), hp.help) for hp in TABLE]
