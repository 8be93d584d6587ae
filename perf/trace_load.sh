#!/usr/bin/env bash
# Start-up and memory of a trace replay: time from the client's launch to its first request,
# its peak RSS, and the schedule lag (dispatch lag) p50 / p99, for a trace file replayed on a
# fixed schedule against a separate `ringperf mock-server` (whose memory is not counted).
#
#   perf/trace_load.sh TRACE [ringperf flags...]
#
# Variables: RINGPERF_BIN (default target/release/ringperf), PORT (18491), OUT (a temporary
# directory), AIPERF=1 to run AIPerf (`$AIPERF_BIN`, as perf/aiperf-env.sh sets it)
# on the same trace and mock afterwards, with the same extra flags.
#
# `perf/trace_load.sh --make-1m FILE` writes a 1,010,604-row trace of the same shape: the
# Mooncake conversation trace (TRACE_SRC: kvcache-ai/Mooncake's
# FAST25-release/traces/conversation_trace.jsonl, Apache-2.0) repeated 84 times, each copy's timestamps shifted by
# the trace's span, its hash ids kept (production traces reuse prefixes across the day).
set -euo pipefail
if [ "${1:-}" = "--make-1m" ]; then
    SRC=${TRACE_SRC:?set TRACE_SRC to the Mooncake conversation_trace.jsonl}
    python3 - "$SRC" "$2" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
span = max(r["timestamp"] for r in rows) + 1000
with open(sys.argv[2], "w") as out:
    for copy in range(84):
        for r in rows:
            r2 = dict(r)
            r2["timestamp"] = r["timestamp"] + copy * span
            out.write(json.dumps(r2) + "\n")
PY
    exit 0
fi
TRACE=$1; shift
BIN=${RINGPERF_BIN:-target/release/ringperf}
PORT=${PORT:-18491}
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"
"$BIN" mock-server --bind "127.0.0.1:$PORT" --mock-ttft-ms 5 --mock-itl-ms 1 \
    --mock-output-tokens 16 > "$OUT/mock.log" 2>&1 &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
first_request() { # artifact dir, launch epoch ns → seconds to the first request
    python3 - "$1/profile_export.jsonl" "$2" <<'PY'
import json, sys
first = min(json.loads(l)["metadata"]["request_start_ns"] for l in open(sys.argv[1]) if l.strip())
print(f"{(first - int(sys.argv[2])) / 1e9:.3f}")
PY
}
launch=$(date +%s%N)
/usr/bin/time -v "$BIN" profile -m mock-model --url "http://127.0.0.1:$PORT" --endpoint-type chat \
    --streaming --input-file "$TRACE" --custom-dataset-type mooncake_trace --fixed-schedule \
    --no-server-metrics --ui none --artifact-dir "$OUT/ringperf" "$@" \
    > "$OUT/ringperf.log" 2> "$OUT/ringperf.err"
echo "ringperf: $(grep -c . "$TRACE") rows; first request $(first_request "$OUT/ringperf" "$launch") s after launch;" \
    "peak RSS $(awk '/Maximum resident set size/ { printf "%.1f MiB", $6 / 1024 }' "$OUT/ringperf.err");" \
    "wall $(awk -F'): ' '/Elapsed \(wall clock\)/ { print $2 }' "$OUT/ringperf.err")"
grep -h "Dispatch Lag" "$OUT/ringperf.log" | sed 's/^/  /'
grep -h "streamed trace" "$OUT/ringperf.err" | sed 's/^ringperf: /  /' || true
if [ "${AIPERF:-0}" = 1 ]; then
    launch=$(date +%s%N)
    /usr/bin/time -v "$AIPERF_BIN" profile -m mock-model --url "http://127.0.0.1:$PORT" \
        --endpoint-type chat --streaming --input-file "$TRACE" --custom-dataset-type mooncake_trace \
        --fixed-schedule --tokenizer builtin --ui-type none --artifact-dir "$OUT/aiperf" "$@" \
        > "$OUT/aiperf.log" 2> "$OUT/aiperf.err"
    echo "AIPerf: first request $(first_request "$OUT/aiperf" "$launch") s after launch;" \
        "peak RSS $(awk '/Maximum resident set size/ { printf "%.1f MiB", $6 / 1024 }' "$OUT/aiperf.err") (its main process);" \
        "wall $(awk -F'): ' '/Elapsed \(wall clock\)/ { print $2 }' "$OUT/aiperf.err")"
fi
echo "artifacts: $OUT"
