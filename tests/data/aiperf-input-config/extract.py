#!/usr/bin/env python3
"""Fixtures of AIPerf 0.13's `input_config`, for tests/it/input_config.rs.

Each fixture `<name>.json` is `{"argv": [...], "input_config": {...}}`: the command line AIPerf
ran (its own `run_info.cli_command`, split as a shell would) and the `input_config` subtree of
the `profile_export_aiperf.json` (or `<prefix>.json`) it wrote. Nothing else is kept.

    # extract from artifact directories AIPerf already wrote
    extract.py NAME=DIR [NAME=DIR ...]
    # run AIPerf for every command of COMMANDS against a server at URL, then extract
    extract.py --run URL --aiperf /tmp/aiperf-venv/bin/aiperf --out-root /tmp/ic

Run from the repository root: the dataset paths in COMMANDS are relative to it, as the test
runs the same command lines from there. Standard library only; traffic goes to URL only.
"""

import argparse
import json
import os
import pathlib
import shlex
import subprocess
import sys

HERE = pathlib.Path(__file__).resolve().parent

# name -> flags after `--url URL`; every command also gets the COMMON flags and its own
# `--artifact-dir OUT_ROOT/NAME`.
COMMON = "--model mock-model --endpoint-type chat --tokenizer builtin"
COMMANDS = {
    "closed_raw": "--ui-type None --streaming --request-count 8 --concurrency 2 --isl 16 --osl 4 "
    "--random-seed 5 --no-server-metrics --no-gpu-telemetry --export-level raw "
    "--slice-duration 0.5",
    "rate_warmup_summary": "--ui-type none --request-rate 40 --arrival-pattern constant "
    "--request-count 6 --warmup-request-count 2 --warmup-concurrency 1 --concurrency 3 "
    "--no-gpu-telemetry --export-level summary",
    "duration_default_grace": "--ui-type none --benchmark-duration 1 --no-server-metrics",
    "gamma_warmup_duration": "--ui-type none --request-rate 30 --arrival-smoothness 2 "
    "--request-count 5 --warmup-duration 0.5 --warmup-grace-period 1 --num-dataset-entries 3 "
    "--server-metrics-formats json csv --no-gpu-telemetry",
    "file_dataset": "--ui-type none --input-file tests/data/datasets/single_turn.jsonl "
    "--custom-dataset-type single_turn --request-count 4 --no-server-metrics "
    "--export-level records",
    "no_ui_flag_workers": "--request-count 3 --workers-max 2 --log-level DEBUG "
    "--no-server-metrics --osl 3 --osl-stddev 1",
    "endpoint_options": "--ui-type none --request-count 3 --api-key sk-SECRET "
    "--extra-inputs max_tokens:5 --extra-inputs temperature:0.5 --header X-Test:abc "
    "--request-timeout-seconds 100 --use-legacy-max-tokens --use-server-token-count "
    "--custom-endpoint /v1/chat/completions --no-server-metrics",
    "http_trace": "--ui-type none --streaming --request-count 4 --export-http-trace "
    "--show-trace-timing --no-server-metrics --no-gpu-telemetry",
}


def export_json(d: pathlib.Path) -> pathlib.Path:
    """The main JSON export of an artifact directory (any prefix)."""
    plain = d / "profile_export_aiperf.json"
    if plain.exists():
        return plain
    for p in sorted(d.glob("*.json")):
        if p.name in ("inputs.json", "phase_manifest.json") or "_" in p.stem:
            continue
        doc = json.loads(p.read_text())
        if "input_config" in doc and "run_info" in doc:
            return p
    sys.exit(f"{d}: no JSON export with input_config")


def extract(name: str, d: pathlib.Path) -> None:
    doc = json.loads(export_json(d).read_text())
    argv = shlex.split(doc["run_info"]["cli_command"])
    out = {"argv": argv, "input_config": doc["input_config"]}
    (HERE / f"{name}.json").write_text(json.dumps(out, indent=2) + "\n")
    print(f"{name}: {' '.join(argv)}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pairs", nargs="*", help="NAME=DIR")
    ap.add_argument("--run", metavar="URL")
    ap.add_argument("--aiperf", default="aiperf")
    ap.add_argument("--out-root", default="/tmp/aiperf-input-config")
    ap.add_argument("--only", nargs="*")
    a = ap.parse_args()
    if a.run:
        env = dict(os.environ, HF_HUB_OFFLINE="1")
        for name, flags in COMMANDS.items():
            if a.only and name not in a.only:
                continue
            out = pathlib.Path(a.out_root) / name
            cmd = [a.aiperf, "profile", *shlex.split(COMMON), "--url", a.run,
                   *shlex.split(flags), "--artifact-dir", str(out)]
            print("+", shlex.join(cmd), flush=True)
            subprocess.run(cmd, env=env, check=True, timeout=300,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            extract(name, out)
    for pair in a.pairs:
        name, _, d = pair.partition("=")
        extract(name, pathlib.Path(d))


if __name__ == "__main__":
    main()
