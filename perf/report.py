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
    out = ["TTFT overhead and send side are measured to the mock's kernel receive stamp of each "
           "request (`arrival_kernel_ns`; \"user\" in the arrival column: an older truth log "
           "without it, measured to the mock's read); the mock's own wake-up is listed apart.", "",
           "| c | stamps | arrival | mock TTFT / ITL / tokens | TTFT overhead p50 / p99 / max µs "
           "| send side p50 / p99 µs | first-token receive lag p50 / p99 µs "
           "| per-event receive error p50 / p99 / max µs | ITL overhead p50 / p99 µs "
           "| mock wake-up p50 / p99 µs | mock busy |",
           "|---|---|---|---|---|---|---|---|---|---|---|"]
    for o in rows:
        stamps = o.get("timestamps", "—")
        if "failed" in o:
            out.append(f"| {o['concurrency']} | {stamps} | FAILED: {o['failed']} |||||||||")
            continue
        t, s, fr, e, i = (o["ttft_overhead"], o["send_side"], o["first_token_recv_lag"],
                          o["event_recv_lag"], o["itl_overhead"])
        w = o.get("mock_wakeup") or {}
        wake = (f"{f(w['p50_us'])} / {f(w['p99_us'])}" if w.get("count") else "—")
        out.append(
            f"| {o['concurrency']} | {stamps} | {o.get('arrival', 'user')} | "
            f"{o['mock_ttft_ms']} ms / {o['mock_itl_ms']} ms / "
            f"{o['tokens']} | {f(t['p50_us'])} / {f(t['p99_us'])} / {f(t['max_us'])} | "
            f"{f(s['p50_us'])} / {f(s['p99_us'])} | {f(fr['p50_us'])} / {f(fr['p99_us'])} | "
            f"{f(e['p50_us'])} / {f(e['p99_us'])} / {f(e['max_us'])} | "
            f"{f(i['p50_us'])} / {f(i['p99_us'])} | {wake} | {o['mock_busy'] * 100:.0f}% {o['note']} |")
    pairs = stamp_pairs(rows)
    if pairs:
        out += ["", "Kernel vs user receive stamps, same mock settings per pair (µs; ratio = "
                "user / kernel of the medians):", "",
                "| c | figure | kernel p50 / p99 | user p50 / p99 | ratio user / kernel (p50) |",
                "|---|---|---|---|---|"]
        for p in pairs:
            for label, key in [("TTFT overhead", "ttft_overhead"),
                               ("per-event receive error", "event_recv_lag"),
                               ("first-token receive error", "first_token_recv_lag")]:
                k, u = p["kernel"][key], p["user"][key]
                r = p["ratios"][key]
                out.append(f"| {p['concurrency']} | {label} | {f(k['p50_us'])} / {f(k['p99_us'])} "
                           f"| {f(u['p50_us'])} / {f(u['p99_us'])} | "
                           f"{'n/a' if r is None else f'{r:.2f}×'} |")
    lags = [o for o in rows if "receive_lag" in o]
    if lags:
        out += ["", "Client receive lag (`ringperf.receive_lag_ns`: user-space minus kernel stamp "
                "of each event, the run's own figure):", "",
                "| c | events | receive lag p50 / p99 / max µs |", "|---|---|---|"]
        for o in lags:
            g = o["receive_lag"]
            out.append(f"| {o['concurrency']} | {g['count']:,} | {f(g['p50_us'])} / "
                       f"{f(g['p99_us'])} / {f(g['max_us'])} |")
    return "\n".join(out)


def stamp_pairs(rows):
    """Kernel and user rows of the same concurrency, with user / kernel ratios of the medians
    (`None` where a median is missing, NaN or not positive: no ratio from a non-figure). Only
    concurrencies where both runs passed their checks are paired."""
    by_c = {}
    for o in rows:
        if "failed" not in o:
            by_c.setdefault(o["concurrency"], {})[o.get("timestamps")] = o
    pairs = []
    for c, both in by_c.items():
        if "kernel" not in both or "user" not in both:
            continue
        ratios = {}
        for key in ["ttft_overhead", "event_recv_lag", "first_token_recv_lag"]:
            k = both["kernel"].get(key, {}).get("p50_us")
            u = both["user"].get(key, {}).get("p50_us")
            good = all(isinstance(v, (int, float)) and v == v and v > 0 for v in (k, u))
            ratios[key] = u / k if good else None
        pairs.append({"concurrency": c, "kernel": both["kernel"], "user": both["user"],
                      "ratios": ratios})
    return pairs


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
    # Runs before the two shapes (one 10-token case) have "baseline"/"many" at the top.
    shapes = {"short": res} if "baseline" in res else res
    out = ["| shape | run | concurrency | most in flight at the mock | client peak RSS MiB "
           "| client CPU-s |", "|---|---|---|---|---|---|"]
    per = []
    for shape, case in shapes.items():
        desc = f"{case.get('tokens', 10):,} tokens, ITL {case.get('mock_itl_ms', 10)} ms"
        for label in ["baseline", "many"]:
            r = case.get(label, {})
            if "maxrss_kib" not in r:
                out.append(f"| {desc} | {label} | FAILED: {r.get('failed', 'no figure')} ||||")
                continue
            out.append(f"| {desc} | {label} | {r['concurrency']:,} | {r['max_in_flight']:,} | "
                       f"{r['maxrss_kib'] / 1024:.1f} | {r['cpu_s']:.2f} |")
        if "bytes_per_request" in case:
            per.append(f"**{case['bytes_per_request'] / 1024:.1f} KiB** ({desc})")
        else:
            per.append(f"FAILED: {case.get('failed', 'no figure')} ({desc})")
    out += ["", "Client memory per in-flight request: (peak RSS many − baseline) / most in "
            "flight = " + "; ".join(per) + "."]
    return "\n".join(out)


def placement(res):
    if "skipped" in res:
        return f"skipped: {res['skipped']}"
    out = [f"Client on cores {res['client_cores']}, mock on core {res['mock_core']}.", "",
           "| workload | placement | workers | req/s | client CPU-s / 1000 req | steady CPU-s / "
           "1000 req | TTFT overhead p50 / p99 µs | involuntary cs | mock busy |",
           "|---|---|---|---|---|---|---|---|---|"]
    for wl, case in res.items():
        if not isinstance(case, dict) or "ratios" not in case:
            continue
        desc = (f"{wl} (c={case['concurrency']}, {case['tokens']} tokens"
                + (f", ITL {case['mock_itl_ms']} ms)" if case["streaming"] else ")"))
        for label in ["default", "cores-1"]:
            cell = case.get(label, {})
            bad = fail(cell)
            if bad:
                out.append(f"| {desc} | {label} | {bad} |||||||")
                continue
            t = cell.get("ttft_overhead")
            tt = f"{f(t['p50_us'])} / {f(t['p99_us'])}" if t else "—"
            out.append(f"| {desc} | {label} | {cell['workers']} | {f(cell['req_per_s'], 0)} | "
                       f"{f(cell['cpu_s_per_1k'], 4)} | {f(cell['steady_cpu_s_per_1k'], 4)} | "
                       f"{tt} | {cell['involuntary_cs']} | {cell['mock_busy'] * 100:.0f}% "
                       f"{cell['note']} |")
        r = case["ratios"]
        show = lambda v: "n/a" if v is None else f"{v:.2f}×"  # noqa: E731
        out.append(f"| {wl} | **ratio cores−1 / default** | | | {show(r['cpu'])} | | "
                   f"{show(r['ttft_overhead_p50'])} / {show(r['ttft_overhead_p99'])} | | |")
    return "\n".join(out)


def startup(res):
    out = ["| prompt ISL | runs | exec → first request at the mock, median (min–max) ms |",
           "|---|---|---|"]
    for k, v in res.items():
        if "failed" in v:
            out.append(f"| {k} | FAILED: {v['failed']} ||")
        else:
            out.append(f"| {k[3:]} | {v['runs']} | {v['median_ms']:.0f} ({v['min_ms']:.0f}–{v['max_ms']:.0f}) |")
    return "\n".join(out)


def vlm(res):
    out = [f"{res['images_per_request']} PNG images of {res['side']}×{res['side']} per request "
           f"({res['dataset_entries']} distinct bodies), streaming chat; closed loop at "
           f"c={res['concurrency']}, open loop at {res['open_loop_rate']}/s.", "",
           "| client | req/s (closed) | client CPU ms / request: marginal (steady) | TTFT p50 ms "
           "| open loop: achieved /s | dispatch lag p50 / p99 / max µs | peak RSS MiB | mock busy |",
           "|---|---|---|---|---|---|---|---|"]
    cpu = {}
    for client in ["ringperf", "aiperf"]:
        r = res.get(client, {})
        bad = r.get("failed") or r.get("skipped")
        if bad:
            out.append(f"| {client} | {bad} |||||||")
            continue
        big = r["runs"][0]
        ol = r.get("open_loop", {})
        lag = ol.get("dispatch_lag_us", {})
        steady = r.get("steady_cpu_ms_per_req")
        # The larger of ringperf's two figures is the one compared (the cautious ratio).
        cpu[client] = max(r["cpu_ms_per_req_marginal"], steady or 0)
        shown = f(r["cpu_ms_per_req_marginal"], 2) + (f" ({f(steady, 2)})" if steady else "")
        out.append(
            f"| {client} | {f(r['req_per_s'], 1)} | {shown} | "
            f"{f(big['ttft_p50_ms'], 1)} | {f(ol.get('achieved_send_rate'), 2)} | "
            f"{f(lag.get('p50'))} / {f(lag.get('p99'))} / {f(lag.get('max'))} | "
            f"{big['maxrss_kib'] / 1024:.0f} | {big['mock_busy'] * 100:.0f}% {big['note']} |")
    if len(cpu) == 2 and cpu["ringperf"] > 0:
        out += ["", "Client CPU per request, AIPerf's marginal over the larger of ringperf's two "
                f"figures: **{cpu['aiperf'] / cpu['ringperf']:.1f}×**."]
    return "\n".join(out)


RENDER = {"nonstream": nonstream, "stream": stream, "overhead": overhead, "openloop": openloop,
          "manyconn": manyconn, "startup": startup, "placement": placement, "vlm": vlm}


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
