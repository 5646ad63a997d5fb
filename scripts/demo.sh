#!/usr/bin/env bash
# The demo (`make demo`): train on scikit-learn's digits with two hosts as two local processes,
# MultiWorkerMirroredStrategy over 127.0.0.1, through the same bundle and container contract a
# SageMaker job gets. No AWS credentials, no Docker, no download of data.
#
# Data and artifacts go to .demo/ in the repository (SMTRAIN_DEMO_DATA / SMTRAIN_DEMO_OUTPUT move
# them); the job's record goes where every local job's goes (${SMTRAIN_HOME:-~/.smtrain}).
set -euo pipefail
cd "$(dirname "$0")/.."
spec=configs/local-demo.yaml
bin=.venv/bin
export SMTRAIN_DEMO_DATA="${SMTRAIN_DEMO_DATA:-$PWD/.demo/digits}"
export SMTRAIN_DEMO_OUTPUT="${SMTRAIN_DEMO_OUTPUT:-$PWD/.demo/output}"
mkdir -p "$SMTRAIN_DEMO_OUTPUT"
result="$SMTRAIN_DEMO_OUTPUT/last-job.json"

echo "== writing scikit-learn's digits as train/validation channels"
"$bin/python" -m smtrain.local.demo_data "$SMTRAIN_DEMO_DATA"
echo
echo "== smtrain submit $spec --local   (host output is prefixed [algo-1], [algo-2])"
started=$(date +%s)
status=0
"$bin/smtrain" submit "$spec" --local --output json > "$result" || status=$?
wall=$(( $(date +%s) - started ))
if [ ! -s "$result" ]; then
    echo "the local run printed no result (exit code $status)" >&2
    exit "${status:-1}"
fi
job=$("$bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["job_name"])' "$result")

echo
echo "== summary"
"$bin/smtrain" logs "$job" --output json > "$SMTRAIN_DEMO_OUTPUT/last-job-logs.jsonl"
"$bin/python" - "$result" "$SMTRAIN_DEMO_OUTPUT/last-job-logs.jsonl" "$wall" <<'PY'
import json, re, sys, tarfile
from pathlib import Path

job = json.load(open(sys.argv[1]))["job"]  # submit's JSON; the finished job under "job"
wall = int(sys.argv[3])
last = None
for line in open(sys.argv[2]):
    event = json.loads(line)
    if event["host"] == "algo-1" and re.match(r"epoch=\d+ step=", event["message"]):
        last = event["message"]
metrics = dict(re.findall(r"(\w+)=([0-9.eE+-]+)", last or ""))
print(f"job          {job['name']}: {job['status']}" + (f" ({job['failure_reason']})" if job["failure_reason"] else ""))
if last:
    print(f"final epoch  {metrics.get('epoch')}: loss {metrics.get('loss')}, accuracy {metrics.get('accuracy')}, "
          f"validation loss {metrics.get('val_loss')}, validation accuracy {metrics.get('val_accuracy')}")
model = job.get("model_artifacts")
if model:
    with tarfile.open(model) as tar:
        top = sorted({name.split("/")[0] for name in tar.getnames()})
    print(f"model        {model}  (holds: {', '.join(top)})")
    print(f"output       {Path(model).with_name('output.tar.gz')}")
print(f"wall time    {wall}s for the run (TensorFlow start-up included)")
# As runnable as printed: smtrain lives in the repository's .venv (or `source .venv/bin/activate`).
print(f"logs         .venv/bin/smtrain logs {job['name']}    status: .venv/bin/smtrain status {job['name']}")
PY
exit "$status"
