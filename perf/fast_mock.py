#!/usr/bin/env python3
"""Is the mock the limit? Mock CPU per token event against client CPU per event, paced one
event per TCP segment, with and without the mock's fast mode (`mock-server --fast`), alternated.

    RINGPERF_BIN=target/release/ringperf perf/fast_mock.py [--streams 1000 10000]
        [--rate 40000] [--tokens 20] [--rounds 3]

Each run: a fresh `ringperf mock-server` (pinned to MOCK_CORE, truth log on, `--fast` or not)
with TTFT = ITL = streams / rate, so the streams together ask for `rate` events per second, one
event per write; the client (`ringperf profile --streaming`, one worker, pinned to CLIENT_CORE)
runs `streams` concurrent requests of `tokens` tokens, `streams` requests in all. Per event:
the mock's CPU (schedstat of all its threads, read around the client run) and the client's CPU
(/usr/bin/time: the whole process, start-up included; and its worker thread alone, from
`ringperf.threads`), over the events the truth log says the mock wrote. Medians over the
rounds. One request before each run loads the mock's tokenizer (it counts prompts exactly),
which is not charged to the events. The rate the mock could sustain on its core is 1 / (its CPU per event): an upper bound
from the measured cost, printed as such (the client, which costs more per event, cannot load
the mock to that rate on this machine).
"""
import argparse
import http.client
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402  (perf/harness.py)


def warm_up():
    """One request before the measured run, so the mock's one-time work (its builtin tokenizer,
    loaded for exact prompt counts on the first request) is not charged to the events."""
    body = json.dumps({"model": "mock-model", "stream": True, "max_tokens": 1,
                       "messages": [{"role": "user", "content": "warm up"}]})
    c = http.client.HTTPConnection(h.HOST, h.PORT, timeout=30)
    c.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
    c.getresponse().read()
    c.close()


def one(out, streams, rate, tokens, fast):
    """One run: per-event ns of mock, client and client worker; the mock's busy fraction."""
    out.mkdir(parents=True)
    gap_ms = streams / rate * 1e3
    m = h.Mock(out, "mock", ttft_ms=gap_ms, itl_ms=gap_ms, tokens=tokens)
    if fast:
        m.cmd.append("--fast")
    with m:
        warm_up()
        cmd = h.ringperf_cmd(out, conc=streams, count=streams, streaming=True, osl=tokens)
        r = h.run_client(cmd, m, 600)
        truth = m.stop()
    h.check(r["rc"] == 0, f"exit {r['rc']}: {r['stderr'][-400:]}")
    truth = truth[1:]  # the warm-up request
    h.check_truth(truth, streams, tokens)
    events = sum(len(e["event_ns"]) for e in truth)
    j = h.ringperf_json(out)
    worker = h.worker_ns(h.ringperf_threads(j))
    return {
        "mock": r["mock_cpu_s"] * 1e9 / events,
        "client": r["cpu_s"] * 1e9 / events,
        "worker": worker / events,
        "mock_busy": r["mock_cpu_s"] / r["wall_s"],
        "events": events,
    }


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--rate", type=float, default=40000.0)
    ap.add_argument("--tokens", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    print(f"load average before: {h.load_line()}")
    print("| streams | mock | mock ns / event | client ns / event | client worker ns / event "
          "| client / mock | mock ceiling, events/s on one core |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for s in a.streams:
            runs = {False: [], True: []}
            for i in range(a.rounds):
                for fast in (False, True):
                    out = Path(tmp) / f"{s}-{int(fast)}-{i}"
                    runs[fast].append(one(out, s, a.rate, a.tokens, fast))
            for fast in (False, True):
                med = {k: statistics.median(r[k] for r in runs[fast]) for k in runs[fast][0]}
                print(f"| {s} | {'fast' if fast else 'normal'} | {med['mock']:.0f} "
                      f"| {med['client']:.0f} | {med['worker']:.0f} "
                      f"| {med['client'] / med['mock']:.1f}× | {1e9 / med['mock']:,.0f} |")
    print(f"load average after: {h.load_line()}")


if __name__ == "__main__":
    main()
