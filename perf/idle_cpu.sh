#!/usr/bin/env bash
# Idle CPU of a trace replay with nothing due: a 3-row trace at 0, 15 and 30 s, replayed against
# a separate `ringperf mock-server` process (so the mock's CPU is not counted). Samples the
# client's /proc/<pid>/stat (utime + stime) and every thread's /proc/<pid>/task/*/stat between
# WINDOW_FROM and WINDOW_TO seconds after the client starts, and prints the CPU used in that
# window: total and per thread name. The requests at 15 s cost a few ms of it.
#
#   perf/idle_cpu.sh [RINGPERF_BIN]        (default: target/release/ringperf)
#
# Variables: PORT (18490), WINDOW_FROM (5), WINDOW_TO (35), OUT (a temporary directory),
# SERVER_METRICS (0: `--no-server-metrics`; 1: the default scrape of the mock's /metrics, every
# AIPERF_SERVER_METRICS_COLLECTION_INTERVAL as AIPerf does, which is real work while idle).
set -euo pipefail
BIN=${1:-${RINGPERF_BIN:-target/release/ringperf}}
PORT=${PORT:-18490}
FROM=${WINDOW_FROM:-5}
TO=${WINDOW_TO:-35}
OUT=${OUT:-$(mktemp -d)}
TICK=$(getconf CLK_TCK)
METRICS_FLAG=(--no-server-metrics)
[ "${SERVER_METRICS:-0}" = 1 ] && METRICS_FLAG=()
cat > "$OUT/idle3.jsonl" <<'ROWS'
{"timestamp": 0, "input_length": 100, "output_length": 5}
{"timestamp": 15000, "input_length": 100, "output_length": 5}
{"timestamp": 40000, "input_length": 100, "output_length": 5}
ROWS
"$BIN" mock-server --bind "127.0.0.1:$PORT" > "$OUT/mock.log" 2>&1 &
MOCK=$!
trap 'kill $MOCK 2>/dev/null || true; [ -n "${CLIENT:-}" ] && kill $CLIENT 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
done
"$BIN" profile -m mock-model --url "http://127.0.0.1:$PORT" --endpoint-type chat --streaming \
    --input-file "$OUT/idle3.jsonl" --custom-dataset-type mooncake_trace --fixed-schedule \
    "${METRICS_FLAG[@]}" --ui none --artifact-dir "$OUT/artifacts" > "$OUT/client.log" 2>&1 &
CLIENT=$!
# Per-thread (utime + stime) in clock ticks, "name ticks" lines (fields 14 and 15 of stat; the
# name is field 2, in parentheses, and has no spaces in ringperf's threads).
threads() {
    for d in /proc/"$CLIENT"/task/*; do
        awk -v tid="${d##*/}" '{ print $2 "/" tid, $14 + $15 }' "$d/stat" 2>/dev/null || true
    done | sort
}
total() { awk '{ print $14 + $15 }' /proc/"$CLIENT"/stat; }
sleep "$FROM"
t0=$(total); threads > "$OUT/threads0"
sleep $((TO - FROM))
t1=$(total); threads > "$OUT/threads1"
used=$((t1 - t0))
echo "window ${FROM}-${TO} s: client CPU $used ticks ($(awk -v u="$used" -v t="$TICK" -v w=$((TO - FROM)) \
    'BEGIN { printf "%.3f CPU-s, %.3f %% of a core", u / t, 100 * u / t / w }'))"
echo "per thread (ticks in the window):"
join -a2 -e0 -o 0,1.2,2.2 "$OUT/threads0" "$OUT/threads1" | awk '{ printf "  %-24s %d\n", $1, $3 - $2 }'
wait $CLIENT || echo "client exited with $?"
