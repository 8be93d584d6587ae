#!/usr/bin/env python3
"""Two ringperf builds, alternated, on the same non-streaming closed loop: the paired medians
of client CPU per request (total from /usr/bin/time, worker and aggregator from the summary
JSON's `ringperf.threads`). One run per binary does not resolve a 10 % change on a shared
2-core VM; alternating the two and taking medians does.

    perf/ab_nonstream.py BEFORE AFTER [--pairs 5] [--requests 100000] [--conc 16 64 256]

Each run is the harness's own (`perf/harness.py`): a fresh mock pinned to MOCK_CORE, the client
pinned to CLIENT_CORE with the harness's `ringperf_cmd` (one worker, `--num-dataset-entries
100`, `--no-server-metrics`), 1-token chat requests on 127.0.0.1, checked against the mock's
truth log.
"""
import argparse
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402  (perf/harness.py)


def one(binary, conc, n, out):
    """One run of `binary`: client CPU µs per request, total / worker / aggregator."""
    h.RINGPERF = binary  # read by Mock and ringperf_cmd when they are called
    out.mkdir(parents=True)
    with h.Mock(out, "mock", tokens=1) as m:
        r = h.run_client(h.ringperf_cmd(out, conc=conc, count=n), m, 600)
        truth = m.stop()
    h.check(r["rc"] == 0, f"{binary} exit {r['rc']}: {r['stderr'][-400:]}")
    h.check_truth(truth, n, 1)
    j = h.ringperf_json(out)
    h.check(j["request_count"]["avg"] == n and not j.get("error_summary"),
            f"{binary}: {j['request_count']['avg']} of {n} requests, "
            f"errors {j.get('error_summary')}")
    th = h.ringperf_threads(j)
    return {"total": r["cpu_s"] * 1e6 / n, "worker": h.worker_ns(th) / 1e3 / n,
            "aggregator": th["aggregator"] / 1e3 / n}


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
