#!/usr/bin/env python3
"""Two runs' summary JSONs side by side, metric by metric (avg, p50, p99, max), plus ringperf's
dispatch lag: e.g. a single-process run against `ringperf merge` of the same schedule's shards.

    python3 perf/compare_runs.py whole/profile_export_aiperf.json merged/profile_export_aiperf.json
"""
import json
import sys

STATS = ("avg", "p50", "p99", "max")


def main() -> int:
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    a, b = (json.load(open(p)) for p in sys.argv[1:])
    print(f"{'metric':34} {'stat':4} {'A':>14} {'B':>14}  unit")
    for key, ma in a.items():
        mb = b.get(key)
        if not (isinstance(ma, dict) and "unit" in ma and isinstance(mb, dict)):
            continue
        for st in STATS:
            if ma.get(st) is not None and mb.get(st) is not None:
                print(f"{key:34} {st:4} {ma[st]:14.4f} {mb[st]:14.4f}  {ma['unit']}")
    for name, run in (("A", a), ("B", b)):
        lag = run.get("ringperf", {}).get("dispatch_lag_ns", {})
        print(f"dispatch lag {name}: " + ", ".join(f"{k} {v}" for k, v in lag.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
