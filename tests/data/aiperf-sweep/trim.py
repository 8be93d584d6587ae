"""trim.py: copies an AIPerf artifact directory into a test fixture: the full path listing, the
sweep/search-level files, one variation's summary, metric blocks cut to the plotted tags
(the full key sets are listed in key-sets.json)."""
import json, os, re, shutil, sys

src, dst, one_summary = sys.argv[1], sys.argv[2], sys.argv[3]
TAGS = ["request_throughput", "output_token_throughput", "time_to_first_token",
        "request_latency", "inter_token_latency", "request_count"]
STATS = {"avg", "mean", "min", "max", "std", "p1", "p5", "p10", "p25", "p50", "p75",
         "p90", "p95", "p99", "sum", "count"}

def kept(key):
    for t in TAGS:
        if key == t:
            return True
        if key.startswith(t + "_") and key[len(t) + 1:] in STATS:
            return True
    return False

def cut_metrics(m):
    return {k: v for k, v in m.items() if kept(k)}

key_sets = {}
def cut(obj, rel):
    if isinstance(obj, dict):
        if "per_combination_metrics" in obj:
            keys = sorted({k for c in obj["per_combination_metrics"] for k in c.get("metrics", {})})
            key_sets[rel] = {"top_level": list(obj.keys()), "per_combination_metrics[].metrics": keys}
            for c in obj["per_combination_metrics"]:
                c["metrics"] = cut_metrics(c.get("metrics", {}))
        elif isinstance(obj.get("metrics"), dict) and "metadata" in obj:
            if not any("metrics" in v for v in key_sets.values()):
                key_sets[rel] = {"top_level": list(obj.keys()), "metrics": sorted(obj["metrics"])}
            obj["metrics"] = cut_metrics(obj["metrics"])
    if isinstance(obj, dict) and rel.startswith("search_iter_") and "input_config" in obj:
        if not any(k.startswith("search_iter_") for k in key_sets):
            key_sets[rel] = {"top_level": list(obj.keys())}
        obj = {k: v for k, v in obj.items()
               if k in ("schema_version", "aiperf_version", "benchmark_id") or k in TAGS}
    return obj

os.makedirs(dst, exist_ok=True)
paths = []
for root, dirs, files in os.walk(src):
    for n in dirs + files:
        paths.append(os.path.relpath(os.path.join(root, n), src))
with open(os.path.join(dst, "tree.txt"), "w") as f:
    f.write("\n".join(sorted(paths)) + "\n")

for rel in sorted(paths):
    p = os.path.join(src, rel)
    if not os.path.isfile(p):
        continue
    name = os.path.basename(rel)
    take = (
        "sweep_aggregate" in rel.split(os.sep)
        or re.match(r"^(search|pareto|degradation|sla|.*_result|.*knee|.*curve|.*frontier)", name)
        or (name == "profile_export_aiperf_aggregate.json" and "profile_runs" not in rel.split(os.sep))
        or rel == one_summary
        or re.match(r"^search_iter_\d+/profile_runs/run_\d+/profile_export_aiperf\.json$", rel)
        or rel == os.path.join(os.path.dirname(one_summary), "run_config.json")
    )
    if not take or name.startswith(".") or rel.startswith("plots") or "logs" in rel.split(os.sep):
        continue
    if name == "search_checkpoint.json":
        with open(p) as f:
            key_sets[rel] = {"top_level (file not kept: %d bytes)" % os.path.getsize(p): list(json.load(f).keys())}
        continue
    out = os.path.join(dst, rel)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    if name.endswith(".json"):
        with open(p) as f:
            data = json.load(f)
        with open(out, "w") as f:
            json.dump(cut(data, rel) if rel != one_summary else data, f, indent=2)
            f.write("\n")
    else:
        shutil.copyfile(p, out)
if key_sets:
    with open(os.path.join(dst, "key-sets.json"), "w") as f:
        json.dump(key_sets, f, indent=1)
        f.write("\n")

# CSVs over 20 kB: the first (wide) table keeps the sweep parameters' columns and the plotted
# tags' columns; the sections after it are kept whole; the full header goes to key-sets.json.
import csv, io
for root, _, files in os.walk(dst):
    for n in files:
        p = os.path.join(root, n)
        if not n.endswith(".csv") or os.path.getsize(p) <= 20000:
            continue
        with open(os.path.join(root, n[:-4] + ".json")) as f:
            params = {x["name"] for x in json.load(f)["metadata"]["sweep_parameters"]}
        text = open(p).read()
        table, sep, rest = text.partition("\n\n")
        rows = list(csv.reader(io.StringIO(table)))
        header = rows[0]
        keep = [i for i, h in enumerate(header)
                if h in params or any(h.startswith(t + "_") and h[len(t) + 1:].split("_")[0] in STATS for t in TAGS)]
        with open(os.path.join(src, os.path.relpath(p, dst)[:-4] + ".json")) as f:
            full = json.load(f)
        mkeys = sorted({k for c in full["per_combination_metrics"] for k in c["metrics"]})
        order = [x["name"] for x in full["metadata"]["sweep_parameters"]]
        rule = order + [k + "_" + s for k in mkeys for s in ["mean", "std", "min", "max", "cv"]]
        assert header == rule, "the CSV header is not the documented rule"
        key_sets[os.path.relpath(p, dst)] = {
            "csv_header": "the sweep parameters, then <key>_mean, _std, _min, _max, _cv for every "
                          "per_combination_metrics key in sorted order (checked when this fixture was made)",
            "csv_columns": len(header)}
        out = io.StringIO()
        w = csv.writer(out, lineterminator="\n")
        for r in rows:
            w.writerow([r[i] for i in keep if i < len(r)])
        with open(p, "w") as f:
            f.write(out.getvalue() + sep + rest)
with open(os.path.join(dst, "key-sets.json"), "w") as f:
    json.dump(key_sets, f, indent=1)
    f.write("\n")
