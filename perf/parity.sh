#!/usr/bin/env bash
# Artifact parity with AIPerf 0.13 (perf/parity.py): installs AIPerf 0.13.0 as perf/run.sh does,
# builds ringperf unless RINGPERF_BIN is set, runs both against one mock workload and prints the
# keys each writes that the other does not. Arguments go to perf/parity.py (e.g. --out DIR,
# --json FILE). Exit status 1 when AIPerf's profile_export_aiperf.json has a key ringperf's lacks.
#
# Not part of CI (it installs AIPerf); all traffic goes to 127.0.0.1.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
tools="${PERF_TOOLS_DIR:-$here/.tools}"
mkdir -p "$tools"

log() { printf '[parity] %s\n' "$*" >&2; }

if [[ -z "${RINGPERF_BIN:-}" ]]; then
    log "building ringperf (release)"
    (cd "$repo" && cargo build --release --quiet)
    RINGPERF_BIN="${CARGO_TARGET_DIR:-$repo/target}/release/ringperf"
fi
[[ -x "$RINGPERF_BIN" ]] || { log "no ringperf binary at $RINGPERF_BIN"; exit 2; }
export RINGPERF_BIN

source "$here/aiperf-env.sh"
[[ -n "${AIPERF_BIN:-}" ]] || { log "AIPerf 0.13 is not available; nothing to compare"; exit 2; }

exec python3 "$here/parity.py" "$@"
