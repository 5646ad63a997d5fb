#!/usr/bin/env bash
# Build (once) the Python virtual environment that the Horovod / smdistributed tests run in.
#
# Why a separate env: Horovod 0.28.1 only compiles against an older TensorFlow, so this env holds
# tensorflow-cpu 2.13.1 (Keras 2) with Horovod compiled against it, mpi4py compiled against the
# system Open MPI, and the few libraries the tests need. It lives outside the repository:
#
#     ${SMTRAIN_HOROVOD_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/smtrain/horovod-tf2.13}
#
# Usage:  scripts/horovod-env.sh            build if needed, print the env's location
#         scripts/horovod-env.sh --force    build it again even if it looks ready
#         scripts/horovod-env.sh --print    print the env's location only
#
# The env counts as ready only when its stamp file holds exactly the recipe below and a smoke
# check (import horovod.tensorflow; hvd.init()) passes. The stamp is written last, so a build
# that was interrupted is never taken for a ready one. A first build takes several minutes
# (Horovod's C++ core); a re-run on a ready env takes a few seconds.
#
# Environment knobs:
#   SMTRAIN_HOROVOD_ENV      where the env goes (see above)
#   PYTHON                   interpreter to build it from (default: python3 on PATH)
#   MAKEFLAGS                passed to Horovod's make (default: -j<number of cores>)
#   HOROVOD_BUILD_ARCH_FLAGS compiler arch flags for Horovod (Horovod's default: -mf16c -mavx -mfma)
set -euo pipefail
# The whole script is one { ... } block, parsed before it runs: editing or checking out a new
# version of this file while a build is running cannot derail that build.
{

# ---- the recipe: change a version here and the next run rebuilds the env ----------------------
TF_VERSION=2.13.1
HOROVOD_VERSION=0.28.1
MPI4PY_VERSION=3.1.6
NUMPY_VERSION=1.24.3      # TF 2.13 wants numpy >=1.22,<=1.24.3
SCIPY_VERSION=1.13.1      # last scipy line that still accepts numpy 1.24
SKLEARN_VERSION=1.5.2
SETUPTOOLS_VERSION=69.5.1 # builds Horovod's setup.py without build isolation
WHEEL_VERSION=0.43.0
RECIPE_REV=1              # bump when the build steps or the constraints below change
APT_PACKAGES=(openmpi-bin libopenmpi-dev)

# Every other package pinned too, so that two builds get the same env and pip need not search:
# left free, it backtracks through a dozen grpcio releases (new ones want typing-extensions>=4.6,
# TF 2.13 wants <4.6). Regenerate from "$ENV/smtrain-freeze.txt" after a deliberate upgrade.
constraints() {
  cat <<'EOF'
absl-py==2.5.1
astunparse==1.6.3
certifi==2026.10.18
cffi==2.1.1
charset-normalizer==3.5.2
cloudpickle==3.1.2
cryptography==50.0.2
flatbuffers==25.12.19
gast==0.4.0
google-auth==2.62.2
google-auth-oauthlib==1.0.0
google-pasta==0.2.0
grpcio==1.74.0
h5py==3.16.0
idna==3.20
joblib==1.6.0
keras==2.13.1
libclang==18.1.1
Markdown==3.11.3
MarkupSafe==3.0.4
oauthlib==4.0.1
opt_einsum==3.4.0
packaging==26.3
protobuf==4.25.9
psutil==7.2.2
pyasn1==0.6.5
pyasn1_modules==0.4.2
pycparser==3.12
PyYAML==6.0.3
requests==2.34.2
requests-oauthlib==2.0.0
six==1.17.0
tensorboard==2.13.0
tensorboard-data-server==0.7.2
tensorflow-estimator==2.13.0
tensorflow-io-gcs-filesystem==0.37.1
termcolor==3.3.0
threadpoolctl==3.8.0
typing_extensions==4.5.0
urllib3==2.8.0
Werkzeug==3.1.9
wrapt==2.5.2
EOF
}

ENV_DIR="${SMTRAIN_HOROVOD_ENV:-${XDG_CACHE_HOME:-$HOME/.cache}/smtrain/horovod-tf2.13}"
PYTHON_BIN="${PYTHON:-python3}"
STAMP="$ENV_DIR/.smtrain-horovod-ready"

log() { printf '[horovod-env +%ss] %s\n' "$SECONDS" "$*" >&2; }
die() { log "error: $*"; exit 1; }

FORCE=0
case "${1:-}" in
  "") ;;
  --force) FORCE=1 ;;
  --print) echo "$ENV_DIR"; exit 0 ;;
  -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
  *) die "unknown argument: $1 (try --help)" ;;
esac

command -v "$PYTHON_BIN" >/dev/null 2>&1 || die "no '$PYTHON_BIN' on PATH (set PYTHON=...)"
PY_VERSION="$("$PYTHON_BIN" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"

recipe() {
  cat <<EOF
smtrain-horovod-env rev=$RECIPE_REV
python=$PY_VERSION
tensorflow-cpu==$TF_VERSION
horovod==$HOROVOD_VERSION
mpi4py==$MPI4PY_VERSION
numpy==$NUMPY_VERSION
scipy==$SCIPY_VERSION
scikit-learn==$SKLEARN_VERSION
horovod-frameworks=tensorflow
horovod-controllers=mpi
constraints-sha256=$(constraints | sha256sum | cut -c1-16)
EOF
}

smoke_check() {
  # One process, no mpirun: MPI starts as a singleton (btl=self: it has no peers to talk to).
  OMPI_MCA_btl=self TF_CPP_MIN_LOG_LEVEL=2 "$ENV_DIR/bin/python" - <<'EOF'
import horovod.tensorflow as hvd
hvd.init()
assert hvd.size() == 1 and hvd.rank() == 0, (hvd.size(), hvd.rank())
assert hvd.mpi_enabled() and hvd.mpi_built(), "Horovod was built without MPI"
import tensorflow as tf
assert tf.__version__.startswith("2.13"), tf.__version__
out = hvd.allreduce(tf.constant([1.0, 2.0]), op=hvd.Sum)
assert out.numpy().tolist() == [1.0, 2.0], out
from mpi4py import MPI
assert MPI.COMM_WORLD.Get_size() == 1
import sklearn.datasets  # noqa: F401  (tests build their digits data with it)
EOF
}

is_ready() {
  [[ -x "$ENV_DIR/bin/python" && -f "$STAMP" ]] || return 1
  [[ "$(cat "$STAMP")" == "$(recipe)" ]] || return 1
  smoke_check >/dev/null 2>&1
}

ready_exit() {
  log "ready (cached): $ENV_DIR"
  echo "$ENV_DIR"
  exit 0
}

# Fast path, no lock: checks running side by side do not wait for each other.
if [[ $FORCE == 0 ]] && is_ready; then ready_exit; fi

# ---- one build at a time: two test runs starting together must not build into the same dir ----
mkdir -p "$(dirname "$ENV_DIR")"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$ENV_DIR.lock"
  if ! flock -n 9; then
    log "another run is building $ENV_DIR; waiting for it"
    flock 9
    if [[ $FORCE == 0 ]] && is_ready; then ready_exit; fi
  fi
fi

START=$SECONDS
log "building the Horovod env in $ENV_DIR (python $PY_VERSION, this takes several minutes)"

# ---- system packages: Open MPI (mpirun, mpicc, headers) and a C++ toolchain --------------------
as_root() {
  if [[ $(id -u) == 0 ]]; then "$@";
  elif command -v sudo >/dev/null 2>&1; then sudo "$@";
  else die "need root (or sudo) to run: $*"; fi
}
missing=()
if ! command -v mpirun >/dev/null 2>&1 || ! command -v mpicc >/dev/null 2>&1; then
  for pkg in "${APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
fi
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
if ((${#missing[@]})); then
  command -v apt-get >/dev/null 2>&1 || die "missing ${missing[*]} and no apt-get to install them"
  log "installing Debian packages: ${missing[*]}"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
command -v mpicc >/dev/null 2>&1 || die "mpicc not found after installing libopenmpi-dev"

# ---- the virtual env, always from scratch: a build killed halfway through a pip install can
# leave packages that pip counts as installed but that miss files. (pip's wheel cache keeps the
# compiled mpi4py, so a rebuild costs the downloads plus Horovod's compile.)
if [[ -e "$ENV_DIR" ]]; then
  # Only ever delete what looks like a virtual env (SMTRAIN_HOROVOD_ENV could point anywhere).
  if [[ -f "$ENV_DIR/pyvenv.cfg" || -z "$(ls -A "$ENV_DIR" 2>/dev/null)" ]]; then
    rm -f "$STAMP"
    rm -rf "$ENV_DIR"
  else
    die "$ENV_DIR exists and is not a virtual env; refusing to replace it"
  fi
fi
if ! "$PYTHON_BIN" -m venv "$ENV_DIR" 2>/dev/null; then
  # Debian's own python3 ships venv/ensurepip separately.
  rm -rf "$ENV_DIR"
  log "python3 -m venv failed; installing python$PY_VERSION-venv"
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q "python$PY_VERSION-venv"
  "$PYTHON_BIN" -m venv "$ENV_DIR"
fi
PY="$ENV_DIR/bin/python"
constraints >"$ENV_DIR/smtrain-constraints.txt"
PIP=("$PY" -m pip install --disable-pip-version-check --no-input --progress-bar off
     -c "$ENV_DIR/smtrain-constraints.txt")

"${PIP[@]}" "setuptools==$SETUPTOOLS_VERSION" "wheel==$WHEEL_VERSION" packaging

# Horovod's setup.py needs cmake >= 3.13 on PATH. Without a recent system cmake it would pip-install
# one into a temp dir on every build; put one in the env instead (cmake 4 drops old policies).
cmake_ok() {
  local v
  v="$(cmake --version 2>/dev/null | sed -n 's/^cmake version \([0-9.]*\).*/\1/p')"
  [[ -n "$v" ]] && "$PY" -c "import sys; from packaging.version import Version as V; sys.exit(V('$v') < V('3.13'))"
}
export PATH="$ENV_DIR/bin:$PATH"
if ! cmake_ok; then
  "${PIP[@]}" "cmake>=3.13,<4"
fi

# TensorFlow first (Horovod compiles against the installed one), mpi4py compiled from source so it
# links the same Open MPI that mpirun comes from, Horovod's own runtime deps, and the test libraries.
"${PIP[@]}" \
  "tensorflow-cpu==$TF_VERSION" "numpy==$NUMPY_VERSION" "scipy==$SCIPY_VERSION" \
  "scikit-learn==$SKLEARN_VERSION" cloudpickle psutil pyyaml
# (--no-build-isolation: in an isolated build the newest setuptools breaks mpi4py 3.1's setup.py.)
MPICC="$(command -v mpicc)" "${PIP[@]}" --no-build-isolation --no-binary mpi4py "mpi4py==$MPI4PY_VERSION"

# Horovod: TensorFlow only, MPI controller only (SageMaker launches it with mpirun; Gloo would add
# minutes of compile time for a launcher the tests never use). --no-build-isolation so it builds
# against the TensorFlow above; --no-cache-dir so a wheel built against another TF is never reused.
export HOROVOD_WITH_TENSORFLOW=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_GLOO=1
export HOROVOD_WITHOUT_PYTORCH=1 HOROVOD_WITHOUT_MXNET=1
export HOROVOD_CPU_OPERATIONS=MPI
export MAKEFLAGS="${MAKEFLAGS:--j$(nproc 2>/dev/null || echo 2)}"
log "compiling horovod==$HOROVOD_VERSION (MAKEFLAGS=$MAKEFLAGS)"
"${PIP[@]}" --no-build-isolation --no-cache-dir "horovod==$HOROVOD_VERSION"

log "smoke check"
if ! smoke_check; then
  die "the env was built but the smoke check failed; it is left unstamped in $ENV_DIR"
fi
"$PY" -m pip freeze --disable-pip-version-check >"$ENV_DIR/smtrain-freeze.txt"
recipe >"$STAMP.tmp" && mv -f "$STAMP.tmp" "$STAMP"
log "ready after $((SECONDS - START)) s: $ENV_DIR ($(du -sh "$ENV_DIR" 2>/dev/null | cut -f1))"
echo "$ENV_DIR"
exit 0
}
