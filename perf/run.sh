#!/usr/bin/env bash
# End-to-end performance harness: ringperf against wrk, oha and AIPerf 0.13 on the same mock
# server, mock pinned to one core and the client under test pinned to another.
#
#   perf/run.sh [--quick] [SCENARIO ...]
#
# Scenarios: nonstream stream overhead openloop manyconn startup placement vlm (default: all).
# Environment:
#   RINGPERF_BIN    ringperf binary to test (default: build with `cargo build --release`)
#   PERF_TOOLS_DIR  where peers are installed (default: perf/.tools)
#   PERF_OUT        results directory (default: perf/results/<UTC timestamp>)
#   MOCK_CORE, CLIENT_CORE   cores for the mock and the client (default 0 and 1)
#   PERF_PORT       loopback port of the mock (default 18480)
#   PLACEMENT_CORES, PLACEMENT_MOCK_CORE   `placement` only: the client's cores (default every
#                   core) and the mock's (default the highest client core)
#   SKIP_INSTALL=1  do not install missing peers (use what is already there)
#
# All traffic goes to 127.0.0.1. Every client run has a wall-clock bound (see harness.py).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
tools="${PERF_TOOLS_DIR:-$here/.tools}"
mkdir -p "$tools"

log() { printf '[perf] %s\n' "$*" >&2; }

# --- ringperf itself ------------------------------------------------------------------------
if [[ -z "${RINGPERF_BIN:-}" ]]; then
    log "building ringperf (release)"
    (cd "$repo" && cargo build --release --quiet)
    target="${CARGO_TARGET_DIR:-$repo/target}"
    RINGPERF_BIN="$target/release/ringperf"
fi
[[ -x "$RINGPERF_BIN" ]] || { log "no ringperf binary at $RINGPERF_BIN"; exit 2; }
export RINGPERF_BIN

# --- peers (each skipped with a message if it cannot be installed) -------------------------
install_wrk() {
    command -v wrk >/dev/null 2>&1 && return 0
    [[ "${SKIP_INSTALL:-0}" == 1 ]] && return 1
    log "installing wrk (apt-get)"
    if command -v apt-get >/dev/null 2>&1; then
        timeout 600 apt-get install -y wrk >"$tools/wrk-install.log" 2>&1 && return 0
    fi
    return 1
}
if install_wrk; then export WRK_BIN="$(command -v wrk)"; else
    log "SKIP wrk: not installed and apt-get install -y wrk failed (see $tools/wrk-install.log)"
fi

install_oha() {
    [[ -x "$tools/oha/bin/oha" ]] && return 0
    command -v oha >/dev/null 2>&1 && return 0
    [[ "${SKIP_INSTALL:-0}" == 1 ]] && return 1
    log "installing oha (cargo install oha --locked; this takes several minutes on 2 cores)"
    CARGO_TARGET_DIR="$tools/oha-target" timeout 2400 \
        cargo install oha --locked --root "$tools/oha" >"$tools/oha-install.log" 2>&1
}
if install_oha; then
    if [[ -x "$tools/oha/bin/oha" ]]; then export OHA_BIN="$tools/oha/bin/oha"; else export OHA_BIN="$(command -v oha)"; fi
else
    log "SKIP oha: cargo install oha --locked did not build here (see $tools/oha-install.log)"
fi

# AIPerf 0.13.0 and its offline tokenizer cache.
source "$here/aiperf-env.sh"

# Many-connection scenarios need descriptors for both ends.
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)" || true

export PERF_OUT="${PERF_OUT:-$here/results/$(date -u +%Y%m%dT%H%M%SZ)}"
mkdir -p "$PERF_OUT"
python3 "$here/harness.py" "$@" >/dev/null
python3 "$here/report.py" "$PERF_OUT/results.json" | tee "$PERF_OUT/summary.md"
log "tables: $PERF_OUT/summary.md, raw figures: $PERF_OUT/results.json"
