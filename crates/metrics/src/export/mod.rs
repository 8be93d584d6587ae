#![warn(missing_docs)]
//! Output artifacts (docs/output-formats.md): summary JSON and CSV, per-record JSONL, the console
//! table, the artifact directory name and the export file names.

pub mod aggregate;
pub mod console;
pub mod csv;
pub mod headers;
pub mod json;
pub mod jsonl;
pub mod marker;
pub mod outputs_json;
pub mod owned;
pub mod phases;
pub mod prometheus;
pub mod raw;
pub mod shard;
pub mod telemetry;
pub mod timeslices;
pub mod trace_console;
pub mod trace_data;

#[cfg(test)]
mod tests;

use std::io;
use std::path::{Path, PathBuf};

use crate::aggregate::{LagSummary, Summary};

pub use console::{plural, render_console, render_footer, render_gpu_power};
pub use csv::summary_csv;
pub use json::{summary_json, summary_json_string};
pub use jsonl::JsonlWriter;

/// Run-level facts the exporters need beyond the metric results. Filled by the caller.
#[derive(Clone, Debug)]
pub struct RunInfo {
    /// Run id in AIPerf's form: 12 lowercase hex digits ([`new_benchmark_id`]).
    pub benchmark_id: String,
    /// Written as `aiperf_version` (the AIPerf version whose formats we follow).
    pub aiperf_version: String,
    /// The command line, already redacted by the caller.
    pub cli_command: String,
    /// The resolved configuration echoed as `input_config`.
    pub input_config: serde_json::Value,
    /// Wall-clock epoch ns when profiling started and ended (`start_time` / `end_time`).
    pub start_wall_ns: u64,
    /// See `start_wall_ns`.
    pub end_wall_ns: u64,
    /// The run was cut short (Ctrl-C, error budget).
    pub was_cancelled: bool,
    /// `is_complete` / `incomplete_reason`; omitted from the JSON when `None`.
    pub is_complete: Option<bool>,
    /// Why the run is incomplete, if it is.
    pub incomplete_reason: Option<String>,
    /// Console table title after `ringperf | ` (AIPerf's `LLM Metrics`).
    pub metrics_title: String,
    /// The I/O driver the workers ran on (`io_uring` or `epoll`).
    pub io_driver: String,
    /// Worker threads.
    pub workers: usize,
    /// Times a worker found its record ring full and had to wait.
    pub ring_stalls: u64,
    /// `--random-seed`, if given (`run_info.random_seed`).
    pub random_seed: Option<u64>,
    /// One run of a repeated profile (`--num-profile-runs`): its place in `run_info`.
    pub trial: Option<Trial>,
    /// The run's clock anchors: raw `CLOCK_MONOTONIC` ns and wall-clock epoch ns of the same
    /// instant, so wall-clock record stamps convert exactly to the monotonic scale (ground-truth
    /// comparisons with the mock server's truth log).
    pub monotonic_origin_ns: u64,
    /// Wall-clock epoch ns of the instant `monotonic_origin_ns` was taken.
    pub wall_origin_ns: u64,
    /// `CLOCK_REALTIME − CLOCK_MONOTONIC` as calibrated at start, converting kernel receive
    /// stamps (`None`: not measured, as in a merge).
    pub realtime_offset: Option<ringperf_wire::clock::RealtimeOffset>,
    /// The stamps the metrics used: `kernel` (kernel receive stamps where a read had one) or
    /// `user`.
    pub timestamps: &'static str,
    /// The run is one shard of several (`ringperf.shard` in the JSON).
    pub shard: Option<ShardInfo>,
    /// The run was merged from its shards by `ringperf merge` (`ringperf.shards` in the JSON).
    pub merge: Option<MergeInfo>,
    /// CPU time of each of the run's threads (`ringperf.threads`; empty for a merged run).
    pub threads: Vec<ThreadCpu>,
    /// Whether the run needed its tokenizer (`ringperf.tokenizer_loaded`; the builtin one is built
    /// on first use); `None` for a merged run.
    pub tokenizer_loaded: Option<bool>,
    /// Whether the client kept up (`ringperf.client_health` and a console line; `None` for a
    /// merged run).
    pub client_health: Option<crate::aggregate::health::ClientHealth>,
    /// The profiling phases' session trees (agent traces): AIPerf's `branch_stats` fields in
    /// its order; `None` when the dataset has none.
    pub branch_stats: Option<Vec<(&'static str, u64)>>,
    /// `--scenario`: AIPerf's `metadata` block (the scenario, whether the run may be submitted,
    /// and why not).
    pub scenario: Option<ScenarioVerdict>,
    /// Every phase the run ran, in order (`ringperf.phases`): also those AIPerf's phase
    /// manifest leaves out (agentic replay's own warmup) or a run without a manifest has.
    pub phases: Vec<PhaseSpan>,
}

/// One phase of a run and when it ran.
#[derive(Clone, Debug, PartialEq)]
pub struct PhaseSpan {
    /// Warmup or profiling.
    pub kind: ringperf_wire::record::Phase,
    /// Its name (`agentic.warmup` for agentic replay's own).
    pub name: String,
    /// Wall-clock epoch ns of its start.
    pub start_ns: u64,
    /// Wall-clock epoch ns of its end (its last answer).
    pub end_ns: u64,
}

/// A scenario run's verdict.
#[derive(Clone, Debug, PartialEq)]
pub struct ScenarioVerdict {
    /// The scenario's name.
    pub name: String,
    /// Why the run may not be submitted (`unsafe_override`, `run_cancelled`); none: it may.
    pub invalid_reasons: Vec<String>,
}

/// One thread's CPU time, read by the thread itself (`CLOCK_THREAD_CPUTIME_ID`) as it ends.
#[derive(Clone, Debug, PartialEq)]
pub struct ThreadCpu {
    /// `main`, `aggregator`, `scraper`, `gpu_scraper` or `worker_<i>`.
    pub name: String,
    /// User + system CPU time, ns.
    pub cpu_ns: u64,
    /// Workers only: `cpu_ns` over the thread's wall-clock lifetime (start to exit).
    pub busy_fraction: Option<f64>,
    /// Workers with batched wake-ups on (`--batch-wakeups-us`): the naps they took.
    pub naps: Option<ringperf_io::net::batch::NapStats>,
    /// Workers whose warm pool opened connections (open-loop phases): how many.
    pub warm_pool: Option<WarmPool>,
    /// Workers: times an open loop's wait with nothing due ended (a worker sleeps until its next
    /// credit is near: a few per credit, not a poll).
    pub idle_wakes: Option<u64>,
}

/// One run of a repeated profile, as AIPerf's `run_info` names it.
#[derive(Clone, Debug, PartialEq)]
pub struct Trial {
    /// The run's index, from 0 (`trial`).
    pub index: u32,
    /// `run_NNNN`, from 1 (`run_label`), also its directory's name.
    pub label: String,
    /// One id shared by every run of the sequence (`sweep_id`, a UUID).
    pub sweep_id: String,
    /// The sweep variation the run belongs to; `None`: the one unvaried `base` variation.
    pub variation: Option<VariationInfo>,
}

/// A sweep variation as `run_info` names it.
#[derive(Clone, Debug, PartialEq)]
pub struct VariationInfo {
    /// `variation_index`, from 0.
    pub index: usize,
    /// `variation_label`.
    pub label: String,
    /// `variation_values`: `{parameter path: value}`.
    pub values: serde_json::Map<String, serde_json::Value>,
    /// Variations in the sweep (not exported; the dashboard's "i of n"); 0 when unknown (a
    /// planner's open-ended search).
    pub of: usize,
    /// Trials per variation (not exported); 0 when unknown.
    pub trials: u32,
}

impl VariationInfo {
    /// The dashboard's line for trial `trial` (from 0): `variation 2 of 3:
    /// phases.profiling.concurrency=2 · trial 1 of 2`.
    pub fn status(&self, trial: u32) -> String {
        let of = |n: usize| {
            if n > 0 {
                format!(" of {n}")
            } else {
                String::new()
            }
        };
        let mut s = format!(
            "variation {}{}: {}",
            self.index + 1,
            of(self.of),
            self.label
        );
        if self.trials > 1 {
            s.push_str(&format!(" · trial {} of {}", trial + 1, self.trials));
        }
        s
    }
}

/// What a worker's warm connection pool did (`ringperf_engine::worker::warm`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WarmPool {
    /// Connections opened ahead of the requests.
    pub opened: u64,
    /// Connects of the pool that failed.
    pub failed: u64,
}

/// One shard's place in a split run, as its summary JSON records it (`ringperf.shard`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShardInfo {
    /// This shard, from 0.
    pub index: u32,
    /// Shards in the run.
    pub count: u32,
    /// The run id all shards share (also `benchmark_id`).
    pub run_id: String,
    /// The shared start instant, wall-clock epoch ns.
    pub start_at_ns: u64,
    /// This shard's first phase start minus `start_at_ns`, on this machine's wall clock: how
    /// late it started (negative if its clock is behind and it started "early").
    pub start_lag_ns: i64,
    /// Whether this shard scraped the server's `/metrics`.
    pub server_metrics: bool,
}

/// A run merged from its shards' artifacts by `ringperf merge`: every shard of the run, by index,
/// missing ones included (`ringperf.shards` in the JSON).
#[derive(Clone, Debug, PartialEq)]
pub struct MergeInfo {
    /// One entry per shard index, `0..count`.
    pub shards: Vec<ShardHealth>,
}

impl MergeInfo {
    /// The merged run's client-health verdict, from its shards' own.
    pub fn client_health(&self) -> crate::aggregate::health::MergedHealth {
        crate::aggregate::health::MergedHealth {
            shards: self
                .shards
                .iter()
                .map(|s| (s.index, s.client_health.clone()))
                .collect(),
        }
    }
}

/// What became of one shard in a merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ShardStatus {
    /// It finished and its records are merged.
    Ok,
    /// It did not finish cleanly (the reason); whatever records it wrote are merged.
    Failed(String),
    /// No directory given to the merge holds it.
    Missing,
}

impl std::fmt::Display for ShardStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ShardStatus::Ok => f.write_str("ok"),
            ShardStatus::Failed(why) => write!(f, "failed: {why}"),
            ShardStatus::Missing => f.write_str("missing"),
        }
    }
}

/// One shard's client health in a merged run. Counts and dispatch lag are recomputed from the
/// shard's own profiling records (so a failed shard has them too); the worker facts come from
/// its summary JSON and are `None` when it wrote none.
#[derive(Clone, Debug, PartialEq)]
pub struct ShardHealth {
    /// The shard, from 0.
    pub index: u32,
    /// Its artifact directory; `None` when missing.
    pub dir: Option<PathBuf>,
    /// What became of it.
    pub status: ShardStatus,
    /// Its valid profiling records.
    pub request_count: u64,
    /// Its failed profiling records.
    pub error_request_count: u64,
    /// Dispatch lag (actual − intended send time) over its profiling records.
    pub dispatch_lag: Option<LagSummary>,
    /// Times its workers found their record ring full.
    pub ring_stalls: Option<u64>,
    /// Its worker threads.
    pub workers: Option<u64>,
    /// The I/O driver its workers ran on.
    pub io_driver: Option<String>,
    /// How late it started after the shared `--start-at`, ns, on its own clock.
    pub start_lag_ns: Option<i64>,
    /// Whether it scraped the server's `/metrics`.
    pub server_metrics: bool,
    /// Torn last lines of its per-record JSONL (a shard killed mid-write), skipped.
    pub torn_lines: u64,
    /// Its own client-health verdict (`None`: missing, or its summary has none).
    pub client_health: Option<crate::aggregate::health::ShardVerdict>,
}

impl ShardHealth {
    /// A shard of the run that none of the merged directories holds.
    pub fn missing(index: u32) -> Self {
        Self {
            index,
            dir: None,
            status: ShardStatus::Missing,
            request_count: 0,
            error_request_count: 0,
            dispatch_lag: None,
            ring_stalls: None,
            workers: None,
            io_driver: None,
            start_lag_ns: None,
            server_metrics: false,
            torn_lines: 0,
            client_health: None,
        }
    }
}

/// A fresh run id as AIPerf 0.13 makes it (`uuid4().hex[:12]`): the first 12 hex digits of a
/// random UUID.
pub fn new_benchmark_id() -> String {
    let mut id = uuid::Uuid::new_v4().simple().to_string();
    id.truncate(12);
    id
}

/// The stimulus of the first non-warmup phase, which names the artifact directory.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Stimulus {
    /// Closed loop at this concurrency.
    Concurrency(u64),
    /// Open loop at `rate` requests/s, optionally capped by a concurrency.
    Rate {
        /// Requests per second.
        rate: f64,
        /// `--concurrency` cap, if any.
        concurrency: Option<u64>,
    },
    /// User-centric rate: `users` sessions at `qps` total.
    UserCentric {
        /// Concurrent users.
        users: u64,
        /// Total requests per second.
        qps: f64,
    },
    /// Trace replay.
    FixedSchedule,
}

/// `artifacts/<model>-openai-<endpoint_type>-<stimulus>` (docs/output-formats.md), used when
/// `--artifact-dir` is not given.
pub fn default_artifact_dir(model: &[String], endpoint_type: &str, stimulus: &Stimulus) -> PathBuf {
    let mut name = model
        .first()
        .map(|m| m.replace('/', "_"))
        .unwrap_or_default();
    if model.len() > 1 {
        name.push_str("_multi");
    }
    let stim = match stimulus {
        Stimulus::Concurrency(n) => format!("concurrency{n}"),
        Stimulus::Rate {
            rate,
            concurrency: Some(c),
        } => {
            format!("concurrency{c}-request_rate{}", py_float_str(*rate))
        }
        Stimulus::Rate {
            rate,
            concurrency: None,
        } => format!("request_rate{}", py_float_str(*rate)),
        Stimulus::UserCentric { users, qps } => {
            format!("user_centric-users{users}-qps{}", py_float_str(*qps))
        }
        Stimulus::FixedSchedule => "fixed_schedule".to_string(),
    };
    PathBuf::from("artifacts").join(format!("{name}-openai-{endpoint_type}-{stim}"))
}

/// The AIPerf version whose formats the exports follow (`aiperf_version` in the JSON files).
pub const AIPERF_VERSION: &str = "0.13.0";

/// Python's `str(float)`: shortest round-trip digits, `.0` on integral values, scientific
/// notation (`1e+20`, `1.5e-05`) when the decimal exponent is < −4 or ≥ 16.
pub fn py_float_str(v: f64) -> String {
    if v.is_nan() {
        return "nan".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "inf".into() } else { "-inf".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() {
            "-0.0".into()
        } else {
            "0.0".into()
        };
    }
    // `{:e}` gives the shortest round-trip mantissa, e.g. "1.5e-5".
    let sci = format!("{v:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..16).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let plain = format!("{v}");
    if plain.contains('.') {
        plain
    } else {
        format!("{plain}.0")
    }
}

/// Export file names (docs/output-formats.md): the defaults, or `<prefix>.json`, … when
/// `--profile-export-prefix` is given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExportNames {
    /// Summary JSON.
    pub json: String,
    /// Summary CSV.
    pub csv: String,
    /// Per-record JSONL.
    pub jsonl: String,
    /// Raw request/response JSONL.
    pub raw_jsonl: String,
    /// Timeslice CSV.
    pub timeslices_csv: String,
    /// Timeslice JSON.
    pub timeslices_json: String,
    /// GPU telemetry JSONL.
    pub gpu_telemetry_jsonl: String,
    /// Network-latency probes JSONL (`--network-latency-automatic`).
    pub network_latency_jsonl: String,
    /// Server-metrics JSON.
    pub server_metrics_json: String,
    /// Server-metrics CSV.
    pub server_metrics_csv: String,
    /// Server-metrics JSONL.
    pub server_metrics_jsonl: String,
    /// Server-metrics Parquet.
    pub server_metrics_parquet: String,
    /// Console export (`<prefix>_console.txt`).
    pub console_txt: String,
}

/// The endings a `--profile-export-prefix` loses, as AIPerf 0.13 strips them: the first that
/// matches, in this order (an export's own name given as the prefix names the same files).
const PREFIX_SUFFIXES: [&str; 14] = [
    "_server_metrics.parquet",
    "_server_metrics.jsonl",
    "_server_metrics.json",
    "_server_metrics.csv",
    "_network_latency.jsonl",
    "_gpu_telemetry.jsonl",
    "_timeslices.csv",
    "_timeslices.json",
    "_console.txt",
    "_raw.jsonl",
    ".parquet",
    ".csv",
    ".json",
    ".jsonl",
];

impl ExportNames {
    /// The names for an optional `--profile-export-prefix`. A prefix ending in one of
    /// [`PREFIX_SUFFIXES`] (`foo.json`, `foo_raw.jsonl`) loses that ending first.
    pub fn new(prefix: Option<&str>) -> Self {
        let Some(prefix) = prefix.filter(|p| !p.is_empty()) else {
            return Self {
                json: "profile_export_aiperf.json".into(),
                csv: "profile_export_aiperf.csv".into(),
                jsonl: "profile_export.jsonl".into(),
                raw_jsonl: "profile_export_raw.jsonl".into(),
                timeslices_csv: "profile_export_aiperf_timeslices.csv".into(),
                timeslices_json: "profile_export_aiperf_timeslices.json".into(),
                gpu_telemetry_jsonl: "gpu_telemetry_export.jsonl".into(),
                network_latency_jsonl: "profile_export_network_latency.jsonl".into(),
                server_metrics_json: "server_metrics_export.json".into(),
                server_metrics_csv: "server_metrics_export.csv".into(),
                server_metrics_jsonl: "server_metrics_export.jsonl".into(),
                server_metrics_parquet: "server_metrics_export.parquet".into(),
                console_txt: "profile_export_console.txt".into(),
            };
        };
        let p = PREFIX_SUFFIXES
            .iter()
            .find_map(|ext| prefix.strip_suffix(ext))
            .unwrap_or(prefix);
        Self {
            json: format!("{p}.json"),
            csv: format!("{p}.csv"),
            jsonl: format!("{p}.jsonl"),
            raw_jsonl: format!("{p}_raw.jsonl"),
            timeslices_csv: format!("{p}_timeslices.csv"),
            timeslices_json: format!("{p}_timeslices.json"),
            gpu_telemetry_jsonl: format!("{p}_gpu_telemetry.jsonl"),
            network_latency_jsonl: format!("{p}_network_latency.jsonl"),
            server_metrics_json: format!("{p}_server_metrics.json"),
            server_metrics_csv: format!("{p}_server_metrics.csv"),
            server_metrics_jsonl: format!("{p}_server_metrics.jsonl"),
            server_metrics_parquet: format!("{p}_server_metrics.parquet"),
            console_txt: format!("{p}_console.txt"),
        }
    }
}

/// Writes the summary JSON and CSV into `dir` under `names` (with their GPU telemetry sections,
/// see [`telemetry`]), returning the console footer
/// entries `("CSV Export", path)` and `("JSON Export", path)`, in AIPerf's order.
pub fn write_summary_files(
    dir: &Path,
    names: &ExportNames,
    summary: &Summary,
    warmup: Option<&Summary>,
    run: &RunInfo,
) -> io::Result<Vec<(&'static str, PathBuf)>> {
    let doc = summary_doc(summary, warmup, run, None);
    write_summary_files_with_gpu(dir, names, summary, (&doc, true), None)
}

/// The summary JSON's document: [`summary_json`] with the GPU telemetry a run collected
/// (`None`: none).
pub fn summary_doc(
    summary: &Summary,
    warmup: Option<&Summary>,
    run: &RunInfo,
    gpu: Option<&telemetry::GpuSections>,
) -> serde_json::Value {
    let mut doc = summary_json(summary, warmup, run);
    telemetry::insert_telemetry(&mut doc, run, gpu);
    doc
}

/// Writes the CSV summary of `summary` and, when `doc.1` says so, `doc.0` (its
/// [`summary_doc`]) as the summary JSON: AIPerf's `artifacts.summary: false` leaves the JSON
/// out and writes the CSV all the same. Returns the footer's entries, in AIPerf's order.
pub fn write_summary_files_with_gpu(
    dir: &Path,
    names: &ExportNames,
    summary: &Summary,
    (doc, json): (&serde_json::Value, bool),
    gpu: Option<&telemetry::GpuSections>,
) -> io::Result<Vec<(&'static str, PathBuf)>> {
    let csv_path = dir.join(&names.csv);
    let mut csv = summary_csv(summary);
    csv.push_str(&telemetry::gpu_table_csv(gpu));
    std::fs::write(&csv_path, csv)?;
    let mut files = vec![("CSV Export", csv_path)];
    if json {
        let json_path = dir.join(&names.json);
        std::fs::write(
            &json_path,
            serde_json::to_string_pretty(doc).unwrap_or_default(),
        )?;
        files.push(("JSON Export", json_path));
    }
    Ok(files)
}
