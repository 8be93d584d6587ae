#!/usr/bin/env python3
"""Event cost against the kernel's floor, back to back (#41): ringperf's worker CPU per SSE
event over what a receiver that does nothing but receive (perf/recv_floor.c) spends per event
of the same load, run one after the other on the same cores, alternated, R rounds.

    RINGPERF_BIN=target/release/ringperf perf/event_floor.py [--rounds 3] [--seconds 2]
        [--paced STREAMS GAP_MS TOKENS] [--burst STREAMS GAP_MS TOKENS] [--floor-mode uring]

Two loads (the defaults in brackets):

- paced [32 1 100]: STREAMS streams, one event every GAP_MS ms on each, each event its own
  write and so its own TCP segment. ringperf: a mock with TTFT = ITL = GAP_MS and TOKENS
  tokens a response, `--concurrency STREAMS`; recv_floor: `MODE STREAMS RATE SECONDS` with
  RATE = STREAMS × 1000 / GAP_MS events/s.
- burst [32 5 64]: every GAP_MS ms on each stream, TOKENS events written at once. ringperf: a
  mock with TTFT = GAP_MS, ITL 0 (the whole stream in one write) and TOKENS tokens;
  recv_floor: `MODE STREAMS RATE SECONDS TOKENS` (TOKENS events a write, at most 64) with
  RATE = STREAMS × TOKENS × 1000 / GAP_MS events/s.

Both sides get the same number of events (ringperf's requests × TOKENS). The floor's receiver
runs on CPU 0 and its sender on CPU 1 (fixed in recv_floor.c), so ringperf's client runs on
CLIENT_CORE (default 0) and the mock on MOCK_CORE (default 1): the receiver's core is the
same in both. ringperf runs with one worker, kernel stamps (its default) and its mock's truth
log; its worker CPU is the worker threads' CLOCK_THREAD_CPUTIME_ID from the summary JSON's
`ringperf.threads`, over the content events of the truth log. The floor's CPU is its receiver
thread's clock over its events. Each run is checked first: ringperf exits 0 with every
request completed, no error and TOKENS × requests completion tokens; the truth log has every
request, complete, with TOKENS events, written as asked (paced: each event its own write;
burst: one write); both sides reach at least MIN_RATE_SHARE of the rate asked. With
TIKTOKEN_PYTHON set, ringperf's prompts are also counted independently
(harness.check_ringperf). A failed run or a missing or zero figure is refused: the table says
FAILED and the script exits 1.

Prints one JSON line per run, then a table: per load, the floor's CPU per event, ringperf's
worker CPU per event and their ratio (medians over rounds; the ratio is of the medians, the
per-round ratios' range beside it), ringperf's aggregator per event, and the load average at
the start and the end. The goal (#41): ratio ≤ 1.2 paced and burst, and ≤ 150 ns per event
in burst. Every process is started with a time bound and stopped by its own id; all traffic
goes to 127.0.0.1.
"""

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
# recv_floor.c pins its receiver to CPU 0 and its sender to CPU 1: the client and the mock go
# where they go, unless told otherwise (read by harness at import).
os.environ.setdefault("CLIENT_CORE", "0")
os.environ.setdefault("MOCK_CORE", "1")
os.environ.setdefault("PERF_PORT", "18790")
sys.path.insert(0, str(HERE))
import harness as h  # noqa: E402  (perf/harness.py)

RATIO_GOAL = 1.2
BURST_NS_GOAL = 150.0
MIN_RATE_SHARE = 0.8  # a run below this share of the rate asked was not the same load


class Refused(h.CheckFailed):
    """A figure that cannot be reported: missing, zero, not a number, or from a failed run."""


def positive(x, what):
    """x as a float if it is a finite number > 0, else Refused."""
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
        raise Refused(f"{what}: {x!r} is not a positive figure")
    return float(x)


# ------------------------------------------------------------------------------- pure logic
def plan(kind, streams, gap_ms, tokens, seconds):
    """One load's two runs: the rate asked, ringperf's request count and mock settings, and
    recv_floor's arguments (events equal on both sides)."""
    if kind not in ("paced", "burst"):
        raise ValueError(f"unknown load {kind!r}")
    if streams < 1 or gap_ms <= 0 or tokens < 1 or seconds <= 0:
        raise ValueError(f"bad {kind} load: {streams} streams, {gap_ms} ms, {tokens} tokens")
    if kind == "burst" and tokens > 64:
        raise ValueError("recv_floor writes at most 64 events at once: burst TOKENS <= 64")
    if kind == "paced":
        rate = streams * 1000.0 / gap_ms
        per_stream = max(1, math.ceil(seconds * 1000.0 / (gap_ms * tokens)))
        mock = {"ttft_ms": gap_ms, "itl_ms": gap_ms, "tokens": tokens}
        burst = 1
    else:
        rate = streams * tokens * 1000.0 / gap_ms
        per_stream = max(1, math.ceil(seconds * 1000.0 / gap_ms))
        mock = {"ttft_ms": gap_ms, "itl_ms": 0, "tokens": tokens}
        burst = tokens
    requests = streams * per_stream
    events = requests * tokens
    # recv_floor sends (long long)(RATE × SECONDS) rounded down to whole writes: half an event
    # over the count keeps the truncation from losing one.
    rate_arg = f"{rate:.0f}"
    seconds_arg = f"{(events + 0.5) / float(rate_arg):.9f}"
    return {"kind": kind, "streams": streams, "gap_ms": gap_ms, "tokens": tokens,
            "rate": rate, "requests": requests, "events": events, "mock": mock,
            "floor_args": [str(streams), rate_arg, seconds_arg, str(burst)]}


def parse_floor(stdout, want_events):
    """recv_floor's JSON line: receiver ns per event, events, rate reached, events per wake-up.
    Refuses a missing line, a missing or zero figure, or fewer events than asked."""
    lines = [ln for ln in stdout.splitlines() if ln.strip().startswith("{")]
    if not lines:
        raise Refused(f"no JSON line from recv_floor: {stdout[-200:]!r}")
    try:
        d = json.loads(lines[-1])
    except ValueError as e:
        raise Refused(f"recv_floor's line is not JSON: {e}")
    ns = positive(d.get("receiver_ns_per_event"), "floor receiver ns/event")
    events = positive(d.get("events"), "floor events")
    if events != want_events:
        raise Refused(f"floor received {events:.0f} events, {want_events} asked")
    return {"ns_per_event": ns, "events": int(events),
            "rate": positive(d.get("rate_reached"), "floor rate reached"),
            "events_per_wakeup": positive(d.get("events_per_wakeup"), "floor events/wake-up"),
            "mode": d.get("mode")}


def truth_events(truth, p):
    """Checks the mock's truth log against the load's shape and returns its event count:
    every request there and complete with TOKENS events; paced, each event its own write
    (distinct stamps); burst, all of a response's events in one write (one stamp)."""
    h.check(len(truth) == p["requests"], f"mock served {len(truth)}, {p['requests']} asked")
    h.check(all(t.get("completed") for t in truth), "the mock saw an incomplete response")
    bad = [t for t in truth if t.get("content_tokens") != p["tokens"]
           or len(t.get("event_ns") or []) != p["tokens"]]
    h.check(not bad, f"{len(bad)} responses without {p['tokens']} events")
    writes = [len(set(t["event_ns"])) for t in truth]
    want = p["tokens"] if p["kind"] == "paced" else 1
    off = sum(1 for w in writes if w != want)
    h.check(off == 0, f"{off} responses not written as a {p['kind']} load "
                      f"({want} distinct write stamps each)")
    return sum(t["content_tokens"] for t in truth)


def ringperf_figures(j, events, p):
    """Worker (and aggregator) ns per event of one ringperf run from `ringperf.threads`
    (harness.ringperf_threads refuses a missing or zero thread figure) and the rate reached."""
    if events != p["events"]:
        raise Refused(f"ringperf run has {events} events, {p['events']} asked")
    th = h.ringperf_threads(j)
    dur = positive((j.get("benchmark_duration") or {}).get("avg"), "benchmark_duration")
    return {"ns_per_event": positive(h.worker_ns(th), "worker CPU") / events,
            "aggregator_ns_per_event": positive(th["aggregator"], "aggregator CPU") / events,
            "events": events, "rate": events / dur}


def check_rate(reached, p, who):
    h.check(reached >= MIN_RATE_SHARE * p["rate"],
            f"{who} reached {reached:,.0f} events/s of {p['rate']:,.0f} asked: not the same load")


def ratio(ringperf_ns, floor_ns):
    """ringperf's worker CPU per event over the floor's; refused from a non-figure."""
    return positive(ringperf_ns, "ringperf ns/event") / positive(floor_ns, "floor ns/event")


def summarize(rows, loads):
    """Medians over rounds per load. A load with any failed run, or without a run on a side,
    is FAILED (its reason kept). Returns a list of per-load dicts."""
    out = []
    for kind in loads:
        rs = [r for r in rows if r["load"] == kind]
        failed = [f"{r['side']} round {r['round']}: {r['failed']}" for r in rs if "failed" in r]
        fl = [r for r in rs if r["side"] == "floor" and "failed" not in r]
        rp = [r for r in rs if r["side"] == "ringperf" and "failed" not in r]
        if not failed and (not fl or not rp):
            failed = ["no run on one side"]
        if failed:
            out.append({"load": kind, "failed": "; ".join(failed)})
            continue
        f_ns = statistics.median(r["ns_per_event"] for r in fl)
        r_ns = statistics.median(r["ns_per_event"] for r in rp)
        per_round = []
        for i in sorted({r["round"] for r in rs}):
            a = [r for r in rp if r["round"] == i]
            b = [r for r in fl if r["round"] == i]
            if a and b:
                per_round.append(ratio(a[0]["ns_per_event"], b[0]["ns_per_event"]))
        out.append({"load": kind, "rounds": len(per_round), "floor_ns": f_ns, "ringperf_ns": r_ns,
                    "ratio": ratio(r_ns, f_ns),
                    "ratio_min": min(per_round), "ratio_max": max(per_round),
                    "aggregator_ns": statistics.median(r["aggregator_ns_per_event"] for r in rp),
                    "floor_rate": statistics.median(r["rate"] for r in fl),
                    "ringperf_rate": statistics.median(r["rate"] for r in rp),
                    "floor_events_per_wakeup": statistics.median(r["events_per_wakeup"]
                                                                 for r in fl)})
    return out


def verdict(s):
    if "failed" in s:
        return "FAILED"
    ok = s["ratio"] <= RATIO_GOAL
    if s["load"] == "burst":
        ok = ok and s["ringperf_ns"] <= BURST_NS_GOAL
    return "met" if ok else "not met"


def describe(p):
    if p["kind"] == "paced":
        return (f"{p['streams']} streams, 1 event / {p['gap_ms']:g} ms each, "
                f"{p['tokens']} a response")
    return f"{p['streams']} streams, {p['tokens']} events at once / {p['gap_ms']:g} ms each"


def table(summary, plans, load_start, load_end, floor_mode):
    lines = [f"Load average at start {load_start}; at end {load_end}. Floor: recv_floor "
             f"`{floor_mode}`. Medians over rounds; ratio = ringperf worker / floor "
             f"(per-round range).", "",
             "| load | shape | events/s asked (floor / ringperf reached) | floor ns / event "
             "| ringperf worker ns / event | ratio | ringperf aggregator ns / event "
             "| goal (≤ 1.2×; burst also ≤ 150 ns) |",
             "|---|---|---|---|---|---|---|---|"]
    for s in summary:
        p = plans[s["load"]]
        if "failed" in s:
            lines.append(f"| {s['load']} | {describe(p)} | {p['rate']:,.0f} "
                         f"| FAILED: {s['failed']} ||||| FAILED |")
            continue
        lines.append(
            f"| {s['load']} | {describe(p)} | {p['rate']:,.0f} ({s['floor_rate']:,.0f} / "
            f"{s['ringperf_rate']:,.0f}) | {s['floor_ns']:,.0f} | {s['ringperf_ns']:,.0f} "
            f"| **{s['ratio']:.2f}×** ({s['ratio_min']:.2f}–{s['ratio_max']:.2f}) "
            f"| {s['aggregator_ns']:,.0f} | {verdict(s)} |")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------ runs
def build_floor(out, mode):
    """Compiles perf/recv_floor.c; without liburing's headers, says so, installs liburing-dev
    with apt-get if it can (root), else builds the epoll modes alone and falls back to `epoll`.
    Returns (binary, mode)."""
    src, binary = HERE / "recv_floor.c", out / "recv_floor"

    def cc(extra, libs):
        return subprocess.run(["cc", "-O2"] + extra + ["-o", str(binary), str(src)] + libs,
                              capture_output=True, text=True, timeout=120)
    p = cc([], ["-luring", "-lpthread"])
    if p.returncode == 0:
        return binary, mode
    h.log(f"recv_floor does not build with liburing: {p.stderr.strip()[-300:]}")
    if "liburing.h" in p.stderr and os.geteuid() == 0 and shutil.which("apt-get"):
        h.log("liburing's headers are missing: apt-get install -y liburing-dev")
        a = subprocess.run(["apt-get", "install", "-y", "liburing-dev"], capture_output=True,
                           text=True, timeout=600)
        if a.returncode == 0 and cc([], ["-luring", "-lpthread"]).returncode == 0:
            return binary, mode
        h.log(f"apt-get install liburing-dev failed: {a.stderr.strip()[-300:]}")
    p = cc(["-DRECV_FLOOR_NO_URING"], ["-lpthread"])
    h.check(p.returncode == 0, f"recv_floor does not build even without liburing: {p.stderr}")
    if mode == "uring":
        h.log("no liburing: the floor falls back to its epoll mode")
        mode = "epoll"
    return binary, mode


def run_floor(binary, mode, p, timeout_s):
    """recv_floor in its own session; on time-out its process group (its id) is killed."""
    cmd = [str(binary), mode] + p["floor_args"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.communicate()
        raise h.CheckFailed(f"recv_floor timed out after {timeout_s} s")
    h.check(proc.returncode == 0, f"recv_floor exit {proc.returncode}: {err[-300:]}")
    f = parse_floor(out, p["events"])
    check_rate(f["rate"], p, "recv_floor")
    return f


def check_ringperf_run(r, d, p):
    """harness.check_ringperf with the independent prompt count when TIKTOKEN_PYTHON is set;
    else its checks without that count (the event cost does not depend on the prompts)."""
    if os.environ.get("TIKTOKEN_PYTHON"):
        return h.check_ringperf(r, d, p["requests"], p["tokens"])
    h.check(r["rc"] == 0, f"ringperf exit {r['rc']}: {r['stderr'][-400:]}")
    j = h.ringperf_json(d)
    n = p["requests"]
    h.check(j["completed_request_count"]["avg"] == n,
            f"completed {j['completed_request_count']['avg']} != {n}")
    h.check(j["error_summary"] == [], f"errors: {j['error_summary']}")
    h.check(j["total_usage_completion_tokens"]["avg"] == n * p["tokens"],
            f"completion tokens {j['total_usage_completion_tokens']['avg']} != {n * p['tokens']}")
    return j


def run_ringperf(out, p, i, timeout_s):
    d = out / f"{p['kind']}-ringperf-{i}"
    try:
        with h.Mock(out, d.name, **p["mock"]) as m:
            cmd = h.ringperf_cmd(d, conc=p["streams"], count=p["requests"], streaming=True,
                                 osl=p["tokens"])
            r = h.run_client(cmd, m, timeout_s)
            truth = m.stop()
        j = check_ringperf_run(r, d, p)
        f = ringperf_figures(j, truth_events(truth, p), p)
        check_rate(f["rate"], p, "ringperf")
        f["mock_cpu_ns_per_event"] = r["mock_cpu_s"] * 1e9 / f["events"]
        return f
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=2.0, help="length of each run (asked)")
    ap.add_argument("--paced", nargs=3, type=float, metavar=("STREAMS", "GAP_MS", "TOKENS"),
                    default=[32, 1, 100])
    ap.add_argument("--burst", nargs=3, type=float, metavar=("STREAMS", "GAP_MS", "TOKENS"),
                    default=[32, 5, 64])
    ap.add_argument("--loads", nargs="+", choices=["paced", "burst"], default=["paced", "burst"])
    ap.add_argument("--floor-mode", choices=["uring", "epoll", "epoll-ts"], default="uring")
    a = ap.parse_args()
    plans = {}
    for kind in a.loads:
        s, g, t = getattr(a, kind)
        plans[kind] = plan(kind, int(s), g, int(t), a.seconds)
    if (h.CLIENT_CORE, h.MOCK_CORE) != ("0", "1"):
        h.log(f"note: client on {h.CLIENT_CORE}, mock on {h.MOCK_CORE}; recv_floor's receiver "
              "is on CPU 0 and its sender on CPU 1 whatever these say")
    out = Path(tempfile.mkdtemp(prefix="event-floor-"))
    binary, mode = build_floor(out, a.floor_mode)
    load_start = h.load_line()
    print(f"load average at start: {load_start}; binary {h.RINGPERF}; floor {mode}; "
          f"artifacts {out}", flush=True)
    rows = []
    bound = a.seconds * 3 + 60
    for i in range(a.rounds):
        # Alternated: the floor first in even rounds, ringperf first in odd ones.
        sides = ["floor", "ringperf"] if i % 2 == 0 else ["ringperf", "floor"]
        for kind, p in plans.items():
            for side in sides:
                row = {"load": kind, "side": side, "round": i, "load1": os.getloadavg()[0]}
                try:
                    if side == "floor":
                        row.update(run_floor(binary, mode, p, bound))
                    else:
                        row.update(run_ringperf(out, p, i, bound))
                except h.CheckFailed as e:
                    row["failed"] = str(e)
                rows.append(row)
                print(json.dumps(row), flush=True)
    load_end = h.load_line()
    summary = summarize(rows, list(plans))
    (out / "results.json").write_text(json.dumps(
        {"plans": plans, "rows": rows, "summary": summary, "load_start": load_start,
         "load_end": load_end, "floor_mode": mode, "binary": h.RINGPERF}, indent=1))
    print()
    print(table(summary, plans, load_start, load_end, mode))
    failed = [s for s in summary if "failed" in s]
    if failed or h.REFUSED:
        h.log(f"refused: {[s['failed'] for s in failed] + h.REFUSED}")
        sys.exit(1)


if __name__ == "__main__":
    main()
