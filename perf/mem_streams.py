#!/usr/bin/env python3
"""Client memory per in-flight stream: peak RSS of ringperf holding N streams open at once.

    perf/mem_streams.py BINARY [BINARY...] [--streams 1000 10000] [--shapes short,long]
                        [--rounds 1] [--ttft-ms 3000]

For each shape, binary and stream count N (and a 1-stream baseline), one fresh mock
(`mock-server`, epoll driver, pinned to MOCK_CORE, truth log) and one ringperf run of N
streaming requests at concurrency N (`AIPERF_HTTP_CONNECTION_LIMIT=N`, so every stream has its
own connection), client pinned to CLIENT_CORE. The mock answers after `--ttft-ms`, so every
stream is open at once; its truth log must show N requests in flight together, or the run is
refused. Shapes: `short`, 10 tokens 10 ms apart; `long`, 1,000 tokens written at once after the
TTFT (a burst: ~200 KB a response).

Per run, from `VmRSS` and `VmHWM` read every 5 ms from /proc: the client's peak RSS (its
high-water mark over the whole run, the end-of-run statistics included), its RSS while every stream waits
for its first token (read at 80 % of the TTFT), and its streaming peak (the highest reading
until the last response ended, by the records' own `request_end_ns`). Per binary and shape,
bytes per stream = (figure at N - figure at 1) / N, and marginal bytes per stream between two
stream counts = (figure at N2 - at N1) / (N2 - N1) (the issue's figure: fixed costs cancel).

The whole-run peak is the end-of-run statistics' when responses are long: AIPerf's sweep-line
metrics build step functions from every inter-chunk latency of every record. The streaming
peak is what streams in flight hold, with what the run keeps per completed request while they
stream (the exact statistics' columns: one inter-chunk latency per event). Every run is checked as perf/run.sh checks it (exit 0, every
request completed without error, usage tokens, and the prompts counted by Python tiktoken: set
TIKTOKEN_PYTHON and TIKTOKEN_CACHE_DIR as perf/run.sh does). Binaries alternate run by run.
"""
import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402  (perf/harness.py)
import overhead  # noqa: E402  (perf/overhead.py)

SHAPES = {"short": {"itl_ms": 10, "tokens": 10}, "long": {"itl_ms": 0, "tokens": 1000}}


def vm_kib(pid):
    """(VmRSS, VmHWM) of `pid` in KiB, or None (gone, or a zombie without an address space).

    VmHWM is the resident high-water mark of the process's own address space since its exec;
    wait4's ru_maxrss is not used: it also counts the pages of the parent's copy that the child
    held between fork and exec (this script's, hundreds of MB after a large truth log)."""
    got = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    got[line[:5]] = int(line.split()[1])
    except OSError:
        return None
    return (got["VmRSS"], got["VmHWM"]) if len(got) == 2 else None


def run(binary, shape, n, out, ttft_ms, timeout_s):
    """One run of `n` streams of `shape`; returns its figures (raises CheckFailed)."""
    h.RINGPERF = binary
    s = SHAPES[shape]
    name = f"{Path(binary).name}-{shape}-{n}"
    d = out / name
    with h.Mock(out, name, ttft_ms=ttft_ms, itl_ms=s["itl_ms"], tokens=s["tokens"],
                io_driver="legacy") as m:
        cmd = ["taskset", "-c", h.CLIENT_CORE] + h.ringperf_cmd(
            d, conc=n, count=n, streaming=True, osl=s["tokens"])
        env = dict(os.environ, AIPERF_HTTP_CONNECTION_LIMIT=str(n))
        err_path = out / f"{name}.client.err"
        with open(err_path, "wb") as err:
            t0 = time.monotonic()
            p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=err, env=env,
                                 start_new_session=True)
            waiting_kib = None
            hwm_kib = 0
            series = []  # (wall-clock ns, VmRSS KiB)
            at = t0 + 0.8 * ttft_ms / 1000
            # Reaped here, never by Popen; VmRSS and VmHWM read every 5 ms, and VmRSS once
            # while every stream waits for its first token.
            while True:
                pid, status, _ = os.wait4(p.pid, os.WNOHANG)
                if pid == p.pid:
                    break
                vm = vm_kib(p.pid)
                rss = vm[0] if vm else None
                if vm:
                    series.append((time.time_ns(), vm[0]))
                    hwm_kib = max(hwm_kib, vm[1])
                if waiting_kib is None and time.monotonic() >= at:
                    waiting_kib = rss
                if time.monotonic() - t0 > timeout_s:
                    os.killpg(p.pid, signal.SIGKILL)
                    os.wait4(p.pid, 0)
                    p.returncode = -9
                    raise h.CheckFailed(f"timed out after {timeout_s} s: {name}")
                time.sleep(0.005)
            p.returncode = os.waitstatus_to_exitcode(status)
        truth = m.stop()
    r = {"rc": p.returncode, "stderr": err_path.read_text(errors="replace")}
    h.check_ringperf(r, d, n, s["tokens"])
    h.check_truth(truth, n, s["tokens"])
    overlap = overhead.max_overlap(truth)
    h.check(overlap == n, f"{overlap} of {n} streams were in flight at once at the mock")
    last_arrival_ms = (max(t["arrival_ns"] for t in truth)
                       - min(t["arrival_ns"] for t in truth)) / 1e6
    h.check(waiting_kib is not None, f"{name} ended before its RSS was read while waiting")
    # Until the last response ended (the records' own wall-clock stamps): the streams' time,
    # before the end-of-run statistics.
    with open(d / "profile_export.jsonl") as f:
        last_end = max(json.loads(line)["metadata"]["request_end_ns"] for line in f)
    streaming = [rss for t, rss in series if t <= last_end]
    h.check(streaming, f"{name}: no RSS sample before the last response ended")
    return {"peak_kib": hwm_kib, "waiting_kib": waiting_kib,
            "streaming_peak_kib": max(streaming),
            "in_flight": overlap, "arrivals_span_ms": last_arrival_ms}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--streams", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--shapes", default="short,long")
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--ttft-ms", type=int, default=3000)
    ap.add_argument("--timeout-s", type=int, default=600)
    a = ap.parse_args()
    shapes = a.shapes.split(",")
    counts = [1] + sorted(a.streams)
    load = [h.load_line()]
    res = {}
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        for rnd in range(a.rounds):
            for shape in shapes:
                for n in counts:
                    order = a.binaries if rnd % 2 == 0 else a.binaries[::-1]
                    for b in order:
                        r = run(b, shape, n, out, a.ttft_ms, a.timeout_s)
                        res.setdefault((b, shape, n), []).append(r)
                        h.log(f"{b} {shape} n={n}: {json.dumps(r)}")
    load.append(h.load_line())
    print(f"load average {load[0]} at the start, {load[1]} at the end")
    print()
    print("| shape | binary | streams | peak RSS MiB | RSS waiting MiB | RSS streaming MiB "
          "| peak B / stream | waiting B / stream | streaming B / stream "
          "| marginal peak B / stream | marginal streaming B / stream |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for shape in shapes:
        for b in a.binaries:
            def med(n, key):
                return statistics.median(r[key] for r in res[(b, shape, n)])
            def per(n, key):
                return f"{(med(n, key) - med(1, key)) * 1024 / n:,.0f}"

            def marginal(i, key):
                n, prev = counts[i], counts[i - 1]
                if prev == 1:
                    return "—"
                return f"{(med(n, key) - med(prev, key)) * 1024 / (n - prev):,.0f}"
            for i, n in enumerate(counts):
                cells = [f"{med(n, k) / 1024:.1f}"
                         for k in ("peak_kib", "waiting_kib", "streaming_peak_kib")]
                if n == 1:
                    cells += ["—"] * 5
                else:
                    cells += [per(n, k) for k in ("peak_kib", "waiting_kib", "streaming_peak_kib")]
                    cells += [marginal(i, "peak_kib"), marginal(i, "streaming_peak_kib")]
                print(f"| {shape} | {Path(b).name} | {n:,} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
