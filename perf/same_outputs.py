#!/usr/bin/env python3
"""Checks that two builds of ringperf write the same artifacts: five fixed-seed runs against the
embedded mock, then a file-by-file comparison of two such trees. Made for refactorings that must
not change any output.

    python3 perf/same_outputs.py run BIN OUTDIR        # five runs of BIN into OUTDIR/<scenario>/
    python3 perf/same_outputs.py compare DIR_A DIR_B   # exit 0: same; 1: a difference; 2: usage

A typical check: `run old-binary /tmp/so-a`, `run new-binary /tmp/so-b`, `compare /tmp/so-a
/tmp/so-b`. OUTDIR must be absent or empty. Each run is `BIN profile --mock --ui none
--random-seed 42 --no-gpu-telemetry ...` with a request count (or a session count, or a trace)
that fixes what is sent; it runs with OUTDIR as its working directory and `--artifact-dir
<scenario>`, so no absolute path gets into the artifacts. The trace of the `mooncake_trace`
scenario, perf/data/mooncake_small.jsonl, is copied to OUTDIR/inputs/ first (and compared like
any other file). stdout and stderr of each run go to OUTDIR/logs/, which `compare` skips. The
whole `run` takes about 25 s on 2 cores.

`compare` wants the same set of files in both trees, and each file the same after masking what
differs between two runs of one binary: ids drawn at random, wall-clock stamps, the mock's port,
and values measured in time (latencies, rates, lags, CPU times, server-metric samples). The rules
are the lists below, each with why; everything else must be equal byte for byte, JSON key order
and number spelling included. How each kind of file is compared:

- `inputs.json` and any file without a rule below: byte for byte.
- `.json`: the text with masked values replaced by `<id>`, `<time>`, `<measured>` (each number in
  the value) or `<varies>`, then line by line.
- `profile_export.jsonl`, `profile_export_raw.jsonl`: each record masked the same way; records
  are written as they complete, so the two sides are compared as sorted lists of masked lines.
- `server_metrics_export.jsonl`: one line per distinct scrape page, and how many distinct pages a
  run sees depends on when the scraper ran; the sets of distinct masked lines (the page shapes:
  metric names, labels, bucket bounds, phase fields) are compared.
- `.csv`: cell by cell; the cells of timing metrics (by row name, column name) masked.
- `profile_export_console.txt`: the tables cell by cell (column widths and line wrapping follow
  the widths of the numbers, so the borders and padding are not compared), timing rows masked.
- `.parquet`: the footer (schema, key-value metadata, writer, each column's type, encodings and
  codec); the row count and the data, which are server-metric samples, are not compared.

It prints one line per file, `same` or `DIFFERENT` with the first differences, and a summary.
"""

import base64
import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRACE = os.path.join(HERE, "data", "mooncake_small.jsonl")
SEED = "42"
# --no-gpu-telemetry: the default probe of localhost:9400/9401 would make the output depend on
# whether a DCGM exporter happens to run on the machine.
COMMON = ["profile", "--mock", "--ui", "none", "--random-seed", SEED, "--no-gpu-telemetry"]

# name -> the arguments after COMMON (and before --artifact-dir).
SCENARIOS = {
    "chat_stream": ["--streaming", "--concurrency", "4", "--request-count", "40"],
    "multi_turn": [
        "--streaming", "--concurrency", "3", "--conversation-num", "8",
        "--conversation-turn-mean", "3", "--conversation-turn-stddev", "1",
        "--conversation-turn-delay-mean", "10", "--isl", "200", "--osl", "24",
    ],
    # A trace replay writes no inputs.json (docs/output-formats.md; crates/workload/src/workload/prepared.rs), so
    # `--export-level raw` is what records the bodies sent (profile_export_raw.jsonl, `payload`).
    "mooncake_trace": [
        "--streaming", "--custom-dataset-type", "mooncake_trace",
        "--input-file", "inputs/mooncake_small.jsonl", "--export-level", "raw",
    ],
    "sweep": [
        "--streaming", "--concurrency", "1,2,4", "--request-count", "12",
        "--isl", "128", "--osl", "16",
    ],
    # Server metrics are scraped from the mock by default; this one asks for every format.
    "server_metrics": [
        "--concurrency", "2", "--request-count", "16",
        "--server-metrics-formats", "json", "csv", "jsonl", "parquet",
    ],
}

RUN_TIMEOUT_S = 180
SKIP_DIRS = {"logs"}  # top-level directory of OUTDIR holding the runs' stdout and stderr

# ---------------------------------------------------------------------------------------------
# Masking rules.

# Applied to the whole text of every file compared as text, before anything else.
TEXT_RULES = [
    # The embedded mock listens on a free port chosen at each run; it is in URLs and map keys.
    (re.compile(r"127\.0\.0\.1:\d{1,5}"), "127.0.0.1:<port>"),
    # The mock's completion id (`chatcmpl-<16 hex>`), random per response: raw export bodies.
    (re.compile(r"chatcmpl-[0-9a-f]+"), "chatcmpl-<id>"),
    # The mock's `created` (unix seconds) inside the SSE bodies of the raw export.
    (re.compile(r'(\\"created\\":)\d+'), r"\1<time>"),
]

# Metrics whose values are measured in time (or derived from times), by tag. Their `unit`
# and `count` stay compared; every other statistic is masked. Token counts, request counts,
# bytes and chunks sent, usage, OSL mismatch are not here: they are fixed by the seed.
TIMING_TAGS = [
    "request_throughput", "request_latency", "time_to_first_token", "time_to_second_token",
    "time_to_first_output_token", "inter_token_latency", "inter_chunk_latency",
    "output_token_throughput", "output_token_throughput_per_user", "e2e_output_token_throughput",
    "prefill_throughput_per_user", "input_token_throughput", "total_token_throughput",
    "benchmark_duration", "decode_duration", "credit_to_start_latency", "effective_latency",
    "http_req_connecting", "http_req_sending", "http_req_waiting", "http_req_receiving",
    "http_req_connection_overhead", "http_req_duration", "http_req_total",
    # how many reads the response arrived in: the kernel coalesces SSE events as timing goes
    "http_req_chunks_received",
    # time-weighted curves over the run (sweep-line metrics)
    "effective_concurrency", "effective_decode_concurrency", "effective_prefill_concurrency",
    "effective_decode_throughput", "effective_prefill_throughput", "effective_total_throughput",
    "effective_decode_throughput_per_user", "effective_prefill_throughput_per_user",
    "tokens_in_flight", "active_decode_throughput", "active_prefill_throughput",
    "active_decode_throughput_per_user", "active_prefill_throughput_per_user",
    "active_total_throughput",
    # fixed-schedule replay: lag behind the trace's timestamps
    "replay_sched_lag_p50", "replay_sched_lag_p90", "replay_sched_lag_p99",
    "replay_sched_degraded",
]
# The same metrics by display name (summary CSV, console tables), without the unit suffix.
TIMING_NAMES = [
    "Request Throughput", "Request Latency", "Time to First Token", "Time to Second Token",
    "Time to First Output Token", "Inter Token Latency", "Inter Chunk Latency",
    "Output Token Throughput", "Output Token Throughput Per User", "E2E Output Token Throughput",
    "Prefill Throughput Per User", "Input Token Throughput", "Total Token Throughput",
    "Benchmark Duration", "Decode Duration", "Credit-to-Start Latency",
    "Effective Latency (CO-aware)", "HTTP Connecting", "HTTP Sending", "HTTP Waiting (TTFB)",
    "HTTP Receiving", "HTTP Connection Overhead", "HTTP Duration (excl. conn)", "HTTP Total Time",
    "HTTP Chunks Received",
    "Effective Concurrency", "Effective Decode Concurrency", "Effective Prefill Concurrency",
    "Effective Decode Throughput", "Effective Prefill Throughput", "Effective Total Throughput",
    "Effective Decode Throughput Per User", "Effective Prefill Throughput Per User",
    "Tokens In Flight", "Active Decode Throughput", "Active Prefill Throughput",
    "Active Decode Throughput Per User", "Active Prefill Throughput Per User",
    "Active Total Throughput", "Replay Schedule Lag p50", "Replay Schedule Lag p90",
    "Replay Schedule Lag p99", "Replay Schedule Degraded",
]
_TAGS = "|".join(TIMING_TAGS)
_STATS = r"avg|mean|min|max|std|sum|cv|se|ci_low|ci_high|t_critical|p\d+"
TIMING_NAME_RE = re.compile(
    r"(?:%s)(?: \([^()]*\))?" % "|".join(re.escape(n) for n in TIMING_NAMES))
# A tag with a statistic: aggregate rows (`request_latency_p99`) and sweep CSV columns.
TIMING_TAG_STAT_RE = re.compile(r"(?:%s)_(?:%s)" % (_TAGS, _STATS))

# Wall-clock and monotonic stamps, by key name (anywhere in a JSON document).
STAMP_KEYS = (
    "start_time|end_time|start_ns|end_ns|credit_issued_ns|request_start_ns|request_ack_ns|"
    "request_end_ns|start_perf_ns|perf_ns|timestamp_ns|request_sent_ns|first_byte_ns|"
    "first_fetch_ns|last_fetch_ns|first_update_ns|last_update_ns"
)
# Statistics of server-metric series that depend on when the samples were taken: gauges are
# sampled, rates divide by the scrape span, histogram sums add up latencies. Counter `total`
# and histogram `count` are not here: the last scrape comes after the last reply.
SERVER_STATS = r"avg|min|max|std|p\d+|p\d+_estimate|rate|rate_avg|rate_min|rate_max|rate_std|" \
    r"count_rate|sum|sum_rate"
# What the scraper reports about its own fetches (counts and intervals follow the run's length).
SCRAPE_INFO = r"total_fetches|avg_fetch_latency_ms|unique_updates|duration_seconds|" \
    r"avg_update_interval_ms|median_update_interval_ms"

# JSON documents (.json): (path regex, kind, why). A path is the keys from the root joined by
# `/`, a list element being `#`. Kinds: `id` and `time` replace the value; `measured` replaces
# each number inside it (structure, strings and null stay); `varies` replaces the value,
# whatever its shape; `omit` drops the key when present (its presence itself varies).
JSON_RULES = [
    (r"(?:.*/)?benchmark_id", "id", "12 random hex digits per run"),
    (r"(?:.*/)?sweep_id", "id", "a random UUID per sweep"),
    (r"(?:.*/)?(?:%s)" % STAMP_KEYS, "time", "wall-clock / monotonic stamps"),
    (r"(?:.*/)?(?:%s)/(?:%s)" % (_TAGS, _STATS), "measured",
     "summary and sweep statistics of timing metrics"),
    (r"metrics/(?:%s)/(?:%s)" % (TIMING_TAG_STAT_RE.pattern, _STATS), "measured",
     "per-variation aggregate of a timing metric's statistic"),
    (r"best_configurations/[^/]+/(?:parameters|metric)", "varies",
     "the best variation is chosen on measured throughput / latency"),
    (r"pareto_optimal", "varies", "chosen on measured throughput / latency"),
    (r"ringperf/(?:dispatch_lag_ns|receive_lag_ns)/(?:p50|p99|max)", "measured", "lag"),
    (r"ringperf/clock/(?:realtime_to_monotonic_offset_ns|realtime_to_monotonic_uncertainty_ns|"
     r"monotonic_origin_ns|wall_origin_ns)", "time", "clock origins of this run"),
    (r"ringperf/threads/#/(?:cpu_ns|busy_fraction|idle_wakes)", "measured",
     "CPU time, busy share and idle wake-ups of each thread"),
    (r"ringperf/threads/#/warm_pool/opened", "measured",
     "connections a worker opened ahead of a rate's schedule: split between workers by timing"),
    (r"ringperf/client_health/observed/busiest_worker", "varies", "which worker was busiest"),
    (r"ringperf/client_health/observed/.*", "measured", "observed lags and busy fractions"),
    (r"ringperf/client_health/(?:kept_up|reasons|shared_core_lag)", "varies",
     "verdict on the observed lags: the embedded mock shares the client's cores"),
    (r"(?:.*/)?(?:endpoint_info/.+|info)/(?:%s)" % SCRAPE_INFO, "measured",
     "the scraper's fetch counts and intervals"),
    (r"(?:.*/)?series/#/stats/(?:%s)" % SERVER_STATS, "measured", "server-metric samples"),
    (r"(?:.*/)?metrics/[^/]*_seconds/series/#/buckets", "measured",
     "latency histogram buckets: 20 ms TTFT sits on a 0.02 s bucket bound"),
]
# Per-request records (profile_export.jsonl, profile_export_raw.jsonl).
RECORD_RULES = [
    (r"metadata/(?:x_request_id|x_correlation_id|root_correlation_id)", "id",
     "random UUIDs per request"),
    (r"request_headers/(?:X-Request-ID|X-Correlation-ID)", "id", "the same UUIDs, as sent"),
    (r"(?:.*/)?(?:%s)" % STAMP_KEYS, "time", "wall-clock / monotonic stamps"),
    (r"metrics/(?:%s)/value" % _TAGS, "measured", "timing metrics of the request"),
    (r"metadata/worker_id", "varies", "the worker that took the request: the first one free"),
    (r"metadata/session_num", "varies",
     "sessions numbered in the order they were sent: two due together (or one sent late, "
     "as when the CPU is busy) can swap; conversation_id + turn_index say which one it is"),
    (r"metadata/coalesced_reads", "omit",
     "reads that completed several SSE messages: TCP timing; written only when non-zero"),
]
# Scrapes (server_metrics_export.jsonl).
SCRAPE_RULES = [
    (r"(?:%s)" % STAMP_KEYS, "time", "wall-clock stamps"),
    (r"endpoint_latency_ns", "measured", "fetch latency"),
    (r"metrics/.*", "measured", "the samples themselves"),
]
# CSV: a row whose first cell matches is masked (all cells but the first); so is a column whose
# header matches. `# benchmark_id:` comment lines are masked.
CSV_ROW_RE = [TIMING_NAME_RE, TIMING_TAG_STAT_RE]
CSV_COL_RE = [TIMING_TAG_STAT_RE]  # sweep CSV: `<tag>_<stat>` columns
# Server-metrics CSV (sections under an `Endpoint,Type,Metric,...` header): statistic columns
# as SERVER_STATS above, and `buckets` of `*_seconds` histograms.
SERVER_CSV_COL_RE = re.compile(SERVER_STATS)
CSV_COMMENT_RULES = [(re.compile(r"^# benchmark_id: [0-9a-f]+$"), "# benchmark_id: <id>")]
# Parquet key-value metadata, by key (the benchmark id is masked wherever it appears).
PARQUET_KV_RULES = {
    "aiperf.export_timestamp_utc": "<time>",  # wall clock of the export
    "aiperf.profiling_duration_ns": "<measured>",  # length of the profiling phase
    "aiperf.profiling_duration_seconds": "<measured>",
    "aiperf.time_filter_start_ns": "<time>",  # wall clock of the profiling window
    "aiperf.time_filter_end_ns": "<time>",
}


def compile_rules(rules):
    return [(re.compile(rx), kind) for rx, kind, _why in rules]


# ---------------------------------------------------------------------------------------------
# JSON masking on the text itself, so that formatting and number spelling are compared too.

_WS = re.compile(r"[ \t\r\n]*")
_STR = re.compile(r'"(?:[^"\\]|\\.)*"', re.S)
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LIT = re.compile(r"true|false|null")
PLACEHOLDER = {"id": '"<id>"', "time": '"<time>"', "varies": '"<varies>"'}


class JsonMasker:
    def __init__(self, rules):
        self.rules = compile_rules(rules)

    def kind(self, path):
        p = "/".join(path)
        for rx, kind in self.rules:
            if rx.fullmatch(p):
                return kind
        return None

    def mask(self, text):
        i = _WS.match(text, 0).end()
        out, i = self.value(text, i, (), False)
        rest = text[i:]
        if rest.strip():
            raise ValueError(f"trailing data at offset {i}")
        return text[: _WS.match(text, 0).end()] + out + rest

    def value(self, s, i, path, measured):
        kind = None if measured else self.kind(path)
        if kind in PLACEHOLDER:
            _, end = self.value(s, i, path, True)
            return PLACEHOLDER[kind], end
        measured = measured or kind == "measured"
        c = s[i : i + 1]
        if c == "{":
            return self.obj(s, i, path, measured)
        if c == "[":
            return self.arr(s, i, path, measured)
        if c == '"':
            m = _STR.match(s, i)
        else:
            m = _NUM.match(s, i)
            if m:
                return ("<measured>" if measured else m.group()), m.end()
            m = _LIT.match(s, i)
        if not m:
            raise ValueError(f"bad JSON at offset {i}: {s[i:i + 40]!r}")
        return m.group(), m.end()

    def obj(self, s, i, path, measured):
        i += 1
        lead = _WS.match(s, i).group()
        i += len(lead)
        if s[i] == "}":
            return "{" + lead + "}", i + 1
        members, seps = [], []
        while True:
            m = _STR.match(s, i)
            if not m:
                raise ValueError(f"bad JSON key at offset {i}")
            key_text = m.group()
            sub = path + (json.loads(key_text),)
            i = m.end()
            w1 = _WS.match(s, i).group()
            i += len(w1)
            if s[i] != ":":
                raise ValueError(f"expected ':' at offset {i}")
            w2 = _WS.match(s, i + 1).group()
            i += 1 + len(w2)
            omit = not measured and self.kind(sub) == "omit"
            vtext, i = self.value(s, i, sub, measured)
            members.append((omit, key_text + w1 + ":" + w2 + vtext))
            w3 = _WS.match(s, i).group()
            i += len(w3)
            if s[i] == ",":
                w4 = _WS.match(s, i + 1).group()
                seps.append(w3 + "," + w4)
                i += 1 + len(w4)
            elif s[i] == "}":
                tail = w3
                i += 1
                break
            else:
                raise ValueError(f"expected ',' or '}}' at offset {i}")
        out, first = ["{", lead], True
        for n, (omit, text) in enumerate(members):
            if omit:
                continue
            if not first:
                out.append(seps[n - 1])
            out.append(text)
            first = False
        out += [tail, "}"]
        return "".join(out), i

    def arr(self, s, i, path, measured):
        out = ["["]
        i += 1
        w = _WS.match(s, i).group()
        out.append(w)
        i += len(w)
        if s[i] == "]":
            return "".join(out) + "]", i + 1
        while True:
            vtext, i = self.value(s, i, path + ("#",), measured)
            out.append(vtext)
            w = _WS.match(s, i).group()
            i += len(w)
            out.append(w)
            if s[i] == ",":
                w = _WS.match(s, i + 1).group()
                out += [",", w]
                i += 1 + len(w)
            elif s[i] == "]":
                out.append("]")
                return "".join(out), i + 1
            else:
                raise ValueError(f"expected ',' or ']' at offset {i}")


JSON_MASKER = JsonMasker(JSON_RULES)
RECORD_MASKER = JsonMasker(RECORD_RULES)
SCRAPE_MASKER = JsonMasker(SCRAPE_RULES)


def apply_text_rules(text):
    for rx, repl in TEXT_RULES:
        text = rx.sub(repl, text)
    return text


# ---------------------------------------------------------------------------------------------
# Canonical forms: each returns a list of lines, or a (kind, lines) pair for unordered forms.


def canon_json(text):
    return JSON_MASKER.mask(apply_text_rules(text)).split("\n")


def canon_records(text):
    return sorted(RECORD_MASKER.mask(line) for line in apply_text_rules(text).splitlines())


def canon_scrapes(text):
    return sorted({SCRAPE_MASKER.mask(line) for line in apply_text_rules(text).splitlines()})


def mask_cells(cells, row_masked, col_masked):
    out = cells[:1]
    for n, cell in enumerate(cells[1:], 1):
        out.append("<measured>" if cell and (row_masked or col_masked(n)) else cell)
    return out


def canon_csv(text):
    text = apply_text_rules(text)
    lines = []
    header = None
    for raw in text.split("\n"):
        if raw.startswith("#"):
            for rx, repl in CSV_COMMENT_RULES:
                raw = rx.sub(repl, raw.rstrip("\r"))
            lines.append(raw)
            continue
        cells = next(csv.reader([raw.rstrip("\r")])) if raw.strip("\r") else []
        if not any(cells):
            header = None  # a blank line ends a section; the next row is its header
            lines.append(raw)
            continue
        if header is None:
            header = cells
            lines.append(raw)
            continue
        server = header[:3] == ["Endpoint", "Type", "Metric"]

        def col_masked(n):
            name = header[n] if n < len(header) else ""
            if server:
                if name == "buckets":
                    return cells[2].endswith("_seconds")
                return bool(SERVER_CSV_COL_RE.fullmatch(name))
            return any(rx.fullmatch(name) for rx in CSV_COL_RE)

        row_masked = not server and any(rx.fullmatch(cells[0]) for rx in CSV_ROW_RE)
        masked = mask_cells(cells, row_masked, col_masked)
        if masked == cells:
            lines.append(raw)
        else:
            buf = io.StringIO()
            csv.writer(buf, lineterminator="").writerow(masked)
            lines.append(buf.getvalue() + ("\r" if raw.endswith("\r") else ""))
    return lines


_BOX_ROW = "│┃"
_BOX_BORDER = "┏┡└┗├┢┣╭╰"


def canon_console(text):
    lines, rows = [], []

    def flush():
        for cells in rows:
            name = cells[0]
            masked = TIMING_NAME_RE.fullmatch(name) is not None
            lines.append(" | ".join(
                [name] + ["<measured>" if masked and c not in ("", "N/A") else c
                          for c in cells[1:]]))
        rows.clear()

    for raw in apply_text_rules(text).split("\n"):
        if raw and raw[0] in _BOX_ROW:
            cells = [c.strip() for c in re.split("[│┃]", raw)[1:-1]]
            if rows and cells[0] and not any(cells[1:]):
                # the name wrapped onto a second line
                rows[-1][0] += " " + cells[0]
            elif rows and not cells[0] and not any(cells[1:]):
                pass
            else:
                rows.append(cells)
            continue
        flush()
        if raw and raw[0] in _BOX_BORDER:
            lines.append("<border>")
        else:
            lines.append(raw.strip())  # titles are centred over tables whose width varies
    flush()
    return lines


# --- Parquet footer: Thrift compact protocol, just enough to read FileMetaData. -------------


class Thrift:
    def __init__(self, data):
        self.d, self.i = data, 0

    def byte(self):
        b = self.d[self.i]
        self.i += 1
        return b

    def varint(self):
        shift = result = 0
        while True:
            b = self.byte()
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                return result
            shift += 7

    def zigzag(self):
        n = self.varint()
        return (n >> 1) ^ -(n & 1)

    def val(self, t):
        if t in (1, 2):  # a bool field: the value is in the type
            return t == 1
        if t == 3:
            b = self.byte()
            return b - 256 if b > 127 else b
        if t in (4, 5, 6):
            return self.zigzag()
        if t == 7:
            v = self.d[self.i : self.i + 8]
            self.i += 8
            return v.hex()
        if t == 8:
            n = self.varint()
            v = bytes(self.d[self.i : self.i + n])
            self.i += n
            return v
        if t in (9, 10):
            h = self.byte()
            n, et = h >> 4, h & 0x0F
            if n == 15:
                n = self.varint()
            if et in (1, 2):
                return [self.byte() == 1 for _ in range(n)]
            return [self.val(et) for _ in range(n)]
        if t == 11:
            n = self.varint()
            if not n:
                return {}
            h = self.byte()
            return {self.val(h >> 4): self.val(h & 0x0F) for _ in range(n)}
        if t == 12:
            return self.struct()
        raise ValueError(f"thrift type {t} at offset {self.i}")

    def struct(self):
        fields, last = {}, 0
        while True:
            h = self.byte()
            if h == 0:
                return fields
            delta, t = h >> 4, h & 0x0F
            fid = last + delta if delta else self.zigzag()
            fields[fid] = self.val(t)
            last = fid


def _text(v):
    return v.decode("utf-8", "backslashreplace") if isinstance(v, bytes) else repr(v)


def flatbuffer_strings(buf):
    """The strings of a flatbuffer: a 4-byte length, that many bytes, a NUL."""
    out = []
    for m in re.finditer(rb"(?=(....)([\x09\x0a\x0d\x20-\x7e\x80-\xff]+?)\x00)", buf, re.S):
        if int.from_bytes(m.group(1), "little") == len(m.group(2)):
            out.append(m.group(2).decode("utf-8", "backslashreplace"))
    return out


def canon_parquet(data):
    if data[:4] != b"PAR1" or data[-4:] != b"PAR1":
        return ["not a parquet file"]
    n = int.from_bytes(data[-8:-4], "little")
    meta = Thrift(data[-8 - n : -8]).struct()
    lines = [f"version: {meta.get(1)}"]
    # SchemaElement: 1 type, 2 type_length, 3 repetition, 4 name, 5 num_children,
    # 6 converted_type, 7 scale, 8 precision, 9 field_id, 10 logicalType.
    for el in meta.get(2, []):
        name = _text(el.get(4, b""))
        rest = {k: v for k, v in sorted(el.items()) if k != 4}
        lines.append(f"schema: {name} {rest}")
    # num_rows (3) and the row groups' sizes, offsets and statistics (4) follow the samples.
    lines.append("num_rows: <measured>")
    kvs = [(_text(kv.get(1, b"")), _text(kv.get(2, b""))) for kv in meta.get(5, [])]
    benchmark_id = dict(kvs).get("aiperf.benchmark_id")
    # value -> its mask, to mask the same values again inside ARROW:schema
    masked = {v: PARQUET_KV_RULES[k] for k, v in kvs if k in PARQUET_KV_RULES}
    for key, value in kvs:
        if key == "ARROW:schema":
            # base64 of the Arrow IPC schema (a flatbuffer), which holds the same key-value
            # metadata again: its strings are compared, masked as above
            for string in flatbuffer_strings(base64.b64decode(value)):
                string = masked.get(string, string)
                if benchmark_id:
                    string = string.replace(benchmark_id, "<id>")
                lines.append(f"kv: {key} string: {apply_text_rules(string)}")
            continue
        text = masked.get(value) or apply_text_rules(value)
        if benchmark_id:
            text = text.replace(benchmark_id, "<id>")
        lines.append(f"kv: {key} = {text}")
    lines.append(f"created_by: {_text(meta.get(6, b''))}")
    groups = meta.get(4, [])
    lines.append("row_groups: " + ("none" if not groups else "<measured>"))
    if groups:
        # ColumnChunk 3 = ColumnMetaData: 1 type, 2 encodings, 3 path_in_schema, 4 codec.
        for col in groups[0].get(1, []):
            md = col.get(3, {})
            path = ".".join(_text(p) for p in md.get(3, []))
            lines.append(f"column: {path} type={md.get(1)} encodings={md.get(2)} codec={md.get(4)}")
    return lines


# ---------------------------------------------------------------------------------------------


def walk(root):
    files = set()
    for dirpath, dirnames, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root)
        if rel == ".":
            dirnames[:] = [d for d in dirnames if d not in SKIP_DIRS]
        for f in filenames:
            files.add(os.path.normpath(os.path.join(rel, f)))
    return files


def how(rel):
    """(description, canonical function taking bytes) for a file, by its name."""
    base = os.path.basename(rel)
    if base == "inputs.json":
        return "byte for byte", None
    if base in ("profile_export.jsonl", "profile_export_raw.jsonl"):
        return "records, masked, sorted", lambda b: canon_records(b.decode())
    if base == "server_metrics_export.jsonl":
        return "distinct scrape shapes", lambda b: canon_scrapes(b.decode())
    if base.endswith(".json"):
        return "masked", lambda b: canon_json(b.decode())
    if base.endswith(".csv"):
        return "masked cells", lambda b: canon_csv(b.decode())
    if base == "profile_export_console.txt":
        return "table cells, masked", lambda b: canon_console(b.decode())
    if base.endswith(".parquet"):
        return "footer", canon_parquet
    return "byte for byte", None


def first_differences(a, b, limit=3):
    """Lines telling where two lists of lines differ."""
    out = []
    if len(a) != len(b):
        out.append(f"    {len(a)} lines vs {len(b)}")
    for n, (x, y) in enumerate(zip(a, b)):
        if x != y:
            col = next((k for k, (p, q) in enumerate(zip(x, y)) if p != q), min(len(x), len(y)))
            lo = max(0, col - 60)
            out.append(f"    line {n + 1}, column {col + 1}:")
            out.append(f"      A: {x[lo:col + 100]!r}")
            out.append(f"      B: {y[lo:col + 100]!r}")
            limit -= 1
            if not limit:
                break
    if len(a) != len(b) and limit:
        extra, side = (a[len(b):], "A") if len(a) > len(b) else (b[len(a):], "B")
        out.append(f"    first extra line of {side}: {extra[0][:160]!r}")
    return out


def unordered_differences(a, b, limit=3):
    """Lines of one side missing from the other, each shown beside the other side's line that
    shares the longest start with it, from where the two part."""
    out = []
    if len(a) != len(b):
        out.append(f"    {len(a)} lines vs {len(b)}")
    sb = set(b)
    only_a = [x for x in a if x not in sb]
    only_b = [y for y in b if y not in set(a)]
    for x in only_a[:limit]:
        y = max(only_b, key=lambda y: len(os.path.commonprefix([x, y])), default=None)
        if y is None:
            out.append(f"    only in A: {x[:300]!r}")
            continue
        col = len(os.path.commonprefix([x, y]))
        lo = max(0, col - 100)
        out.append(f"    only in A, from column {col + 1} (nearest line of B below):")
        out.append(f"      A: {x[lo:col + 100]!r}")
        out.append(f"      B: {y[lo:col + 100]!r}")
    if not only_a:
        for y in only_b[:limit]:
            out.append(f"    only in B: {y[:300]!r}")
    return out


def compare(dir_a, dir_b):
    fa, fb = walk(dir_a), walk(dir_b)
    bad = 0
    for rel in sorted(fa - fb):
        print(f"DIFFERENT  {rel}: missing from {dir_b}")
        bad += 1
    for rel in sorted(fb - fa):
        print(f"DIFFERENT  {rel}: missing from {dir_a}")
        bad += 1
    for rel in sorted(fa & fb):
        with open(os.path.join(dir_a, rel), "rb") as f:
            a = f.read()
        with open(os.path.join(dir_b, rel), "rb") as f:
            b = f.read()
        desc, fn = how(rel)
        if fn is None:
            if a == b:
                print(f"same       {rel} ({desc})")
                continue
            diffs = first_differences(a.decode("utf-8", "replace").split("\n"),
                                      b.decode("utf-8", "replace").split("\n"))
        else:
            try:
                ca, cb = fn(a), fn(b)
            except (ValueError, UnicodeDecodeError, IndexError, KeyError) as e:
                print(f"DIFFERENT  {rel}: cannot read it ({e})")
                bad += 1
                continue
            if ca == cb:
                print(f"same       {rel} ({desc}{', identical bytes' if a == b else ''})")
                continue
            unordered = desc.startswith(("records", "distinct"))
            diffs = (unordered_differences if unordered else first_differences)(ca, cb)
        bad += 1
        print(f"DIFFERENT  {rel} ({desc})")
        for line in diffs:
            print(line)
    total = len(fa | fb)
    print(f"{total - bad} of {total} files the same" + ("" if not bad else f", {bad} different"))
    return 1 if bad else 0


def run(binary, outdir):
    binary = os.path.abspath(binary)
    if os.path.exists(outdir) and os.listdir(outdir):
        print(f"{outdir} is not empty: give a new directory", file=sys.stderr)
        return 2
    os.makedirs(os.path.join(outdir, "logs"), exist_ok=True)
    os.makedirs(os.path.join(outdir, "inputs"), exist_ok=True)
    shutil.copyfile(TRACE, os.path.join(outdir, "inputs", os.path.basename(TRACE)))
    failed = 0
    t0 = time.monotonic()
    for name, args in SCENARIOS.items():
        cmd = [binary] + COMMON + args + ["--artifact-dir", name]
        start = time.monotonic()
        with open(os.path.join(outdir, "logs", name + ".out"), "wb") as out, \
                open(os.path.join(outdir, "logs", name + ".err"), "wb") as err:
            try:
                rc = subprocess.run(cmd, cwd=outdir, stdout=out, stderr=err,
                                    timeout=RUN_TIMEOUT_S).returncode
            except subprocess.TimeoutExpired:
                rc = "timeout"
        took = time.monotonic() - start
        print(f"{name:15} exit {rc}  {took:5.1f} s  {' '.join(cmd[1:])}")
        if rc != 0:
            failed += 1
            print(f"  see {os.path.join(outdir, 'logs', name + '.err')}")
    print(f"total {time.monotonic() - t0:.1f} s")
    return 1 if failed else 0


def main(argv):
    if len(argv) == 4 and argv[1] == "run":
        return run(argv[2], argv[3])
    if len(argv) == 4 and argv[1] == "compare":
        return compare(argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
