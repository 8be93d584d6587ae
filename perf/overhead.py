#!/usr/bin/env python3
"""Client overhead on TTFT / ITL: ringperf's per-request values minus the mock's truth log.

    python3 perf/overhead.py ARTIFACT_DIR TRUTH_LOG.jsonl

ringperf's JSONL stamps are wall-clock epoch ns; the JSON export's
`ringperf.clock.{monotonic_origin_ns, wall_origin_ns}` convert them to raw CLOCK_MONOTONIC, the
truth log's scale: mono = wall - wall_origin_ns + monotonic_origin_ns. Records and truth entries
are joined on the X-Request-ID.

Per request (all ns):
  ttft_overhead   = client TTFT - (truth first token write - truth request arrival)
  send_side       = truth request arrival - client request start (write issued -> mock has it)
  mock_wakeup     = truth arrival_ns - truth arrival_kernel_ns (the mock's own read delay)
The truth request arrival is the mock's kernel receive stamp of the request
(`arrival_kernel_ns`) when the truth log has it, so neither figure holds the mock's own wake-up;
`ttft_overhead_vs_mock_read` is the TTFT overhead against the mock's user-space `arrival_ns`
(what older truth logs give, and the figure reported before the mock stamped arrivals).
  recv_lag[k]     = client stamp of content event k - truth write of event k
  itl_overhead    = client ITL - truth ITL over the same tokens
Percentiles are NumPy "linear", over all values.
"""

import json
import sys
from pathlib import Path


def pct(sorted_vals, q):
    if not sorted_vals:
        return float("nan")
    pos = q / 100 * (len(sorted_vals) - 1)
    lo = int(pos)
    hi = min(lo + 1, len(sorted_vals) - 1)
    return sorted_vals[lo] + (sorted_vals[hi] - sorted_vals[lo]) * (pos - lo)


def summary_us(vals):
    s = sorted(vals)
    return {"p50_us": pct(s, 50) / 1e3, "p99_us": pct(s, 99) / 1e3,
            "max_us": (s[-1] / 1e3) if s else float("nan"), "count": len(s)}


def ms_to_ns(v):
    return round(v * 1e6)


def jsonl_records(path):
    with open(path) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def jsonl_starts(path):
    """(credit_issued_ns, request_start_ns) (wall) of every record."""
    return [(r["metadata"]["credit_issued_ns"], r["metadata"]["request_start_ns"])
            for r in jsonl_records(path)]


def max_overlap(truth):
    """Most requests the mock had open at once (arrival .. last write)."""
    edges = []
    for t in truth:
        edges.append((t["arrival_ns"], 1))
        edges.append((t["end_ns"], -1))
    edges.sort(key=lambda e: (e[0], e[1]))
    cur = best = 0
    for _, d in edges:
        cur += d
        best = max(best, cur)
    return best


def compute(export_json, jsonl_path, truth):
    """The summaries (p50, p99, max in µs) of [`values`]."""
    v = values(export_json, jsonl_path, truth)
    out = {"matched": v.pop("matched"), "arrival": v.pop("arrival")}
    out.update({k: summary_us(vals) for k, vals in v.items()})
    return out


def values(export_json, jsonl_path, truth):
    """Every per-request (and per-event) difference against the truth log, in ns, as lists, so
    that runs with different clocks (shards) can be pooled before taking percentiles."""
    clock = export_json["ringperf"]["clock"]
    shift = clock["monotonic_origin_ns"] - clock["wall_origin_ns"]
    by_id = {t["request_id"]: t for t in truth if t.get("request_id")}
    ttft, send, recv, itl, first_recv = [], [], [], [], []
    ttft_read, wakeup = [], []
    kernel_arrivals = True
    matched = 0
    for rec in jsonl_records(jsonl_path):
        md, m = rec["metadata"], rec.get("metrics", {})
        if md.get("benchmark_phase", "profiling") != "profiling":
            continue  # warmup records are in the JSONL too; only profiled ones count
        t = by_id.get(md["x_request_id"])
        if t is None or "time_to_first_token" not in m or not t["event_ns"]:
            continue
        matched += 1
        start = md["request_start_ns"] + shift
        c_ttft = ms_to_ns(m["time_to_first_token"]["value"])
        ev = t["event_ns"]
        arrival = t.get("arrival_kernel_ns")
        if arrival is None:
            kernel_arrivals = False
            arrival = t["arrival_ns"]
        else:
            wakeup.append(t["arrival_ns"] - arrival)
        ttft.append(c_ttft - (ev[0] - arrival))
        ttft_read.append(c_ttft - (ev[0] - t["arrival_ns"]))
        send.append(arrival - start)
        first_recv.append(start + c_ttft - ev[0])
        gaps = [ms_to_ns(x) for x in m.get("inter_chunk_latency", {}).get("value", [])]
        if len(gaps) + 1 == len(ev):
            at = start + c_ttft
            recv.append(at - ev[0])
            for k, g in enumerate(gaps, start=1):
                at += g
                recv.append(at - ev[k])
        osl = m.get("output_sequence_length", {}).get("value")
        if "inter_token_latency" in m and osl and osl > 1 and osl == t["content_tokens"]:
            truth_itl = (ev[-1] - ev[0]) / (osl - 1)
            itl.append(ms_to_ns(m["inter_token_latency"]["value"]) - truth_itl)
    return {
        "matched": matched,
        "arrival": "kernel" if kernel_arrivals and matched else "user",
        "ttft_overhead": ttft,
        "ttft_overhead_vs_mock_read": ttft_read,
        "mock_wakeup": wakeup,
        "send_side": send,
        "first_token_recv_lag": first_recv,
        "event_recv_lag": recv,
        "itl_overhead": itl,
    }


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    art, truth_path = Path(sys.argv[1]), Path(sys.argv[2])
    export_json = json.loads((art / "profile_export_aiperf.json").read_text())
    truth = list(jsonl_records(truth_path))
    print(json.dumps(compute(export_json, art / "profile_export.jsonl", truth), indent=1))


if __name__ == "__main__":
    main()
