#!/usr/bin/env python3
"""Two ringperf builds, alternated, on the same non-streaming closed loop: the paired medians
of client CPU per request (total from getrusage, worker and aggregator from the summary JSON's
`ringperf.threads`). One run per binary does not resolve a 10 % change on a shared 2-core VM;
alternating the two and taking medians does.

    perf/ab_nonstream.py BEFORE AFTER [--pairs 5] [--requests 100000] [--conc 16 64 256]

Mock on core 0 (a fresh one per run), client on core 1, `--workers-max 1
--num-dataset-entries 100 --no-server-metrics`, 1-token chat requests on 127.0.0.1.
"""
import argparse
import json
import resource
import socket
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

PORT = 18614


def wait_port(port, timeout=5.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"mock did not listen on {port}")


def one(binary, conc, n, out):
    mock = subprocess.Popen(["taskset", "-c", "0", binary, "mock-server", "--bind",
                             f"127.0.0.1:{PORT}", "--pin-cores", "0", "--mock-ttft-ms", "0",
                             "--mock-itl-ms", "0", "--mock-output-tokens", "1"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_port(PORT)
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.run(["taskset", "-c", "1", binary, "profile", "-m", "mock-model",
                            "--url", f"http://127.0.0.1:{PORT}", "--endpoint-type", "chat",
                            "--tokenizer", "builtin", "--isl", "8", "--osl", "1",
                            "--workers-max", "1", "--ui", "none", "--random-seed", "1",
                            "--no-server-metrics", "--num-dataset-entries", "100",
                            "--concurrency", str(conc), "--request-count", str(n),
                            "--output-artifact-dir", str(out)],
                           capture_output=True, text=True, timeout=600)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    finally:
        mock.terminate()
        mock.wait()
    if p.returncode != 0:
        raise SystemExit(f"{binary} failed: {p.stderr[-500:]}")
    j = json.loads((out / "profile_export_aiperf.json").read_text())
    if j["request_count"]["avg"] != n or j.get("error_summary"):
        raise SystemExit(f"{binary}: {j['request_count']['avg']} of {n} requests, "
                         f"errors {j.get('error_summary')}")
    threads = {t["name"]: t["cpu_ns"] for t in j["ringperf"]["threads"]}
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    worker = sum(v for k, v in threads.items() if k.startswith("worker"))
    return {"total": cpu * 1e6 / n, "worker": worker / 1e3 / n,
            "aggregator": threads["aggregator"] / 1e3 / n}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--requests", type=int, default=100_000)
    ap.add_argument("--conc", type=int, nargs="+", default=[16, 64, 256])
    a = ap.parse_args()
    print("| c | client CPU µs / req, before → after | aggregator | worker |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for c in a.conc:
            runs = {"before": [], "after": []}
            for i in range(a.pairs):
                for name in ("before", "after"):
                    out = Path(tmp) / f"{name}-{c}-{i}"
                    runs[name].append(one(getattr(a, name), c, a.requests, out))
            med = {k: {f: statistics.median(r[f] for r in v) for f in v[0]}
                   for k, v in runs.items()}
            cell = [f"{med['before'][f]:.2f} → {med['after'][f]:.2f} "
                    f"({(med['after'][f] / med['before'][f] - 1) * 100:+.0f} %)"
                    for f in ("total", "aggregator", "worker")]
            print(f"| {c} | " + " | ".join(cell) + " |", flush=True)


if __name__ == "__main__":
    main()
