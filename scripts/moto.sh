#!/usr/bin/env bash
# `make moto`: moto's server as a stand-in for AWS on 127.0.0.1:$MOTO_PORT, with the S3 bucket the example specs
# name (my-bucket), so submit/list/status/wait/logs/metrics/stop run with no AWS account. Ctrl-C stops it.
# Plain moto (no harness): every training job is Completed as it is created, and it keeps no log lines.
set -euo pipefail
PORT="${MOTO_PORT:-5000}"
BIN="$(cd "$(dirname "$0")/.." && pwd)/.venv/bin"
[ -x "$BIN/moto_server" ] || BIN="$(dirname "$(command -v moto_server)")"
"$BIN/moto_server" -H 127.0.0.1 -p "$PORT" >/dev/null 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null; wait "$server" 2>/dev/null' EXIT INT TERM
export AWS_ENDPOINT_URL="http://127.0.0.1:$PORT" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_DEFAULT_REGION=us-east-1
for _ in $(seq 100); do
  "$BIN/python" -c "import urllib.request; urllib.request.urlopen('$AWS_ENDPOINT_URL/moto-api/')" 2>/dev/null && break
  kill -0 "$server" 2>/dev/null || { echo "moto_server did not start (is port $PORT taken?)" >&2; exit 1; }
  sleep 0.2
done
"$BIN/python" -c "import boto3; boto3.client('s3').create_bucket(Bucket='my-bucket')"
echo "moto is serving on $AWS_ENDPOINT_URL with the bucket my-bucket; in another terminal:"
echo "  export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1"
wait "$server"
