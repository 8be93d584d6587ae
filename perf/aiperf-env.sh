# Sourced by perf/run.sh and perf/parity.sh (needs `$tools` and a `log` function): installs
# AIPerf 0.13.0 into "$tools/venv" and seeds tiktoken's cache so it never leaves the machine.
# On success AIPERF_BIN is exported; otherwise a SKIP line says why and AIPERF_BIN stays unset.

install_aiperf() {
    [[ -x "$tools/venv/bin/aiperf" ]] && return 0
    [[ "${SKIP_INSTALL:-0}" == 1 ]] && return 1
    log "installing AIPerf 0.13.0 into $tools/venv"
    python3 -m venv "$tools/venv" >"$tools/aiperf-install.log" 2>&1 &&
        timeout 1200 "$tools/venv/bin/pip" install aiperf==0.13.0 >>"$tools/aiperf-install.log" 2>&1
}
# AIPerf's `builtin` tokenizer is tiktoken o200k_base, which tiktoken fetches from the network
# unless its cache holds the file. Seed the cache from the copy tiktoken-rs ships (a
# dev-dependency: in the registry once the tests were built), else from the gzipped copy
# bpe-openai ships when the registry still holds it (ringperf's builtin tokenizer before #41;
# the same file, sha256 446a9538…), so AIPerf never leaves the machine; without either, AIPerf
# is skipped.
seed_tiktoken() {
    local src gz cache key reg
    reg="${CARGO_HOME:-$HOME/.cargo}/registry/src"
    src="$(ls "$reg"/*/tiktoken-rs-*/assets/o200k_base.tiktoken 2>/dev/null | head -n1)"
    gz="$(ls "$reg"/*/bpe-openai-*/data/o200k_base.tiktoken.gz 2>/dev/null | head -n1)"
    [[ -n "$src" || -n "$gz" ]] || return 1
    cache="$tools/tiktoken-cache"
    mkdir -p "$cache"
    key="$(printf '%s' 'https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken' | sha1sum | cut -d' ' -f1)"
    if [[ -n "$src" ]]; then cp -f "$src" "$cache/$key"; else gzip -dc "$gz" >"$cache/$key"; fi
    export TIKTOKEN_CACHE_DIR="$cache"
}
if install_aiperf; then
    if seed_tiktoken; then export AIPERF_BIN="$tools/venv/bin/aiperf"; else
        log "SKIP aiperf: no local o200k_base.tiktoken to seed tiktoken's cache (it would download it)"
    fi
else
    log "SKIP aiperf: pip install aiperf==0.13.0 failed (see $tools/aiperf-install.log)"
fi
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
