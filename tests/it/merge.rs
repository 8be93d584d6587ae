//! `ringperf merge` against the shards' own records: real `profile` processes, run side by side
//! against one in-process mock, merged by the binary, and every merged statistic recomputed
//! here from the shards' JSONL lines with hand formulas (NumPy's linear percentiles, population
//! std), independently of the crate's statistics code. Also: refused inputs, a failed and a
//! missing shard, and the merged JSONL as the union of the shards' lines.

use crate::common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use common::{read_json, read_jsonl};
use ringperf_metrics::aggregate::{Kind, MetricDef};
use ringperf_metrics::export::shard::{self, ShardManifest};
use ringperf_mock::mock::{FaultList, MockConfig, MockServer, OutputLen};
use serde_json::Value;

/// A mock whose answers vary: 2 to 12 tokens (capped by the request's max tokens) and one
/// request in ten refused with a 503.
fn mock() -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: Duration::from_millis(2),
        itl: Duration::from_micros(300),
        output_tokens: OutputLen::Uniform { min: 2, max: 12 },
        seed: 5,
        faults: "status=503:0.1".parse::<FaultList>().expect("fault list").0,
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// The `ringperf profile` command line of a shard into `dir` (`--shard-*` flags not included).
fn shard_argv(server: &MockServer, dir: &Path, extra: &[&str]) -> Vec<String> {
    let mut argv: Vec<String> = [
        "ringperf",
        "profile",
        "-m",
        "mock-model",
        "--streaming",
        "--ui",
        "none",
        "--tokenizer",
        "builtin",
        "--isl",
        "16",
    ]
    .map(String::from)
    .to_vec();
    argv.push("--url".into());
    argv.push(format!("http://{}", server.addr));
    argv.push("--artifact-dir".into());
    argv.push(dir.display().to_string());
    argv.extend(extra.iter().map(|s| s.to_string()));
    argv
}

/// Runs the `count` shards of one run as separate `ringperf profile` processes side by side,
/// each into `root/shard-<i>`, all starting two seconds from now; returns their directories.
/// Every shard must exit 0.
fn run_shards(server: &MockServer, root: &Path, count: u32, extra: &[&str]) -> Vec<PathBuf> {
    let start_at = ringperf_wire::clock::wall_now_ns() + 2_000_000_000;
    let dirs: Vec<PathBuf> = (0..count)
        .map(|i| root.join(format!("shard-{i}")))
        .collect();
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            let argv = shard_argv(server, dir, extra);
            Command::new(env!("CARGO_BIN_EXE_ringperf"))
                .env("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05")
                .env("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0.3")
                .args(&argv[1..])
                .args(["--shard-index", &i.to_string()])
                .args(["--shard-count", &count.to_string()])
                .args(["--start-at", &start_at.to_string()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("the binary runs")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("the shard ends");
        assert!(
            out.status.success(),
            "shard {i}: exit {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    dirs
}

/// A manifest as a shard writes it, for inputs the merge must refuse.
fn manifest(index: u32, count: u32, run_id: &str, argv: Vec<String>) -> ShardManifest {
    ShardManifest {
        run_id: run_id.into(),
        index,
        count,
        start_at_ns: 1_800_000_000_000_000_000,
        workload: "0123456789abcdef".into(),
        server_metrics: index == 0,
        argv,
        ringperf_version: env!("CARGO_PKG_VERSION").into(),
    }
}

/// `ringperf merge ARGS…`.
fn merge(args: &[&Path], out: Option<&Path>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringperf"));
    cmd.arg("merge").args(args);
    if let Some(o) = out {
        cmd.arg("--artifact-dir").arg(o);
    }
    cmd.output().expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The JSONL's lines as written.
fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .expect("jsonl exists")
        .lines()
        .map(str::to_string)
        .collect()
}

/// NumPy's `percentile(…, method="linear")` of sorted values.
fn linear(sorted: &[f64], q: f64) -> f64 {
    let rank = q / 100.0 * (sorted.len() - 1) as f64;
    let (lo, hi) = (rank.floor() as usize, rank.ceil() as usize);
    sorted[lo] + (sorted[hi] - sorted[lo]) * (rank - lo as f64)
}

/// `a` and `b` agree to 1e-9 of the larger of them and `scale`.
fn close(a: f64, b: f64, scale: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(scale.abs()).max(1e-12)
}

fn assert_close(what: &str, got: &Value, want: f64, scale: f64) {
    let got = got
        .as_f64()
        .unwrap_or_else(|| panic!("{what}: not a number: {got}"));
    assert!(
        close(got, want, scale),
        "{what}: merged {got}, records {want}"
    );
}

/// Every profiling record's metric values in display units (lists flattened), by tag.
fn columns(records: &[&Value]) -> BTreeMap<String, Vec<f64>> {
    let mut cols: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for r in records {
        for (tag, m) in r["metrics"].as_object().expect("metrics") {
            let col = cols.entry(tag.clone()).or_default();
            match &m["value"] {
                Value::Array(items) => col.extend(items.iter().map(|v| v.as_f64().unwrap())),
                v => col.push(v.as_f64().expect("a number")),
            }
        }
    }
    cols
}

fn ns(record: &Value, key: &str) -> u64 {
    record["metadata"][key].as_u64().expect(key)
}

/// The merged summary against the shards' records, recomputed by hand (module docs).
fn check_against_records(shard_dirs: &[PathBuf], merged: &Path) {
    let per_shard: Vec<Vec<Value>> = shard_dirs
        .iter()
        .map(|d| read_jsonl(&d.join("profile_export.jsonl")))
        .collect();
    let all: Vec<&Value> = per_shard.iter().flatten().collect();
    let profiling: Vec<&Value> = all
        .iter()
        .copied()
        .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
        .collect();
    let valid: Vec<&Value> = profiling
        .iter()
        .copied()
        .filter(|r| r.get("error").is_none())
        .collect();
    let errors = profiling.len() - valid.len();
    assert!(
        !valid.is_empty() && errors > 0,
        "the run has successes and errors"
    );
    let doc = read_json(&merged.join("profile_export_aiperf.json"));

    // Every per-request metric: count, avg, min, max, population std, p1…p99.
    let mut compared = 0;
    for (tag, mut values) in columns(&profiling) {
        let def = MetricDef::by_tag(&tag).expect("a known tag");
        if def.kind != Kind::Record {
            continue;
        }
        let m = &doc[&tag];
        let n = values.len() as f64;
        let avg = values.iter().sum::<f64>() / n;
        let std = (values.iter().map(|v| (v - avg).powi(2)).sum::<f64>() / n).sqrt();
        values.sort_by(f64::total_cmp);
        assert_eq!(
            m["count"].as_u64(),
            Some(values.len() as u64),
            "{tag} count"
        );
        assert_close(&format!("{tag} avg"), &m["avg"], avg, avg);
        assert_close(&format!("{tag} min"), &m["min"], values[0], avg);
        assert_close(
            &format!("{tag} max"),
            &m["max"],
            values[values.len() - 1],
            avg,
        );
        assert_close(&format!("{tag} std"), &m["std"], std, avg);
        for q in [1, 5, 10, 25, 50, 75, 90, 95, 99] {
            let want = linear(&values, f64::from(q));
            assert_close(&format!("{tag} p{q}"), &m[format!("p{q}")], want, avg);
        }
        compared += 1;
    }
    assert!(compared >= 10, "only {compared} metrics compared");

    // Counts, duration (latest response − earliest request start) and throughput.
    assert_eq!(
        doc["request_count"]["avg"].as_f64(),
        Some(valid.len() as f64)
    );
    assert_eq!(
        doc["error_request_count"]["avg"].as_f64(),
        Some(errors as f64)
    );
    let first = valid
        .iter()
        .map(|r| ns(r, "request_start_ns"))
        .min()
        .unwrap();
    let last = valid
        .iter()
        .map(|r| {
            let latency_ms = r["metrics"]["request_latency"]["value"].as_f64().unwrap();
            ns(r, "request_start_ns") + (latency_ms * 1e6).round() as u64
        })
        .max()
        .unwrap();
    let secs = (last - first) as f64 / 1e9;
    assert_close(
        "benchmark_duration",
        &doc["benchmark_duration"]["avg"],
        secs,
        0.0,
    );
    assert_close(
        "request_throughput",
        &doc["request_throughput"]["avg"],
        valid.len() as f64 / secs,
        0.0,
    );
    // OSL mismatches (every request asked for 10 tokens: beyond 5 % is a mismatch), counted
    // from the hidden requested OSL the merge rebuilds.
    let mismatches = valid
        .iter()
        .filter(|r| {
            r["metrics"]["osl_mismatch_diff_pct"]["value"]
                .as_f64()
                .unwrap()
                .abs()
                > 5.0
        })
        .count();
    assert_eq!(
        doc["osl_mismatch_count"]["avg"].as_f64().unwrap_or(0.0),
        mismatches as f64
    );

    // Dispatch lag over every profiling record, and each shard's over its own.
    let lag = |records: &[&Value]| -> (Vec<f64>, u64) {
        let mut v: Vec<f64> = records
            .iter()
            .map(|r| {
                (i128::from(ns(r, "request_start_ns")) - i128::from(ns(r, "credit_issued_ns")))
                    as f64
            })
            .collect();
        v.sort_by(f64::total_cmp);
        let n = v.len() as u64;
        (v, n)
    };
    let check_lag = |what: &str, got: &Value, records: &[&Value]| {
        let (v, n) = lag(records);
        assert_eq!(got["count"].as_u64(), Some(n), "{what}");
        assert_close(&format!("{what} p50"), &got["p50"], linear(&v, 50.0), 1.0);
        assert_close(&format!("{what} p99"), &got["p99"], linear(&v, 99.0), 1.0);
        assert_close(&format!("{what} max"), &got["max"], v[v.len() - 1], 1.0);
    };
    check_lag(
        "dispatch lag",
        &doc["ringperf"]["dispatch_lag_ns"],
        &profiling,
    );
    let shards = doc["ringperf"]["shards"].as_array().expect("shards");
    assert_eq!(shards.len(), shard_dirs.len());
    for (i, (s, records)) in shards.iter().zip(&per_shard).enumerate() {
        let mine: Vec<&Value> = records
            .iter()
            .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
            .collect();
        let failed = mine.iter().filter(|r| r.get("error").is_some()).count();
        assert_eq!(s["index"], i);
        assert_eq!(s["status"], "ok");
        assert_eq!(s["request_count"], mine.len() - failed);
        assert_eq!(s["error_request_count"], failed);
        assert_eq!(s["server_metrics"], i == 0);
        assert!(s["start_lag_ns"].is_i64(), "{s}");
        let own = read_json(&shard_dirs[i].join("profile_export_aiperf.json"));
        assert_eq!(own["benchmark_id"], doc["benchmark_id"], "one run id");
        assert_eq!(s["workers"], own["ringperf"]["workers"]);
        check_lag(&format!("shard {i} lag"), &s["dispatch_lag_ns"], &mine);
    }
    assert_eq!(doc["is_complete"], true);
    assert_eq!(doc["was_cancelled"], false);

    // `--slice-duration`: every valid record in exactly one timeslice.
    let slices = merged.join("profile_export_aiperf_timeslices.json");
    if slices.is_file() {
        let slices = read_json(&slices);
        let in_slices: f64 = slices["timeslices"]
            .as_array()
            .expect("timeslices")
            .iter()
            .map(|s| s["request_count"]["avg"].as_f64().unwrap_or(0.0))
            .sum();
        assert_eq!(in_slices, valid.len() as f64);
    }

    // Warmup records are their own phase.
    let warmup = all.len() - profiling.len();
    if warmup > 0 {
        assert_eq!(
            doc["warmup_metrics"]["request_count"]["avg"]
                .as_f64()
                .unwrap()
                + doc["warmup_metrics"]["error_request_count"]["avg"]
                    .as_f64()
                    .unwrap_or(0.0),
            warmup as f64
        );
    }
}

/// The merged JSONL is the shards' lines, each once, each shard's in its own order.
fn check_union(shard_dirs: &[PathBuf], merged: &Path) {
    let merged_lines = lines(&merged.join("profile_export.jsonl"));
    let mut want: Vec<String> = Vec::new();
    for d in shard_dirs {
        let mine = lines(&d.join("profile_export.jsonl"));
        let mut at = merged_lines.iter();
        for l in &mine {
            assert!(
                at.any(|m| m == l),
                "a line of {} is missing or out of order",
                d.display()
            );
        }
        want.extend(mine);
    }
    let mut got = merged_lines.clone();
    got.sort();
    want.sort();
    assert_eq!(got.len(), want.len());
    assert!(got == want, "the merged lines are the union of the shards'");
}

/// The artifacts every merge writes, and the server metrics of the shard that scraped.
fn check_artifacts(shard_dirs: &[PathBuf], merged: &Path) {
    for f in [
        "profile_export_aiperf.csv",
        "profile_export_console.txt",
        ".aiperf_results_ready.json",
    ] {
        assert!(merged.join(f).is_file(), "{f}");
    }
    // The per-phase files and their manifest only for a run of several phases, as the shards
    // wrote them (AIPerf writes none for one phase).
    let several = shard_dirs[0].join("phase_manifest.json").is_file();
    assert_eq!(merged.join("phase_manifest.json").is_file(), several);
    assert_eq!(
        merged
            .join("phases/profiling/profile_export_aiperf.json")
            .is_file(),
        several
    );
    if !several {
        assert!(!merged.join("phases").exists());
        return;
    }
    assert!(
        !merged.join(shard::SHARD_FILE).exists(),
        "a merged run is no shard"
    );
    for f in ["server_metrics_export.json", "inputs.json"] {
        assert_eq!(
            std::fs::read(merged.join(f)).expect(f),
            std::fs::read(shard_dirs[0].join(f)).expect(f),
            "{f} is shard 0's"
        );
    }
    // The profiling phase's server metrics, when shard 0 has them (a scrape fell in its
    // phase), are its file as it wrote it, and the manifest names it.
    let manifest = read_json(&merged.join("phase_manifest.json"));
    let profiling = manifest["phases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["phase_name"] == "profiling")
        .expect("profiling phase");
    let sm = "phases/profiling/server_metrics.json";
    match std::fs::read(shard_dirs[0].join(sm)) {
        Ok(theirs) => {
            assert_eq!(profiling["server_metrics_json"], sm);
            assert_eq!(std::fs::read(merged.join(sm)).unwrap(), theirs);
        }
        Err(_) => {
            assert!(profiling.get("server_metrics_json").is_none());
            assert!(!merged.join(sm).exists());
        }
    }
}

fn merge_and_check(server: &MockServer, count: u32, requests: u64, extra: &[&str]) {
    let tmp = tempfile::tempdir().unwrap();
    let dirs = run_shards(server, tmp.path(), count, extra);
    // The shards split one run: its requests, each once.
    let mut sessions: Vec<u64> = dirs
        .iter()
        .flat_map(|d| read_jsonl(&d.join("profile_export.jsonl")))
        .filter(|r| r["metadata"]["benchmark_phase"] == "profiling")
        .map(|r| r["metadata"]["session_num"].as_u64().unwrap())
        .collect();
    sessions.sort_unstable();
    assert_eq!(sessions, (0..requests).collect::<Vec<_>>());
    // The parent directory holds the shards: the merge finds them, and writes beside them.
    let out = merge(&[tmp.path()], None);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let merged = tmp.path().join("merged");
    let stdout = text(&out.stdout);
    assert!(stdout.contains("ringperf | LLM Metrics"), "{stdout}");
    assert!(
        stdout.contains(&format!("{count} of {count} shard(s)")),
        "{stdout}"
    );
    for i in 0..count {
        assert!(stdout.contains(&format!("  shard {i}: ")), "{stdout}");
    }
    check_against_records(&dirs, &merged);
    if extra.contains(&"--slice-duration") {
        assert!(
            merged
                .join("profile_export_aiperf_timeslices.csv")
                .is_file()
        );
    }
    check_union(&dirs, &merged);
    check_artifacts(&dirs, &merged);
    let console = std::fs::read_to_string(merged.join("profile_export_console.txt")).unwrap();
    assert!(console.contains("Merged run"), "{console}");

    // Merging again passes over the merged directory and writes the same files.
    let before: Vec<Vec<u8>> = ["profile_export_aiperf.json", "profile_export.jsonl"]
        .iter()
        .map(|f| std::fs::read(merged.join(f)).unwrap())
        .collect();
    let again = merge(&[tmp.path()], None);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    for (f, b) in ["profile_export_aiperf.json", "profile_export.jsonl"]
        .iter()
        .zip(before)
    {
        assert!(std::fs::read(merged.join(f)).unwrap() == b, "{f} changed");
    }
}

#[test]
fn open_loop_shards_merge_to_their_records() {
    let server = mock();
    let extra = [
        "--request-rate",
        "150",
        "--request-count",
        "48",
        "--random-seed",
        "7",
        "--osl",
        "10",
        "--slice-duration",
        "0.1",
    ];
    for count in [2, 3] {
        merge_and_check(&server, count, 48, &extra);
    }
}

#[test]
fn closed_loop_shards_merge_to_their_records() {
    let server = mock();
    let extra = [
        "--concurrency",
        "6",
        "--request-count",
        "48",
        "--warmup-request-count",
        "6",
        "--random-seed",
        "3",
        "--osl",
        "10",
    ];
    for count in [2, 3] {
        merge_and_check(&server, count, 48, &extra);
    }
}

/// A shard killed mid-run: no summary, a torn last line. It is reported, its complete lines
/// are merged, and the merge exits 4 having written everything.
#[test]
fn a_failed_shard_is_reported_and_its_records_kept() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let extra = ["--concurrency", "4", "--request-count", "24", "--osl", "10"];
    let dirs = run_shards(&server, tmp.path(), 2, &extra);
    let victim = &dirs[1];
    std::fs::remove_file(victim.join("profile_export_aiperf.json")).unwrap();
    let jsonl = victim.join("profile_export.jsonl");
    let kept = lines(&jsonl);
    let mut bytes = std::fs::read(&jsonl).unwrap();
    bytes.extend_from_slice(&kept[0].as_bytes()[..kept[0].len() / 2]);
    std::fs::write(&jsonl, bytes).unwrap();

    let out_dir = tmp.path().join("out");
    let out = merge(&[&dirs[0], &dirs[1]], Some(&out_dir));
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    let stderr = text(&out.stderr);
    assert!(stderr.contains("shard 1 failed"), "{stderr}");
    let doc = read_json(&out_dir.join("profile_export_aiperf.json"));
    let s = &doc["ringperf"]["shards"][1];
    let status = s["status"].as_str().unwrap();
    assert!(status.starts_with("failed: "), "{status}");
    assert!(status.contains("no profile_export_aiperf.json"), "{status}");
    assert!(status.contains("torn"), "{status}");
    assert_eq!(s["torn_lines"], 1);
    assert!(s["workers"].is_null() && s["io_driver"].is_null());
    let failed = kept.iter().filter(|l| l.contains("\"error\":{")).count();
    assert_eq!(s["request_count"], kept.len() - failed);
    assert_eq!(s["error_request_count"], failed);
    assert_eq!(doc["ringperf"]["shards"][0]["status"], "ok");
    assert_eq!(doc["is_complete"], false);
    assert_eq!(doc["was_cancelled"], true);
    assert!(
        doc["incomplete_reason"]
            .as_str()
            .unwrap()
            .contains("shard 1 failed"),
        "{}",
        doc["incomplete_reason"]
    );
    // The complete lines of both shards, nothing of the torn one.
    let merged_lines = lines(&out_dir.join("profile_export.jsonl"));
    assert_eq!(
        merged_lines.len(),
        lines(&dirs[0].join("profile_export.jsonl")).len() + kept.len()
    );
    assert!(out_dir.join(".aiperf_results_ready.json").is_file());
    check_against_records_counts(&dirs, &out_dir);
}

/// The merged counts are every complete line's (a failed shard's complete lines included).
fn check_against_records_counts(dirs: &[PathBuf], merged: &Path) {
    let (mut ok, mut failed) = (0, 0);
    for d in dirs {
        for l in lines(&d.join("profile_export.jsonl")) {
            if serde_json::from_str::<Value>(&l).is_err() {
                continue;
            }
            if l.contains("\"error\":{") {
                failed += 1;
            } else {
                ok += 1;
            }
        }
    }
    let doc = read_json(&merged.join("profile_export_aiperf.json"));
    assert_eq!(doc["request_count"]["avg"].as_f64(), Some(f64::from(ok)));
    assert_eq!(
        doc["error_request_count"]["avg"].as_f64().unwrap_or(0.0),
        f64::from(failed)
    );
}

/// Shard 1 of 2 never ran: a warning, `missing`, an incomplete run, exit 4.
#[test]
fn a_missing_shard_is_named() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let dirs = run_shards(
        &server,
        tmp.path(),
        2,
        &["--concurrency", "2", "--request-count", "12"],
    );
    std::fs::remove_dir_all(&dirs[1]).unwrap();
    let out = merge(&[tmp.path()], None);
    assert_eq!(out.status.code(), Some(4), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("shard 1 of 2 is missing"),
        "{}",
        text(&out.stderr)
    );
    assert!(text(&out.stdout).contains("  shard 1: missing"));
    let doc = read_json(&tmp.path().join("merged/profile_export_aiperf.json"));
    assert_eq!(doc["ringperf"]["shards"][1]["status"], "missing");
    assert!(doc["ringperf"]["shards"][1]["dir"].is_null());
    assert_eq!(doc["is_complete"], false);
    assert_eq!(doc["incomplete_reason"], "shard 1 missing");
}

/// Shards of two runs (each started at its own instant) are not one run.
#[test]
fn shards_of_two_runs_are_refused() {
    let server = mock();
    let tmp = tempfile::tempdir().unwrap();
    let extra = ["--concurrency", "2", "--request-count", "4"];
    let a = run_shards(&server, &tmp.path().join("a"), 2, &extra);
    let b = run_shards(&server, &tmp.path().join("b"), 2, &extra);
    let id = |d: &Path| shard::read(d).unwrap().run_id;
    assert_ne!(id(&a[0]), id(&b[1]));
    assert_eq!(id(&a[0]), id(&a[1]), "the shards of one run share its id");
    let out = tmp.path().join("out");
    assert_refused(
        &[&a[0], &b[1]],
        &out,
        &format!(
            "{} belongs to run {}, {} to run {}",
            a[0].display(),
            id(&a[0]),
            b[1].display(),
            id(&b[1])
        ),
    );
    // The same shard twice, through its parent and by name, counts once.
    let o = merge(&[&tmp.path().join("a"), &a[1]], Some(&out));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
}

/// A directory holding nothing but `shard.json` and the plan of the command line it records (as
/// a shard writes them before it sends anything).
fn bare_shard(root: &Path, name: &str, m: &ShardManifest) -> PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    shard::write(&dir, m).unwrap();
    ringperf::plan::Plan::parse(&m.argv)
        .unwrap()
        .write(&dir, &[])
        .unwrap();
    dir
}

fn assert_refused(args: &[&Path], out: &Path, says: &str) {
    let o = merge(args, Some(out));
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains(says), "{stderr}");
    assert!(
        !out.exists(),
        "nothing is written when the merge is refused"
    );
}

#[test]
fn mixed_inputs_are_refused_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let out = root.join("out");
    let argv = || shard_argv_offline(root);
    let a = bare_shard(root, "a", &manifest(0, 2, "aaaaaaaaaaaa", argv()));
    let other_run = bare_shard(root, "b", &manifest(1, 2, "bbbbbbbbbbbb", argv()));
    let (ad, bd) = (a.display(), other_run.display());
    assert_refused(
        &[&a, &other_run],
        &out,
        &format!("{ad} belongs to run aaaaaaaaaaaa, {bd} to run bbbbbbbbbbbb"),
    );
    let mut w = manifest(1, 2, "aaaaaaaaaaaa", argv());
    w.workload = "fedcba9876543210".into();
    let other_workload = bare_shard(root, "c", &w);
    assert_refused(&[&a, &other_workload], &out, "different workloads");
    let twin = bare_shard(root, "d", &manifest(0, 2, "aaaaaaaaaaaa", argv()));
    assert_refused(
        &[&a, &twin],
        &out,
        &format!(
            "{ad} and {} are both shard 0 of run aaaaaaaaaaaa",
            twin.display()
        ),
    );
    let empty = root.join("empty");
    std::fs::create_dir(&empty).unwrap();
    assert_refused(&[&empty], &out, "no shard.json in");
    assert_refused(&[&a], &a.join("merged"), "shard 0's directory");
    let mut summary_only = argv();
    summary_only.extend(["--export-level".into(), "summary".into()]);
    let s = bare_shard(root, "e", &manifest(0, 1, "eeeeeeeeeeee", summary_only));
    assert_refused(&[&s], &out, "--export-level summary");
}

/// A shard command line that needs no server to validate.
fn shard_argv_offline(dir: &Path) -> Vec<String> {
    [
        "ringperf",
        "profile",
        "-m",
        "m",
        "--url",
        "http://127.0.0.1:9",
        "--artifact-dir",
    ]
    .into_iter()
    .map(String::from)
    .chain([dir.display().to_string()])
    .collect()
}

/// Two shards of one open-loop run (10 requests each, 10 ms apart) judged against
/// `--max-client-lag-us 100000`; shard 1 blocks 50 ms before every send (the
/// `RINGPERF_TEST_WORKER_STALL_MS` hook), so its dispatch lag grows by at least 40 ms a request
/// and its own verdict fails (exit 5). Shard 0 usually keeps up, but a debug build reaching the
/// shared `--start-at` late on a busy machine counts the delay in its own lag: its verdict is
/// read from its summary, not assumed.
fn shards_one_behind(server: &MockServer, root: &Path) -> Vec<PathBuf> {
    let start_at = ringperf_wire::clock::wall_now_ns() + 3_000_000_000;
    let dirs: Vec<PathBuf> = (0..2).map(|i| root.join(format!("shard-{i}"))).collect();
    let extra = [
        "--request-rate",
        "200",
        "--arrival-pattern",
        "constant",
        "--request-count",
        "20",
        "--workers-max",
        "1",
        "--no-server-metrics",
        "--max-client-lag-us",
        "100000",
    ];
    let children: Vec<_> = dirs
        .iter()
        .enumerate()
        .map(|(i, dir)| {
            let argv = shard_argv(server, dir, &extra);
            let mut cmd = Command::new(env!("CARGO_BIN_EXE_ringperf"));
            cmd.env_remove(ringperf_engine::worker::TEST_STALL_ENV)
                .args(&argv[1..])
                .args(["--shard-index", &i.to_string(), "--shard-count", "2"])
                .args(["--start-at", &start_at.to_string()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped());
            if i == 1 {
                cmd.env(ringperf_engine::worker::TEST_STALL_ENV, "50");
            }
            cmd.spawn().expect("the binary runs")
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = child.wait_with_output().expect("the shard ends");
        let code = out.status.code();
        let ok = if i == 1 {
            code == Some(5)
        } else {
            matches!(code, Some(0 | 5))
        };
        assert!(ok, "shard {i}: {code:?} {}", text(&out.stderr));
    }
    dirs
}

/// A shard whose own run fell behind makes the merged verdict fall behind, naming it, on the
/// console and in `ringperf.client_health` with each shard's own verdict; its shard line never
/// says "ok" (only a shard that kept up does); the merge exits 5 as that shard did.
#[test]
fn a_shard_that_fell_behind_makes_the_merged_verdict_say_so() {
    let server = mock();
    let root = tempfile::tempdir().unwrap();
    let dirs = shards_one_behind(&server, root.path());
    let merged = root.path().join("merged");
    let out = merge(&[dirs[0].as_path(), dirs[1].as_path()], Some(&merged));
    let stdout = text(&out.stdout);
    assert_eq!(out.status.code(), Some(5), "{stdout}{}", text(&out.stderr));
    let own: Vec<Value> = dirs
        .iter()
        .map(|d| {
            read_json(&d.join("profile_export_aiperf.json"))["ringperf"]["client_health"].clone()
        })
        .collect();
    assert_eq!(own[1]["kept_up"], false);
    let own_reasons = own[1]["reasons"].as_array().unwrap().clone();
    let health_line = stdout
        .lines()
        .find(|l| l.starts_with("Client health:"))
        .unwrap();
    assert!(
        health_line.contains(&format!("shard 1: {}", own_reasons[0].as_str().unwrap())),
        "{stdout}"
    );
    assert!(
        health_line.starts_with("Client health: FELL BEHIND — "),
        "{stdout}"
    );
    for (i, verdict) in own.iter().enumerate() {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("  shard {i}:")))
            .unwrap();
        let kept_up = verdict["kept_up"].as_bool().unwrap();
        assert_eq!(line.ends_with(", ok"), kept_up, "{line}");
        assert_eq!(line.ends_with("client FELL BEHIND"), !kept_up, "{line}");
    }
    let health =
        &read_json(&merged.join("profile_export_aiperf.json"))["ringperf"]["client_health"];
    assert_eq!(health["kept_up"], false, "{health}");
    for (i, verdict) in own.iter().enumerate() {
        assert_eq!(
            health["shards"][i]["kept_up"], verdict["kept_up"],
            "{health}"
        );
        assert_eq!(
            health["shards"][i]["reasons"], verdict["reasons"],
            "{health}"
        );
    }
}
