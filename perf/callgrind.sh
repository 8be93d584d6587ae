#!/usr/bin/env bash
# Instructions per request of each ringperf thread, counted by valgrind's callgrind: a
# repeatable figure (the same binary and input give the same count within ~1 %, whatever else
# the machine runs), for comparing two builds of one per-request path.
#
#   perf/callgrind.sh BIN [BIN ...]     # env: N (requests, 5000), C (concurrency, 16), PORT
#
# Each binary serves its own mock (core 0) and runs a non-streaming closed loop of N 1-token
# chat requests under callgrind with the epoll driver (valgrind does not run io_uring), one
# worker; the table is instructions per request for the worker and the aggregator threads
# (user space only: the kernel's TCP work is not counted).
set -euo pipefail
N="${N:-5000}"; C="${C:-16}"; PORT="${PORT:-18613}"
command -v valgrind >/dev/null || { echo "valgrind is needed (apt-get install -y valgrind)" >&2; exit 2; }
printf '%-50s %14s %14s\n' binary "worker / req" "aggregator / req"
for bin in "$@"; do
    out="$(mktemp -d)"
    taskset -c 0 "$bin" mock-server --bind "127.0.0.1:$PORT" --pin-cores 0 --mock-ttft-ms 0 \
        --mock-itl-ms 0 --mock-output-tokens 1 >"$out/mock.log" 2>&1 &
    mock=$!
    for _ in $(seq 50); do (echo >"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.1; done
    timeout 900 valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$out/cg" \
        "$bin" profile -m mock-model --url "http://127.0.0.1:$PORT" --endpoint-type chat \
        --tokenizer builtin --isl 8 --osl 1 --workers-max 1 --ui none --random-seed 1 \
        --no-server-metrics --num-dataset-entries 100 --concurrency "$C" --request-count "$N" \
        --io-driver legacy --output-artifact-dir "$out/art" >"$out/client.log" 2>&1 ||
        { kill "$mock"; echo "client failed: $out/client.log" >&2; exit 1; }
    kill "$mock"; wait "$mock" 2>/dev/null || true
    # Thread files are named after thread creation order; the names come from the threads'
    # own `thread_name` in each file (callgrind records the thread's command name).
    worker=0; aggregator=0
    for f in "$out"/cg-*; do
        total="$(grep -m1 '^summary:' "$f" | awk '{print $2}')"
        if grep -q 'record/ring.rs\|run/collect.rs' "$f" && grep -q 'encode_line_in' "$f"; then
            aggregator="$total"
        elif grep -q 'Exchange::read_response' "$f"; then
            worker="$total"
        fi
    done
    printf '%-50s %14.0f %14.0f\n' "$bin" "$(echo "$worker / $N" | bc -l)" "$(echo "$aggregator / $N" | bc -l)"
    rm -rf "$out"
done
