#!/bin/bash
# Runs `aiperf profile` (AIPerf 0.13.0) once per case against ringperf's mock, keeping AIPerf's
# dataset mmap cache in runs/<case>/cache; stops the run once the cache manifest is written.
# Usage: run_cases.sh PORT CASE...   (cases defined below)
set -u
PORT=$1; shift
D="$(cd "$(dirname "$0")/.." && pwd)"
OUT=${OUT:-/tmp/gt-barriers/runs}
export TIKTOKEN_CACHE_DIR=${TIKTOKEN_CACHE_DIR:?seed it as perf/aiperf-env.sh does} HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
declare -A FILE FLAGS NS TYPE
FILE[one_subagent]=traces/one_subagent.json
FILE[terminal_subagent]=traces/terminal_subagent.json
FILE[multi_model]=traces/multi_model.json
FILE[weka_subagent_0001]=traces/weka_subagent_0001.json
FILE[finite_traces]=finite; NS[finite_traces]=5
FILE[kvct_0291]=traces/kvct_trace_0291.json
FILE[kvct_0403]=traces/kvct_trace_0403.json
FILE[kvct_0489]=traces/kvct_trace_0489.json
FILE[kvct_0527]=traces/kvct_trace_0527.json
FILE[kvct_0613]=traces/kvct_trace_0613.json
FILE[tracelab]=tracelab/round_trace.jsonl; TYPE[tracelab]=tracelab
FILE[tracelab_ns2]=tracelab/round_trace.jsonl; TYPE[tracelab_ns2]=tracelab; NS[tracelab_ns2]=2
FILE[finite_traces_ns1]=finite
FILE[one_subagent_idlegap1]=traces/one_subagent.json; FLAGS[one_subagent_idlegap1]="--trace-idle-gap-cap-seconds 1"
FILE[kvct_0291_idlegap5]=traces/kvct_trace_0291.json; FLAGS[kvct_0291_idlegap5]="--trace-idle-gap-cap-seconds 5"
FILE[kvct_0291_ignore]=traces/kvct_trace_0291.json; FLAGS[kvct_0291_ignore]="--ignore-trace-delays"
for c in "$@"; do
  dir=$OUT/$c; rm -rf "$dir"; mkdir -p "$dir/cache"
  cmd=(${AIPERF:-aiperf} profile --url http://127.0.0.1:$PORT --tokenizer builtin --ui-type none
       --no-server-metrics --no-gpu-telemetry --artifact-dir "$dir/artifacts"
       --custom-dataset-type "${TYPE[$c]:-weka_trace}" --input-file "$D/${FILE[$c]}" --streaming
       --endpoint-type chat -m mock-model --concurrency 1 --num-sessions "${NS[$c]:-1}" ${FLAGS[$c]:-})
  printf '%q ' "${cmd[@]}" >"$dir/command.txt"
  AIPERF_DATASET_MMAP_CACHE_DIR="$dir/cache" setsid nice -n 10 "${cmd[@]}" >"$dir/stdout.log" 2>"$dir/stderr.log" &
  pid=$!
  start=$(date +%s); status=timeout
  while (( $(date +%s) - start < 400 )); do
    if ls "$dir"/cache/*/manifest.json >/dev/null 2>&1; then status=manifest; break; fi
    if ! kill -0 $pid 2>/dev/null; then status=exited; break; fi
    sleep 1
  done
  if kill -0 $pid 2>/dev/null; then
    sleep 2; kill -INT -- -$pid 2>/dev/null; sleep 8
    kill -0 $pid 2>/dev/null && kill -KILL -- -$pid 2>/dev/null
  fi
  wait $pid 2>/dev/null
  echo "$c: $status after $(( $(date +%s) - start ))s; manifest: $(ls "$dir"/cache/*/manifest.json 2>/dev/null)"
done
