"""The preflight scan, rule by rule: each on a small script where it must fire and one where it must not."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from smtrain.bundle.build import plan_bundle
from smtrain.plan.build import build_plan
from smtrain.plan.catalog_files import load_catalog
from smtrain.preflight.keras_rules import KEEP_KERAS_2
from smtrain.preflight.rules import JobContext
from smtrain.preflight.scan import Finding, context_of, scan, scan_files, stand_ins
from smtrain.spec.model import load_spec
from tests.support.specfiles import write_spec

CATALOG = load_catalog()
ONE_GPU = JobContext(nodes=1, gpus=1, strategy="none", keras3=True, framework_version="2.19")
TWO_NODES = JobContext(nodes=2, gpus=1, strategy="multi_worker_mirrored", processes=2, keras3=True,
                       framework_version="2.19")


def findings(tmp_path: Path, files: dict[str, str] | str, job: JobContext = ONE_GPU, entry: str = "train.py",
             py_version: str | None = None) -> list[Finding]:
    if isinstance(files, str):
        files = {entry: files}
    for rel, text in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(textwrap.dedent(text))
    return scan_files(entry, shipped(tmp_path), job, py_version)


def shipped(source_dir: Path) -> list[tuple[str, Path]]:
    """The .py files the bundle would ship from source_dir, as the CLI hands them to the scan."""
    return [(f.path, Path(f.source)) for f in plan_bundle(None, source_dir).files if f.path.endswith(".py")]


def hits(found: list[Finding], rule: str) -> list[tuple[str, int]]:
    return [(f.file, f.line) for f in found if f.rule == rule]


# --- API rules ----------------------------------------------------------------------------------

def test_multi_gpu_model(tmp_path: Path) -> None:
    found = findings(tmp_path, """\
        import tensorflow as tf
        from tensorflow.keras.utils import multi_gpu_model
        model = tf.keras.Sequential()
        parallel = multi_gpu_model(model, gpus=4)
        """)
    assert hits(found, "multi-gpu-model") == [("train.py", 2)]
    assert "removed in TensorFlow 2.4" in found[0].message and "(also line 4)" in found[0].message
    # The wrap cannot make a removed import work: the advice is to remove it, the wrap gives the strategy.
    assert found[0].fix.startswith("remove the import and the multi_gpu_model(...) call")
    assert "unchanged" not in found[0].fix
    assert findings(tmp_path / "no", "import tensorflow as tf\ntf.keras.utils.plot_model(m)\n") == []


def test_tf_estimator_through_any_spelling(tmp_path: Path) -> None:
    found = findings(tmp_path, """\
        import tensorflow.compat.v1 as tf1
        import tensorflow as tf
        est = tf.estimator.Estimator(model_fn)
        spec = tf1.estimator.EstimatorSpec(mode)
        """)
    assert hits(found, "tf-estimator") == [("train.py", 3)]  # one finding, naming each line
    assert "removed in TensorFlow 2.16" in found[0].message and "(also line 4)" in found[0].message
    # A variable of the user's named `estimator` is no tf.estimator.
    assert findings(tmp_path / "no", "estimator = build()\nestimator.train()\n") == []


def test_tf_contrib(tmp_path: Path) -> None:
    found = findings(tmp_path, "import tensorflow as tf\nfrom tensorflow.contrib import slim\nx = tf.contrib.layers\n")
    assert [f.line for f in found if f.rule == "tf-contrib"] == [2] and "(also line 3)" in found[0].message
    assert findings(tmp_path / "no", "import tensorflow as tf\nx = tf.keras.layers.Dense(3)\n") == []


def test_tf1_sessions_and_placeholders(tmp_path: Path) -> None:
    found = findings(tmp_path, """\
        import tensorflow.compat.v1 as tf
        x = tf.placeholder(tf.float32, [None, 3])
        with tf.Session() as sess:
            pass
        """)
    assert hits(found, "tf1-graph-mode") == [("train.py", 2), ("train.py", 3)]
    assert "tf.compat.v1.Session" in found[1].message
    # requests' Session and TF 2's tf.function are not graph mode.
    assert findings(tmp_path / "no", """\
        import requests
        import tensorflow as tf
        s = requests.Session()
        step = tf.function(lambda x: x)
        """) == []


# --- strategies ---------------------------------------------------------------------------------

MIRRORED = """\
import tensorflow as tf
strategy = tf.distribute.MirroredStrategy()
"""


def test_mirrored_strategy_on_several_nodes(tmp_path: Path) -> None:
    found = findings(tmp_path, MIRRORED, TWO_NODES)
    assert hits(found, "mirrored-multi-node") == [("train.py", 2)]
    assert "2 nodes" in found[0].message and "MultiWorkerMirroredStrategy" in found[0].fix
    assert findings(tmp_path / "one", MIRRORED, ONE_GPU) == []


MWMS = """\
from tensorflow.distribute import MultiWorkerMirroredStrategy
strategy = MultiWorkerMirroredStrategy()
"""


def test_mwms_on_one_node_with_one_gpu(tmp_path: Path) -> None:
    found = findings(tmp_path, MWMS, JobContext(nodes=1, gpus=1, keras3=False))
    assert hits(found, "mwms-single-gpu") == [("train.py", 2)]
    assert findings(tmp_path / "four", MWMS, JobContext(nodes=1, gpus=4, strategy="mirrored", keras3=False)) == []


WRAPPED_TWO_NODES = JobContext(nodes=2, gpus=4, strategy="multi_worker_mirrored", processes=2, wrapped=True,
                               keras3=True, framework_version="2.21")


def test_a_wrapped_script_keeps_the_strategies_the_wrap_stands_for(tmp_path: Path) -> None:
    # The wrap answers MirroredStrategy() and MultiWorkerMirroredStrategy() with its own: no finding,
    # not even "MirroredStrategy on several nodes" (under the wrap it spans them).
    script = MIRRORED + "other = tf.distribute.MultiWorkerMirroredStrategy()\n"
    assert findings(tmp_path, script, WRAPPED_TWO_NODES) == []


def test_a_wrapped_script_may_not_build_a_strategy_the_wrap_cannot_stand_for(tmp_path: Path) -> None:
    found = findings(tmp_path, """\
        import tensorflow as tf
        from tensorflow.distribute import OneDeviceStrategy
        a = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])
        b = tf.distribute.MirroredStrategy(devices=["/gpu:0"])
        c = OneDeviceStrategy("/gpu:0")
        d = tf.distribute.TPUStrategy(resolver)
        e = tf.distribute.experimental.ParameterServerStrategy(resolver)
        f = tf.distribute.experimental.CentralStorageStrategy()
        g = tf.distribute.MultiWorkerMirroredStrategy(cluster_resolver=resolver)
        ok = tf.distribute.MirroredStrategy()
        """, WRAPPED_TWO_NODES)
    assert [(f.line, f.rule, f.severity) for f in found] == [
        (n, "strategy-under-wrap", "error") for n in (3, 5, 6, 7, 8, 9)]
    by_line = {f.line: f for f in found}
    assert "given devices of its own" in by_line[3].message and "Mixing different" in by_line[3].message
    assert "(also line 4)" in by_line[3].message and "given a cluster of its own" in by_line[9].message
    assert by_line[3].fix.startswith("build MirroredStrategy() without arguments")
    assert "OneDeviceStrategy in a wrapped script" in by_line[5].message
    assert "code.wrap: false" in by_line[7].fix
    # Unwrapped, the script's own strategy is its business: none of these is refused.
    assert hits(findings(tmp_path / "own", (tmp_path / "train.py").read_text(), TWO_NODES),
                "strategy-under-wrap") == []


def test_a_strategy_the_script_may_not_reach_is_a_warning_under_the_wrap(tmp_path: Path) -> None:
    # keras.io's examples: a TPU when there is one, else MirroredStrategy(): on a GPU host the except runs.
    found = findings(tmp_path, """\
        import tensorflow as tf
        try:
            resolver = tf.distribute.cluster_resolver.TPUClusterResolver()
            strategy = tf.distribute.TPUStrategy(resolver)
        except ValueError:
            strategy = tf.distribute.MirroredStrategy()
        if False:
            other = tf.distribute.OneDeviceStrategy("/gpu:0")
        """, WRAPPED_TWO_NODES)
    assert [(f.line, f.rule, f.severity) for f in found] == [(4, "strategy-under-wrap", "warning"),
                                                             (8, "strategy-under-wrap", "warning")]
    assert found[0].message.startswith("if this line runs: TPUStrategy in a wrapped script")


def test_plan_says_what_the_wrap_gives_a_strategy_the_script_builds(tmp_path: Path) -> None:
    script = PARSER.replace("args = parser.parse_args()", 'parser.add_argument("--model_dir")\n'
                            "args = parser.parse_args()\nstrategy = tf.distribute.MirroredStrategy()\n"
                            "other = tf.distribute.MirroredStrategy(['/gpu:0'])\n")
    plan = plan_for(tmp_path, {"compute": {"instance_type": "ml.g5.12xlarge", "nodes": 2}, "code": {"wrap": True}},
                    "import tensorflow as tf\n" + script)
    found = stand_ins(plan, shipped(tmp_path / "src"))
    assert [s.render() for s in found] == [
        "train.py:8 builds MirroredStrategy(): under the wrap it is the job's multi_worker_mirrored strategy "
        "(2 hosts x 4 replicas)"]
    assert found[0].to_dict()["becomes"] == "the job's multi_worker_mirrored strategy (2 hosts x 4 replicas)"
    (tmp_path / "own").mkdir()
    unwrapped = plan_for(tmp_path / "own", {"compute": {"instance_type": "ml.g5.12xlarge"}}, "import tensorflow as tf\n"
                         + script)
    assert stand_ins(unwrapped, shipped(tmp_path / "own" / "src")) == []


HOROVOD = """\
import horovod.tensorflow.keras as hvd
import tensorflow as tf
hvd.init()
"""

TF_CONFIG = """\
import json, os
import tensorflow as tf
tf_config = json.loads(os.environ["TF_CONFIG"])
num_workers = len(tf_config["cluster"]["worker"])
strategy = tf.distribute.MultiWorkerMirroredStrategy()
"""


def test_a_wrapped_script_that_imports_horovod(tmp_path: Path) -> None:
    found = findings(tmp_path, HOROVOD, JobContext(wrapped=True, keras3=True))
    assert [(f.line, f.rule, f.severity) for f in found] == [(1, "horovod-wrapped", "error")]
    assert "distribution.strategy: horovod" in found[0].fix and 'tensorflow.version: "2.12"' in found[0].fix
    assert findings(tmp_path / "mpi", HOROVOD, JobContext(strategy="horovod", processes=4, keras3=False)) == []
    optional = "try:\n    import horovod.tensorflow.keras as hvd\nexcept ImportError:\n    hvd = None\n"
    assert findings(tmp_path / "optional", optional, JobContext(wrapped=True, keras3=True)) == []


def test_a_script_that_reads_tf_config_in_a_job_without_it(tmp_path: Path) -> None:
    found = findings(tmp_path, TF_CONFIG, JobContext(nodes=1, gpus=1, strategy="none", keras3=False))
    assert [(f.line, f.rule, f.severity) for f in found] == [(3, "tf-config-unset", "error"),
                                                             (5, "mwms-single-gpu", "warning")]
    assert "(none on 1 node)" in found[0].message and "compute.nodes: 2" in found[0].fix
    two = JobContext(nodes=2, strategy="multi_worker_mirrored", processes=2, keras3=False, tf_config=True)
    assert hits(findings(tmp_path / "two", TF_CONFIG, two), "tf-config-unset") == []
    # json.loads of os.environ.get without a default fails too (TypeError on None); with a default it runs.
    unset = JobContext(keras3=False)
    got = TF_CONFIG.replace('os.environ["TF_CONFIG"]', 'os.environ.get("TF_CONFIG")')
    assert hits(findings(tmp_path / "get", got, unset), "tf-config-unset") == [("train.py", 3)]
    default = TF_CONFIG.replace('os.environ["TF_CONFIG"]', 'os.environ.get("TF_CONFIG", "{}")')
    assert hits(findings(tmp_path / "default", default, unset), "tf-config-unset") == []
    # Read only when it is there: the script runs without it.
    guarded = TF_CONFIG.replace('tf_config = json.loads', 'if "TF_CONFIG" in os.environ:\n    tf_config = json.loads')
    guarded = guarded.replace("num_workers", "    num_workers")
    assert hits(findings(tmp_path / "guarded", guarded, unset), "tf-config-unset") == []


# --- Keras 3 fit --------------------------------------------------------------------------------

FIT = """\
import tensorflow as tf
model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
model.compile(loss="mse")
model.fit(x, y, epochs=2)
"""


def test_keras3_fit_under_mwms_unwrapped(tmp_path: Path) -> None:
    found = findings(tmp_path, FIT, JobContext(nodes=2, strategy="multi_worker_mirrored", processes=2, keras3=True,
                                               framework_version="2.19"))
    assert hits(found, "keras3-fit-multi-worker") == [("train.py", 4)]
    assert "keras-team/keras#20585" in found[0].message and "code.wrap" in found[0].fix
    ps = findings(tmp_path / "ps", FIT, JobContext(nodes=2, strategy="parameter_server", processes=2, keras3=True,
                                                   framework_version="2.19"))
    assert hits(ps, "keras3-fit-multi-worker") == [("train.py", 4)] and "smtrain_tf.fit" in ps[0].fix


def test_keras3_fit_when_the_script_builds_mwms_itself(tmp_path: Path) -> None:
    script = FIT + "strategy = tf.distribute.MultiWorkerMirroredStrategy()\n"
    found = findings(tmp_path, script, JobContext(nodes=1, gpus=4, strategy="mirrored", keras3=True))
    assert hits(found, "keras3-fit-multi-worker") == [("train.py", 4)]


@pytest.mark.parametrize(("why", "script", "job"), [
    ("wrapped", FIT, JobContext(nodes=2, strategy="multi_worker_mirrored", processes=2, keras3=True, wrapped=True)),
    ("Keras 2 (TF 2.15)", FIT, JobContext(nodes=2, strategy="multi_worker_mirrored", processes=2, keras3=False)),
    ("one device", FIT, ONE_GPU),
    ("tf_keras", FIT.replace("import tensorflow as tf", "import tensorflow as tf\nimport tf_keras"),
     JobContext(nodes=2, strategy="multi_worker_mirrored", processes=2, keras3=True)),
    ("smtrain_tf.fit and a scaler", "import tensorflow as tf\nimport smtrain_tf\nsmtrain_tf.fit(model, data)\n"
     "scaler.fit(x)\n", JobContext(nodes=2, strategy="multi_worker_mirrored", processes=2, keras3=True)),
])
def test_keras3_fit_left_alone(tmp_path: Path, why: str, script: str, job: JobContext) -> None:
    assert hits(findings(tmp_path, script, job), "keras3-fit-multi-worker") == [], why


# --- CUDA_VISIBLE_DEVICES -------------------------------------------------------------------------

def test_hard_coded_cuda_visible_devices(tmp_path: Path) -> None:
    found = findings(tmp_path, """\
        import os
        from os import environ
        os.environ["CUDA_VISIBLE_DEVICES"] = "0"
        environ.setdefault("CUDA_VISIBLE_DEVICES", "0,1")
        os.putenv("CUDA_VISIBLE_DEVICES", "1")
        os.environ.update({"CUDA_VISIBLE_DEVICES": "2"})
        """)
    assert [f.line for f in found if f.rule == "cuda-visible-devices"] == [3]
    assert "(also lines 4, 5, 6)" in found[0].message
    assert findings(tmp_path / "no", """\
        import os
        print(os.environ.get("CUDA_VISIBLE_DEVICES"))
        os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
        """) == []


# --- local paths ---------------------------------------------------------------------------------

def test_hard_coded_local_paths(tmp_path: Path) -> None:
    found = findings(tmp_path, """\
        import argparse, os
        from pathlib import Path
        import numpy as np
        import tensorflow as tf
        DATA = "/home/me/mnist"
        parser = argparse.ArgumentParser()
        parser.add_argument("--train", default="/Users/me/data/train")
        x = np.load(os.path.join(DATA, "x.npy"))
        with open(f"~/data/{name}.csv") as f:
            pass
        ds = tf.data.TFRecordDataset(str(Path("/data/records") / "train.tfrecord"))
        model.save("/home/me/models/model.keras")
        """)
    assert hits(found, "local-path") == [("train.py", n) for n in (7, 8, 9, 11, 12)]
    by_line = {f.line: f for f in found}
    assert "'/Users/me/data/train'" in by_line[7].message and "SM_CHANNEL_TRAIN" in by_line[7].fix
    assert "'/home/me/mnist'" in by_line[8].message
    assert "SM_MODEL_DIR" in by_line[12].fix and "lost when the job ends" in by_line[12].message


def test_channel_and_system_paths_are_not_local(tmp_path: Path) -> None:
    assert findings(tmp_path, """\
        import os
        import numpy as np
        train = os.environ.get("SM_CHANNEL_TRAIN", "/home/me/data/train")
        x = np.load(os.path.join(os.getenv("SM_CHANNEL_TRAIN", "/home/me/data"), "x.npy"))
        np.save("/tmp/scratch.npy", x)
        z = np.load("data/z.npy")
        with open("/".join(parts)) as f:
            pass
        model.load_weights("s3://bucket/weights.h5")
        """) == []


# --- the model saved by every worker ---------------------------------------------------------------

SAVE = """\
import os
import tensorflow as tf
model = tf.keras.Sequential()
model.save(os.path.join(os.environ["SM_MODEL_DIR"], "model.keras"))
"""


def test_every_worker_saves(tmp_path: Path) -> None:
    found = findings(tmp_path, SAVE, TWO_NODES)
    assert hits(found, "save-every-worker") == [("train.py", 4)]
    assert "2 workers" in found[0].message and "smtrain_tf.save(model)" in found[0].fix
    # A function that saves counts as guarded only when every call of it is.
    helper = ("def export(model):\n    model.save('/opt/ml/model/1')\nif is_chief:\n    export(model)\n"
              "export(model)\n")
    assert hits(findings(tmp_path / "helper", helper, TWO_NODES), "save-every-worker") == [("train.py", 2)]
    hvd = findings(tmp_path / "hvd", SAVE, JobContext(nodes=1, gpus=4, strategy="horovod", processes=4))
    assert hits(hvd, "save-every-worker") == [("train.py", 4)] and "hvd.rank() == 0" in hvd[0].fix


@pytest.mark.parametrize(("why", "script", "job"), [
    ("one node", SAVE, ONE_GPU),
    ("wrapped", SAVE, JobContext(nodes=2, strategy="multi_worker_mirrored", processes=2, wrapped=True)),
    ("under is_chief", SAVE.replace("model.save(", "if smtrain_tf.is_chief():\n    model.save("), TWO_NODES),
    ("under rank 0", SAVE.replace("model.save(", "if hvd.rank() == 0:\n    model.save("),
     JobContext(nodes=1, gpus=4, strategy="horovod", processes=4)),
    ("after an early return", "def finish(model, task_index):\n    if task_index != 0:\n        return\n"
     "    model.save('/opt/ml/model/m.keras')\n", TWO_NODES),
    ("in a function called on the first host only", "def export(model):\n    model.save('/opt/ml/model/1')\n"
     "if args.current_host == args.hosts[0]:\n    export(model)\n", TWO_NODES),
    ("not a model", "import numpy as np\nnp.save('/opt/ml/model/x.npy', x)\nckpt.save('/opt/ml/checkpoints/c')\n"
     "import smtrain_tf\nsmtrain_tf.save(model)\n", TWO_NODES),
])
def test_saves_left_alone(tmp_path: Path, why: str, script: str, job: JobContext) -> None:
    assert hits(findings(tmp_path, script, job), "save-every-worker") == [], why


# --- argparse against the hyperparameters ------------------------------------------------------------

PARSER = """\
import argparse
parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=5)
parser.add_argument("--batch-size", type=int, default=32)
args = parser.parse_args()
"""


def test_parse_args_with_undeclared_hyperparameters(tmp_path: Path) -> None:
    job = JobContext(hyperparameters=("epochs", "lr", "momentum"))
    found = findings(tmp_path, PARSER, job)
    assert hits(found, "undeclared-hyperparameters") == [("train.py", 5)]
    assert found[0].message.endswith("--lr, --momentum, --model_dir")
    assert "remove lr, momentum from the spec's hyperparameters:" in found[0].fix
    assert "SageMaker passes --model_dir to every TensorFlow script" in found[0].fix


def test_sagemakers_own_model_dir_gets_no_did_you_mean(tmp_path: Path) -> None:
    # --model-dir declared, --model_dir passed by SageMaker: renaming is no way out, declaring --model_dir is.
    script = PARSER.replace("args = ", 'parser.add_argument("--model-dir")\nargs = ')
    [found] = findings(tmp_path, script, JobContext(hyperparameters=()))
    assert found.message.endswith("declare: --model_dir"), found.message
    assert "did you mean" not in found.message and "rename" not in found.fix
    assert "SageMaker passes --model_dir to every TensorFlow script" in found.fix


def test_an_undeclared_name_is_an_error_with_did_you_mean(tmp_path: Path) -> None:
    # SageMaker passes `--batch_size 64`; the script declares --batch-size: parse_args() exits 2, certainly.
    declared = PARSER.replace("args = ", 'parser.add_argument("--model_dir")\nargs = ')
    found = findings(tmp_path, declared, JobContext(hyperparameters=("batch_size", "epoch", "lr")))
    assert [(f.line, f.rule, f.severity) for f in found] == [(6, "undeclared-hyperparameters", "error")]
    assert found[0].message.endswith("--batch_size (did you mean --batch-size?), --lr")
    assert found[0].fix.startswith("rename in the spec's hyperparameters: batch_size -> batch-size, or declare")
    # With parse_known_args somewhere too, the script may not exit there: a warning, as before.
    both = declared.replace("args = parser.parse_args()", "args = parser.parse_args()\nrest = parser.parse_known_args()")
    found = findings(tmp_path / "both", both, JobContext(hyperparameters=("batch_size",)))
    assert [(f.rule, f.severity) for f in found] == [("undeclared-hyperparameters", "warning")]
    # A parent parser from elsewhere may declare it: not certain either.
    inherited = declared.replace("ArgumentParser()", "ArgumentParser(parents=[common.parser()])")
    found = findings(tmp_path / "parents", inherited, JobContext(hyperparameters=("batch_size",)))
    assert [(f.rule, f.severity) for f in found] == [("undeclared-hyperparameters", "warning")]


def test_declared_abbreviated_or_lenient_parsers_pass(tmp_path: Path) -> None:
    declared = PARSER.replace("args = ", 'parser.add_argument("--model_dir")\nargs = ')
    # argparse takes --epoch for --epochs (a unique prefix), as SageMaker's `--epoch 3` would arrive.
    assert findings(tmp_path / "a", declared, JobContext(hyperparameters=("epoch", "batch-size"))) == []
    assert findings(tmp_path / "b", PARSER.replace("parse_args()", "parse_known_args()"),
                    JobContext(hyperparameters=("lr",))) == []
    # Options added in a loop cannot be read: no guess.
    unread = PARSER.replace("args = ", 'for n in names:\n    parser.add_argument(f"--{n}")\nargs = ')
    assert findings(tmp_path / "c", unread, JobContext(hyperparameters=("lr",))) == []
    no_abbrev = declared.replace("ArgumentParser()", "ArgumentParser(allow_abbrev=False)")
    found = findings(tmp_path / "d", no_abbrev, JobContext(hyperparameters=("epoch",)))
    assert [f.message.rsplit(": ", 1)[1] for f in found] == ["--epoch (did you mean --epochs?)"]


def test_the_parser_in_an_imported_module(tmp_path: Path) -> None:
    found = findings(tmp_path, {"train.py": "from config import get_args\nargs = get_args()\n",
                                "config.py": "import argparse\n\ndef get_args():\n" + "".join(
                                    "    " + line + "\n" for line in PARSER.splitlines()[1:]) + "    return args\n"},
                     JobContext(hyperparameters=("lr",)))
    assert hits(found, "undeclared-hyperparameters") == [("config.py", 7)]


def test_a_flag_given_a_value(tmp_path: Path) -> None:
    script = PARSER.replace("args = ", 'parser.add_argument("--amp", action="store_true")\n'
                                       'parser.add_argument("--model_dir")\nargs = ')
    found = findings(tmp_path, script, JobContext(hyperparameters=("amp",)))
    assert hits(found, "flag-hyperparameter") == [("train.py", 5)]
    assert "store_true" in found[0].message and "parse_args() fails on the value" in found[0].message
    assert findings(tmp_path / "no", script, JobContext(hyperparameters=("epochs",))) == []


def test_required_arguments_the_spec_does_not_give(tmp_path: Path) -> None:
    script = PARSER.replace("args = ", 'parser.add_argument("data_dir")\n'
                                       'parser.add_argument("--seed", type=int, required=True)\n'
                                       'parser.add_argument("--model_dir")\nargs = ')
    found = findings(tmp_path, script, JobContext(hyperparameters=()))
    assert hits(found, "required-argument") == [("train.py", 5), ("train.py", 6)]
    assert "positional argument data_dir" in found[0].message and "--seed" in found[1].message
    given = findings(tmp_path / "given", script.replace('parser.add_argument("data_dir")\n', ""),
                     JobContext(hyperparameters=("seed",)))
    assert given == []


# --- what fails only once the job runs: Keras 3, SageMaker's model_dir, /opt/ml ------------------------

KERAS2 = JobContext(nodes=1, gpus=1, strategy="none", keras3=False, framework_version="2.13")


def test_an_optimizer_given_lr_under_keras_3(tmp_path: Path) -> None:
    script = """\
        import tensorflow as tf
        from tensorflow.keras.optimizers import SGD
        opt = tf.keras.optimizers.Adam(lr=0.001)
        sgd = SGD(lr=0.1, momentum=0.9)
        ok = tf.keras.optimizers.Adam(learning_rate=0.001)
        other = make_optimizer(lr=0.1)
        if tf.__version__ < "2.11":
            old = SGD(lr=0.1)
        """
    found = findings(tmp_path, script)
    assert [(f.line, f.rule, f.severity) for f in found] == [(3, "keras3-lr", "error"), (4, "keras3-lr", "error"),
                                                             (8, "keras3-lr", "warning")]
    assert "refuses Adam(lr=...)" in found[0].message and found[0].fix.startswith("write Adam(learning_rate=...), ")
    assert "tensorflow: {keras: 2}" in found[0].fix
    # Keras 2.11+ (2.13 here, and tf_keras) take lr and drop it: the optimizer keeps its default rate.
    ignored = findings(tmp_path / "k2", script, KERAS2)
    assert [(f.line, f.rule, f.severity) for f in ignored] == [(3, "keras2-lr-ignored", "warning"),
                                                               (4, "keras2-lr-ignored", "warning")]
    assert "(also line 8)" in ignored[1].message  # the same call again: one finding
    assert "ignore Adam(lr=...): the optimizer trains at its default rate" in ignored[0].message
    old = JobContext(nodes=1, gpus=1, strategy="none", keras3=False, framework_version="2.10")
    assert findings(tmp_path / "k210", script, old) == []  # Keras 2.10 took lr (deprecated)


def test_keras_3_save_without_an_extension(tmp_path: Path) -> None:
    found = findings(tmp_path, """\
        import os
        import tensorflow as tf
        model = tf.keras.Sequential()
        model_dir = os.environ["SM_MODEL_DIR"]
        model.save(os.path.join(model_dir, "1"))
        export_path = f"{model_dir}/saved"
        model.save(export_path)
        model.save(os.path.join(model_dir, "model.keras"))
        model.save(os.path.join(model_dir, "model.h5"))
        model.save(model_dir, save_format="tf")
        model.save(unknown_path)
        model.save("model.h5", save_format="h5")
        model.export(os.path.join(model_dir, "1"))
        tf.saved_model.save(model, os.path.join(model_dir, "2"))
        import wandb
        wandb.save("logs/*")
        trainer.save("state")
        """)
    assert [(f.line, f.rule, f.severity) for f in found] == [
        (5, "keras3-save-path", "error"), (7, "keras3-save-path", "error"), (10, "keras3-save-path", "warning")]
    assert "ends '1'" in found[0].message and "model.export(path)" in found[0].fix
    # save_format beside a .h5 path is only deprecated in Keras 3; beside a path whose end is unknown, it may raise.
    assert "save_format=... unless the path ends in .keras or .h5" in found[2].message


def test_saving_to_the_model_dir_argument(tmp_path: Path) -> None:
    script = """\
        import argparse, os
        import numpy as np
        import tensorflow as tf
        parser = argparse.ArgumentParser()
        parser.add_argument("--epochs", type=int, default=1)
        parser.add_argument("--model_dir", type=str)
        parser.add_argument("--sm-model-dir", default=os.environ.get("SM_MODEL_DIR"))
        args, _ = parser.parse_known_args()
        model = tf.keras.Sequential()
        model.save(os.path.join(args.model_dir, "model.keras"))
        out = args.model_dir
        np.save(out + "/w.npy", w)
        model.save(os.path.join(args.sm_model_dir, "model.keras"))
        """
    found = findings(tmp_path, script)
    assert [(f.line, f.rule, f.severity) for f in found] == [(10, "model-dir-s3", "warning")]
    assert "(also line 12)" in found[0].message
    assert "an s3:// URI" in found[0].message and "SM_MODEL_DIR" in found[0].fix
    # Horovod's jobs get /opt/ml/model as model_dir; a script whose --model_dir is no option has no such value.
    assert findings(tmp_path / "hvd", script, JobContext(strategy="horovod", keras3=True)) == []
    undeclared = textwrap.dedent(script).replace('parser.add_argument("--model_dir", type=str)\n', "")
    assert findings(tmp_path / "none", undeclared) == []


def test_a_literal_opt_ml_path_is_a_warning(tmp_path: Path) -> None:
    found = findings(tmp_path, """\
        \"\"\"Saves to /opt/ml/model.\"\"\"
        import os
        import numpy as np
        x = np.load("/opt/ml/input/data/train/x.npy")
        model_dir = os.environ.get("SM_MODEL_DIR", "/opt/ml/model")
        np.save("/opt/ml/model/w.npy", x)
        """)
    assert [(f.line, f.rule, f.severity) for f in found] == [(4, "opt-ml-path", "warning"),
                                                             (6, "opt-ml-path", "warning")]
    assert "this machine's /opt/ml" in found[0].message and "SM_CHANNEL_<NAME>" in found[0].fix
    assert 'os.environ["SM_MODEL_DIR"]' in found[1].fix


# --- files ---------------------------------------------------------------------------------------

def test_a_syntax_error_is_one_finding(tmp_path: Path) -> None:
    found = findings(tmp_path, {"train.py": "import util\n", "util.py": "def f(:\n    pass\n"})
    assert [(f.file, f.line, f.rule) for f in found] == [("util.py", 1, "syntax-error")]
    assert findings(tmp_path / "ok", "def f():\n    pass\n") == []


@pytest.mark.skipif(sys.version_info < (3, 10), reason="the scan's Python must read a match statement")
def test_syntax_newer_than_the_containers_python(tmp_path: Path) -> None:
    script = "match x:\n    case 1:\n        pass\n"
    found = findings(tmp_path, script, py_version="py39")
    assert [f.rule for f in found] == ["python-version"] and "Python 3.9" in found[0].message
    assert findings(tmp_path / "new", script, py_version="py310") == []


def test_job_rules_judge_the_files_that_run_api_rules_every_file(tmp_path: Path) -> None:
    found = findings(tmp_path, {
        "train.py": "from lib import model_utils\nimport tensorflow as tf\n",
        "lib/__init__.py": "",
        "lib/model_utils.py": MIRRORED,  # imported: it runs
        "old_experiment.py": MIRRORED + "from tensorflow.contrib import slim\n",  # shipped, never run
        ".venv/lib/site.py": "import tensorflow.contrib\n",  # hidden: not shipped
        "__pycache__/x.py": "import tensorflow.contrib\n",
    }, TWO_NODES)
    assert [(f.file, f.rule) for f in found] == [("lib/model_utils.py", "mirrored-multi-node"),
                                                 ("old_experiment.py", "tf-contrib")]


# --- through a Plan -------------------------------------------------------------------------------

def plan_for(tmp_path: Path, changes: dict, script: str):
    (tmp_path / "src").mkdir(exist_ok=True)
    (tmp_path / "src" / "train.py").write_text(textwrap.dedent(script))
    base = {"compute": {"instance_type": "ml.g5.xlarge"}, "code": {"source_dir": "src", "entry_point": "train.py"}}
    for key, value in changes.items():
        base[key] = {**base.get(key, {}), **value} if isinstance(value, dict) else value
    return build_plan(load_spec(write_spec(tmp_path, base), env={}), CATALOG)


def test_the_plan_gives_the_job_context(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, {"compute": {"nodes": 2}, "code": {"wrap": True},
                               "hyperparameters": {"epochs": 3, "lr": 0.1}}, PARSER)
    job = context_of(plan)
    assert (job.nodes, job.strategy, job.wrapped, job.keras3) == (2, "multi_worker_mirrored", True, True)
    assert job.hyperparameters == ("epochs", "lr")
    found = scan(plan, shipped(tmp_path / "src"))
    assert hits(found, "undeclared-hyperparameters") == [("train.py", 5)]
    assert "--lr, --model_dir" in found[0].message


def test_legacy_keras_in_the_environment_is_keras_2(tmp_path: Path) -> None:
    plan = plan_for(tmp_path, {"compute": {"nodes": 2}, "environment": {"TF_USE_LEGACY_KERAS": "1"}}, FIT)
    assert context_of(plan).keras3 is False
    assert hits(scan(plan, shipped(tmp_path / "src")), "keras3-fit-multi-worker") == []


def test_the_bundled_entrypoint_is_not_scanned(tmp_path: Path) -> None:
    plan = build_plan(load_spec(write_spec(tmp_path, {"compute": {"instance_type": "ml.g5.xlarge"}}), env={}),
                      CATALOG)
    assert scan(plan, []) == []


def test_a_finding_renders_as_a_compiler_warning() -> None:
    finding = Finding("train.py", 12, "tf-contrib", "tf.contrib was removed", "use tf.keras")
    assert finding.render() == "train.py:12: warning: tf.contrib was removed (fix: use tf.keras)"
    assert finding.to_dict() == {"file": "train.py", "line": 12, "rule": "tf-contrib",
                                 "message": "tf.contrib was removed", "fix": "use tf.keras", "severity": "warning"}
    error = Finding("train.py", 3, "keras3-lr", "Keras 3 refuses lr", "write learning_rate=", "error")
    assert error.render() == "train.py:3: error: Keras 3 refuses lr (fix: write learning_rate=)" and error.is_error


def test_what_the_script_may_not_reach_or_other_code_may_declare_is_no_certain_failure(tmp_path: Path) -> None:
    """Lines a correct script holds that must not be refused: a TPU branch in a helper function, a positional
    communication option, options another function adds, Horovod on an image that still has it."""
    script = """\
        import argparse, os
        import tensorflow as tf
        from mylib import add_common_args

        def tpu_strategy():
            return tf.distribute.TPUStrategy(tf.distribute.cluster_resolver.TPUClusterResolver())

        def main():
            parser = argparse.ArgumentParser()
            add_common_args(parser)
            args = parser.parse_args()
            use_tpu = os.environ.get("USE_TPU")
            strategy = tpu_strategy() if use_tpu else tf.distribute.MirroredStrategy()
            other = tf.distribute.experimental.MultiWorkerMirroredStrategy(
                tf.distribute.experimental.CommunicationImplementation.NCCL)
            fixed = tf.distribute.MirroredStrategy(["/gpu:0", "/gpu:1"])

        if __name__ == "__main__":
            main()
        """
    job = JobContext(nodes=1, gpus=4, strategy="mirrored", wrapped=True, keras3=True, framework_version="2.21",
                     hyperparameters=("epochs",))
    found = findings(tmp_path, script, job)
    assert [(f.line, f.rule, f.severity) for f in found] == [
        (6, "strategy-under-wrap", "warning"),  # reached only through a branch: "if this line runs"
        (11, "undeclared-hyperparameters", "warning"),  # add_common_args may declare --epochs
        (16, "strategy-under-wrap", "error")]  # main() runs under the main guard: its explicit devices, surely
    assert found[0].message.startswith("if this line runs: TPUStrategy")
    horovod = JobContext(wrapped=True, keras3=False, framework_version="2.12")
    assert [(f.rule, f.severity) for f in findings(tmp_path / "hvd", HOROVOD, horovod)
            if f.rule == "horovod-wrapped"] == [("horovod-wrapped", "warning")]


def test_tf_config_set_by_the_specs_environment_is_there(tmp_path: Path) -> None:
    tf_config = '{"cluster": {"worker": ["localhost:2222"]}, "task": {"type": "worker", "index": 0}}'
    plan = plan_for(tmp_path, {"environment": {"TF_CONFIG": tf_config}}, TF_CONFIG)
    assert context_of(plan).tf_config
    assert hits(scan(plan, shipped(tmp_path / "src")), "tf-config-unset") == []


KERAS2_SCRIPT = """\
import tensorflow as tf

model = tf.keras.Sequential([tf.keras.layers.Dense(10)])
optimizer = tf.keras.optimizers.legacy.Adam(learning_rate=0.001)
train_loss = tf.keras.metrics.Mean(name="train_loss")
train_accuracy = tf.keras.metrics.SparseCategoricalAccuracy(name="train_accuracy")
model.fit_generator(batches(), epochs=2)
for epoch in range(2):
    train_loss.reset_states()
    train_accuracy.reset_states()
    model.reset_states()
"""


def test_keras_2_calls_that_keras_3_removed_are_errors_at_their_lines(tmp_path: Path) -> None:
    """The TensorFlow docs' custom-training form (metrics reset each epoch), a legacy optimizer, fit_generator."""
    found = findings(tmp_path, KERAS2_SCRIPT)
    assert hits(found, "keras3-legacy-optimizer") == [("train.py", 4)]
    assert hits(found, "keras3-removed-method") == [("train.py", 7)]
    # The metrics' reset_states() only (one finding for both lines): a model's (stateful RNNs) is another method.
    assert hits(found, "keras3-reset-states") == [("train.py", 9)]
    # Errors where the line runs for certain; inside the epoch loop (which may run no epoch) a warning.
    assert [f.is_error for f in found if f.rule.startswith("keras3-")] == [True, True, False], found
    reset = next(f for f in found if f.rule == "keras3-reset-states")
    assert reset.message.startswith("if this line runs: Keras 3 (TensorFlow 2.19) metrics have no reset_states(): "
                                     "AttributeError (it is reset_state())")
    assert "(also line 10)" in reset.message and "line 11" not in reset.message
    assert reset.fix == "write train_loss.reset_state(), or run the script as written with Keras 2: tensorflow: {keras: 2}"
    # Keras 2 (TF 2.15, or tf_keras under TF_USE_LEGACY_KERAS) takes them all.
    keras2 = JobContext(nodes=1, gpus=1, strategy="none", keras3=False, framework_version="2.15")
    assert not [f for f in findings(tmp_path / "k2", KERAS2_SCRIPT, keras2) if f.rule.startswith("keras3-")]
    legacy = "import os\nos.environ[\"TF_USE_LEGACY_KERAS\"] = \"1\"\n" + KERAS2_SCRIPT
    assert not [f for f in findings(tmp_path / "legacy", legacy) if f.rule.startswith("keras3-")]


MODEL_WITHOUT_CALL = """\
import tensorflow as tf
from tensorflow import keras


class VAE(keras.Model):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder, self.decoder = encoder, decoder

    def train_step(self, data):
        return {"loss": 0.0}


class Classifier(tf.keras.Model):
    def call(self, inputs):
        return inputs


class Tuned(Classifier):
    pass


class Bigger(VAE):
    pass


class NotAModel:
    pass


class Penalized(keras.Model):  # keras.io's customizing-fit form: made as a functional model below
    def train_step(self, data):
        return {"loss": 0.0}


inputs = keras.Input(shape=(3,))
model = Penalized(inputs, keras.layers.Dense(1)(inputs))
also = Penalized(inputs=inputs, outputs=inputs)
vae = VAE(inputs, inputs)  # its own __init__ takes them: still no call()
"""


def test_a_model_subclass_without_call_is_a_warning_at_its_class(tmp_path: Path) -> None:
    found = findings(tmp_path, MODEL_WITHOUT_CALL)
    assert [(f.line, f.rule, f.severity) for f in found] == [(5, "keras3-model-without-call", "warning"),
                                                             (23, "keras3-model-without-call", "warning")]
    assert "VAE subclasses Model without a call() method" in found[0].message
    assert found[0].fix == "define VAE.call(inputs) (the forward pass), " + KEEP_KERAS_2
    assert findings(tmp_path / "k2", MODEL_WITHOUT_CALL, KERAS2) == []  # Keras 2 never asked for call() to fit
