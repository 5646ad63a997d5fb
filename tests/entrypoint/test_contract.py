"""The container contract, hyperparameters, strategy choice and failure file: pure Python, no TensorFlow."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from smtrain_tf.contract import container as contract  # noqa: E402
from smtrain_tf.contract import failure, hyperparameters  # noqa: E402
from smtrain_tf.contract.errors import ConfigurationError, DataError, PeerFailure  # noqa: E402
from smtrain_tf.distribute import choice as strategy_choice  # noqa: E402
from smtrain_tf.distribute import ps_servers  # noqa: E402
from smtrain_tf.training import metrics  # noqa: E402

from . import conftest  # noqa: F401 - puts entrypoints/ on sys.path

METRIC_DEFINITIONS = Path(conftest.ENTRYPOINTS) / "smtrain_tf" / "metric_definitions.json"


def _env(tmp_path: Path, **extra: str) -> dict:
    train = tmp_path / "data" / "train"
    train.mkdir(parents=True, exist_ok=True)
    env = {
        "SAGEMAKER_BASE_DIR": str(tmp_path / "ml"),
        "SM_MODEL_DIR": str(tmp_path / "model"),
        "SM_OUTPUT_DIR": str(tmp_path / "output"),
        "SM_CHANNELS": json.dumps(["train"]),
        "SM_CHANNEL_TRAIN": str(train),
        "SM_HOSTS": json.dumps(["algo-1", "algo-2"]),
        "SM_CURRENT_HOST": "algo-2",
        "SM_NUM_GPUS": "0",
    }
    env.update(extra)
    return env


@pytest.mark.parametrize("text,expected", [("True", True), ("true", True), ("1", True), ("False", False),
                                           ("false", False), ("0", False)])
def test_booleans_arrive_in_every_spelling(text: str, expected: bool) -> None:
    assert hyperparameters.parse(["--xla", text]).values["xla"] is expected


def test_arguments_win_over_sm_hps_which_wins_over_defaults() -> None:
    parsed = hyperparameters.parse(["--epochs", "3"], json.dumps({"epochs": 9, "seed": 7, "fail_on_nan": False}))
    assert parsed["epochs"] == 3
    assert parsed["seed"] == 7
    assert parsed["fail_on_nan"] is False
    assert parsed["batch_size_per_replica"] == 64


def test_the_environment_is_the_last_fallback_before_the_default() -> None:
    env = {"SMTRAIN_EPOCHS": "5", "SMTRAIN_SEED": "9", "SMTRAIN_ALLOW_CPU": "true",
           "SMTRAIN_GRADIENT_ACCUMULATION_STEPS": "4", "SMTRAIN_OPTIMIZER": "sgd"}
    parsed = hyperparameters.parse(["--epochs", "3"], json.dumps({"seed": 7}), env)
    assert (parsed["epochs"], parsed["seed"], parsed["optimizer"]) == (3, 7, "sgd")
    assert parsed["allow_cpu"] is True and parsed["gradient_accumulation_steps"] == 4
    defaults = hyperparameters.parse([], None, {})
    assert defaults["allow_cpu"] is False and defaults["gradient_accumulation_steps"] == 1
    with pytest.raises(ConfigurationError, match=r"SMTRAIN_GRADIENT_ACCUMULATION_STEPS='0' \(hyperparameter "
                                                 r"gradient_accumulation_steps\): must be >= 1"):
        hyperparameters.parse([], None, {"SMTRAIN_GRADIENT_ACCUMULATION_STEPS": "0"})
    # Every row has its variable.
    assert all(hyperparameters.env_name(row.name) == "SMTRAIN_" + row.name.upper() for row in hyperparameters.TABLE)


def test_an_own_script_keeps_its_arguments_and_sm_hps_to_itself() -> None:
    sm_hps = json.dumps({"epochs": 2, "optimizer": "rmsprop", "sagemaker_mpi_enabled": True, "layers": [3, 4]})
    parsed = hyperparameters.parse(["--epochs", "2", "--seed", "abc", "--layers", "[3, 4]", "--flag"], sm_hps,
                                   {"SMTRAIN_CPU_REPLICAS": "2"}, own_script=True)
    assert (parsed["epochs"], parsed["seed"], parsed["optimizer"], parsed["cpu_replicas"]) == (10, 42, "adam", 2)
    assert parsed.extras == {"epochs": 2, "optimizer": "rmsprop", "sagemaker_mpi_enabled": True, "layers": [3, 4],
                             "seed": "abc", "flag": "true"}
    assert parsed.unknown == ()


def test_own_script_mode_still_reads_the_sagemaker_flags(tmp_path: Path) -> None:
    env = _env(tmp_path, SM_HPS=json.dumps({"sagemaker_mpi_enabled": True, "strategy": "nonsense"}))
    read = contract.read(["--strategy", "nonsense"], env, own_script=True)
    assert read.flag(contract.MPI_FLAG) and read.hp("strategy") == "auto"
    assert strategy_choice.decide(read, 1).kind == "horovod"


def test_sagemaker_arguments_are_tolerated_and_kept_aside() -> None:
    parsed = hyperparameters.parse(["--model_dir", "s3://bucket/job/model", "--sagemaker_program", "x.py",
                                    "--epochs", "2", "--my_width=32"])
    assert parsed["epochs"] == 2
    assert parsed.extras["model_dir"] == "s3://bucket/job/model"
    assert parsed.unknown == ("my_width",)


def test_a_bad_value_names_the_hyperparameter() -> None:
    with pytest.raises(ConfigurationError, match=r"hyperparameter epochs='many'"):
        hyperparameters.parse(["--epochs", "many"])
    with pytest.raises(ConfigurationError, match="lr_scaling"):
        hyperparameters.parse(["--lr_scaling", "cubic"])
    assert hyperparameters.parse(["--epochs", "10.0"])["epochs"] == 10  # JSON round trips give floats


def test_contract_reads_the_container_environment(tmp_path: Path) -> None:
    read = contract.read(["--epochs", "1"], _env(tmp_path))
    assert read.model_dir == str(tmp_path / "model")
    assert read.output_dir == str(tmp_path / "output")
    assert read.checkpoint_dir == str(tmp_path / "ml" / "checkpoints")
    assert read.channels == {"train": str(tmp_path / "data" / "train")}
    assert (read.hosts, read.current_host, read.num_gpus) == (["algo-1", "algo-2"], "algo-2", 0)
    assert contract.read(["--checkpoint_dir", str(tmp_path / "c")], _env(tmp_path)).checkpoint_dir == \
        str(tmp_path / "c")


@pytest.mark.parametrize("name,value,message", [
    ("SM_HOSTS", "[algo-1", "SM_HOSTS is not valid JSON"),
    ("SM_CURRENT_HOST", "algo-9", "not one of SM_HOSTS"),
    ("TF_CONFIG", json.dumps({"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 3}}),
     "out of range"),
    ("SM_NUM_GPUS", "eight", "not a whole number"),
])
def test_a_broken_contract_fails_with_a_reason(tmp_path: Path, name: str, value: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        contract.read([], _env(tmp_path, **{name: value}))


def test_missing_train_channel_is_reported(tmp_path: Path) -> None:
    env = _env(tmp_path, SM_CHANNELS=json.dumps(["validation"]), SM_CHANNEL_VALIDATION=str(tmp_path))
    with pytest.raises(DataError, match="no 'train' channel"):
        contract.require_channels(contract.read([], env))
    contract.require_channels(contract.read(["--data", "synthetic"], env))


def test_unwritable_output_directories_fail_before_training(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    env = _env(tmp_path, SM_MODEL_DIR=str(blocker / "model"))
    with pytest.raises(ConfigurationError, match=r"model directory \(SM_MODEL_DIR\) .* cannot be created"):
        contract.require_writable(contract.read([], env))
    contract.require_writable(contract.read([], _env(tmp_path)))
    assert (tmp_path / "model").is_dir() and (tmp_path / "ml" / "checkpoints").is_dir()


def test_model_dir_argument_is_never_the_output(tmp_path: Path) -> None:
    read = contract.read(["--model_dir", "s3://bucket/x"], _env(tmp_path))
    assert read.model_dir == str(tmp_path / "model")


def _choose(tmp_path: Path, argv=(), devices: int = 1, **env: str) -> strategy_choice.Choice:
    return strategy_choice.decide(contract.read(list(argv), _env(tmp_path, **env)), devices)


def test_strategy_follows_the_contract(tmp_path: Path) -> None:
    assert _choose(tmp_path).kind == "default"
    assert _choose(tmp_path, devices=2).kind == "mirrored"
    mwms = json.dumps({"cluster": {"worker": ["h1:8890", "h2:8890"]}, "task": {"type": "worker", "index": 1}})
    choice = _choose(tmp_path, TF_CONFIG=mwms)
    assert (choice.kind, choice.role.is_chief) == ("multi_worker_mirrored", False)
    ps = json.dumps({"cluster": {"master": ["h1:2222"], "worker": ["h2:2222"], "ps": ["h1:2223", "h2:2223"]},
                     "task": {"type": "master", "index": 0}})
    choice = _choose(tmp_path, TF_CONFIG=ps)
    assert choice.kind == "parameter_server" and choice.role.task_type == "chief" and not choice.serves_only
    assert choice.role.cluster["chief"] == ["h1:2222"]
    worker = json.dumps({**json.loads(ps), "task": {"type": "worker", "index": 0}})
    assert _choose(tmp_path, TF_CONFIG=worker).serves_only
    params = json.dumps({"sagemaker_mpi_enabled": True})
    assert _choose(tmp_path, SM_FRAMEWORK_PARAMS=params).kind == "horovod"
    assert _choose(tmp_path, ["--sagemaker_distributed_dataparallel_enabled", "True"]).kind == "smddp"
    one_host_ps = json.dumps({"cluster": {"master": ["h1:2222"], "ps": ["h1:2223"]},
                              "task": {"type": "master", "index": 0}})
    assert _choose(tmp_path, TF_CONFIG=one_host_ps).kind == "default"


def test_forced_strategy_must_fit_the_cluster(tmp_path: Path) -> None:
    assert _choose(tmp_path, ["--strategy", "mirrored"]).kind == "mirrored"
    with pytest.raises(ConfigurationError, match="needs TF_CONFIG"):
        _choose(tmp_path, ["--strategy", "multi_worker_mirrored"])
    with pytest.raises(ConfigurationError, match="parameter_server needs"):
        _choose(tmp_path, ["--strategy", "parameter_server"])


def test_a_missing_strategy_library_is_named() -> None:
    from smtrain_tf.distribute.collective_libs import import_library

    for kind, module in (("horovod", "horovod.tensorflow"), ("smddp", "smdistributed.dataparallel.tensorflow")):
        try:
            import_library(kind)
        except ConfigurationError as exc:
            assert f"strategy {kind} needs the Python module {module}" in str(exc)
        else:
            pytest.skip(f"{module} is installed here")


def test_failure_file_is_one_line(tmp_path: Path) -> None:
    path = failure.write_failure("bad\nthings   happened", {"SM_OUTPUT_DIR": str(tmp_path / "out")})
    assert path == str(tmp_path / "out" / "failure")
    assert Path(path).read_text() == "bad things happened\n"
    assert failure.output_dir({}) == "/opt/ml/output"

def test_metric_definitions_read_the_lines_the_program_prints() -> None:

    definitions = {d["Name"]: re.compile(d["Regex"]) for d in json.loads(METRIC_DEFINITIONS.read_text())}
    line = metrics.epoch_line(3, 1200, {"loss": 0.1234, "accuracy": 0.97}, {"loss": 0.08, "accuracy": 0.9812}, 0.002,
                              51234.4, 12.34)
    read = {name: regex.search(line) for name, regex in definitions.items()}
    found = {name: match.group(1) for name, match in read.items() if match}
    assert found == {"train:loss": "0.1234", "train:accuracy": "0.9700", "validation:loss": "0.0800",
                     "validation:accuracy": "0.9812", "train:learning_rate": "0.002",
                     "train:examples_per_sec": "51234", "train:epoch": "3"}  # the first fit call: no train:fit
    # A second fit call's line says so, and every other value is read as before.
    second = metrics.epoch_line(1, 40, {"loss": 0.5, "accuracy": 0.8}, None, 0.001, 900.0, 3.0, fit_call=2)
    assert second.startswith("epoch=1 step=40 fit=2 loss=0.5000 ")
    again = {name: match.group(1) for name, regex in definitions.items() if (match := regex.search(second))}
    assert again == {"train:loss": "0.5000", "train:accuracy": "0.8000", "train:learning_rate": "0.001",
                     "train:examples_per_sec": "900", "train:epoch": "1", "train:fit": "2"}


def test_ps_tasks_wait_for_the_chief_to_come_and_go() -> None:
    states = iter([False, True, True, False, True, False, False])
    clock = iter(range(100))
    ps_servers.wait_for_chief("h:1", 10, lambda line: None, probe=lambda a: next(states), sleep=lambda s: None,
                              clock=lambda: next(clock))
    with pytest.raises(PeerFailure, match="did not come up"):
        ps_servers.wait_for_chief("h:1", 3, lambda line: None, probe=lambda a: False, sleep=lambda s: None,
                                  clock=lambda: next(clock))
