"""TensorFlow's start-up noise: recognised on real lines, kept out of the terminal, kept in the host log.

The lines below were printed by TensorFlow itself: on this project's CPU machine (TF 2.21 in the
project's environment, TF 2.13 in the Horovod one, bare and under `mpirun --tag-output`), and, for
the GPU wheels' lines, TensorFlow's own message text with the header a GPU machine prints.
"""

from __future__ import annotations

import io
import os
import sys
from pathlib import Path

import pytest

from smtrain.local.supervise import HIDDEN_SHOWN, MAIN, Output, ProcessSpec, Supervisor, parse_log_line
from smtrain.local.tf_noise import NoiseFilter, is_noise, noise_at_the_end

# Captured here, TF 2.21 (absl's layout), TF_CPP_MIN_LOG_LEVEL=1 as the toolkit sets it: the bundled
# entrypoint's multi-worker runs print the first two; at level 0 the CPU notice comes too.
TF_2_21 = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "W0000 00:00:1795420601.179277   28208 dataset.cc:997] Input of GeneratorDatasetOp::Dataset will not be "
    "optimized because the dataset does not implement the AsGraphDefInternal() method needed to apply optimizations.",
    "I0000 00:00:1795420677.706868   30048 cpu_feature_guard.cc:227] This TensorFlow binary is optimized to use "
    "available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the appropriate "
    "compiler flags.",
]
# Captured here, TF 2.13 (TensorFlow's older layout).
TF_2_13 = [
    "2026-11-23 08:00:04.818220: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.",
    "2026-11-23 08:01:24.632068: W tensorflow/core/framework/dataset.cc:956] Input of GeneratorDatasetOp::Dataset "
    "will not be optimized because the dataset does not implement the AsGraphDefInternal() method needed to apply "
    "optimizations.",
]
# Captured here under mpirun --tag-output (the Horovod and smddp launchers), both TensorFlow versions.
UNDER_MPIRUN = [
    "[1,0]<stderr>:WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "[1,1]<stderr>:I0000 00:00:1795420782.582405   32251 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.",
    "[1,0]<stderr>:To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow with the "
    "appropriate compiler flags.",
    "[1,0]<stderr>:2026-11-23 08:00:04.818220: I tensorflow/core/platform/cpu_feature_guard.cc:182] This TensorFlow "
    "binary is optimized to use available CPU instructions in performance-critical operations.",
    # A rank's line can come in two tagged pieces (its text, then its newline).
    "[1,0]<stderr>:WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
    "[1,0]<stderr>:",
]
# The `tensorflow` wheels (GPU builds) print these; this machine has the CPU wheel and no GPU.
GPU_WHEELS = [
    "I0000 00:00:1795420001.118431   40112 port.cc:153] oneDNN custom operations are on. You may see slightly "
    "different numerical results due to floating-point round-off errors from different computation orders. To turn "
    "them off, set the environment variable `TF_ENABLE_ONEDNN_OPTS=0`.",
    "I0000 00:00:1795420001.120977   40112 cudart_stub.cc:29] Could not find cuda drivers on your machine, GPU will "
    "not be used.",
    "E0000 00:00:1795420001.301245   40112 cuda_dnn.cc:8579] Unable to register cuDNN factory: Attempting to register "
    "factory for plugin cuDNN when one has already been registered",
    "E0000 00:00:1795420001.305510   40112 cuda_blas.cc:1407] Unable to register cuBLAS factory: Attempting to "
    "register factory for plugin cuBLAS when one has already been registered",
    "W0000 00:00:1795420001.317751   40112 computation_placer.cc:177] computation placer already registered. Please "
    "check linkage and avoid linking the same target more than once.",
    "2026-11-23 08:10:11.402117: E external/local_xla/xla/stream_executor/cuda/cuda_fft.cc:607] Unable to register "
    "cuFFT factory: Attempting to register factory for plugin cuFFT when one has already been registered",
    "2026-11-23 08:10:12.337631: W tensorflow/compiler/tf2tensorrt/utils/py_utils.cc:38] TF-TRT Warning: Could not "
    "find TensorRT",
    "[1,3]<stderr>:E0000 00:00:1795420001.301245   40112 cuda_dnn.cc:8579] Unable to register cuDNN factory: "
    "Attempting to register factory for plugin cuDNN when one has already been registered",
]

# Lines that must always show. Captured here unless said otherwise.
SHOWN = [
    "epoch=1 step=22 loss=1.3673 accuracy=0.7045 val_loss=0.5452 val_accuracy=0.8944 lr=0.002 examples_per_sec=1475 "
    "elapsed=6.4",
    "[1,0]<stdout>:epoch=1 step=22 loss=1.4417 accuracy=0.6761 val_loss=0.5857 val_accuracy=0.9167 lr=0.002 "
    "examples_per_sec=73 elapsed=24.9",
    "[1,0]<stdout>:progress epoch=1 step=5 loss=2.1340 accuracy=0.3438 examples_per_sec=17 elapsed=22.8",
    "gpus: none seen by TensorFlow 2.21.0 (the job asked for 0)",
    # Python warnings (Keras 3, then TF 2.13's Keras 2 through Python logging), their source line too.
    "/opt/venv/lib/python3.11/site-packages/keras/src/trainers/epoch_iterator.py:116: UserWarning: Your input ran out "
    "of data; interrupting training. Make sure that your dataset or generator can generate at least "
    "`steps_per_epoch * epochs` batches. You may need to use the `.repeat()` function when building your dataset.",
    "  self._interrupted_warning()",
    "[1,0]<stderr>:WARNING:tensorflow:Your input ran out of data; interrupting training. Make sure that your dataset "
    "or generator can generate at least `steps_per_epoch * epochs` batches (in this case, 40 batches). You may need "
    "to use the repeat() function when building your dataset.",
    # A traceback.
    "Traceback (most recent call last):",
    "TypeError: StepFunctions.__init__() takes from 7 to 8 positional arguments but 9 were given",
    # A C++ warning not on the list (made up, in TF 2.13's layout).
    "2026-11-23 08:01:24.497299: W tensorflow/core/grappler/optimizers/data/auto_shard.cc:790] Something new about "
    "the input pipeline",
    # mpirun put one rank's line in pieces: still shown.
    "[1,1]<stdout>:devices [PhysicalDevice(name='/physical_device:CPU:0', device_type='CPU')][1,1]<stdout>:",
    # Made up, by the rules: a fatal line is never noise whatever it says; a listed message followed by more
    # (mpirun put another rank's line behind it) shows, not to hide that one too; an error about cuDNN
    # that is not the double registration shows.
    "F0000 00:00:1795420601.179277   28208 dataset.cc:997] Input of GeneratorDatasetOp::Dataset will not be optimized "
    "because the dataset does not implement the AsGraphDefInternal() method needed to apply optimizations.",
    "[1,0]<stderr>:WARNING: All log messages before absl::InitializeLog() is called are written to STDERR"
    "[1,1]<stdout>:config strategy=horovod replicas=2 workers=2",
    "E0000 00:00:1795420001.301245   40112 cuda_dnn.cc:536] Could not create cudnn handle: CUDNN_STATUS_INTERNAL_ERROR",
    "print('This TensorFlow binary is optimized to use available CPU instructions in performance-critical operations.')",
    "",
]


@pytest.mark.parametrize("line", TF_2_21 + TF_2_13 + UNDER_MPIRUN + GPU_WHEELS)
def test_tensorflow_start_up_lines_are_noise(line: str) -> None:
    assert is_noise(line)


@pytest.mark.parametrize("line", SHOWN)
def test_metric_lines_warnings_tracebacks_and_unknown_lines_are_not(line: str) -> None:
    assert not is_noise(line)


def test_two_ranks_noise_on_one_line_is_noise() -> None:
    line = UNDER_MPIRUN[0] + UNDER_MPIRUN[1]
    assert is_noise(line)


GENERATOR_NOTICE = ("W0000 00:00:1795848130.101648   15847 dataset.cc:997] Input of GeneratorDatasetOp::Dataset will "
                    "not be optimized because the dataset does not implement the AsGraphDefInternal() method needed "
                    "to apply optimizations.")
BAR = "20/23 \u2501\u2501\u2501\u2501 1s 370ms/step - accuracy: 0.9391 - loss: 0.3379"


def test_a_notice_glued_to_a_progress_bar_is_cut_off_and_an_unknown_message_is_not() -> None:
    assert noise_at_the_end(BAR + GENERATOR_NOTICE) == len(BAR)
    assert noise_at_the_end("\r" + BAR + "\r" + BAR + GENERATOR_NOTICE) == len(BAR) * 2 + 2
    cudnn = ("E0000 00:00:1795420001.301245   40112 cuda_dnn.cc:536] Could not create cudnn handle: "
             "CUDNN_STATUS_INTERNAL_ERROR")
    assert noise_at_the_end(BAR + cudnn) is None  # not on the list: never hidden
    assert noise_at_the_end(GENERATOR_NOTICE) is None  # a whole line of noise is is_noise's
    assert noise_at_the_end(BAR) is None


def test_the_terminal_shows_the_bar_without_the_glued_notice_and_the_log_keeps_both(tmp_path: Path) -> None:
    code = (f"import sys\nsys.stdout.write({BAR!r}); sys.stdout.flush()\n"
            f"sys.stderr.write({GENERATOR_NOTICE!r} + '\\n'); sys.stderr.flush()\nprint('done')\n")
    text, logs = run(tmp_path, {"algo-1": code})
    assert f"[algo-1] {BAR}\n" in text and "GeneratorDatasetOp" not in text, text
    assert BAR + GENERATOR_NOTICE in logged(logs, "algo-1")


# -- the supervisor's output, with small Python programs as hosts ----------------------------------

NOISE = TF_2_21[:2] + [UNDER_MPIRUN[3]]


def program(lines: list[str], code: int = 0) -> str:
    """Python that prints `lines` on stderr, as TensorFlow does, then 'hello' and an error, and exits `code`."""
    return (f"import sys\nfor line in {lines!r}:\n    print(line, file=sys.stderr, flush=True)\n"
            f"print('hello', flush=True)\nprint('RuntimeError: boom', file=sys.stderr, flush=True)\n"
            f"sys.exit({code})\n")


def run(tmp_path: Path, programs: dict[str, str], *, verbose: bool = False) -> tuple[str, Path]:
    specs = [ProcessSpec(host, [sys.executable, "-c", code], dict(os.environ), tmp_path, role=MAIN)
             for host, code in programs.items()]
    stream = io.StringIO()
    Supervisor(specs, Output(stream, tmp_path / "logs", verbose=verbose), failure_files={}, max_run=60,
               grace=1.0).run()
    return stream.getvalue(), tmp_path / "logs"


def logged(log_dir: Path, host: str) -> list[str]:
    return [p[1] for p in map(parse_log_line, (log_dir / f"{host}.log").read_text().splitlines()) if p]


def test_noise_goes_to_the_log_only_and_verbose_shows_it(tmp_path: Path) -> None:
    quiet, logs = run(tmp_path / "quiet", {"algo-1": program(NOISE)})
    assert logged(logs, "algo-1") == [*NOISE, "hello", "RuntimeError: boom"]
    assert not any(line in quiet for line in NOISE), quiet
    assert "[algo-1] hello\n" in quiet and "[algo-1] RuntimeError: boom\n" in quiet
    assert "hidden" not in quiet  # a host that did not fail: nothing is shown afterwards
    loud, logs = run(tmp_path / "loud", {"algo-1": program(NOISE)}, verbose=True)
    assert all(f"[algo-1] {line}\n" in loud for line in NOISE), loud
    assert logged(logs, "algo-1") == [*NOISE, "hello", "RuntimeError: boom"]


def test_a_failed_host_shows_its_hidden_lines_after_the_failure_and_the_others_keep_theirs(tmp_path: Path) -> None:
    other = "import time\n" + program(["WARNING: All log messages before absl::InitializeLog() is called are "
                                       "written to STDERR"]).replace("sys.exit(0)", "time.sleep(60)")
    text, logs = run(tmp_path, {"algo-1": other, "algo-2": program(NOISE, code=1)})
    failed = text.index("[smtrain] algo-2 failed (exit code 1)")
    header = f"[smtrain] hidden TensorFlow start-up lines of algo-2 ({len(NOISE)}; all are in {logs / 'algo-2.log'}):\n"
    assert text.index(header) > failed, text
    shown = text[text.index(header) + len(header):].splitlines()
    assert shown == [f"[algo-2] {line}" for line in NOISE]
    assert "lines of algo-1" not in text and "[algo-1] WARNING: All log messages" not in text


def test_a_flood_of_hidden_lines_shows_only_its_last_ones(tmp_path: Path) -> None:
    many = [f"I0000 00:00:1795420677.{i:06d}   30048 port.cc:153] oneDNN custom operations are on. (run {i})"
            for i in range(HIDDEN_SHOWN + 7)]
    text, logs = run(tmp_path, {"algo-1": program(many, code=2)})
    assert f"lines of algo-1 (the last {HIDDEN_SHOWN} of {HIDDEN_SHOWN + 7}; all are in" in text
    assert f"[algo-1] {many[-1]}\n" in text and f"[algo-1] {many[6]}\n" not in text
    assert f"[algo-1] {many[7]}\n" in text
    assert len(logged(logs, "algo-1")) == HIDDEN_SHOWN + 7 + 2


# Captured here: TF 2.13 (the Horovod env) distributing a tf.data.Dataset.from_tensor_slices over 2 workers with
# the default AUTO policy (TF_CPP_MIN_LOG_LEVEL=1): auto_shard.cc's notice, then the dataset's NodeDef, then a
# blank line. 2.21 no longer prints it.
AUTO_SHARD_DUMP = [
    '2026-11-25 20:37:37.075026: W tensorflow/core/grappler/optimizers/data/auto_shard.cc:786] AUTO sharding '
    'policy will apply DATA sharding policy as it failed to apply FILE sharding policy because of the following '
    'reason: Found an unshardable source dataset: name: "TensorSliceDataset/_2"',
    'op: "TensorSliceDataset"',
    'input: "Placeholder/_0"',
    'input: "Placeholder/_1"',
    'attr {',
    '  key: "Toutput_types"',
    '  value {',
    '    list {',
    '      type: DT_FLOAT',
    '      type: DT_INT64',
    '    }',
    '  }',
    '}',
    'attr {',
    '  key: "_cardinality"',
    '  value {',
    '    i: 100',
    '  }',
    '}',
    'attr {',
    '  key: "is_files"',
    '  value {',
    '    b: false',
    '  }',
    '}',
    'attr {',
    '  key: "metadata"',
    '  value {',
    '    s: "\\n\\024TensorSliceDataset:0"',
    '  }',
    '}',
    'attr {',
    '  key: "output_shapes"',
    '  value {',
    '    list {',
    '      shape {',
    '        dim {',
    '          size: 4',
    '        }',
    '      }',
    '      shape {',
    '      }',
    '    }',
    '  }',
    '}',
    'attr {',
    '  key: "replicate_on_split"',
    '  value {',
    '    b: false',
    '  }',
    '}',
    'experimental_type {',
    '  type_id: TFT_PRODUCT',
    '  args {',
    '    type_id: TFT_DATASET',
    '    args {',
    '      type_id: TFT_PRODUCT',
    '      args {',
    '        type_id: TFT_TENSOR',
    '        args {',
    '          type_id: TFT_FLOAT',
    '        }',
    '      }',
    '      args {',
    '        type_id: TFT_TENSOR',
    '        args {',
    '          type_id: TFT_INT64',
    '        }',
    '      }',
    '    }',
    '  }',
    '}',
    '']
# A worker whose chief had exited, at the end of a successful 2-host run: TensorFlow's own message text, in the
# layout of this machine's TF 2.21 (not captured: it comes only sometimes).
START_ABORT = [
    "E0000 00:00:1795639411.203117   31877 base_collective_executor.cc:290] BaseCollectiveExecutor::StartAbort "
    "UNAVAILABLE: Failed to send RPC to coordination service. Either the leader task was preempted/died/restarted "
    "unexpectedly or this task is experiencing network issues. Check earlier logs from 1) this task, 2) the leader "
    "(usually slice 0 task 0), and 3) cluster scheduler to debug further.",
    "Additional GRPC error information from remote target /job:worker/replica:0/task:0 while calling "
    "/tensorflow.CoordinationService/PollForError:",
    ':{"created":"@1795639411.202961853","description":"Error received from peer ipv4:127.0.0.1:41543",'
    '"file":"external/com_github_grpc_grpc/src/core/lib/surface/call.cc","file_line":1056,'
    '"grpc_message":"Socket closed","grpc_status":14}',
]
AFTER = ["loss: 0.2301", "epoch 2 loss: 0.180", "}"]  # the program's own lines, even in a proto's shape


def test_a_noise_message_over_several_lines_is_noise_to_its_end_and_no_further() -> None:
    noise = NoiseFilter()
    assert [noise("algo-1", line) for line in AUTO_SHARD_DUMP + AFTER] == [True] * len(AUTO_SHARD_DUMP) + [False] * 3
    assert [noise("algo-2", line) for line in START_ABORT + AFTER] == [True] * len(START_ABORT) + [False] * 3
    # Under mpirun each rank's lines carry its tag, and two ranks' dumps interleave.
    ranks = [f"[1,{r}]<stderr>:{line}" for line in AUTO_SHARD_DUMP for r in (0, 1)]
    assert all(noise("algo-1", line) for line in ranks)
    assert not noise("algo-1", "[1,0]<stdout>:epoch=1 step=22 loss=1.4417")
    # Stateless, the dump's lines are not noise: only after the notice.
    assert not any(is_noise(line) for line in AUTO_SHARD_DUMP[1:4])


def test_a_dataset_dump_stays_in_the_log(tmp_path: Path) -> None:
    text, logs = run(tmp_path, {"algo-1": program(AUTO_SHARD_DUMP + START_ABORT)})
    assert "TensorSliceDataset" not in text and "attr {" not in text and "StartAbort" not in text, text
    assert "[algo-1] hello\n" in text and "[algo-1] RuntimeError: boom\n" in text
    assert logged(logs, "algo-1")[:len(AUTO_SHARD_DUMP)] == AUTO_SHARD_DUMP
