#!/usr/bin/env python3
"""Renders perf/harness.py's results.json as the Markdown tables of perf/README.md.

    python3 perf/report.py RESULTS_JSON
"""

import json
import sys


def f(v, nd=1):
    if v is None:
        return "—"
    if isinstance(v, float) and v != v:
        return "n/a"
    if isinstance(v, (int, float)):
        return f"{v:,.{nd}f}"
    return str(v)


def fail(cell):
    if "failed" in cell:
        return f"FAILED: {cell['failed']}"
    if "skipped" in cell:
        return f"skipped: {cell['skipped']}"
    return None


def nonstream(rows):
    out = ["| c | client | req/s | client CPU-s / 1000 req | steady CPU-s / 1000 req (worker+aggregator) "
           "| req per client CPU-s | mock busy | vs wrk (req/s) | vs wrk (req per CPU-s) |",
           "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        wrk = row.get("wrk", {})
        for client in ["ringperf", "wrk", "oha"]:
            cell = row.get(client)
            if cell is None:
                continue
            bad = fail(cell)
            if bad:
                out.append(f"| {row['concurrency']} | {client} | {bad} |||||||")
                continue
            per_cpu = 1000 / cell["cpu_s_per_1k"]
            rel_rate = rel_cpu = "—"
            if client != "wrk" and "req_per_s" in wrk:
                rel_rate = f"{cell['req_per_s'] / wrk['req_per_s']:.2f}×"
                rel_cpu = f"{wrk['cpu_s_per_1k'] / cell['cpu_s_per_1k']:.2f}×"
            note = f" {cell['note']}" if cell.get("note") else ""
            out.append(
                f"| {row['concurrency']} | {client} | {f(cell['req_per_s'], 0)} | "
                f"{f(cell['cpu_s_per_1k'], 4)} | {f(cell.get('steady_cpu_s_per_1k'), 4)} | "
                f"{f(per_cpu, 0)} | {cell['mock_busy'] * 100:.0f}%{note} | {rel_rate} | {rel_cpu} |")
    return "\n".join(out)


def stream(res):
    out = ["| pacing | client | req/s | events/s | CPU-s / 1000 req (total) | CPU µs / req (marginal) "
           "| CPU ns / event (marginal) | worker ns / event | aggregator ns / event | peak RSS MiB "
           "| mock busy |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for pacing, case in res.items():
        if not isinstance(case, dict) or "concurrency" not in case:
            continue
        for client in ["ringperf", "aiperf"]:
            cell = case.get(client, {})
            bad = fail(cell)
            if bad:
                out.append(f"| {pacing} | {client} | {bad} |||||||||")
                continue
            big = cell["runs"][0]
            out.append(
                f"| {pacing} (ITL {case['mock_itl_ms']} ms, c={case['concurrency']}) | {client} | "
                f"{f(cell['req_per_s'], 0)} | {f(cell['events_per_s'], 0)} | "
                f"{f(cell['cpu_s_per_1k_total'], 3)} | {f(cell['cpu_us_per_req_marginal'], 0)} | "
                f"{f(cell['cpu_ns_per_event_marginal'], 0)} | {f(cell.get('worker_ns_per_event'), 0)} | "
                f"{f(cell.get('aggregator_ns_per_event'), 0)} | {f(big['maxrss_kib'] / 1024, 0)} | "
                f"{big['mock_busy'] * 100:.0f}% {big['note']} |")
        r, a = case.get("ringperf", {}), case.get("aiperf", {})
        if "cpu_s_per_1k_total" in r and "cpu_s_per_1k_total" in a:
            out.append(
                f"| {pacing} | **ratio AIPerf / ringperf** | | | "
                f"{a['cpu_s_per_1k_total'] / r['cpu_s_per_1k_total']:.1f}× | "
                f"{a['cpu_us_per_req_marginal'] / r['cpu_us_per_req_marginal']:.1f}× | "
                f"{a['cpu_ns_per_event_marginal'] / r['cpu_ns_per_event_marginal']:.1f}× |||||")
    return "\n".join(out)


def overhead(rows):
    out = ["| c | mock TTFT / ITL / tokens | TTFT overhead p50 / p99 / max µs | send side p50 / p99 µs "
           "| first-token receive lag p50 / p99 µs | per-event receive lag p50 / p99 / max µs "
           "| ITL overhead p50 / p99 µs | mock busy |",
           "|---|---|---|---|---|---|---|---|"]
    for o in rows:
        if "failed" in o:
            out.append(f"| {o['concurrency']} | FAILED: {o['failed']} |||||||")
            continue
        t, s, fr, e, i = (o["ttft_overhead"], o["send_side"], o["first_token_recv_lag"],
                          o["event_recv_lag"], o["itl_overhead"])
        out.append(
            f"| {o['concurrency']} | {o['mock_ttft_ms']} ms / {o['mock_itl_ms']} ms / {o['tokens']} | "
            f"{f(t['p50_us'])} / {f(t['p99_us'])} / {f(t['max_us'])} | "
            f"{f(s['p50_us'])} / {f(s['p99_us'])} | {f(fr['p50_us'])} / {f(fr['p99_us'])} | "
            f"{f(e['p50_us'])} / {f(e['p99_us'])} / {f(e['max_us'])} | "
            f"{f(i['p50_us'])} / {f(i['p99_us'])} | {o['mock_busy'] * 100:.0f}% {o['note']} |")
    return "\n".join(out)


def openloop(rows):
    out = ["| requested/s | achieved send rate/s | ratio | completed/s | dispatch lag p50 / p99 / max µs "
           "| latency p50 / max ms | client CPU-s | mock busy |",
           "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "failed" in r:
            out.append(f"| {r['rate']} | FAILED: {r['failed']} |||||||")
            continue
        out.append(
            f"| {r['rate']:,} | {f(r['achieved_send_rate'], 0)} | {r['ratio']:.3f} | "
            f"{f(r['completed_per_s'], 0)} | {f(r['lag_p50_us'])} / {f(r['lag_p99_us'])} / "
            f"{f(r['lag_max_us'])} | {f(r['latency_p50_ms'], 2)} / {f(r['latency_max_ms'], 1)} | "
            f"{f(r['cpu_s'], 2)} | {r['mock_busy'] * 100:.0f}% {r['note']} |")
    return "\n".join(out)


def manyconn(res):
    b, m = res.get("baseline", {}), res.get("many", {})
    if "maxrss_kib" not in b or "maxrss_kib" not in m:
        return f"FAILED: {json.dumps(res)}"
    return "\n".join([
        "| run | concurrency | most in flight at the mock | client peak RSS MiB | client CPU-s |",
        "|---|---|---|---|---|",
        f"| baseline | {b['concurrency']} | {b['max_in_flight']} | {b['maxrss_kib'] / 1024:.1f} | {b['cpu_s']:.2f} |",
        f"| many | {m['concurrency']:,} | {m['max_in_flight']:,} | {m['maxrss_kib'] / 1024:.1f} | {m['cpu_s']:.2f} |",
        "",
        f"Client memory per in-flight request: (peak RSS many − baseline) / most in flight = "
        f"**{res['bytes_per_request'] / 1024:.1f} KiB**.",
    ])


def startup(res):
    out = ["| prompt ISL | runs | exec → first request at the mock, median (min–max) ms |",
           "|---|---|---|"]
    for k, v in res.items():
        if "failed" in v:
            out.append(f"| {k} | FAILED: {v['failed']} ||")
        else:
            out.append(f"| {k[3:]} | {v['runs']} | {v['median_ms']:.0f} ({v['min_ms']:.0f}–{v['max_ms']:.0f}) |")
    return "\n".join(out)


RENDER = {"nonstream": nonstream, "stream": stream, "overhead": overhead, "openloop": openloop,
          "manyconn": manyconn, "startup": startup}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    res = json.load(open(sys.argv[1]))
    m = res["machine"]
    print(f"Run {res['started_utc']}: {m['cpu']}, {m['cores']} cores, kernel {m['kernel']}, "
          f"load average at start {m['load_at_start']}; mock on core {m['mock_core']}, "
          f"client on core {m['client_core']}. Peers: " +
          ", ".join(f"{k} {'yes' if v else 'skipped'}" for k, v in res["peers"].items()) + ".\n")
    for name, render in RENDER.items():
        sc = res["scenarios"].get(name)
        if sc is None:
            continue
        meta = res["scenarios"].get(name + "_meta", {})
        print(f"### {name}\n")
        if isinstance(sc, dict) and set(sc) == {"failed"}:
            print(f"FAILED: {sc['failed']}\n")
            continue
        print(render(sc))
        print(f"\n({meta.get('seconds', 0):.0f} s; load average after: {meta.get('load_after', '?')})\n")


if __name__ == "__main__":
    main()
