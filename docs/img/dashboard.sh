#!/usr/bin/env bash
# Takes docs/img/dashboard.png: the live dashboard under tmux during a run against the mock
# server (with its DCGM page for 2 GPUs), the pane captured with its colours, turned into HTML
# by aha and rendered to PNG by headless Chromium.
#
# Needs: a built ringperf (target/release or target/debug), tmux, aha, chromium (Debian
# packages). Run from the repository root: docs/img/dashboard.sh
set -euo pipefail
cd "$(dirname "$0")/../.."

bin=target/release/ringperf
[ -x "$bin" ] || bin=target/debug/ringperf
for tool in tmux aha chromium; do
  command -v "$tool" >/dev/null || { echo "needs $tool" >&2; exit 1; }
done

work=$(mktemp -d)
port=$((20000 + RANDOM % 20000))
socket="ringperf-shot-$$"
"$bin" mock-server --bind "127.0.0.1:$port" --dcgm-gpus 2 --mock-ttft-ms 40 \
  --mock-itl-ms 8 --mock-output-tokens 128 >/dev/null 2>&1 &
mock=$!
cleanup() {
  tmux -L "$socket" kill-server 2>/dev/null || true
  kill "$mock" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
sleep 1

tmux -L "$socket" new-session -d -s shot -x 110 -y 42 \
  "$bin profile -m mock-model --url http://127.0.0.1:$port --streaming --concurrency 16 \
   --request-count 1500 --tokenizer builtin --ui dashboard \
   --gpu-telemetry http://127.0.0.1:$port/dcgm/metrics --artifact-dir $work/run 2>/dev/null; sleep 30"
# Wait for the profiling phase to be drawn (start-up can take a while on a debug build), then
# let a few seconds of history accumulate.
for _ in $(seq 1 240); do
  tmux -L "$socket" capture-pane -p -t shot | grep -q "requests done" && break
  sleep 0.5
done
sleep "${SHOT_AFTER:-8}"
tmux -L "$socket" capture-pane -e -p -t shot >"$work/pane.ansi"

{
  echo '<!doctype html><html><head><meta charset="utf-8"><style>'
  echo 'body{margin:0;background:#111;color:#ddd}'
  echo 'pre{margin:8px;font:13px/1.15 "DejaVu Sans Mono",monospace}'
  echo '</style></head><body><pre>'
  aha --no-header --black <"$work/pane.ansi"
  echo '</pre></body></html>'
} >"$work/pane.html"

chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
  --disable-background-networking --disable-component-update --disable-sync \
  --user-data-dir="$work/chrome" --hide-scrollbars --window-size=900,700 \
  --screenshot="$PWD/docs/img/dashboard.png" "file://$work/pane.html" 2>/dev/null
echo "wrote docs/img/dashboard.png"
