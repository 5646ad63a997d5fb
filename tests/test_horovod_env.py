"""The Horovod test env (scripts/horovod-env.sh), its mpirun command line, and the smdistributed double.

The multi-process tests run only where the env has been built; they skip otherwise.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

from tests.support.horovod_env import DOUBLES_DIR, STAMP_NAME, horovod_python, mpirun_base

# One gradient step program, written for both APIs. Each rank starts from different weights and
# different data; after a step with gradient averaging and a broadcast from rank 0, every rank
# must hold the same weights. With --no-sync (plain tape, no broadcast) they must differ, which
# shows the check can fail.
STEP_PROGRAM = textwrap.dedent(
    """
    import json, sys
    import numpy as np
    import tensorflow as tf

    if sys.argv[1] == "horovod":
        import horovod.tensorflow as dist
        allreduce_sum = lambda t: dist.allreduce(t, op=dist.Sum)
    else:
        import smdistributed.dataparallel.tensorflow as dist
        assert dist.__test_double__
        allreduce_sum = lambda t: dist.allreduce(t, 0, 1, op=dist.ReduceOp.SUM)
    sync = "--no-sync" not in sys.argv

    dist.init()
    rank, size = dist.rank(), dist.size()
    assert allreduce_sum(tf.constant(float(rank))).numpy() == sum(range(size))

    tf.random.set_seed(100 + rank)
    model = tf.keras.Sequential(
        [tf.keras.layers.Dense(8, activation="relu", input_shape=(4,)), tf.keras.layers.Dense(3)]
    )
    opt = tf.keras.optimizers.Adam(0.01 * size)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    rng = np.random.default_rng(rank)
    x = rng.normal(size=(32, 4)).astype("float32")
    y = rng.integers(0, 3, size=32)

    @tf.function
    def step(x, y, first):
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x, training=True))
        if sync:
            tape = dist.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        if first and sync:
            dist.broadcast_variables(model.variables, root_rank=0)
            dist.broadcast_variables(opt.variables, root_rank=0)
        return loss

    for i in range(3):
        step(x, y, i == 0)
    flat = np.concatenate([v.numpy().ravel() for v in model.variables])
    on_root = dist.broadcast(tf.constant(flat), root_rank=0).numpy()
    # One file per rank: lines that ranks print through mpirun can interleave.
    with open(f"{sys.argv[2]}/rank{rank}.json", "w") as out:
        json.dump({"rank": rank, "size": size, "local_rank": dist.local_rank(),
                   "equal_to_root": bool(np.array_equal(on_root, flat))}, out)
    """
)


def test_mpirun_base_flags():
    argv = mpirun_base(3, export=["SM_HOSTS"], env={"PATH": "/bin", "SM_HOSTS": "[]"})
    assert argv[1:3] == ["-np", "3"]
    assert ("--allow-run-as-root" in argv) == (os.geteuid() == 0)
    for flag in ("--oversubscribe", "--bind-to"):
        assert flag in argv
    exported = [argv[i + 1] for i, a in enumerate(argv) if a == "-x"]
    assert exported == ["PATH", "SM_HOSTS"]  # PYTHONPATH and LD_LIBRARY_PATH are not set in env
    with pytest.raises(ValueError):
        mpirun_base(0)


def test_horovod_python_needs_a_matching_stamp(tmp_path, monkeypatch):
    monkeypatch.setenv("SMTRAIN_HOROVOD_ENV", str(tmp_path))
    assert horovod_python() is None  # nothing there
    (tmp_path / "bin").mkdir()
    os.symlink(sys.executable, tmp_path / "bin" / "python")
    assert horovod_python() is None  # env without stamp: an unfinished build
    (tmp_path / STAMP_NAME).write_text("smtrain-horovod-env rev=1\ntensorflow-cpu==2.16.1\nhorovod==0.28.1\n")
    assert horovod_python() is None  # stamp of another recipe
    (tmp_path / STAMP_NAME).write_text("smtrain-horovod-env rev=1\ntensorflow-cpu==2.13.1\nhorovod==0.28.1\n")
    assert horovod_python() == tmp_path / "bin" / "python"


def _run_step(tmp_path, api: str, *extra: str, np: int = 2) -> list[dict]:
    py = horovod_python()
    if py is None:
        pytest.skip("Horovod env not built: run scripts/horovod-env.sh")
    env = {**os.environ, "PYTHONPATH": str(DOUBLES_DIR), "TF_CPP_MIN_LOG_LEVEL": "2"}
    program = [str(py), "-m", "mpi4py", "-c", STEP_PROGRAM, api, str(tmp_path), *extra]
    done = subprocess.run(mpirun_base(np, env=env) + program, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    rows = [json.loads(p.read_text()) for p in sorted(tmp_path.glob("rank*.json"))]
    assert [r["rank"] for r in rows] == list(range(np)), done.stdout
    assert all(r["size"] == np for r in rows)
    return rows


@pytest.mark.slow
@pytest.mark.horovod
@pytest.mark.parametrize("api", ["horovod", "smdistributed"])
def test_two_ranks_end_with_equal_weights(tmp_path, api):
    rows = _run_step(tmp_path, api)
    assert all(r["equal_to_root"] for r in rows), rows
    assert sorted(r["local_rank"] for r in rows) == [0, 1]


@pytest.mark.slow
@pytest.mark.horovod
def test_without_sync_the_ranks_diverge(tmp_path):
    rows = _run_step(tmp_path, "smdistributed", "--no-sync")
    assert not all(r["equal_to_root"] for r in rows), rows
