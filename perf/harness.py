#!/usr/bin/env python3
"""ringperf end-to-end scenarios (called by perf/run.sh, which installs the peers).

The mock server runs pinned to MOCK_CORE, the client under test pinned to CLIENT_CORE. Every
client run is checked for correctness (request count, zero errors, token counts, the mock's
truth log, ringperf's prompts counted independently by Python tiktoken) before any figure is
reported; a run that fails a check is reported as FAILED with the reason, never as a number.
The mock's own CPU time is measured around every run; when it was busy >= 90% of the wall time,
the scenario's limit is the mock's, and the table says so.

Standard library only; the independent prompt count runs perf/prompt_tokens.py under an
interpreter with tiktoken (see tiktoken_python). All traffic goes to 127.0.0.1.
"""

import argparse
import json
import math
import os
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import overhead  # noqa: E402  (perf/overhead.py)

RINGPERF = os.environ.get("RINGPERF_BIN", "ringperf")
WRK = os.environ.get("WRK_BIN")
OHA = os.environ.get("OHA_BIN")
AIPERF = os.environ.get("AIPERF_BIN")
MOCK_CORE = os.environ.get("MOCK_CORE", "0")
CLIENT_CORE = os.environ.get("CLIENT_CORE", "1")
PORT = int(os.environ.get("PERF_PORT", "18480"))
HOST = "127.0.0.1"
URL = f"http://{HOST}:{PORT}"
MOCK_SATURATED = 0.90

# Prompt length of every ringperf run but the start-up scenario's (synthetic prompts).
ISL = 8

# A tiny chat request, the same for every peer (ringperf sends --isl 8 synthetic prompts).
TINY_BODY = json.dumps(
    {
        "model": "mock-model",
        "messages": [{"role": "user", "content": "hello there from the perf harness"}],
        "max_completion_tokens": 1,
        "stream": False,
    },
    separators=(",", ":"),
)


def log(msg):
    print(f"[perf] {msg}", file=sys.stderr, flush=True)


class CheckFailed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise CheckFailed(what)


def load_line():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def schedstat_ns(pid):
    """On-CPU ns of every thread of `pid` (exact, from the scheduler)."""
    total = 0
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                    total += int(f.read().split()[0])
            except OSError:
                pass
    except OSError:
        pass
    return total


class Mock:
    """`ringperf mock-server` pinned to MOCK_CORE, with a truth log."""

    def __init__(self, outdir, name, ttft_ms=0, itl_ms=0, tokens=1, core=None, io_driver=None):
        core = core or MOCK_CORE
        self.truth_path = Path(outdir) / f"{name}.truth.jsonl"
        self.cmd = [
            "taskset", "-c", core, RINGPERF, "mock-server",
            "--bind", f"{HOST}:{PORT}", "--pin-cores", core,
            "--mock-ttft-ms", str(ttft_ms), "--mock-itl-ms", str(itl_ms),
            "--mock-output-tokens", str(tokens), "--truth-log", str(self.truth_path),
        ] + (["--io-driver", io_driver] if io_driver else [])
        self.err = open(Path(outdir) / f"{name}.mock.err", "w")
        self.proc = None

    def __enter__(self):
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=self.err)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                socket.create_connection((HOST, PORT), timeout=0.2).close()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"mock exited: see {self.err.name}")
                time.sleep(0.05)
        raise RuntimeError("mock did not start listening within 10 s")

    def cpu_ns(self):
        return schedstat_ns(self.proc.pid)

    def stop(self):
        """Stops the mock and returns its truth log (list of dicts)."""
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.err.close()
        entries = []
        if self.truth_path.exists():
            with open(self.truth_path) as f:
                entries = [json.loads(line) for line in f if line.strip()]
            self.truth_path.unlink()  # large; the figures derived from it are kept
        return entries

    def __exit__(self, *exc):
        if self.proc and self.proc.poll() is None:
            self.stop()


def run_client(cmd, mock, timeout_s, env=None, cores=None):
    """Runs `cmd` pinned to `cores` (a taskset list; default CLIENT_CORE) under /usr/bin/time,
    measuring the mock around it."""
    with tempfile.NamedTemporaryFile("r", suffix=".time") as tf:
        full = ["/usr/bin/time", "-f", "%c %w %e %U %S %M", "-o", tf.name,
                "taskset", "-c", cores or CLIENT_CORE] + cmd
        m0 = mock.cpu_ns() if mock else 0
        t0 = time.monotonic()
        p = subprocess.Popen(full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=env, start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)  # its own session: the client and its children
            p.communicate()
            raise CheckFailed(f"timed out after {timeout_s} s: {' '.join(cmd[:3])}")
        wall = time.monotonic() - t0
        m1 = mock.cpu_ns() if mock else 0
        fields = tf.read().split()
    try:
        ics, vcs = int(fields[-6]), int(fields[-5])
        e, u, s, rss = float(fields[-4]), float(fields[-3]), float(fields[-2]), int(fields[-1])
    except (IndexError, ValueError):
        ics = vcs = -1
        e, u, s, rss = wall, float("nan"), float("nan"), 0
    return {
        "rc": p.returncode, "stdout": out, "stderr": err, "wall_s": e, "cpu_s": u + s,
        "user_s": u, "sys_s": s, "maxrss_kib": rss, "involuntary_cs": ics, "voluntary_cs": vcs, "mock_cpu_s": (m1 - m0) / 1e9,
    }


def mock_note(r, busy_wall_s):
    frac = r["mock_cpu_s"] / busy_wall_s if busy_wall_s > 0 else 0.0
    return frac, ("MOCK-LIMITED" if frac >= MOCK_SATURATED else "")


# --------------------------------------------------------------------------------- ringperf
def ringperf_cmd(outdir, conc=None, count=None, streaming=False, osl=1, rate=None,
                 extra=(), workers=1, timestamps=None, entries=100):
    """`workers=None` leaves the worker count at ringperf's default (one per core of its
    affinity set); `timestamps` is `kernel` or `user` (`None`: the default, kernel)."""
    cmd = [RINGPERF, "profile", "-m", "mock-model", "--url", URL, "--endpoint-type", "chat",
           "--tokenizer", "builtin", "--isl", str(ISL), "--osl", str(osl),
           "--ui", "none", "--random-seed", "1", "--output-artifact-dir", str(outdir),
           # Server-metrics collection is on by default and the mock serves /metrics: off,
           # like AIPerf's --no-server-metrics below, so a scraper thread does not share the
           # client core and the figures stay comparable with earlier runs.
           "--no-server-metrics",
           # AIPerf 0.13's rule builds one synthetic conversation per request (the dataset size
           # defaults to --request-count); 100 distinct prompts, as before that rule, keeps
           # start-up out of the per-request CPU figures.
           "--num-dataset-entries", str(entries)]
    if workers is not None:
        cmd += ["--workers-max", str(workers)]
    if timestamps is not None:
        cmd += ["--timestamps", timestamps]
    if streaming:
        cmd.append("--streaming")
    if conc is not None:
        cmd += ["--concurrency", str(conc)]
    if count is not None:
        cmd += ["--request-count", str(count)]
    if rate is not None:
        cmd += ["--request-rate", str(rate), "--arrival-pattern", "constant"]
    return cmd + list(extra)


def ringperf_json(outdir):
    return json.loads((Path(outdir) / "profile_export_aiperf.json").read_text())


class CpuFigureRefused(CheckFailed):
    """A ringperf run's per-thread CPU figure is missing or zero: no per-event figure is derived
    from it, and the harness exits non-zero at the end."""


REFUSED = []


def ringperf_threads(j):
    """Each ringperf thread's CPU ns, from the summary JSON's `ringperf.threads` (every thread
    reads its own CLOCK_THREAD_CPUTIME_ID as it ends, so nothing is lost to sampling): a dict
    name -> ns (`main`, `aggregator`, `scraper`, `worker_<i>`). Refuses a missing list, a missing
    or zero worker or aggregator figure, and any zero entry."""
    threads = j.get("ringperf", {}).get("threads")
    try:
        if not threads:
            raise CpuFigureRefused("ringperf.threads missing from the summary JSON")
        out = {t["name"]: t["cpu_ns"] for t in threads}
        zero = [n for n, ns in out.items() if not isinstance(ns, int) or ns <= 0]
        if zero:
            raise CpuFigureRefused(f"zero or missing CPU time for thread(s) {zero}")
        if not any(n.startswith("worker_") for n in out) or "aggregator" not in out:
            raise CpuFigureRefused(f"no worker or aggregator CPU time in {sorted(out)}")
    except CpuFigureRefused as e:
        REFUSED.append(str(e))
        raise
    return out


class LagFigureRefused(CheckFailed):
    """A kernel-stamped ringperf run without a receive-lag figure: refused like a CPU figure."""


def receive_lag_us(j):
    """`ringperf.receive_lag_ns` of a `--timestamps kernel` run as µs: {p50, p99, max, count}.
    Refuses (and the harness exits non-zero) a missing or null block, a zero count, a missing
    or negative value, or a zero median (user-space minus kernel stamp is never 0 when the
    kernel stamped the reads)."""
    lag = j.get("ringperf", {}).get("receive_lag_ns")
    try:
        if not lag:
            raise LagFigureRefused("ringperf.receive_lag_ns missing or null in a kernel-stamp run")
        if not isinstance(lag.get("count"), int) or lag["count"] <= 0:
            raise LagFigureRefused(f"receive lag over no events: {lag}")
        vals = [lag.get(k) for k in ("p50", "p99", "max")]
        if any(not isinstance(v, (int, float)) or v < 0 for v in vals) or vals[0] == 0:
            raise LagFigureRefused(f"zero or missing receive lag figure: {lag}")
    except LagFigureRefused as e:
        REFUSED.append(str(e))
        raise
    return {"p50_us": vals[0] / 1e3, "p99_us": vals[1] / 1e3, "max_us": vals[2] / 1e3,
            "count": lag["count"]}


def check_ringperf(r, outdir, n, tokens, isl=ISL):
    check(r["rc"] == 0, f"ringperf exit {r['rc']}: {r['stderr'][-400:]}")
    d = ringperf_json(outdir)
    check(d["completed_request_count"]["avg"] == n,
          f"completed {d['completed_request_count']['avg']} != {n}")
    check(d["error_summary"] == [], f"errors: {d['error_summary']}")
    check(d["total_usage_completion_tokens"]["avg"] == n * tokens,
          f"usage completion tokens {d['total_usage_completion_tokens']['avg']} != {n * tokens}")
    # The mock counts usage.prompt_tokens with ringperf's own tokenizer and payload-text code,
    # so these two agree by construction: a consistency check only. The independent check is
    # check_prompt_tokens (Python tiktoken on the prompts sent), below.
    isl_sum = d.get("input_sequence_length", {}).get("sum")
    check(isl_sum is not None and d["total_usage_prompt_tokens"]["avg"] == isl_sum,
          f"usage prompt tokens {d['total_usage_prompt_tokens']['avg']} != ISL sum {isl_sum}")
    check(d.get("usage_discrepancy_count", {}).get("avg", 0) == 0,
          f"usage discrepancies: {d.get('usage_discrepancy_count')}")
    check_prompt_tokens(outdir, isl)
    return d


PROMPT_TOKENS_PY = HERE / "prompt_tokens.py"


def tiktoken_python():
    """An interpreter that has tiktoken: $TIKTOKEN_PYTHON, else the AIPerf venv's."""
    if os.environ.get("TIKTOKEN_PYTHON"):
        return os.environ["TIKTOKEN_PYTHON"]
    if AIPERF and (Path(AIPERF).parent / "python").exists():
        return str(Path(AIPERF).parent / "python")
    return None


def check_prompt_tokens(outdir, isl):
    """Counts every prompt ringperf sent (its inputs.json) with Python tiktoken o200k_base
    (perf/prompt_tokens.py, none of ringperf's code) and checks, request by request, that the
    count is the ISL asked for and that ringperf's reported ISL and the mock's
    usage.prompt_tokens both equal it. Without tiktoken the run fails: a run whose prompts were
    not counted independently is not reported."""
    py = tiktoken_python()
    check(py is not None, "no Python with tiktoken to count the prompts independently "
                          "(set TIKTOKEN_PYTHON, or let perf/run.sh install AIPerf)")
    inputs = Path(outdir) / "inputs.json"
    try:
        p = subprocess.run([py, str(PROMPT_TOKENS_PY), str(inputs)], capture_output=True,
                           text=True, timeout=300)
    except subprocess.TimeoutExpired:
        raise CheckFailed("independent prompt count (tiktoken) timed out")
    check(p.returncode == 0, f"independent prompt count (tiktoken) failed: {p.stderr[-400:]}")
    counts = json.loads(p.stdout)
    check(counts, f"no prompts in {inputs}")
    off = sorted((n, sid) for sid, n in counts.items() if n != isl)
    check(not off, f"PROMPT TOKENS: tiktoken counts {len(off)} of {len(counts)} prompts sent "
                   f"!= ISL {isl}, e.g. {off[:3]}")
    seen, bad = 0, []
    with open(Path(outdir) / "profile_export.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r.get("error"):
                continue
            seen += 1
            cid = r["metadata"]["conversation_id"]
            m = r["metrics"]
            got = (m.get("input_sequence_length", {}).get("value"),
                   m.get("usage_prompt_tokens", {}).get("value"))
            want = counts.get(cid)
            if want is None or got != (want, want):
                bad.append((cid, want, got))
    check(seen > 0, "no successful records to compare with the tiktoken counts")
    check(not bad, f"PROMPT TOKENS: {len(bad)} of {seen} records disagree with tiktoken, as "
                   f"(conversation, tiktoken, (ringperf ISL, usage.prompt_tokens)): {bad[:3]}")


def check_truth(truth, n, tokens, exact=True):
    if exact:
        check(len(truth) == n, f"mock served {len(truth)} requests, expected {n}")
    check(all(t["completed"] for t in truth), "the mock saw an incomplete response")
    bad = [t for t in truth if t["content_tokens"] != tokens]
    check(not bad, f"{len(bad)} responses with content_tokens != {tokens}")


# -------------------------------------------------------------------------------- scenarios
def scenario_nonstream(out, quick):
    """Non-streaming, 1-token responses, keep-alive, closed loop: ringperf vs wrk vs oha."""
    rows = []
    concs = [16, 64] if quick else [1, 16, 64, 256]
    for c in concs:
        n = (20_000 if c == 1 else 100_000) // (4 if quick else 1)
        # ringperf
        row = {"concurrency": c}
        d = out / f"nonstream-ringperf-c{c}"
        with Mock(out, d.name, tokens=1) as m:
            r = run_client(ringperf_cmd(d, conc=c, count=n), m, 300)
            truth = m.stop()
        try:
            j = check_ringperf(r, d, n, 1)
            check_truth(truth, n, 1)
            dur = j["benchmark_duration"]["avg"]
            frac, note = mock_note(r, dur)
            th = ringperf_threads(j)
            steady = (worker_ns(th) + th["aggregator"]) / 1e9
            row["ringperf"] = {
                "requests": n, "req_per_s": n / dur, "cpu_s": r["cpu_s"],
                "cpu_s_per_1k": r["cpu_s"] / n * 1000, "mock_busy": frac, "note": note,
                "steady_cpu_s_per_1k": steady / n * 1000, "threads_cpu_ns": th,
                "user_s": r["user_s"], "sys_s": r["sys_s"], "involuntary_cs": r["involuntary_cs"],
                "wall_s": r["wall_s"], "maxrss_kib": r["maxrss_kib"],
            }
        except CheckFailed as e:
            row["ringperf"] = {"failed": str(e)}
            dur = 3.0
        secs = max(2, round(dur))
        # wrk
        if WRK:
            lua = out / "post.lua"
            lua.write_text(
                'wrk.method = "POST"\n'
                'wrk.headers["Content-Type"] = "application/json"\n'
                f"wrk.body = {json.dumps(TINY_BODY)}\n")
            name = f"nonstream-wrk-c{c}"
            with Mock(out, name, tokens=1) as m:
                r = run_client([WRK, "-t1", f"-c{c}", f"-d{secs}s", "-s", str(lua),
                                f"{URL}/v1/chat/completions"], m, secs + 60)
                truth = m.stop()
            (out / f"{name}.out").write_text(r["stdout"] + r["stderr"])
            try:
                check(r["rc"] == 0, f"wrk exit {r['rc']}")
                mm = re.search(r"(\d+) requests in ([\d.]+)(m?s)", r["stdout"])
                check(mm is not None, "no request count in wrk output")
                got = int(mm.group(1))
                span = float(mm.group(2)) / (1000 if mm.group(3) == "ms" else 1)
                check("Non-2xx" not in r["stdout"], "wrk saw non-2xx responses")
                check("Socket errors" not in r["stdout"], "wrk saw socket errors")
                check(got <= len(truth) <= got + c,
                      f"wrk counted {got}, mock served {len(truth)}")
                check_truth(truth, len(truth), 1, exact=False)
                frac, note = mock_note(r, span)
                row["wrk"] = {
                    "requests": got, "req_per_s": got / span, "cpu_s": r["cpu_s"],
                    "cpu_s_per_1k": r["cpu_s"] / len(truth) * 1000, "mock_busy": frac,
                    "note": note,
                }
            except CheckFailed as e:
                row["wrk"] = {"failed": str(e)}
        # oha
        if OHA:
            name = f"nonstream-oha-c{c}"
            with Mock(out, name, tokens=1) as m:
                r = run_client([OHA, "-n", str(n), "-c", str(c), "-m", "POST",
                                "-H", "Content-Type: application/json", "-d", TINY_BODY,
                                "--no-tui", "--output-format", "json",
                                f"{URL}/v1/chat/completions"], m, 300)
                truth = m.stop()
            (out / f"{name}.out").write_text(r["stdout"] + r["stderr"])
            try:
                check(r["rc"] == 0, f"oha exit {r['rc']}: {r['stderr'][-300:]}")
                o = json.loads(r["stdout"])
                codes = o.get("statusCodeDistribution", {})
                check(codes == {"200": n}, f"oha status codes {codes}")
                check(not o.get("errorDistribution"), f"oha errors {o.get('errorDistribution')}")
                check_truth(truth, n, 1)
                span = o["summary"]["total"]
                frac, note = mock_note(r, span)
                row["oha"] = {
                    "requests": n, "req_per_s": n / span, "cpu_s": r["cpu_s"],
                    "cpu_s_per_1k": r["cpu_s"] / n * 1000, "mock_busy": frac, "note": note,
                }
            except (CheckFailed, ValueError, KeyError) as e:
                row["oha"] = {"failed": str(e)}
        rows.append(row)
        log(f"nonstream c={c}: {json.dumps(row)}")
    return rows


def scenario_stream(out, quick):
    """Streaming chat, 100 SSE events per response: ringperf vs AIPerf 0.13.

    Two pacings: `paced` (1 ms ITL, each event its own write, so each its own read) and
    `burst` (0 ms ITL: the mock sends the whole stream in one write, so the client's cost is
    framing and parsing, not wake-ups). Each client runs twice (n and n/4 requests) so the
    per-request and per-event CPU is the marginal cost, free of start-up; the total of the
    larger run is reported too.
    """
    return {pacing: stream_case(out, quick, pacing, itl)
            for pacing, itl in [("paced", 1), ("burst", 0)]}


def stream_case(out, quick, pacing, itl):
    c = 32
    ns = [640, 160] if quick else [2000, 500]
    res = {"concurrency": c, "events_per_response": 100, "mock_itl_ms": itl}
    for client in ["ringperf", "aiperf"]:
        if client == "aiperf" and not AIPERF:
            res[client] = {"skipped": "AIPerf not installed"}
            continue
        runs = []
        try:
            for n in ns:
                d = out / f"stream-{pacing}-{client}-n{n}"
                with Mock(out, d.name, ttft_ms=0, itl_ms=itl, tokens=100) as m:
                    if client == "ringperf":
                        r = run_client(ringperf_cmd(d, conc=c, count=n, streaming=True, osl=100),
                                       m, 600)
                    else:
                        r = run_client(aiperf_cmd(d, c, n), m, 900)
                    truth = m.stop()
                (out / f"{d.name}.out").write_text(r["stdout"][-5000:] + r["stderr"][-5000:])
                if client == "ringperf":
                    j = check_ringperf(r, d, n, 100)
                    r["threads_cpu_ns"] = ringperf_threads(j)
                else:
                    j = check_aiperf(r, d, n, 100)
                check_truth(truth, n, 100)
                # Events the client saw: 100 token events per response (the truth log stamps
                # coalesced events once per write, so count tokens, one per event).
                events = sum(t["content_tokens"] for t in truth)
                dur = j["benchmark_duration"]["avg"]
                frac, note = mock_note(r, dur)
                runs.append({"n": n, "events": events, "dur_s": dur, "cpu_s": r["cpu_s"],
                             "threads_cpu_ns": r.get("threads_cpu_ns", {}), "mock_busy": frac,
                             "note": note, "maxrss_kib": r["maxrss_kib"]})
            big, small = runs
            dn, de = big["n"] - small["n"], big["events"] - small["events"]
            dcpu = big["cpu_s"] - small["cpu_s"]
            res[client] = {
                "runs": runs,
                "req_per_s": big["n"] / big["dur_s"], "events_per_s": big["events"] / big["dur_s"],
                "cpu_s_per_1k_total": big["cpu_s"] / big["n"] * 1000,
                "cpu_us_per_req_marginal": dcpu / dn * 1e6,
                "cpu_ns_per_event_marginal": dcpu / de * 1e9,
            }
            if client == "ringperf":
                w = [worker_ns(r["threads_cpu_ns"]) for r in runs]
                a = [r["threads_cpu_ns"]["aggregator"] for r in runs]
                res[client]["worker_ns_per_event"] = w[0] / big["events"]
                res[client]["worker_ns_per_event_marginal"] = (w[0] - w[1]) / de
                res[client]["aggregator_ns_per_event"] = a[0] / big["events"]
                res[client]["steady_cpu_s_per_1k"] = (w[0] + a[0]) / 1e9 / big["n"] * 1000
        except CheckFailed as e:
            res[client] = {"failed": str(e), "runs": runs}
        log(f"stream {pacing} {client}: {json.dumps(res[client])}")
    return res


def worker_ns(threads):
    """CPU ns of the worker threads (`worker_<i>` in `ringperf.threads`)."""
    return sum(ns for name, ns in threads.items() if name.startswith("worker_"))


def aiperf_cmd(outdir, conc, n):
    return [AIPERF, "profile", "-m", "mock-model", "--url", URL, "--endpoint-type", "chat",
            "--streaming", "--concurrency", str(conc), "--request-count", str(n),
            "--tokenizer", "builtin", "--isl", "8", "--osl", "100", "--random-seed", "1",
            "--num-dataset-entries", "100", "--ui-type", "none", "--no-server-metrics", "--no-gpu-telemetry",
            "--artifact-dir", str(outdir)]


def check_aiperf(r, outdir, n, tokens):
    check(r["rc"] == 0, f"aiperf exit {r['rc']}: {r['stderr'][-600:]}")
    files = list(Path(outdir).rglob("profile_export_aiperf.json"))
    check(files, "AIPerf wrote no profile_export_aiperf.json")
    d = json.loads(files[0].read_text())
    check(d["request_count"]["avg"] == n, f"AIPerf request_count {d['request_count']} != {n}")
    check(not d.get("error_summary"), f"AIPerf errors: {d.get('error_summary')}")
    tot = d.get("total_usage_completion_tokens", {}).get("avg")
    if tot is not None:
        check(tot == n * tokens, f"AIPerf usage completion tokens {tot} != {n * tokens}")
    return d


def scenario_overhead(out, quick):
    """TTFT / ITL client overhead against the mock's truth log (#13 (a), (b)).

    At c = 1 and c = 256 each case runs twice on the same mock settings, `--timestamps kernel`
    and `--timestamps user`, so the two stamps are compared side by side; c = 1000 runs with
    kernel stamps only (its figure is the c = 1000 TTFT goal's). Every kernel-stamped row also
    carries the run's own `ringperf.receive_lag_ns` (user-space minus kernel stamp), the
    receive-lag table at c = 1, 256, 1000.
    """
    res = []
    # (concurrency, requests, mock TTFT ms, mock ITL ms, tokens, stamps)
    cases = [(1, 200, 2, 2, 10), (256, 5_000, 20, 10, 10), (1000, 10_000, 20, 10, 10)]
    if quick:
        cases = [(1, 100, 2, 2, 10), (256, 2_000, 20, 10, 10), (1000, 4_000, 20, 10, 10)]
    for c, n, ttft, itl, tokens in cases:
        for stamps in (["kernel"] if c == 1000 else ["kernel", "user"]):
            res.append(overhead_run(out, c, n, ttft, itl, tokens, stamps))
            log(f"overhead c={c} {stamps}: {json.dumps(res[-1])}")
    return res


def overhead_run(out, c, n, ttft, itl, tokens, stamps):
    d = out / f"overhead-c{c}-{stamps}"
    # A warmup of one request per slot opens every connection first, so the profiled
    # requests measure the request path, not the mock's accept queue.
    with Mock(out, d.name, ttft_ms=ttft, itl_ms=itl, tokens=tokens) as m:
        r = run_client(ringperf_cmd(d, conc=c, count=n, streaming=True, osl=tokens,
                                    timestamps=stamps,
                                    extra=["--warmup-request-count", str(c)]), m, 600)
        truth = m.stop()
    try:
        j = check_ringperf(r, d, n, tokens)
        check_truth(truth, n + c, tokens)
        check(j.get("ringperf", {}).get("timestamps") == stamps,
              f"ringperf.timestamps is {j.get('ringperf', {}).get('timestamps')!r}, "
              f"asked for {stamps}")
        o = overhead.compute(j, d / "profile_export.jsonl", truth)
        check(o["matched"] == n, f"matched {o['matched']} of {n} records to the truth log")
        if stamps == "kernel":
            o["receive_lag"] = receive_lag_us(j)
        frac, note = mock_note(r, j["benchmark_duration"]["avg"])
        o.update({"involuntary_cs": r["involuntary_cs"], "user_s": r["user_s"],
                  "sys_s": r["sys_s"]})
        o.update({"concurrency": c, "timestamps": stamps, "requests": n, "mock_ttft_ms": ttft,
                  "mock_itl_ms": itl, "tokens": tokens, "mock_busy": frac, "note": note})
        return o
    except CheckFailed as e:
        return {"concurrency": c, "timestamps": stamps, "failed": str(e)}


def scenario_openloop(out, quick):
    """Open loop, constant arrivals, non-streaming 1-token responses, rate doubled up."""
    res = []
    rates = [1000, 2000, 5000, 10000, 20000, 40000, 80000, 160000]
    secs = 1 if quick else 2
    for rate in rates:
        row = openloop_run(out, rate, max(2000, rate * secs))
        res.append(row)
        log(f"openloop {json.dumps(row)}")
        if row.get("ratio", 0) < 0.99:
            break
    if len(res) == 1 and res[0].get("ratio", 0) < 0.99:
        # Falls short at the first rate: probe downward for where the schedule is still met.
        for rate in [500, 250, 100]:
            row = openloop_run(out, rate, max(500, rate * secs * 2))
            res.append(row)
            log(f"openloop probe {json.dumps(row)}")
            if row.get("ratio", 0) >= 0.99:
                break
    return res


def openloop_run(out, rate, n):
    d = out / f"openloop-r{rate}"
    with Mock(out, d.name, tokens=1) as m:
        r = run_client(ringperf_cmd(d, count=n, rate=rate), m, 120)
        truth = m.stop()
    try:
        j = check_ringperf(r, d, n, 1)
        check_truth(truth, n, 1)
        # Achieved send rate: requests over the span from the first intended send time
        # (credit_issued_ns) to the last actual send; a client that falls behind stretches
        # the span. (n - 1) intervals in a constant schedule of n sends.
        pairs = overhead.jsonl_starts(d / "profile_export.jsonl")
        span_ns = max(s for _, s in pairs) - min(i for i, _ in pairs)
        achieved = (len(pairs) - 1) / (span_ns / 1e9)
        lag = j["ringperf"]["dispatch_lag_ns"]
        dur = j["benchmark_duration"]["avg"]
        frac, note = mock_note(r, dur)
        lat = j["request_latency"]
        return {"rate": rate, "requests": n, "achieved_send_rate": achieved,
                "completed_per_s": n / dur, "ratio": achieved / rate,
                "lag_p50_us": lag["p50"] / 1e3, "lag_p99_us": lag["p99"] / 1e3,
                "lag_max_us": lag["max"] / 1e3, "latency_p50_ms": lat.get("p50"),
                "latency_max_ms": lat.get("max"), "cpu_s": r["cpu_s"], "mock_busy": frac,
                "note": note}
    except CheckFailed as e:
        return {"rate": rate, "failed": str(e)}


def scenario_manyconn(out, quick):
    """10k concurrent streaming requests (3 s TTFT keeps them all open): client peak RSS.

    Two output shapes (#13 (d), item 11): `short`, 10 tokens at 10 ms apart, and `long`, 1 000
    tokens of ~200 B events each (the mock's chat chunks are ~200 B on the wire) sent at once
    after the TTFT, so every stream is in flight with realistic response buffers. Each shape has
    its own 1-request baseline.
    """
    n = 2000 if quick else 10_000
    res = {}
    for shape, itl, tokens in [("short", 10, 10), ("long", 0, 1000)]:
        case = {"tokens": tokens, "mock_itl_ms": itl}
        for label, c, count in [("baseline", 1, 1), ("many", n, n)]:
            d = out / f"manyconn-{shape}-{label}"
            # The mock on epoll: on io_uring it paces each connection with its own timerfd, so
            # 10 000 connections need 20 000 descriptors, this machine's hard limit (a mock
            # at its limit stops accepting). Timer precision does not matter here.
            with Mock(out, d.name, ttft_ms=3000, itl_ms=itl, tokens=tokens,
                      io_driver="legacy") as m:
                # Every stream on its own connection at once: above the default per-worker
                # connection limit (AIPerf's 2 500), requests would wait for a connection and
                # the figure would no longer be per in-flight stream.
                env = dict(os.environ, AIPERF_HTTP_CONNECTION_LIMIT=str(max(c, 1)))
                r = run_client(ringperf_cmd(d, conc=c, count=count, streaming=True, osl=tokens),
                               m, 600, env=env)
                truth = m.stop()
            try:
                check_ringperf(r, d, count, tokens)
                check_truth(truth, count, tokens)
                overlap = overhead.max_overlap(truth)
                check(overlap == c, f"{overlap} of {c} streams were in flight at once at the mock")
                case[label] = {"concurrency": c, "maxrss_kib": r["maxrss_kib"],
                               "cpu_s": r["cpu_s"], "max_in_flight": overlap}
            except CheckFailed as e:
                case[label] = {"failed": str(e)}
        try:
            case["bytes_per_request"] = bytes_per_in_flight(case.get("baseline", {}),
                                                            case.get("many", {}))
        except CheckFailed as e:
            case["failed"] = str(e)
        res[shape] = case
        log(f"manyconn {shape}: {json.dumps(case)}")
    return res


def bytes_per_in_flight(baseline, many):
    """(peak RSS of the many-stream run - peak RSS of the 1-request run) / most requests the
    mock had in flight at once, in bytes. Refuses a failed run, a missing or zero peak RSS, no
    overlap, or a many-stream peak below the baseline's."""
    for name, run in [("baseline", baseline), ("many", many)]:
        check("failed" not in run, f"{name} run failed: {run.get('failed')}")
        check(isinstance(run.get("maxrss_kib"), int) and run["maxrss_kib"] > 0,
              f"{name} run has no peak RSS figure: {run.get('maxrss_kib')!r}")
    check(isinstance(many.get("max_in_flight"), int) and many["max_in_flight"] > 1,
          f"the many-stream run had {many.get('max_in_flight')!r} requests in flight at once")
    grown = many["maxrss_kib"] - baseline["maxrss_kib"]
    check(grown > 0, f"peak RSS did not grow: {baseline['maxrss_kib']} -> "
                     f"{many['maxrss_kib']} KiB")
    return grown * 1024 / many["max_in_flight"]


def scenario_startup(out, quick):
    """exec -> first request byte at the mock (truth-log arrival), median of runs."""
    reps = 3 if quick else 7
    res = {}
    with Mock(out, "startup", tokens=1) as m:
        samples = {}
        for isl in [8, 550]:
            for i in range(reps):
                d = out / f"startup-isl{isl}-{i}"
                cmd = ringperf_cmd(d, conc=1, count=1)
                cmd[cmd.index("--isl") + 1] = str(isl)
                # Request ids derive from the seed: a distinct seed per run keeps them unique.
                cmd[cmd.index("--random-seed") + 1] = str(1000 * isl + i + 1)
                t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                p = subprocess.run(["taskset", "-c", CLIENT_CORE] + cmd, capture_output=True,
                                   timeout=120)
                if p.returncode != 0:
                    res[f"isl{isl}"] = {"failed": p.stderr.decode()[-300:]}
                    break
                rid = json.loads((d / "profile_export.jsonl").read_text().splitlines()[0])
                samples.setdefault(isl, []).append((t0, rid["metadata"]["x_request_id"]))
        truth = {t["request_id"]: t for t in m.stop()}
    for isl, ss in samples.items():
        ms = [(truth[rid]["arrival_ns"] - t0) / 1e6 for t0, rid in ss if rid in truth]
        res[f"isl{isl}"] = {"runs": len(ms), "median_ms": statistics.median(ms),
                            "min_ms": min(ms), "max_ms": max(ms)}
    log(f"startup: {json.dumps(res)}")
    return res


def all_cores():
    """The harness's own affinity set, sorted (what `taskset` would give the client)."""
    return sorted(os.sched_getaffinity(0))


def scenario_placement(out, quick):
    """Worker placement (#13 item 11): ringperf's default (one worker per core, the aggregator
    wherever the scheduler puts it) against cores - 1 workers with the aggregator pinned to the
    remaining core, the client given every core (`PLACEMENT_CORES`, default all). Workers take
    the client's cores lowest first, so the mock goes on the highest of them
    (`PLACEMENT_MOCK_CORE` overrides): with cores - 1 workers it then shares a core with the
    aggregator, not with a worker; on a machine with a core to spare, give the mock a core
    outside PLACEMENT_CORES. Workloads: streaming paced (1 ms ITL) and burst (0 ms), c = 32,
    100 tokens, and non-streaming 1-token at c = 64. Per run: client CPU (user + system) per
    1 000 requests, and for the streaming ones the TTFT overhead against the truth log.
    """
    cores = [int(c) for c in os.environ.get("PLACEMENT_CORES", "").split(",") if c.strip()]
    cores = cores or all_cores()
    mock_core = os.environ.get("PLACEMENT_MOCK_CORE") or str(max(cores))
    res = {"client_cores": cores, "mock_core": mock_core}
    if len(cores) < 2:
        res["skipped"] = f"needs at least 2 client cores, has {cores}"
        return res
    taskset = ",".join(map(str, cores))
    placements = [("default", None, len(cores)), ("cores-1", len(cores) - 1, len(cores) - 1)]
    workloads = [("paced", True, 1, 100, 32, 640 if quick else 2000),
                 ("burst", True, 0, 100, 32, 640 if quick else 2000),
                 ("nonstream", False, 0, 1, 64, 25_000 if quick else 100_000)]
    for wl, streaming, itl, tokens, c, n in workloads:
        case = {"streaming": streaming, "mock_itl_ms": itl, "tokens": tokens,
                "concurrency": c, "requests": n}
        for label, flag, nworkers in placements:
            d = out / f"placement-{wl}-{label}"
            extra = ["--warmup-request-count", str(c)] if streaming else []
            with Mock(out, d.name, ttft_ms=0, itl_ms=itl, tokens=tokens, core=mock_core) as m:
                r = run_client(ringperf_cmd(d, conc=c, count=n, streaming=streaming, osl=tokens,
                                            workers=flag, extra=extra), m, 600, cores=taskset)
                truth = m.stop()
            try:
                j = check_ringperf(r, d, n, tokens)
                check_truth(truth, n + (c if streaming else 0), tokens)
                check(j.get("ringperf", {}).get("workers") == nworkers,
                      f"ringperf.workers is {j.get('ringperf', {}).get('workers')!r}, "
                      f"expected {nworkers}")
                th = ringperf_threads(j)
                dur = j["benchmark_duration"]["avg"]
                frac, note = mock_note(r, dur)
                cell = {"workers": nworkers, "cpu_s": r["cpu_s"],
                        "cpu_s_per_1k": r["cpu_s"] / n * 1000, "req_per_s": n / dur,
                        "steady_cpu_s_per_1k": (worker_ns(th) + th["aggregator"]) / 1e9 / n * 1e3,
                        "involuntary_cs": r["involuntary_cs"], "mock_busy": frac, "note": note}
                if streaming:
                    o = overhead.compute(j, d / "profile_export.jsonl", truth)
                    check(o["matched"] == n, f"matched {o['matched']} of {n} records")
                    cell["ttft_overhead"] = o["ttft_overhead"]
                case[label] = cell
            except CheckFailed as e:
                case[label] = {"failed": str(e)}
        case["ratios"] = placement_ratios(case.get("default", {}), case.get("cores-1", {}))
        res[wl] = case
        log(f"placement {wl}: {json.dumps(case)}")
    return res


def placement_ratios(default, fewer):
    """cores - 1 over default, for client CPU per 1 000 requests and (streaming) the TTFT
    overhead's p50 and p99: below 1 means cores - 1 is the better placement. A ratio is `None`
    when either run failed or its figure is missing or not positive (never 0 or inf)."""
    def ratio(get):
        try:
            a, b = get(fewer), get(default)
        except (KeyError, TypeError):
            return None
        ok = all(isinstance(v, (int, float)) and v > 0 and v == v for v in (a, b))
        return a / b if ok else None
    return {
        "cpu": ratio(lambda x: x["cpu_s_per_1k"]),
        "ttft_overhead_p50": ratio(lambda x: x["ttft_overhead"]["p50_us"]),
        "ttft_overhead_p99": ratio(lambda x: x["ttft_overhead"]["p99_us"]),
    }


# ------------------------------------------------------------------------------------- vlm
VLM_IMAGES = ["--image-width-mean", "1024", "--image-height-mean", "1024",
              "--image-batch-size", "4", "--image-format", "png"]
VLM_ENTRIES = 16  # distinct bodies (64 images): both clients hold every body in memory
VLM_TOKENS = 10


def vlm_aiperf_cmd(outdir, conc=None, n=None, rate=None):
    cmd = [AIPERF, "profile", "-m", "mock-model", "--url", URL, "--endpoint-type", "chat",
           "--streaming", "--tokenizer", "builtin", "--isl", str(ISL),
           "--osl", str(VLM_TOKENS), "--random-seed", "1",
           "--num-dataset-entries", str(VLM_ENTRIES), "--ui-type", "none",
           "--no-server-metrics", "--no-gpu-telemetry", "--artifact-dir", str(outdir),
           "--request-count", str(n)] + VLM_IMAGES
    if conc is not None:
        cmd += ["--concurrency", str(conc)]
    if rate is not None:
        cmd += ["--request-rate", str(rate), "--arrival-pattern", "constant"]
    return cmd


def dispatch_lag_us(outdir):
    """Send start minus credit issue (`request_start_ns - credit_issued_ns`) of every record of
    the run's profile_export.jsonl, both clients' own stamps: {p50, p99, max} in µs."""
    files = list(Path(outdir).rglob("profile_export.jsonl"))
    check(files, f"no profile_export.jsonl under {outdir}")
    lags = sorted((s - i) / 1e3 for i, s in overhead.jsonl_starts(files[0]))
    check(lags, "no records")

    def pct(q):
        return lags[min(len(lags) - 1, int(round(q / 100 * (len(lags) - 1))))]
    return {"p50": pct(50), "p99": pct(99), "max": lags[-1], "count": len(lags)}


def scenario_vlm(out, quick):
    """VLM-shaped chat (#25): 4 noise PNGs of 1024x1024 per request, a body of about 17 MB,
    10 streamed tokens back; ringperf vs AIPerf 0.13 on the same mock.

    Closed loop at concurrency 4, each client run at two request counts so the CPU per request
    is the marginal cost (free of start-up and of making the images); then an open loop at a
    constant rate both clients can hold, for each client's dispatch lag (send start minus its
    own credit stamp, from its profile_export.jsonl) and the rate it achieved.
    """
    ns = [60, 20] if quick else [200, 50]
    # The mock reads every image of every body (its truth log): about 7 requests/s on one core
    # here, so the open loop runs at 4/s, below what the mock takes.
    rate, n_open = (4, 30) if quick else (4, 80)
    res = {"images_per_request": 4, "side": 1024, "format": "png", "concurrency": 4,
           "dataset_entries": VLM_ENTRIES, "open_loop_rate": rate}
    for client in ["ringperf", "aiperf"]:
        if client == "aiperf" and not AIPERF:
            res[client] = {"skipped": "AIPerf not installed"}
            continue
        runs = []
        try:
            for n in ns:
                d = out / f"vlm-{client}-n{n}"
                with Mock(out, d.name, tokens=VLM_TOKENS) as m:
                    if client == "ringperf":
                        cmd = ringperf_cmd(d, conc=4, count=n, streaming=True, osl=VLM_TOKENS,
                                           entries=VLM_ENTRIES, extra=VLM_IMAGES)
                    else:
                        cmd = vlm_aiperf_cmd(d, conc=4, n=n)
                    r = run_client(cmd, m, 1200)
                    truth = m.stop()
                (out / f"{d.name}.out").write_text(r["stdout"][-5000:] + r["stderr"][-5000:])
                j = (check_ringperf(r, d, n, VLM_TOKENS) if client == "ringperf"
                     else check_aiperf(r, d, n, VLM_TOKENS))
                if client == "ringperf":
                    r["threads_cpu_ns"] = ringperf_threads(j)
                check(len(truth) == n, f"mock saw {len(truth)} requests, not {n}")
                check(all(len(t.get("media", [])) == 4 for t in truth),
                      "a request without its 4 images")
                dur = j["benchmark_duration"]["avg"]
                frac, note = mock_note(r, dur)
                runs.append({"n": n, "dur_s": dur, "cpu_s": r["cpu_s"], "wall_s": r["wall_s"],
                             "maxrss_kib": r["maxrss_kib"], "mock_busy": frac, "note": note,
                             "req_per_s": n / dur,
                             "threads_cpu_ns": r.get("threads_cpu_ns", {}),
                             "ttft_p50_ms": j["time_to_first_token"].get("p50"),
                             "latency_p50_ms": j["request_latency"].get("p50")})
            big, small = runs
            res[client] = {
                "runs": runs, "req_per_s": big["req_per_s"],
                # ringperf's own per-thread clocks (workers and aggregator, whole run of n
                # requests; no start-up in them): a steady figure free of /usr/bin/time's
                # 10 ms resolution, which the marginal one divides over n_big - n_small.
                "steady_cpu_ms_per_req": None if client != "ringperf" else
                    (worker_ns(big["threads_cpu_ns"]) + big["threads_cpu_ns"]["aggregator"])
                    / 1e6 / big["n"],
                "cpu_ms_per_req_marginal":
                    (big["cpu_s"] - small["cpu_s"]) / (big["n"] - small["n"]) * 1e3,
                "cpu_s_startup_estimate":
                    small["cpu_s"] - small["n"] * (big["cpu_s"] - small["cpu_s"])
                    / (big["n"] - small["n"]),
            }
            d = out / f"vlm-{client}-open"
            with Mock(out, d.name, tokens=VLM_TOKENS) as m:
                if client == "ringperf":
                    cmd = ringperf_cmd(d, count=n_open, streaming=True, osl=VLM_TOKENS,
                                       rate=rate, entries=VLM_ENTRIES, extra=VLM_IMAGES)
                else:
                    cmd = vlm_aiperf_cmd(d, n=n_open, rate=rate)
                r = run_client(cmd, m, 1200)
                m.stop()
            (out / f"{d.name}.out").write_text(r["stdout"][-5000:] + r["stderr"][-5000:])
            if client == "ringperf":
                check_ringperf(r, d, n_open, VLM_TOKENS)
            else:
                check_aiperf(r, d, n_open, VLM_TOKENS)
            files = list(Path(d).rglob("profile_export.jsonl"))
            pairs = overhead.jsonl_starts(files[0])
            span_ns = max(s for _, s in pairs) - min(i for i, _ in pairs)
            res[client]["open_loop"] = {
                "rate": rate, "requests": n_open,
                "achieved_send_rate": (len(pairs) - 1) / (span_ns / 1e9),
                "dispatch_lag_us": dispatch_lag_us(d), "cpu_s": r["cpu_s"]}
        except CheckFailed as e:
            res[client] = {"failed": str(e), "runs": runs}
        log(f"vlm {client}: {json.dumps(res[client])}")
    return res



SCENARIOS = {
    "nonstream": scenario_nonstream,
    "stream": scenario_stream,
    "overhead": scenario_overhead,
    "openloop": scenario_openloop,
    "manyconn": scenario_manyconn,
    "startup": scenario_startup,
    "placement": scenario_placement,
    "vlm": scenario_vlm,
}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller runs (about 1/4)")
    ap.add_argument("scenarios", nargs="*", help=f"any of {', '.join(SCENARIOS)} (default all)")
    args = ap.parse_args()
    chosen = args.scenarios or list(SCENARIOS)
    unknown = [s for s in chosen if s not in SCENARIOS]
    if unknown:
        ap.error(f"unknown scenario(s) {unknown}; known: {list(SCENARIOS)}")
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    out = Path(os.environ.get("PERF_OUT", HERE / "results" / stamp)).resolve()
    out.mkdir(parents=True, exist_ok=True)
    results = {"started_utc": stamp, "machine": machine_notes(),
               "peers": {"wrk": WRK, "oha": OHA, "aiperf": AIPERF}, "scenarios": {}}
    for name in chosen:
        log(f"scenario {name} (load {load_line()})")
        t0 = time.monotonic()
        try:
            results["scenarios"][name] = SCENARIOS[name](out, args.quick)
        except Exception as e:  # keep the other scenarios' figures
            results["scenarios"][name] = {"failed": f"{type(e).__name__}: {e}"}
            log(f"scenario {name} FAILED: {e}")
        results["scenarios"][name + "_meta"] = {
            "seconds": time.monotonic() - t0, "load_after": load_line()}
        (out / "results.json").write_text(json.dumps(results, indent=1))
        for p in out.glob(f"{name}-*"):
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)  # keep results.json and logs only
    log(f"results: {out / 'results.json'}")
    print(json.dumps(results, indent=1))
    if REFUSED:
        log(f"refused {len(REFUSED)} CPU figure(s): {REFUSED}")
        sys.exit(1)


def machine_notes():
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": os.uname().release,
            "load_at_start": load_line(), "mock_core": MOCK_CORE, "client_core": CLIENT_CORE}


if __name__ == "__main__":
    main()
