#!/usr/bin/env python3
"""Before/after of the multishot receive and its coalesced wake-ups (issue #24), alternated in
one session on one binary.

    RINGPERF_BIN=target/release/ringperf python3 perf/ab_multishot.py [PAIRS] [CASE...]

Three modes of one binary: "before" (`RINGPERF_MULTISHOT=0`: the readiness wait and `recvmsg`
per read), "multishot" (`RINGPERF_WAIT_BATCH_US=0`: one multishot `RECVMSG` per connection into
a provided-buffer ring, the worker woken at every completion) and "after" (as built: the same
receive, the worker's wait gathering completions for up to `RINGPERF_WAIT_BATCH_US=250`). Each pair runs all three, the order rotated every pair. Mock on MOCK_CORE, client on
CLIENT_CORE, one worker. Each row carries the 1-minute load average at its start and the
run's receive lag (user-space minus kernel stamp) p50 / p99.

Cases: `paced` (1 ms ITL, each event its own write and segment, c = 1000, 2000 requests of 100
events), `burst` (0 ms ITL, the whole stream in one write, c = 32, 2000 requests) and `c1`
(c = 1, 200 requests of 10 events, mock TTFT and ITL 2 ms: the TTFT overhead to the mock's
kernel arrival stamp, perf/overhead.py). Figures: worker CPU ns per event (the worker threads'
CLOCK_THREAD_CPUTIME_ID from `ringperf.threads` over the truth log's token events) and the
TTFT overhead p50 / p99 in µs. Prints one JSON line per run and a summary of medians.
"""

import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness  # noqa: E402
import overhead  # noqa: E402

CASES = {
    # name: (concurrency, requests, mock TTFT ms, mock ITL ms, tokens)
    "paced": (1000, 2000, 0, 1, 100),
    "burst": (32, 2000, 0, 0, 100),
    "c1": (1, 200, 2, 2, 10),
    # 10k streams need the descriptors: the client raises its own limit, the mock too.
    "paced10k": (10000, 10000, 0, 10, 20),
}
MODES = ["before", "multishot", "after"]


def run(out, case, mode, i):
    c, n, ttft, itl, tokens = CASES[case]
    d = out / f"{case}-{mode}-{i}"
    env = dict(os.environ)
    env.pop("RINGPERF_MULTISHOT", None)
    env.pop("RINGPERF_WAIT_BATCH_US", None)
    if mode == "before":
        env["RINGPERF_MULTISHOT"] = "0"
    elif mode == "after":
        env["RINGPERF_WAIT_BATCH_US"] = "250"
    load = os.getloadavg()[0]
    with harness.Mock(out, d.name, ttft_ms=ttft, itl_ms=itl, tokens=tokens) as m:
        r = harness.run_client(
            harness.ringperf_cmd(d, conc=c, count=n, streaming=True, osl=tokens), m, 600, env=env)
        truth = m.stop()
    j = harness.check_ringperf(r, d, n, tokens)
    harness.check_truth(truth, n, tokens)
    events = sum(t["content_tokens"] for t in truth)
    worker = harness.worker_ns(harness.ringperf_threads(j))
    lag = harness.receive_lag_us(j)
    row = {"case": case, "mode": mode, "pair": i, "load1": round(load, 2), "events": events,
           "worker_ns_per_event": round(worker / events, 1),
           "lag_p50_us": round(lag["p50_us"], 1), "lag_p99_us": round(lag["p99_us"], 1),
           # The whole client process (start-up included): user vs kernel, and wake-ups.
           "client_user_ns_per_event": round(r["user_s"] * 1e9 / events, 1),
           "client_sys_ns_per_event": round(r["sys_s"] * 1e9 / events, 1),
           "voluntary_cs_per_event": round(r["voluntary_cs"] / events, 4)}
    if case == "c1":
        export_json = json.loads((d / "profile_export_aiperf.json").read_text())
        o = overhead.compute(export_json, d / "profile_export.jsonl", truth)
        row["ttft_overhead_us"] = o["ttft_overhead"]
        row["arrival"] = o["arrival"]
    print(json.dumps(row), flush=True)
    return row


def main():
    pairs = int(sys.argv[1]) if len(sys.argv) > 1 else 3
    cases = sys.argv[2:] or list(CASES)
    out = Path(tempfile.mkdtemp(prefix="ab-multishot-"))
    rows = []
    for i in range(pairs):
        order = MODES[i % 3:] + MODES[:i % 3]
        for case in cases:
            for mode in order:
                rows.append(run(out, case, mode, i))
    print("summary (medians over pairs; load1 range):")
    for case in cases:
        for mode in MODES:
            rs = [r for r in rows if r["case"] == case and r["mode"] == mode]
            w = statistics.median(r["worker_ns_per_event"] for r in rs)
            p99 = statistics.median(r["lag_p99_us"] for r in rs)
            loads = [r["load1"] for r in rs]
            cs = statistics.median(r["voluntary_cs_per_event"] for r in rs)
            sys_ns = statistics.median(r["client_sys_ns_per_event"] for r in rs)
            line = (f"  {case:8} {mode:9} worker {w:8.1f} ns/event  lag p99 {p99:8.1f} us"
                    f"  wake-ups/event {cs:.3f}  client sys {sys_ns:.0f} ns/event"
                    f"  load {min(loads):.2f}-{max(loads):.2f}")
            if case == "c1":
                p50 = statistics.median(r["ttft_overhead_us"]["p50_us"] for r in rs)
                p99 = statistics.median(r["ttft_overhead_us"]["p99_us"] for r in rs)
                line += f"  TTFT overhead p50 {p50:.1f} us  p99 {p99:.1f} us"
            print(line)
    print(f"artifacts: {out}")


if __name__ == "__main__":
    main()
