#!/usr/bin/env python3
"""100,000 concurrent streaming sessions on one host (#41): ringperf shards against several mocks.

    perf/streams100k.py [--streams 100000] [--shards S] [--mocks M] [--osl 8] [--itl-ms 4000]
                        [--ttft-ms 4000] [--ramp-s D] [--keep DIR]

The host's limits shape the run: every process may hold at most ~20,000 descriptors, and one
destination address and port gives at most ~28,000 ephemeral ports. So the streams are split:

- M mock servers (`ringperf mock-server`, default one per 12,500 streams, at least 2), each on
  its own loopback address (127.0.0.1, 127.0.0.2, ... on PERF_PORT), each with a truth log,
  pinned alternately to core 0 and core 1;
- S client shards (`ringperf profile --shard-index i --shard-count S --start-at T`, default one
  per 16,700 streams, at least 2), started together, each given every mock's URL (a session's
  URL is its index modulo M), one worker each, pinned alternately to core 1 and core 0;
  `AIPERF_HTTP_CONNECTION_LIMIT` is the shard's share, so every stream has its own connection.

The run is closed-loop at concurrency N with N requests (one request per stream), paced slowly:
the mock writes the first token after `--ttft-ms` and one token every `--itl-ms` after it
(`--osl` tokens), so at N streams the mocks write N / ITL events a second (25,000/s at 100,000
streams and 4 s). Connections are set up before the measured phase: a warmup phase of N
requests at concurrency N opens every stream's connection (one per slot; each is kept in the
worker's pool), then the profiling phase sends its N requests on them. Both phases start their
slots along a linear ramp (`--concurrency-ramp-duration D`, default N / 5,000 s), so neither the
connects nor the requests arrive as one burst; a stream lasts TTFT + (OSL - 1) x ITL (32 s by
default), longer than the ramp, so every stream of the phase is open at once.

Checks (any failure: no figure, exit 1): every shard exits 0 with every profiling request
completed, no error, the usage tokens, its prompts counted by Python tiktoken (TIKTOKEN_PYTHON,
TIKTOKEN_CACHE_DIR as perf/run.sh seeds them); the mocks' truth logs hold exactly 2N complete
responses of OSL tokens whose request ids are exactly the shards' records (warmup and
profiling), each once; the mocks accepted N connections and every profiling request came on
one a warmup request had used; all N profiling streams were in flight at the mocks at once;
`ringperf merge` of the shards exits 0 with N completed requests.

Figures: time to open all streams (the warmup's: start instant to the last warmup request at a
mock, connects included; the profiling phase's: its first request at a mock to its N-th);
client RSS per stream, from the shards' RSS summed (sampled every 0.2 s) minus their RSS at the
start instant, over N: while every warmup stream was in flight and none had ended (what N
in-flight streams hold; also in anonymous memory only, RssAnon, which leaves out the binary's
own pages: how many of those a run maps depends on the page cache, not on the build), and at
the streaming peak and with all profiling streams open (with the warmup's completed records
and the pooled connections on top); the mocks' RSS per
connection the same way; worker CPU per event (the shards' worker threads from /proc schedstat
over the window in which all N profiling streams were open, over the events the truth logs show
written in it; and over the whole run from `ringperf.threads`, connects included); TTFT and ITL
error against the truth (perf/overhead.py, pooled over the shards, p50 / p99), per-event
receive error, send side, dispatch lag (`request_start_ns - credit_issued_ns` of the profiling
records), and the merged client-health verdict. All traffic goes to 127.0.0.x; every process started here runs in its own session and
is killed by its own id on timeout or failure.
"""
import argparse
import json
import math
import os
import resource
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402  (perf/harness.py)
import overhead  # noqa: E402  (perf/overhead.py)

# Descriptors a process keeps besides its sockets (a mock: listener, timers, truth log; a
# shard: ringperf's own count is 24 + 2 per worker + one per scraped endpoint).
FD_RESERVE = 200
# Streams per mock and per shard by default (each under the 20,000-descriptor limit, and each
# mock's address under the ~28,000 ephemeral ports of one destination).
PER_MOCK = 12_500
PER_SHARD = 16_700
SAMPLE_S = 0.2
WORKER_COMM = "ringperf-worke"  # "ringperf-worker-N" as the kernel's 15-byte comm keeps it


def status_kib(pid, key):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(key):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def thread_cpu_ns(pid, prefix=None):
    """On-CPU ns of `pid`'s threads (those whose comm starts with `prefix`, or all)."""
    total = 0
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return None
    for tid in tids:
        try:
            if prefix is not None:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if not f.read().startswith(prefix):
                        continue
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                total += int(f.read().split()[0])
        except OSError:
            pass
    return total


def nofile_hard():
    return resource.getrlimit(resource.RLIMIT_NOFILE)[1]


def share(n, count, i):
    return n // count + (1 if i < n % count else 0)


class Started:
    """The processes this script started (each in its own session), killed by id."""

    def __init__(self):
        self.procs = []

    def popen(self, cmd, **kw):
        p = subprocess.Popen(cmd, start_new_session=True, **kw)
        self.procs.append(p)
        return p

    def kill_all(self):
        for p in self.procs:
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                p.wait()


def mock_cmd(a, addr, core, truth):
    return ["taskset", "-c", str(core), h.RINGPERF, "mock-server",
            "--bind", f"{addr}:{h.PORT}", "--pin-cores", str(core),
            "--mock-ttft-ms", str(a.ttft_ms), "--mock-itl-ms", str(a.itl_ms),
            "--mock-output-tokens", str(a.osl), "--truth-log", str(truth)] + a.mock_arg


def shard_cmd(a, urls, d, i, start_at_ns, core):
    cmd = ["taskset", "-c", str(core), h.RINGPERF, "profile", "-m", "mock-model",
           "--endpoint-type", "chat", "--tokenizer", "builtin", "--streaming",
           "--isl", str(h.ISL), "--osl", str(a.osl), "--ui", "none", "--random-seed", "1",
           "--output-artifact-dir", str(d), "--no-server-metrics",
           "--num-dataset-entries", "100", "--workers-max", "1",
           "--concurrency", str(a.streams), "--request-count", str(a.streams),
           "--concurrency-ramp-duration", str(a.ramp_s),
           "--warmup-request-count", str(a.streams), "--warmup-concurrency", str(a.streams),
           "--shard-index", str(i), "--shard-count", str(a.shards),
           "--start-at", str(start_at_ns)]
    for u in urls:
        cmd += ["--url", u]
    return cmd + a.client_arg


def wait_listening(addr, proc, err_path):
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            socket.create_connection((addr, h.PORT), timeout=0.2).close()
            return
        except OSError:
            if proc.poll() is not None:
                raise h.CheckFailed(f"mock on {addr} exited: {Path(err_path).read_text()[-400:]}")
            time.sleep(0.05)
    raise h.CheckFailed(f"mock on {addr} did not listen within 20 s")


def stop_mock(p):
    if p.poll() is None:
        p.send_signal(signal.SIGINT)
        try:
            p.wait(timeout=300)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise h.CheckFailed("a mock did not stop within 300 s of SIGINT")


def read_truth(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def at_time(samples, t, key):
    """The value of `key` in the sample series [(mono_ns, {...})] at `t`, linearly interpolated
    between the samples around it (None outside the series)."""
    prev = None
    for ts, v in samples:
        if v.get(key) is None:
            continue
        if ts >= t:
            if prev is None:
                return v[key]
            (t0, v0) = prev
            return v0 + (v[key] - v0) * (t - t0) / max(1, ts - t0)
        prev = (ts, v[key])
    return None


def pct_us(vals, q):
    return overhead.pct(sorted(vals), q) / 1e3


def run(a, out, started):
    n, S, M = a.streams, a.shards, a.mocks
    hard = nofile_hard()
    per_mock = math.ceil(n / M)
    per_shard = math.ceil(n / S)
    h.check(per_mock + FD_RESERVE <= hard,
            f"{per_mock} connections per mock do not fit {hard} descriptors: more --mocks")
    h.check(per_shard + FD_RESERVE <= hard,
            f"{per_shard} streams per shard do not fit {hard} descriptors: more --shards")
    addrs = [f"127.0.0.{j + 1}" for j in range(M)]
    urls = [f"http://{ad}:{h.PORT}" for ad in addrs]
    load = [h.load_line()]

    mocks = []
    for j, ad in enumerate(addrs):
        truth = out / f"mock-{j}.truth.jsonl"
        err = out / f"mock-{j}.err"
        with open(err, "wb") as ef:
            p = started.popen(mock_cmd(a, ad, j % 2, truth), stdout=subprocess.DEVNULL,
                              stderr=ef)
        mocks.append({"proc": p, "truth": truth, "err": err, "addr": ad})
    for m in mocks:
        wait_listening(m["addr"], m["proc"], m["err"])
    mock_rss0 = sum(status_kib(m["proc"].pid, "VmRSS:") or 0 for m in mocks)

    wall_minus_mono = time.time_ns() - time.monotonic_ns()
    start_at_ns = time.time_ns() + int(a.lead_s * 1e9)
    start_mono = start_at_ns - wall_minus_mono
    shards = []
    env = dict(os.environ, AIPERF_HTTP_CONNECTION_LIMIT=str(per_shard + 8))
    for i in range(S):
        d = out / f"shard-{i}"
        err = out / f"shard-{i}.err"
        with open(err, "wb") as ef:
            p = started.popen(shard_cmd(a, urls, d, i, start_at_ns, (i + 1) % 2),
                              stdout=subprocess.DEVNULL, stderr=ef, env=env)
        shards.append({"proc": p, "dir": d, "err": err, "n": share(n, S, i), "rc": None})
    h.log(f"{M} mocks on {', '.join(addrs)} port {h.PORT}; {S} shards of "
          f"{'/'.join(str(s['n']) for s in shards)} streams; start in {a.lead_s} s")

    # Sampled until every shard has ended: each shard's RSS and worker CPU, the mocks'.
    samples = []
    stream_s = (a.ttft_ms + (a.osl - 1) * a.itl_ms) / 1e3
    limit_s = a.lead_s + 2 * (a.ramp_s + stream_s) + a.timeout_margin_s
    t_begin = time.monotonic()
    hwm = [0] * S
    while any(s["rc"] is None for s in shards):
        now = time.monotonic_ns()
        v = {}
        for i, s in enumerate(shards):
            if s["rc"] is None:
                pid, status, _ = os.wait4(s["proc"].pid, os.WNOHANG)
                if pid == s["proc"].pid:
                    s["rc"] = os.waitstatus_to_exitcode(status)
                    s["proc"].returncode = s["rc"]
                    continue
                v[f"rss{i}"] = status_kib(s["proc"].pid, "VmRSS:")
                v[f"anon{i}"] = status_kib(s["proc"].pid, "RssAnon:")
                v[f"cpu{i}"] = thread_cpu_ns(s["proc"].pid, WORKER_COMM)
                hwm[i] = max(hwm[i], status_kib(s["proc"].pid, "VmHWM:") or 0)
        v["mock_rss"] = sum(status_kib(m["proc"].pid, "VmRSS:") or 0 for m in mocks)
        v["mock_cpu"] = sum(thread_cpu_ns(m["proc"].pid) or 0 for m in mocks)
        samples.append((now, v))
        if time.monotonic() - t_begin > limit_s:
            raise h.CheckFailed(f"the shards did not end within {limit_s:.0f} s")
        time.sleep(SAMPLE_S)
    load.append(h.load_line())
    for m in mocks:
        stop_mock(m["proc"])

    # ------------------------------------------------------------------ checks
    for i, s in enumerate(shards):
        r = {"rc": s["rc"], "stderr": s["err"].read_text(errors="replace")}
        h.check_ringperf(r, s["dir"], s["n"], a.osl)
    merged = out / "merged"
    mp = subprocess.run([h.RINGPERF, "merge"] + [str(s["dir"]) for s in shards]
                        + ["--artifact-dir", str(merged)], capture_output=True, text=True,
                        timeout=600)
    h.check(mp.returncode == 0, f"ringperf merge exit {mp.returncode}: {mp.stderr[-400:]}")
    mj = json.loads((merged / "profile_export_aiperf.json").read_text())
    h.check(mj["completed_request_count"]["avg"] == n,
            f"merged: completed {mj['completed_request_count']['avg']} != {n}")
    h.check(mj["error_summary"] == [], f"merged errors: {mj['error_summary']}")

    truth = []
    for j, m in enumerate(mocks):
        entries = read_truth(m["truth"])
        for t in entries:
            t["mock"] = j  # a connection is (mock, its number there)
        truth += entries
    h.check_truth(truth, 2 * n, a.osl)
    by_id = {}
    for t in truth:
        h.check(t.get("request_id") and t["request_id"] not in by_id,
                f"truth entry without a request id, or twice: {t.get('request_id')}")
        by_id[t["request_id"]] = t
    seen, profiling_ids, lags, vals = set(), [], [], {}
    for s in shards:
        sj = h.ringperf_json(s["dir"])
        for rec in overhead.jsonl_records(s["dir"] / "profile_export.jsonl"):
            md = rec["metadata"]
            rid = md["x_request_id"]
            h.check(rid in by_id, f"record {rid} is not in the mocks' truth logs")
            h.check(rid not in seen, f"record {rid} twice in the shards' records")
            seen.add(rid)
            if md.get("benchmark_phase", "profiling") == "profiling":
                profiling_ids.append(rid)
                lags.append(md["request_start_ns"] - md["credit_issued_ns"])
        v = overhead.values(sj, s["dir"] / "profile_export.jsonl", truth)
        h.check(v["matched"] == s["n"],
                f"{s['dir'].name}: {v['matched']} of {s['n']} records matched to the truth")
        for k, x in v.items():
            if isinstance(x, list):
                vals.setdefault(k, []).extend(x)
    h.check(len(seen) == 2 * n, f"{len(seen)} records in the shards, {2 * n} at the mocks")
    h.check(len(profiling_ids) == n, f"{len(profiling_ids)} profiling records, not {n}")
    prof = [by_id[r] for r in profiling_ids]
    # Set up before the measured phase: every profiling request came on a connection that a
    # warmup request had used before it, and the mocks accepted one connection per stream.
    warm_conns = {(by_id[r]["mock"], by_id[r]["connection"]) for r in seen.difference(profiling_ids)}
    fresh = [t for t in prof if (t["mock"], t["connection"]) not in warm_conns]
    h.check(not fresh, f"{len(fresh)} profiling requests came on connections no warmup request "
                       "used (opened in the measured phase)")
    h.check(len(warm_conns) == n, f"the mocks accepted {len(warm_conns)} connections for {n} "
                                  "streams")
    overlap = overhead.max_overlap(prof)
    h.check(overlap == n, f"only {overlap} of {n} profiling streams were in flight at once")

    # ------------------------------------------------------------------ figures
    arrivals = sorted(t["arrival_ns"] for t in prof)
    first_end = min(t["end_ns"] for t in prof)
    all_open = arrivals[-1]  # every profiling stream open (and none ended: overlap == n)
    warm_ids = seen.difference(profiling_ids)
    warm_arrivals = sorted(by_id[r]["arrival_ns"] for r in warm_ids)
    last_end = max(t["end_ns"] for t in prof)

    # Each shard's RSS at the start instant: prepared, nothing sent yet (the last sample before).
    base = []
    for i in range(S):
        before = [v[f"rss{i}"] for ts, v in samples if ts <= start_mono and v.get(f"rss{i}")]
        h.check(before, f"shard {i}: no RSS sample before the start instant (a longer --lead-s)")
        base.append(before[-1])
    # The same in anonymous memory only (RssAnon): VmRSS also counts the binary's own pages
    # as the process touches them, and how many one fault maps depends on how much of the
    # file is in the page cache (a binary copied just before its run starts larger and grows
    # less), which a comparison of two binaries must not count as theirs.
    base_anon = sum([v[f"anon{i}"] for ts, v in samples if ts <= start_mono
                     and v.get(f"anon{i}")][-1] for i in range(S))
    streaming = [(ts, v) for ts, v in samples if start_mono <= ts <= last_end]
    h.check(streaming, "no RSS sample while streaming")

    def client_rss(v):
        return sum((v.get(f"rss{i}") or 0) for i in range(S))

    # While every warmup stream was open and none had ended: what N streams in flight hold,
    # before any request has completed (no records kept yet, no idle pooled connection).
    warm_open = max(by_id[r]["arrival_ns"] for r in warm_ids)
    warm_first_end = min(by_id[r]["end_ns"] for r in warm_ids)
    warm_window = [(ts, v) for ts, v in samples if warm_open <= ts <= warm_first_end
                   and all(v.get(f"rss{i}") for i in range(S))]
    h.check(warm_window, "no RSS sample while every warmup stream was open")
    warm_rss = max(client_rss(v) for _, v in warm_window)
    warm_anon = max(sum((v.get(f"anon{i}") or 0) for i in range(S)) for _, v in warm_window)
    warm_mock_rss = max(v["mock_rss"] for _, v in warm_window)
    in_window = [(ts, v) for ts, v in streaming
                 if all_open <= ts <= first_end and all(v.get(f"rss{i}") for i in range(S))]
    peak_rss = max(client_rss(v) for _, v in streaming if all(v.get(f"rss{i}")
                                                             for i in range(S)))
    base_sum = sum(base)
    in_flight_rss = max((client_rss(v) for _, v in in_window), default=None)
    mock_peak = max(v["mock_rss"] for _, v in streaming)

    # Worker CPU per event over the window in which every profiling stream was open.
    w0, w1 = all_open, first_end
    h.check(w1 - w0 >= 1e9, f"the all-open window is only {(w1 - w0) / 1e6:.0f} ms long: "
                            "a longer stream (--osl, --itl-ms) or a shorter --ramp-s")
    cpu_w = sum(at_time(samples, w1, f"cpu{i}") - at_time(samples, w0, f"cpu{i}")
                for i in range(S))
    mock_cpu_w = at_time(samples, w1, "mock_cpu") - at_time(samples, w0, "mock_cpu")
    ev_w = sum(1 for t in truth for e in t["event_ns"] if w0 <= e < w1)
    whole_worker_ns = 0
    for s in shards:
        th = h.ringperf_threads(h.ringperf_json(s["dir"]))
        whole_worker_ns += sum(ns for name, ns in th.items() if name.startswith("worker_"))
    health = mj.get("ringperf", {}).get("client_health", {})

    res = {
        "streams": n, "shards": S, "mocks": M, "osl": a.osl, "ttft_ms": a.ttft_ms,
        "itl_ms": a.itl_ms, "ramp_s": a.ramp_s, "load_start": load[0], "load_end": load[1],
        "warmup_open_all_s": (warm_arrivals[-1] - start_mono) / 1e9,
        "profiling_open_all_s": (arrivals[-1] - arrivals[0]) / 1e9,
        "all_open_window_s": (w1 - w0) / 1e9,
        "client_base_mib": base_sum / 1024,
        "client_peak_streaming_mib": peak_rss / 1024,
        "client_bytes_per_stream_peak": (peak_rss - base_sum) * 1024 / n,
        "client_bytes_per_stream_all_open": (None if in_flight_rss is None
                                             else (in_flight_rss - base_sum) * 1024 / n),
        "client_hwm_mib": sum(hwm) / 1024,
        "client_bytes_per_stream_in_flight": (warm_rss - base_sum) * 1024 / n,
        "client_anon_bytes_per_stream_in_flight": (warm_anon - base_anon) * 1024 / n,
        "mock_bytes_per_conn_in_flight": (warm_mock_rss - mock_rss0) * 1024 / n,
        "mock_bytes_per_conn_peak": (mock_peak - mock_rss0) * 1024 / n,
        "events_in_window": ev_w, "events_per_s_in_window": ev_w / ((w1 - w0) / 1e9),
        "worker_ns_per_event_window": cpu_w / max(1, ev_w),
        "mock_ns_per_event_window": mock_cpu_w / max(1, ev_w),
        "worker_ns_per_event_whole_run": whole_worker_ns / (2 * n * a.osl),
        "ttft_error_us": {"p50": pct_us(vals["ttft_overhead"], 50),
                          "p99": pct_us(vals["ttft_overhead"], 99)},
        "itl_error_us": {"p50": pct_us(vals["itl_overhead"], 50),
                         "p99": pct_us(vals["itl_overhead"], 99)},
        "event_recv_error_us": {"p50": pct_us(vals["event_recv_lag"], 50),
                                "p99": pct_us(vals["event_recv_lag"], 99)},
        "send_side_us": {"p50": pct_us(vals["send_side"], 50),
                         "p99": pct_us(vals["send_side"], 99)},
        "dispatch_lag_us": {"p50": pct_us(lags, 50), "p99": pct_us(lags, 99),
                            "max": max(lags) / 1e3},
        "health": ("PASS (kept up)" if health.get("kept_up") else
                   f"FAIL: {health.get('reasons')}"),
        "dispatch_lag_merged_ns": mj.get("ringperf", {}).get("dispatch_lag_ns"),
        "health_detail": health,
        "shard_rss_base_mib": [b / 1024 for b in base],
        # Seconds from the start instant, the shards' RSS and the mocks' (MiB), every ~1 s.
        "rss_timeline": [((ts - start_mono) / 1e9, client_rss(v) / 1024, v["mock_rss"] / 1024)
                         for k, (ts, v) in enumerate(samples) if k % 5 == 0],
    }
    return res


def report(r):
    print(f"100k-streams scenario: {r['streams']:,} streams, {r['shards']} shards, "
          f"{r['mocks']} mocks; OSL {r['osl']}, TTFT {r['ttft_ms']} ms, ITL {r['itl_ms']} ms, "
          f"ramp {r['ramp_s']} s; load average {r['load_start']} → {r['load_end']}")
    print("every request checked against the mocks' truth logs: PASS")
    print(f"time to open all streams: warmup (connects) {r['warmup_open_all_s']:.1f} s from the "
          f"start instant; profiling requests {r['profiling_open_all_s']:.1f} s first to last; "
          f"all open together for {r['all_open_window_s']:.1f} s")
    apk = r["client_bytes_per_stream_all_open"]
    print(f"client RSS per stream: {r['client_bytes_per_stream_in_flight']:,.0f} B with every "
          "stream in flight and none ended (warmup); with the warmup's records and pooled "
          f"connections: {r['client_bytes_per_stream_peak']:,.0f} B at the streaming peak"
          + (f", {apk:,.0f} B with all profiling streams open" if apk is not None else ""))
    print(f"  anonymous memory only (RssAnon, the binary's own pages left out): "
          f"{r['client_anon_bytes_per_stream_in_flight']:,.0f} B per stream in flight")
    print(f"  (shards' RSS at the start {r['client_base_mib']:.1f} MiB, streaming peak "
          f"{r['client_peak_streaming_mib']:.1f} MiB; high-water marks {r['client_hwm_mib']:.1f} MiB)")
    print(f"mock RSS per connection: {r['mock_bytes_per_conn_in_flight']:,.0f} B with every "
          f"stream in flight (warmup), {r['mock_bytes_per_conn_peak']:,.0f} B at the peak "
          "(with the truth log's entries)")
    print(f"worker CPU per event: {r['worker_ns_per_event_window']:,.0f} ns with all streams "
          f"open ({r['events_per_s_in_window']:,.0f} events/s); {r['worker_ns_per_event_whole_run']:,.0f} ns "
          f"over the whole run (warmup and connects included); mock "
          f"{r['mock_ns_per_event_window']:,.0f} ns per event")
    for k, name in (("ttft_error_us", "TTFT error"), ("itl_error_us", "ITL error"),
                    ("event_recv_error_us", "per-event receive error"),
                    ("send_side_us", "send side (start → mock's kernel stamp)"),
                    ("dispatch_lag_us", "dispatch lag")):
        print(f"{name}: p50 {r[k]['p50']:,.1f} µs, p99 {r[k]['p99']:,.1f} µs")
    print(f"client health (merged): {r['health']}")


def interrupted(*_):
    raise KeyboardInterrupt


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--streams", type=int, default=100_000)
    ap.add_argument("--shards", type=int)
    ap.add_argument("--mocks", type=int)
    ap.add_argument("--osl", type=int, default=8)
    ap.add_argument("--ttft-ms", type=int, default=4000)
    ap.add_argument("--itl-ms", type=int, default=4000)
    ap.add_argument("--ramp-s", type=float)
    ap.add_argument("--lead-s", type=float, default=5.0,
                    help="seconds from launching the shards to their common start instant")
    ap.add_argument("--timeout-margin-s", type=float, default=180.0)
    ap.add_argument("--mock-arg", action="append", default=[],
                    help="extra mock-server argument (repeat)")
    ap.add_argument("--client-arg", action="append", default=[],
                    help="extra ringperf profile argument (repeat)")
    ap.add_argument("--keep", type=Path, help="keep every artifact in this directory")
    ap.add_argument("--json", type=Path, help="also write the figures here")
    a = ap.parse_args()
    a.shards = a.shards or max(2, math.ceil(a.streams / PER_SHARD))
    a.mocks = a.mocks or max(2, math.ceil(a.streams / PER_MOCK))
    if a.ramp_s is None:
        a.ramp_s = max(1.0, a.streams / 5000)
    started = Started()
    # A SIGTERM (`timeout`) ends the run as a Ctrl-C does: through the cleanup below.
    signal.signal(signal.SIGTERM, interrupted)
    tmp = None
    if a.keep:
        out = a.keep
        out.mkdir(parents=True, exist_ok=True)
    else:
        tmp = tempfile.TemporaryDirectory(prefix="streams100k-")
        out = Path(tmp.name)
    try:
        r = run(a, out, started)
    except h.CheckFailed as e:
        print(f"FAILED: {e}")
        return 1
    finally:
        started.kill_all()
        if tmp:
            tmp.cleanup()
    report(r)
    if a.json:
        a.json.write_text(json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
