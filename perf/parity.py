#!/usr/bin/env python3
"""Artifact parity with AIPerf 0.13: the same workload against one mock, key sets compared.

Runs AIPerf 0.13 (AIPERF_BIN) and ringperf (RINGPERF_BIN) one after the other against a fresh
`ringperf mock-server` each, with the same flags, then compares what each wrote:

- the artifact files (relative paths; AIPerf's `logs/` excluded);
- every JSON artifact both wrote, as the set of key paths (`a.b.c`; list elements are `a[].b`);
  metric objects are compared by name and by their statistics' names;
- the JSONL artifacts, as the union of the key paths of their lines;
- the CSV artifacts, as their header rows and first-column labels.

It prints, for each artifact, the keys AIPerf writes that ringperf does not ("missing") and the
keys ringperf writes that AIPerf does not ("extra"). Exit status 1 when a key of
`profile_export_aiperf.json` outside `input_config` is missing, 0 otherwise (the issue's bar:
no metric or section AIPerf writes that ringperf does not). `--json OUT` saves the whole diff.

Values are not compared: the two clients measure the same server but not the same instants.
Standard library only. All traffic goes to 127.0.0.1.
"""

import argparse
import csv
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RINGPERF = os.environ.get("RINGPERF_BIN", "ringperf")
AIPERF = os.environ.get("AIPERF_BIN")
PORT = int(os.environ.get("PARITY_PORT", "18490"))
HOST = "127.0.0.1"

# One workload for both clients: streaming chat with warmup, server metrics, timeslices, the raw
# export and the HTTP trace. Everything AIPerf can write for a text endpoint is switched on.
COMMON = [
    "profile", "-m", "mock-model", "--url", f"http://{HOST}:{PORT}", "--endpoint-type", "chat",
    "--streaming", "--concurrency", "4", "--request-count", "40", "--warmup-request-count", "4",
    "--tokenizer", "builtin", "--isl", "32", "--osl", "16", "--random-seed", "1",
    "--server-metrics", f"http://{HOST}:{PORT}/metrics", "--slice-duration", "1",
    "--export-level", "raw", "--export-http-trace", "--ui-type", "none",
]

# Files that are about the tool's own process, not the benchmark.
IGNORED_PREFIXES = ("logs/",)


def log(msg):
    print(f"[parity] {msg}", file=sys.stderr, flush=True)


class Mock:
    def __init__(self):
        self.cmd = [RINGPERF, "mock-server", "--bind", f"{HOST}:{PORT}",
                    "--mock-ttft-ms", "5", "--mock-itl-ms", "1", "--mock-output-tokens", "16"]
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((HOST, PORT), timeout=0.2).close()
                return self
            except OSError:
                time.sleep(0.05)
        self.proc.kill()
        raise SystemExit(f"mock did not listen on {HOST}:{PORT}")

    def __exit__(self, *exc):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run(binary, outdir, timeout_s=300):
    cmd = [binary] + COMMON + ["--artifact-dir", str(outdir)]
    with Mock():
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s)
    if p.returncode != 0:
        raise SystemExit(f"{Path(binary).name} exited {p.returncode}:\n{p.stderr[-2000:]}")
    return p


def key_paths(value, prefix=""):
    """Every key path of a JSON value; list elements share the path `prefix[]`."""
    out = set()
    if isinstance(value, dict):
        for k, v in value.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            out.add(path)
            out |= key_paths(v, path)
    elif isinstance(value, list):
        for v in value:
            out |= key_paths(v, f"{prefix}[]")
    return out


def artifact_keys(path):
    if path.suffix == ".json":
        return key_paths(json.loads(path.read_text()))
    if path.suffix == ".jsonl":
        keys = set()
        with path.open() as f:
            for line in f:
                if line.strip():
                    keys |= key_paths(json.loads(line))
        return keys
    if path.suffix == ".csv":
        keys = set()
        with path.open(newline="") as f:
            rows = [r for r in csv.reader(f)]
        for r in rows:
            if r and r[0]:
                # `# key: value` comment rows (the server-metrics CSV header) by key only.
                label = r[0].split(":", 1)[0] if r[0].startswith("#") else r[0]
                keys.add(f"row:{label}")
        if rows:
            keys |= {f"column:{c}" for c in rows[0]}
        return keys
    return None


def files(root):
    return sorted(
        str(p.relative_to(root)) for p in root.rglob("*")
        if p.is_file() and not str(p.relative_to(root)).startswith(IGNORED_PREFIXES)
    )


def compare(a_dir, r_dir):
    a_files, r_files = files(a_dir), files(r_dir)
    diff = {"files": {"missing": sorted(set(a_files) - set(r_files)),
                      "extra": sorted(set(r_files) - set(a_files))},
            "artifacts": {}}
    for name in sorted(set(a_files) & set(r_files)):
        a_keys = artifact_keys(a_dir / name)
        if a_keys is None:
            continue
        r_keys = artifact_keys(r_dir / name)
        diff["artifacts"][name] = {"missing": sorted(a_keys - r_keys),
                                   "extra": sorted(r_keys - a_keys),
                                   "common": len(a_keys & r_keys)}
    return diff


def print_diff(diff, limit):
    def show(title, items):
        print(f"  {title} ({len(items)})")
        for k in items[:limit]:
            print(f"    {k}")
        if len(items) > limit:
            print(f"    … {len(items) - limit} more")

    print("files")
    show("AIPerf writes, ringperf does not", diff["files"]["missing"])
    show("ringperf writes, AIPerf does not", diff["files"]["extra"])
    for name, d in diff["artifacts"].items():
        print(f"{name}: {d['common']} keys in common")
        show("missing in ringperf", d["missing"])
        show("extra in ringperf", d["extra"])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="keep both artifact directories here (default: a temp dir)")
    ap.add_argument("--json", help="write the whole diff to this file")
    ap.add_argument("--limit", type=int, default=40, help="keys printed per list")
    ap.add_argument("--aiperf-dir", help="compare this earlier AIPerf run instead of running it")
    ap.add_argument("--ringperf-dir", help="compare this earlier ringperf run instead of running it")
    args = ap.parse_args()
    out = Path(args.out) if args.out else Path(tempfile.mkdtemp(prefix="ringperf-parity-"))
    a_dir = Path(args.aiperf_dir) if args.aiperf_dir else out / "aiperf"
    r_dir = Path(args.ringperf_dir) if args.ringperf_dir else out / "ringperf"
    if not args.aiperf_dir:
        if not AIPERF:
            raise SystemExit("AIPERF_BIN is not set (perf/parity.sh installs AIPerf 0.13 and sets it)")
        log(f"AIPerf 0.13 -> {a_dir}")
        run(AIPERF, a_dir)
    if not args.ringperf_dir:
        log(f"ringperf -> {r_dir}")
        run(RINGPERF, r_dir)
    diff = compare(a_dir, r_dir)
    print_diff(diff, args.limit)
    if args.json:
        Path(args.json).write_text(json.dumps(diff, indent=2))
    main_json = diff["artifacts"].get("profile_export_aiperf.json")
    if main_json is None:
        log("FAIL: profile_export_aiperf.json missing from one side")
        return 1
    gaps = [k for k in main_json["missing"] if not k.startswith("input_config")]
    if gaps:
        log(f"FAIL: {len(gaps)} key(s) of AIPerf's profile_export_aiperf.json missing in ringperf's")
        return 1
    log("OK: every key of AIPerf's profile_export_aiperf.json outside input_config is in ringperf's")
    return 0


if __name__ == "__main__":
    sys.exit(main())
