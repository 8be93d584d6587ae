//! `--wandb-*` (docs/integrations.md#weights--biases) in W&B offline mode: the run directory
//! `wandb sync` would upload, read back with the `wandb` package's own protobuf definitions
//! (the `.wandb` file's LevelDB-style log of `Record`s) and its table file, against the run's
//! own summary JSON.
//!
//! The Python with `wandb` is `$RINGPERF_WANDB_PYTHON`, else `target/ci-venv/bin/python`, else
//! `python3`. Without it the test is skipped (and fails under `CI=true`).

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::common::{read_json, require_tool};

fn python_with_wandb() -> Option<PathBuf> {
    [
        std::env::var_os("RINGPERF_WANDB_PYTHON").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-venv/bin/python")),
        Some(PathBuf::from("python3")),
    ]
    .into_iter()
    .flatten()
    .find(|p| {
        Command::new(p)
            .args(["-c", "import wandb"])
            .output()
            .is_ok_and(|o| o.status.success())
    })
}

/// Reads a `.wandb` file: the 7-byte header (`:W&B`, magic, version), then 32 KiB blocks of
/// chunks (crc32c, length, type: full / first / middle / last), each record a protobuf
/// `Record` of wandb's own; prints what the test checks as JSON.
const READ_BACK: &str = r#"
import json, struct, sys
from wandb.proto import wandb_internal_pb2 as pb
data = open(sys.argv[1], "rb").read()
assert data[:4] == b":W&B", data[:7]
BLOCK, pos, recs, part = 32768, 7, [], b""
while pos + 7 <= len(data):
    left = BLOCK - pos % BLOCK
    if left < 7:
        pos += left
        continue
    crc, n, kind = struct.unpack("<IHB", data[pos:pos + 7])
    chunk = data[pos + 7:pos + 7 + n]
    pos += 7 + n
    if kind == 0 and n == 0:
        continue
    part += chunk
    if kind in (1, 4):
        r = pb.Record()
        r.ParseFromString(part)
        recs.append(r)
        part = b""
out = {"run": None, "artifacts": [], "history": [], "kinds": [], "config": {}}
for r in recs:
    k = r.WhichOneof("record_type")
    out["kinds"].append(k)
    if k == "run":
        out["run"] = {"project": r.run.project, "name": r.run.display_name, "id": r.run.run_id,
                      "tags": list(r.run.tags),
                      "config": {}}
        out["config"].update({i.key: json.loads(i.value_json) for i in r.run.config.update})
    elif k == "config":
        out["config"].update({i.key: json.loads(i.value_json) for i in r.config.update})
    elif k == "artifact":
        out["artifacts"].append({"name": r.artifact.name, "type": r.artifact.type,
                                 "paths": sorted(c.path for c in r.artifact.manifest.contents)})
    elif k == "history":
        out["history"].append({i.key or "/".join(i.nested_key): json.loads(i.value_json)
                               for i in r.history.item})
print(json.dumps(out))
"#;

fn find(dir: &Path, pred: &dyn Fn(&Path) -> bool, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        // `wandb/latest-run` is a link to the run's own folder.
        if e.file_type().is_ok_and(|t| t.is_symlink()) {
            continue;
        }
        let p = e.path();
        if p.is_dir() {
            find(&p, pred, out);
        } else if pred(&p) {
            out.push(p);
        }
    }
}

#[test]
fn an_offline_run_holds_the_config_tags_table_and_artifact_of_the_run() {
    let py = python_with_wandb();
    if !require_tool(
        "wandb",
        py.is_some(),
        "skipped: no Python with wandb (pip install wandb; or set RINGPERF_WANDB_PYTHON)",
    ) {
        return;
    }
    let py = py.unwrap();
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .args([
            "profile",
            "-m",
            "mock-model",
            "--mock",
            "--streaming",
            "--ui",
            "none",
        ])
        .args([
            "--tokenizer",
            "builtin",
            "--concurrency",
            "2",
            "--request-count",
            "4",
        ])
        .arg("--artifact-dir")
        .arg(dir.path())
        .args(["--wandb-project", "lab-proj", "--wandb-run-name", "first"])
        .args(["--wandb-tag", "gpu-none,nightly", "--wandb-tag", "lab"])
        .env("RINGPERF_WANDB_PYTHON", &py)
        .env("WANDB_MODE", "offline")
        .env("WANDB_SILENT", "true")
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("W&B run 'first' ("), "{err}");

    let mut runs = Vec::new();
    find(
        &dir.path().join("wandb"),
        &|p| p.extension().is_some_and(|e| e == "wandb"),
        &mut runs,
    );
    assert_eq!(runs.len(), 1, "{runs:?}");
    let read = Command::new(&py)
        .args(["-c", READ_BACK])
        .arg(&runs[0])
        .output()
        .unwrap();
    assert!(
        read.status.success(),
        "{}",
        String::from_utf8_lossy(&read.stderr)
    );
    let back: Value = serde_json::from_slice(&read.stdout).unwrap();
    let summary = read_json(&dir.path().join("profile_export_aiperf.json"));
    let id8: String = summary["benchmark_id"]
        .as_str()
        .unwrap()
        .chars()
        .take(8)
        .collect();

    let run = &back["run"];
    assert_eq!(run["project"], "lab-proj");
    assert_eq!(run["name"], "first");
    let tags: Vec<&str> = run["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t.as_str().unwrap())
        .collect();
    assert_eq!(
        tags,
        [
            "aiperf-0.13.0",
            &format!("benchmark-{id8}"),
            "gpu-none",
            "nightly",
            "lab"
        ]
    );
    // Each config item as wandb keeps it: the value itself, or `{"value": …}`; the config
    // comes in the run record and in config records.
    let config = |k: &str| {
        let v = &back["config"][k];
        v.get("value").unwrap_or(v).clone()
    };
    assert_eq!(
        config("aiperf.cli_command"),
        summary["run_info"]["cli_command"],
        "{}",
        back["config"]
    );
    assert_eq!(config("models"), summary["input_config"]["models"]);

    // The artifact: the run's export files, by their names in the artifact directory (wandb
    // adds its own `run_table` artifact for the table).
    let arts: Vec<&Value> = back["artifacts"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|a| a["type"] == "aiperf-run")
        .collect();
    assert_eq!(arts.len(), 1, "{}", back["artifacts"]);
    assert_eq!(
        arts[0]["name"],
        format!("aiperf-{}", run["id"].as_str().unwrap())
    );
    let paths: Vec<&str> = arts[0]["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    for f in [
        "profile_export_aiperf.json",
        "profile_export_aiperf.csv",
        "profile_export.jsonl",
        "inputs.json",
    ] {
        assert!(paths.contains(&f), "{f}: {paths:?}");
    }
    assert!(paths.iter().all(|p| !p.starts_with("wandb/")), "{paths:?}");

    // The table: logged as a file of the run; its rows against the summary JSON.
    // The history row: the table's description, its keys nested under `summary_metrics/`.
    let hist = back["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h.get("summary_metrics/_type").is_some())
        .unwrap_or_else(|| panic!("no summary_metrics in {}", back["history"]))
        .clone();
    assert_eq!(hist["summary_metrics/_type"], "table-file", "{hist}");
    assert_eq!(hist["summary_metrics/ncols"], 8);
    let mut tables = Vec::new();
    find(
        &dir.path().join("wandb"),
        &|p| p.to_string_lossy().ends_with(".table.json"),
        &mut tables,
    );
    assert_eq!(tables.len(), 1);
    let table = read_json(&tables[0]);
    assert_eq!(
        table["columns"],
        serde_json::json!(["Metric", "avg", "min", "max", "p99", "p90", "p50", "std"])
    );
    let rows = table["data"].as_array().unwrap();
    assert_eq!(
        hist["summary_metrics/nrows"].as_u64(),
        Some(rows.len() as u64)
    );
    let row = |label: &str| {
        rows.iter()
            .find(|r| r[0] == label)
            .unwrap_or_else(|| panic!("{label}"))
    };
    let rl = row("Request Latency (ms)");
    for (i, stat) in ["avg", "min", "max", "p99", "p90", "p50", "std"]
        .iter()
        .enumerate()
    {
        let want = summary["request_latency"][*stat].as_f64().unwrap();
        let got = rl[i + 1].as_f64().unwrap();
        assert!(
            (got - (want * 100.0).round() / 100.0).abs() < 1e-9,
            "{stat}: {got} vs {want}"
        );
    }
    assert_eq!(row("Request Count (requests)")[1].as_f64(), Some(4.0));
}
