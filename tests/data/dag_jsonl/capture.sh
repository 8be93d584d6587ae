#!/bin/bash
# Runs AIPerf 0.13 on this folder's DAG files against ringperf's mock and reduces each run with
# reduce.py into expected.json (README.md). Usage: capture.sh RINGPERF_BIN AIPERF_BIN TIKTOKEN_CACHE
set -u
here=$(cd "$(dirname "$0")" && pwd)
rp=$1; aiperf=$2; cache=$3
work=$(mktemp -d)
run() { # name file aiperf-flags...
    local name=$1 file=$2; shift 2
    local port=$((18700 + RANDOM % 100)) out=$work/$name
    mkdir -p "$out"
    "$rp" mock-server --bind 127.0.0.1:$port --mock-ttft-ms 5 --mock-itl-ms 1 \
        --truth-log "$out/truth.jsonl" --record-bodies >"$out/mock.log" 2>&1 &
    local mock=$!
    sleep 0.5
    printf '%s\n' "$@" >"$out/flags"
    TIKTOKEN_CACHE_DIR=$cache HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 timeout 300 "$aiperf" profile \
        -m mock-model -u 127.0.0.1:$port --endpoint-type chat --streaming --tokenizer builtin \
        --random-seed 7 --ui-type none --artifact-dir "$out/art" --input-file "$here/$file" "$@" \
        >"$out/aiperf.log" 2>&1
    echo $? >"$out/rc"
    echo "$file" >"$out/file"
    kill -INT $mock
    wait $mock
}
run spawn_join spawn_join.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential
run fork_join_at fork_join_at.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential
run nested_pre nested_pre.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential
run detected spawn_join.dag.jsonl --dataset-sampling-strategy sequential
run delay_cap fork_join_at.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --inter-turn-delay-cap-seconds 0.02
run warmup spawn_join.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --warmup-request-count 2
run cache_bust fork_join_at.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --cache-bust first_turn_prefix
run template template.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential
run concurrent fork_join_at.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --concurrency 2 --conversation-num 4
for f in "$here"/bad/*.dag.jsonl; do
    run "bad_$(basename "$f" .dag.jsonl)" "bad/$(basename "$f")" --custom-dataset-type dag_jsonl
done
run orchestrator_spine orchestrator_spine.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential
run orchestrator_rounds orchestrator_rounds.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --conversation-num 2
run orchestrator_request_count orchestrator_rounds.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --request-count 4
run orchestrator_fire orchestrator_fire.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --conversation-num 2
run orchestrator_nested orchestrator_nested.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential
run orchestrator_delay_cap orchestrator_rounds.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --conversation-num 1 --inter-turn-delay-cap-seconds 0.025
run orchestrator_concurrent orchestrator_rounds.dag.jsonl --custom-dataset-type dag_jsonl --dataset-sampling-strategy sequential --concurrency 2 --conversation-num 4
python3 "$here/reduce.py" "$work" "$here/expected.json"
echo "runs kept in $work"
