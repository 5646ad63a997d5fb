#!/usr/bin/env bash
# The demo: validate, plan and dry-run an example spec (offline, no credentials).
set -euo pipefail
cd "$(dirname "$0")/.."
spec=configs/mwms.yaml
echo "== smtrain validate $spec"
.venv/bin/smtrain validate "$spec"
echo
echo "== smtrain plan $spec"
.venv/bin/smtrain plan "$spec"
echo
echo "== smtrain submit $spec --dry-run --output yaml"
.venv/bin/smtrain submit "$spec" --dry-run --output yaml
