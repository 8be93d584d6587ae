#!/usr/bin/env bash
# Runs one ringperf benchmark as N shards, N local processes against one server, then merges
# their artifacts into one report. The same split as the Kubernetes Job in deploy/k8s/, on one
# machine: docs/scale-out.md.
#
#   deploy/local-shards.sh N [ringperf profile args...]
#   deploy/local-shards.sh 2 --streaming --request-count 400 --request-rate 200
#
# - Without a --url among the args it starts `ringperf mock-server` on a free loopback port for
#   the run (and --model mock-model unless a model is given), and stops it afterwards.
# - Every shard gets the same args plus --shard-index I --shard-count N --start-at T, T being an
#   instant START_LEAD_MS (default 2000) ms ahead, in epoch ns.
# - Artifacts: <base>/shard-<i>/ per shard (its console output in <base>/shard-<i>.log), then
#   `ringperf merge <base> --artifact-dir <base>/merged`. <base> is the --artifact-dir of the
#   args, else artifacts/local-shards-<timestamp>; it must be new or empty.
#
# Environment:
#   RINGPERF_BIN    the ringperf binary (default: target/release/ringperf under CARGO_TARGET_DIR
#                   or the repository, built with `cargo build --release` if missing)
#   START_LEAD_MS   how far ahead of now the shards start, in ms (default 2000)
#   MOCK_ARGS       extra mock-server flags when the script starts it, e.g. "--mock-itl-ms 1"
#   CORES_PER_SHARD C: run shard i on cores i*C .. i*C+C-1 only (taskset). Each shard pins one
#                   worker per core of its CPU mask starting from the mask's first core, so
#                   without disjoint masks every shard pins to the same first cores of the machine
#

# Exit status: 0 when every shard and the merge succeeded; the merge's status when it did not
# succeed (4: a shard failed or is missing; 2: it refused the shards); 1 when a shard failed and
# the merge succeeded; a failed shard's status when none of them got as far as writing shard.json
# (nothing to merge); 2 for a usage error; 130 when interrupted.
# Every process the script starts is waited for; on an interrupt or an error the shards and the
# mock server get one SIGTERM (ringperf then writes its artifacts) and are waited for too; a
# second Ctrl-C passes a second SIGTERM on, which makes ringperf quit at once.
set -euo pipefail

readonly prog=local-shards

die() {
  local code=$1
  shift
  echo "$prog: $*" >&2
  exit "$code"
}

usage() {
  echo "usage: deploy/local-shards.sh N [ringperf profile args...]" >&2
  exit 2
}

(($# >= 1)) || usage
shards=$1
shift
[[ $shards =~ ^[1-9][0-9]{0,5}$ ]] || die 2 "N must be a positive integer, not '$shards'"

lead_ms=${START_LEAD_MS:-2000}
[[ $lead_ms =~ ^[0-9]{1,7}$ ]] || die 2 "START_LEAD_MS must be a whole number of ms, not '$lead_ms'"

cores=${CORES_PER_SHARD:-}
if [[ -n $cores ]]; then
  [[ $cores =~ ^[1-9][0-9]{0,3}$ ]] || die 2 "CORES_PER_SHARD must be a positive integer, not '$cores'"
  command -v taskset >/dev/null || die 2 "CORES_PER_SHARD needs taskset (util-linux)"
  online=$(nproc --all)
  ((shards * cores <= online)) || die 2 "$shards shards of $cores cores need $((shards * cores)) cores; this machine has $online"
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The args pass through unchanged but for the artifact directory, which becomes <base>. The flags
# the script sets itself, and --mock (one mock per shard would be N servers), are refused.
profile_args=()
base=""
have_url=0
have_model=0
while (($#)); do
  case $1 in
    --artifact-dir | --output-artifact-dir)
      (($# >= 2)) || die 2 "$1 needs a value"
      base=$2
      shift 2
      continue
      ;;
    --artifact-dir=* | --output-artifact-dir=*)
      base=${1#*=}
      shift
      continue
      ;;
    -u | --url | --url=* | -u?*) have_url=1 ;;
    -m | --model | --model-names | --model=* | --model-names=* | -m?*) have_model=1 ;;
    --mock)
      die 2 "--mock would start one mock server per shard; leave out --url instead and the script starts one for all shards"
      ;;
    --shard-index | --shard-index=* | --shard-count | --shard-count=* | --start-at | --start-at=*)
      die 2 "$1 is set by the script for each shard; give only the run's own flags"
      ;;
  esac
  profile_args+=("$1")
  shift
done

if [[ -z $base ]]; then
  base=artifacts/local-shards-$(date +%Y%m%d-%H%M%S)
fi
if [[ -d $base ]] && [[ -n $(ls -A "$base") ]]; then
  die 2 "$base is not empty: a leftover shard of another run would make the merge refuse; give a new --artifact-dir"
fi
mkdir -p "$base"

if [[ -n ${RINGPERF_BIN:-} ]]; then
  bin=$RINGPERF_BIN
else
  target=${CARGO_TARGET_DIR:-$root/target}
  [[ $target == /* ]] || target=$root/$target
  bin=$target/release/ringperf
  if [[ ! -x $bin ]]; then
    echo "$prog: $bin is missing; building it with cargo build --release" >&2
    (cd "$root" && cargo build --release --bin ringperf) >&2
  fi
fi
[[ -x $bin ]] || die 2 "no ringperf binary at $bin (set RINGPERF_BIN)"

# Children still running; each is removed once waited for, so the traps signal only processes
# of ours (a reaped child's pid could belong to someone else by then).
shard_pids=()
mock_pid=""
sig_pid=""

# The traps below run inline code only, and these functions use no `local`: bash 5.2 loses track
# of function scopes when a trap calls a function while the EXIT trap's function is in `wait`.

# Waits for child $1 to end, also through signals that interrupt `wait` (a status over 128 while
# the child is still there); 127 means it is no child of ours any more.
reap() {
  reap_rc=0
  wait "$1" 2>/dev/null || reap_rc=$?
  while ((reap_rc > 128)) && kill -0 "$1" 2>/dev/null; do
    reap_rc=0
    wait "$1" 2>/dev/null || reap_rc=$?
  done
}

# On exit, whatever the reason: one SIGTERM to each shard still running (ringperf stops issuing,
# gives the requests in flight their grace period and writes its artifacts), then the mock. A
# second Ctrl-C meanwhile passes a second SIGTERM on, which makes ringperf quit at once.
stop_children() {
  trap 'echo "$prog: second signal: the shards quit now" >&2
    for sig_pid in "${shard_pids[@]}"; do
      [[ -z $sig_pid ]] || kill -TERM "$sig_pid" 2>/dev/null || true
    done' INT TERM
  for stop_pid in "${shard_pids[@]}"; do
    if [[ -n $stop_pid ]]; then kill -TERM "$stop_pid" 2>/dev/null || true; fi
  done
  for stop_pid in "${shard_pids[@]}"; do
    if [[ -n $stop_pid ]]; then reap "$stop_pid"; fi
  done
  shard_pids=()
  stop_mock
}

stop_mock() {
  if [[ -n $mock_pid ]]; then
    kill -TERM "$mock_pid" 2>/dev/null || true
    reap "$mock_pid"
    mock_pid=""
  fi
}

trap stop_children EXIT
trap 'echo "$prog: interrupted; stopping the shards (\`$bin merge $base\` merges what they wrote)" >&2
  exit 130' INT TERM

# Every child in a process group of its own: a Ctrl-C on the terminal (or a signal to this
# script's group) reaches this script alone, which passes one SIGTERM on to each shard. Without
# it a shard would get the terminal's SIGINT and then the script's SIGTERM, and take the second
# as "quit now", before writing its artifacts.
set -m

if ((!have_url)); then
  mock_log=$base/mock-server.log
  mock_args=()
  read -r -a mock_args <<<"${MOCK_ARGS:-}"
  # The log exists before the server starts: the background job opens it only once it runs,
  # and the first read below must not fail (set -e) on a file not yet made.
  : >"$mock_log"
  "$bin" mock-server --bind 127.0.0.1:0 "${mock_args[@]}" </dev/null >"$mock_log" 2>&1 &
  mock_pid=$!
  url=""
  # Port 0 lets the kernel pick a free port; the server prints the address it got.
  for _ in $(seq 100); do
    url=$(sed -n 's/^ringperf mock server listening on //p' "$mock_log")
    [[ -n $url ]] && break
    kill -0 "$mock_pid" 2>/dev/null || {
      cat "$mock_log" >&2
      die 2 "the mock server exited before listening"
    }
    sleep 0.1
  done
  [[ -n $url ]] || die 2 "the mock server did not listen within 10 s (log: $mock_log)"
  echo "$prog: mock server on $url (pid $mock_pid)" >&2
  profile_args=(--url "$url" "${profile_args[@]}")
  ((have_model)) || profile_args+=(--model mock-model)
fi

now_ns=$(date +%s%N)
[[ $now_ns =~ ^[0-9]+$ ]] || die 2 "date +%s%N gave '$now_ns'; GNU date is needed for epoch ns"
start_ns=$((now_ns + lead_ms * 1000000))

echo "$prog: $shards shard(s) start at $start_ns (epoch ns); artifacts in $base" >&2
for ((i = 0; i < shards; i++)); do
  pin=()
  [[ -z $cores ]] || pin=(taskset -c "$((i * cores))-$((i * cores + cores - 1))")
  # taskset execs the binary: the pid is the shard's own.
  "${pin[@]}" "$bin" profile "${profile_args[@]}" \
    --shard-index "$i" --shard-count "$shards" --start-at "$start_ns" \
    --artifact-dir "$base/shard-$i" </dev/null >"$base/shard-$i.log" 2>&1 &
  shard_pids[i]=$!
done

failed=0
first_rc=0
for ((i = 0; i < shards; i++)); do
  rc=0
  wait "${shard_pids[i]}" || rc=$?
  shard_pids[i]=""
  if ((rc != 0)); then
    failed=$((failed + 1))
    ((first_rc != 0)) || first_rc=$rc
    {
      echo "$prog: shard $i exited with status $rc; the end of $base/shard-$i.log:"
      tail -n 20 "$base/shard-$i.log" | sed 's/^/  /'
    } >&2
  fi
done
shard_pids=()
stop_mock

written=0
for ((i = 0; i < shards; i++)); do
  [[ -f $base/shard-$i/shard.json ]] && written=$((written + 1))
done
if ((written == 0)); then
  die "$((first_rc != 0 ? first_rc : 1))" "no shard wrote shard.json: nothing to merge"
fi

merge_rc=0
"$bin" merge "$base" --artifact-dir "$base/merged" || merge_rc=$?
if ((merge_rc != 0)); then
  echo "$prog: ringperf merge exited with status $merge_rc" >&2
  exit "$merge_rc"
fi
if ((failed > 0)); then
  echo "$prog: $failed of $shards shard(s) failed; merged what they recorded into $base/merged" >&2
  exit 1
fi
echo "$prog: merged $shards shard(s) into $base/merged" >&2
