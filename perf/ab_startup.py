#!/usr/bin/env python3
"""exec -> first request at the mock, for three kinds of run, one or more ringperf builds:

- `synthetic`: the harness's start-up run (`perf/run.sh startup`: ISL 8, one request, builtin
  tokenizer, synthetic prompts, which need the tokenizer's table before the first send);
- `file`: one request whose prompt comes from a `single_turn` file, its ISL counted by the
  client (the table is built before the first send);
- `file-server`: the same with `--use-server-token-count` (nothing counted by the client).

    perf/ab_startup.py BINARY [BINARY...] [--rounds 5] [--runs 5] [--kinds synthetic,file-server]
                       [--isl 550]

Per round, each binary does `--runs` runs of each kind, kinds and binaries alternating run by
run; the stamp is CLOCK_MONOTONIC just before the exec, the arrival is the mock's truth log
(the same clock). One fresh mock (pinned to MOCK_CORE) serves all of a round; the client is
pinned to CLIENT_CORE. Prints the median (min-max of the round medians) per binary and kind,
each kind's ratio to `file` of the same binary, and the load average before and after; with
two binaries or more, a table of each kind side by side, every binary's median beside the first
binary's (the previous build) and their ratio.

The figure is exec -> the mock's arrival stamp of the first request, which is the client's first
write plus one loopback transit (tens of microseconds on this machine).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import harness as h  # noqa: E402  (perf/harness.py)


def command(binary, kind, out, seed, prompt_file, isl):
    h.RINGPERF = binary
    cmd = h.ringperf_cmd(out, conc=1, count=1)
    cmd[cmd.index("--random-seed") + 1] = str(seed)
    cmd[cmd.index("--isl") + 1] = str(isl)
    if kind.startswith("file"):
        at = cmd.index("--isl")
        del cmd[at:at + 4]  # --isl N --osl 1: a file's prompts carry their own length
        at = cmd.index("--num-dataset-entries")
        del cmd[at:at + 2]
        cmd += ["--input-file", str(prompt_file), "--custom-dataset-type", "single_turn"]
    if kind == "file-server":
        cmd.append("--use-server-token-count")
    return ["taskset", "-c", h.CLIENT_CORE] + cmd


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("binaries", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--kinds", default="synthetic,file,file-server",
                    help="comma-separated subset of synthetic, file, file-server")
    ap.add_argument("--isl", type=int, default=h.ISL,
                    help="synthetic prompts' length in tokens (default: the harness's, 8; "
                         "550 is ringperf's default)")
    a = ap.parse_args()
    kinds = [k for k in a.kinds.split(",") if k]
    h.check(kinds and all(k in ("synthetic", "file", "file-server") for k in kinds),
            f"--kinds {a.kinds!r}: a subset of synthetic, file, file-server")
    medians = {(b, k): [] for b in a.binaries for k in kinds}
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        prompt_file = tmp / "prompt.jsonl"
        prompt_file.write_text('{"text": "Shall I compare thee to a summer\'s day?"}\n')
        seed = 0
        for r in range(a.rounds):
            h.RINGPERF = a.binaries[-1]
            samples = {key: [] for key in medians}
            with h.Mock(tmp, f"round{r}", tokens=1) as m:
                for i in range(a.runs):
                    order = list(medians)
                    for binary, kind in order if (r + i) % 2 == 0 else order[::-1]:
                        seed += 1
                        out = tmp / f"r{r}-{i}-{seed}"
                        cmd = command(binary, kind, out, seed, prompt_file, a.isl)
                        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
                        p = subprocess.run(cmd, capture_output=True, timeout=120)
                        h.check(p.returncode == 0, f"{cmd}: {p.stderr.decode()[-400:]}")
                        rec = json.loads((out / "profile_export.jsonl").read_text()
                                         .splitlines()[0])
                        samples[(binary, kind)].append((t0, rec["metadata"]["x_request_id"]))
                truth = {t["request_id"]: t for t in m.stop()}
            for key, ss in samples.items():
                ms = [(truth[rid]["arrival_ns"] - t0) / 1e6 for t0, rid in ss]
                medians[key].append(statistics.median(ms))
    load.append(os.getloadavg()[0])
    print(f"load average (1 min) {load[0]:.2f} at the start, {load[1]:.2f} at the end")
    for b in a.binaries:
        base = statistics.median(medians[(b, "file")]) if "file" in kinds else None
        for kind in kinds:
            v = medians[(b, kind)]
            ratio = f", / file {statistics.median(v) / base:.2f}" if base else ""
            print(f"{b} {kind}: {statistics.median(v):.1f} ms ({min(v):.1f}-{max(v):.1f}){ratio}")
    if len(a.binaries) > 1:
        first = a.binaries[0]
        print()
        print("| run | " + " | ".join(a.binaries) + " | last / first |")
        print("|---|" + "---|" * (len(a.binaries) + 1))
        for kind in kinds:
            cells = []
            for b in a.binaries:
                v = medians[(b, kind)]
                cells.append(f"{statistics.median(v):.1f} ms ({min(v):.1f}-{max(v):.1f})")
            ratio = (statistics.median(medians[(a.binaries[-1], kind)])
                     / statistics.median(medians[(first, kind)]))
            print(f"| {kind} | " + " | ".join(cells) + f" | {ratio:.2f} |")


if __name__ == "__main__":
    main()
