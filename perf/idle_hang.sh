#!/usr/bin/env bash
# Reproduces the aggregator's park that outlives its workers (issue #22, "Idle"): a 2-row trace
# whose rows are 2 s apart, so the aggregator parks on the rings' doorbell between them.
# Usage: perf/idle_hang.sh BIN [RUNS]. Prints each run's exit status and records written; a run
# still alive after 20 s is killed (status 137) and counts as a hang.
set -u
BIN=${1:?usage: perf/idle_hang.sh BIN [RUNS]}
RUNS=${2:-3}
DIR=$(mktemp -d)
printf '%s\n' '{"timestamp":0,"input_length":16,"output_length":4}' \
  '{"timestamp":2000,"input_length":16,"output_length":4}' > "$DIR/trace.jsonl"
hangs=0
for i in $(seq "$RUNS"); do
  timeout -s KILL 20 "$BIN" profile --model mock-model --tokenizer builtin --mock \
    --fixed-schedule --no-server-metrics --input-file "$DIR/trace.jsonl" \
    --custom-dataset-type mooncake_trace --artifact-dir "$DIR/run$i" > "$DIR/run$i.log" 2>&1
  rc=$?
  recs=$(wc -l < "$DIR/run$i/profile_export.jsonl" 2>/dev/null || echo 0)
  echo "run $i: exit $rc, records $recs"
  [ "$rc" -eq 137 ] && hangs=$((hangs + 1))
done
echo "hangs: $hangs of $RUNS (logs in $DIR)"
[ "$hangs" -eq 0 ]
