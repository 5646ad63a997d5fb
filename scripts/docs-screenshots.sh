#!/usr/bin/env bash
# `make docs-screenshots`: the built site (site/, from `make docs`) served on 127.0.0.1 and its home and
# spec-reference pages taken by headless Chromium into build/screenshots/. Debian's chromium is installed the
# first time. The flags keep Chromium off the network (no sync, updates or lookups: this may run offline).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -f site/index.html ] || { echo "no site/: run make docs first" >&2; exit 2; }
if ! command -v chromium >/dev/null 2>&1; then
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  $sudo_ apt-get update -qq && $sudo_ apt-get install -y -qq chromium >/dev/null
fi
PYTHON="${PYTHON:-.venv/bin/python}"
PORT="$("$PYTHON" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$PYTHON" -m http.server --bind 127.0.0.1 --directory site "$PORT" >/dev/null 2>&1 &
server=$!
profile="$(mktemp -d)"
trap 'kill "$server" 2>/dev/null; rm -rf "$profile"' EXIT INT TERM
for _ in $(seq 50); do
  "$PYTHON" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$PORT/')" 2>/dev/null && break
  sleep 0.1
done
mkdir -p build/screenshots
for page in home:"" spec-reference:reference/spec/; do
  name="${page%%:*}"; path="${page#*:}"
  chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking \
    --disable-component-update --disable-sync --hide-scrollbars --user-data-dir="$profile" \
    --window-size=1280,1600 --screenshot="build/screenshots/$name.png" "http://127.0.0.1:$PORT/$path" \
    >/dev/null 2>&1
  [ -s "build/screenshots/$name.png" ] || { echo "chromium wrote no screenshot of /$path" >&2; exit 1; }
  echo "build/screenshots/$name.png"
done
