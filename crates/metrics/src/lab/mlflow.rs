//! `--mlflow-*` (docs/integrations.md): after a run has written its files, its MLflow run in a
//! tracking server (the one [`super::live`] started for the live values, else a new one)
//! through MLflow's REST API (`/api/2.0/mlflow/…`), with what AIPerf 0.13's MLflow exporter
//! logs:
//!
//! - metrics: each metric of `profile_export_aiperf.json` — its `avg` under the metric's tag,
//!   each other statistic as `<tag>.<stat>` — and `aiperf.completed_requests` (plus
//!   `aiperf.total_expected_requests` for a request-count run);
//! - params: `endpoint.type`, `endpoint.models`, `endpoint.urls`, `output.artifact_directory`,
//!   `timing.mode`, `loadgen.*` of the profiling phase and `aiperf.cli_command`;
//! - tags: `aiperf.version`, `aiperf.was_cancelled`, `benchmark_id`, the `--mlflow-tag`s, and
//!   `mlflow.runName` / `mlflow.parentRunId`;
//! - artifacts: the files of the artifact directory the globs match (images and HTML under
//!   `plots/`, the rest under `exports/`), then `mlflow_export.json`, which says what was logged.
//!
//! Artifacts go through the server's artifact proxy (`mlflow server`'s default
//! `--serve-artifacts`: an artifact URI `mlflow-artifacts:/…`); a run whose artifact URI is a
//! local `file://` path has its files copied there.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use super::http::{Request, call};

/// Name of the file that says what was logged (in the artifact directory, and uploaded).
pub const EXPORT_METADATA_FILE: &str = "mlflow_export.json";
/// The experiment when `--mlflow-experiment` is not given.
pub const DEFAULT_EXPERIMENT: &str = "aiperf";
/// The globs when `--mlflow-artifact-glob` is not given.
pub const DEFAULT_GLOBS: &[&str] = &[
    "*.json",
    "*.csv",
    "*.jsonl",
    "*.parquet",
    "*_timeslices.*",
    "**/*.png",
    "**/*.jpg",
    "**/*.jpeg",
    "**/*.svg",
    "**/*.html",
];
/// The statistics of a metric that are logged, as AIPerf lists them.
const STATS: &[&str] = &[
    "avg", "p1", "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max", "std",
    "count", "sum",
];
/// Suffixes of the files logged under `plots/`.
const PLOT_SUFFIXES: &[&str] = &["png", "jpg", "jpeg", "svg", "gif", "webp", "html"];
/// MLflow's limits of one `log-batch` call.
const BATCH_METRICS: usize = 1000;
const BATCH_PARAMS: usize = 100;
const BATCH_TAGS: usize = 100;
/// The limit of each call to the tracking server.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// A tracking server's address, from `--mlflow-tracking-uri`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TrackingUri {
    /// As given.
    pub display: String,
    /// `host[:port]`, the `Host` header.
    pub host: String,
    /// The URI's path without a trailing slash (`""` for none).
    pub base_path: String,
}

impl TrackingUri {
    /// Reads an `http://host[:port][/path]` URI.
    ///
    /// # Errors
    /// Another scheme (MLflow's `file:`, `sqlite:`, `databricks` stores are its Python
    /// client's, not a server's), or no host.
    pub fn parse(raw: &str) -> Result<Self, TrackerError> {
        let bad = || {
            TrackerError::Config(format!(
                "--mlflow-tracking-uri {raw}: ringperf speaks MLflow's REST API, so the URI must \
                 be a tracking server's http://host:port (start one with `mlflow server`)"
            ))
        };
        let rest = raw.strip_prefix("http://").ok_or_else(bad)?;
        let (host, path) = rest.split_once('/').map_or((rest, ""), |(h, p)| (h, p));
        if host.is_empty() || host.contains('@') {
            return Err(bad());
        }
        Ok(Self {
            display: raw.to_owned(),
            host: host.to_owned(),
            base_path: if path.is_empty() {
                String::new()
            } else {
                format!("/{}", path.trim_end_matches('/'))
            },
        })
    }

    fn addr(&self) -> Result<SocketAddr, TrackerError> {
        let with_port = if self
            .host
            .rsplit_once(':')
            .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
        {
            self.host.clone()
        } else {
            format!("{}:80", self.host)
        };
        with_port
            .to_socket_addrs()
            .ok()
            .and_then(|mut a| a.next())
            .ok_or_else(|| TrackerError::Server(format!("cannot resolve {}", self.host)))
    }
}

/// `--mlflow-*`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mlflow {
    pub uri: TrackingUri,
    pub experiment: String,
    pub run_name: Option<String>,
    pub tags: Vec<(String, String)>,
    pub parent_run_id: Option<String>,
    pub globs: Vec<String>,
}

/// Why the export failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrackerError {
    /// A flag's value cannot be used.
    Config(String),
    /// The server could not be reached or refused a call.
    Server(String),
    /// A local file could not be read or written.
    Files(String),
}

impl std::fmt::Display for TrackerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrackerError::Config(m) | TrackerError::Server(m) | TrackerError::Files(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for TrackerError {}

/// `--mlflow-tag` values: `key:value` pairs, comma-separated or repeated, or a JSON object.
///
/// # Errors
/// A pair without `:`, or JSON that is not an object.
pub fn parse_tags(values: &[String]) -> Result<Vec<(String, String)>, TrackerError> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut put = |k: &str, v: String| {
        let k = k.trim();
        if !k.is_empty() {
            out.retain(|(x, _)| x != k);
            out.push((k.to_owned(), v));
        }
    };
    for v in values {
        let t = v.trim();
        if t.starts_with('{') {
            let Ok(Value::Object(m)) = serde_json::from_str::<Value>(t) else {
                return Err(TrackerError::Config(format!(
                    "--mlflow-tag {v}: not a JSON object"
                )));
            };
            for (k, x) in m {
                put(&k, x.as_str().map_or_else(|| x.to_string(), str::to_owned));
            }
            continue;
        }
        for item in t.split(',').filter(|s| !s.trim().is_empty()) {
            let Some((k, x)) = item.split_once(':') else {
                return Err(TrackerError::Config(format!(
                    "--mlflow-tag {item}: expected key:value"
                )));
            };
            put(k, x.trim().to_owned());
        }
    }
    Ok(out)
}

/// The metrics of a run's summary JSON as MLflow metrics (see the module documentation).
pub fn metric_payload(
    summary: &Value,
    completed: u64,
    expected: Option<u64>,
) -> BTreeMap<String, f64> {
    let mut out = BTreeMap::new();
    if let Some(m) = summary.as_object() {
        for (tag, v) in m {
            if v.get("unit").is_none() {
                continue;
            }
            for stat in STATS {
                if let Some(x) = v.get(*stat).and_then(Value::as_f64) {
                    let key = if *stat == "avg" {
                        tag.clone()
                    } else {
                        format!("{tag}.{stat}")
                    };
                    out.insert(key, x);
                }
            }
        }
    }
    out.insert("aiperf.completed_requests".into(), completed as f64);
    if let Some(e) = expected {
        out.insert("aiperf.total_expected_requests".into(), e as f64);
    }
    out
}

/// The params of a run, from its summary JSON's `input_config` and `run_info`.
pub fn param_payload(summary: &Value, endpoint_type: &str, dir: &Path) -> BTreeMap<String, String> {
    let ic = &summary["input_config"];
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    };
    let models: Vec<String> = ic["models"]["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|m| m["name"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let mut p = BTreeMap::new();
    p.insert("endpoint.type".into(), endpoint_type.to_owned());
    p.insert("endpoint.models".into(), models.join(","));
    p.insert(
        "endpoint.urls".into(),
        strs(&ic["endpoint"]["urls"]).join(","),
    );
    p.insert(
        "output.artifact_directory".into(),
        dir.display().to_string(),
    );
    let phase = ic["phases"]
        .as_array()
        .and_then(|a| a.iter().find(|ph| ph["kind"] == "profiling"));
    if let Some(ph) = phase {
        let text = |v: &Value| v.as_str().map_or_else(|| v.to_string(), str::to_owned);
        if !ph["type"].is_null() {
            p.insert("timing.mode".into(), text(&ph["type"]));
        }
        for (key, name) in [
            ("concurrency", "loadgen.concurrency"),
            ("rate", "loadgen.request_rate"),
            ("requests", "loadgen.request_count"),
            ("duration", "loadgen.benchmark_duration"),
        ] {
            if !ph[key].is_null() {
                p.insert(name.into(), text(&ph[key]));
            }
        }
    }
    if let Some(c) = summary["run_info"]["cli_command"].as_str() {
        p.insert("aiperf.cli_command".into(), c.to_owned());
    }
    p
}

/// Whether `name` matches the glob `pat` (`*` any run of characters, `?` one character).
fn fnmatch(pat: &[u8], name: &[u8]) -> bool {
    match (pat.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            fnmatch(&pat[1..], name) || (!name.is_empty() && fnmatch(pat, &name[1..]))
        }
        (Some(b'?'), Some(_)) => fnmatch(&pat[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => fnmatch(&pat[1..], &name[1..]),
        _ => false,
    }
}

/// Whether the relative path `rel` (its components) matches the glob `pat` (split on `/`;
/// `**` is any number of directories, none included), as Python's `Path.glob` reads it.
fn glob_match(pat: &[&str], rel: &[&str]) -> bool {
    match pat.first() {
        None => rel.is_empty(),
        Some(&"**") => (0..=rel.len()).any(|i| glob_match(&pat[1..], &rel[i..])),
        Some(p) => {
            !rel.is_empty()
                && (!rel[0].starts_with('.') || p.starts_with('.'))
                && fnmatch(p.as_bytes(), rel[0].as_bytes())
                && glob_match(&pat[1..], &rel[1..])
        }
    }
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out);
        } else if p.is_file() {
            out.push(p);
        }
    }
}

/// The files of `dir` the globs match, each once, in glob order then path order; never
/// [`EXPORT_METADATA_FILE`].
pub fn artifact_files(dir: &Path, globs: &[String]) -> Vec<PathBuf> {
    let mut all = Vec::new();
    walk(dir, &mut all);
    let rel = |p: &Path| -> Vec<String> {
        p.strip_prefix(dir)
            .map(|r| {
                r.components()
                    .map(|c| c.as_os_str().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut out: Vec<PathBuf> = Vec::new();
    for g in globs {
        let pat: Vec<&str> = g.split('/').filter(|s| !s.is_empty()).collect();
        for f in &all {
            let r = rel(f);
            let r: Vec<&str> = r.iter().map(String::as_str).collect();
            if r == [EXPORT_METADATA_FILE] || out.contains(f) {
                continue;
            }
            if glob_match(&pat, &r) {
                out.push(f.clone());
            }
        }
    }
    out
}

/// Where a file goes in the run's artifacts: `plots/…` for images and HTML, `exports/…` for the
/// rest, keeping its folder under the artifact directory (a leading `plots` / `exports` folder
/// is not doubled).
pub fn artifact_path(dir: &Path, file: &Path) -> String {
    let is_plot = file
        .extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| PLOT_SUFFIXES.contains(&e.to_ascii_lowercase().as_str()));
    let base = if is_plot { "plots" } else { "exports" };
    let mut parts: Vec<String> = file
        .strip_prefix(dir)
        .ok()
        .and_then(Path::parent)
        .map(|p| {
            p.components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    if parts.first().is_some_and(|p| p == base) {
        parts.remove(0);
    }
    if parts.is_empty() {
        base.to_owned()
    } else {
        format!("{base}/{}", parts.join("/"))
    }
}

/// A client of one tracking server.
pub(crate) struct Client<'a> {
    uri: &'a TrackingUri,
    addr: SocketAddr,
}

impl Client<'_> {
    fn send(&self, method: &str, path: &str, body: &[u8]) -> Result<Value, TrackerError> {
        let full = format!("{}{path}", self.uri.base_path);
        let r = call(&Request {
            method,
            addr: self.addr,
            host: &self.uri.host,
            path: &full,
            headers: &[],
            body,
            timeout: CALL_TIMEOUT,
        })
        .map_err(|e| TrackerError::Server(format!("{method} {}{full}: {e}", self.uri.display)))?;
        if !(200..300).contains(&r.status) {
            return Err(TrackerError::Server(format!(
                "{method} {}{full}: HTTP {}: {}",
                self.uri.display,
                r.status,
                String::from_utf8_lossy(&r.body)
                    .chars()
                    .take(300)
                    .collect::<String>()
            )));
        }
        if r.body.is_empty() {
            return Ok(Value::Null);
        }
        serde_json::from_slice(&r.body).map_err(|e| {
            TrackerError::Server(format!(
                "{method} {}{full}: not JSON: {e}",
                self.uri.display
            ))
        })
    }

    pub(crate) fn post(&self, path: &str, v: &Value) -> Result<Value, TrackerError> {
        self.send("POST", path, v.to_string().as_bytes())
    }

    /// The experiment's id, made when it does not exist yet.
    fn experiment(&self, name: &str) -> Result<String, TrackerError> {
        let q: String = url_encode(name);
        match self.send(
            "GET",
            &format!("/api/2.0/mlflow/experiments/get-by-name?experiment_name={q}"),
            b"",
        ) {
            Ok(v) => v["experiment"]["experiment_id"]
                .as_str()
                .map(str::to_owned)
                .ok_or_else(|| TrackerError::Server("experiments/get-by-name: no id".into())),
            Err(TrackerError::Server(m)) if m.contains("RESOURCE_DOES_NOT_EXIST") => {
                let v = self.post(
                    "/api/2.0/mlflow/experiments/create",
                    &json!({ "name": name }),
                )?;
                v["experiment_id"]
                    .as_str()
                    .map(str::to_owned)
                    .ok_or_else(|| TrackerError::Server("experiments/create: no id".into()))
            }
            Err(e) => Err(e),
        }
    }
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// What one export did.
#[derive(Clone, Debug, PartialEq)]
pub struct Exported {
    pub run_id: String,
    pub run_name: String,
    pub metrics: usize,
    pub artifacts: Vec<String>,
}

/// What [`export`] needs of the run.
#[derive(Clone, Debug)]
pub struct RunFacts<'a> {
    /// The run's artifact directory (its summary JSON written).
    pub dir: &'a Path,
    /// Its summary, `profile_export_aiperf.json` as written.
    pub summary: &'a Value,
    /// `endpoint.type` (AIPerf's name of the endpoint type).
    pub endpoint_type: &'a str,
    /// Requests that completed (successes and errors).
    pub completed: u64,
    /// The request count the run was given, if it was.
    pub expected: Option<u64>,
}

/// The run started at the start of the benchmark for the live values
/// ([`super::live`]); the end-of-run logging goes into it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveRun {
    pub run_id: String,
    pub run_name: String,
    pub artifact_uri: String,
}

/// The run's name: `--mlflow-run-name`, else `aiperf-<8 characters of the benchmark id>`.
pub fn run_name(m: &Mlflow, benchmark_id: &str) -> String {
    m.run_name.clone().unwrap_or_else(|| {
        format!(
            "aiperf-{}",
            benchmark_id.chars().take(8).collect::<String>()
        )
    })
}

/// A client of the tracking server `m` names.
pub(crate) fn connect(m: &Mlflow) -> Result<Client<'_>, TrackerError> {
    Ok(Client {
        uri: &m.uri,
        addr: m.uri.addr()?,
    })
}

/// Makes the run (in its experiment, made when missing) with its name and parent: its id and
/// artifact URI.
pub(crate) fn create_run(
    c: &Client<'_>,
    m: &Mlflow,
    run_name: &str,
) -> Result<(String, String), TrackerError> {
    let exp = c.experiment(&m.experiment)?;
    let now_ms = ringperf_wire::clock::wall_now_ns() / 1_000_000;
    let mut create_tags = vec![json!({"key": "mlflow.runName", "value": run_name})];
    if let Some(p) = &m.parent_run_id {
        create_tags.push(json!({"key": "mlflow.parentRunId", "value": p}));
    }
    let created = c.post(
        "/api/2.0/mlflow/runs/create",
        &json!({"experiment_id": exp, "run_name": run_name, "start_time": now_ms, "tags": create_tags}),
    )?;
    let info = &created["run"]["info"];
    let run_id = info["run_id"]
        .as_str()
        .ok_or_else(|| TrackerError::Server("runs/create: no run_id".into()))?
        .to_owned();
    Ok((
        run_id,
        info["artifact_uri"].as_str().unwrap_or_default().to_owned(),
    ))
}

/// Logs the run to the tracking server (see the module documentation): into `live`, the run
/// started for the live values, when there is one, else into a new run.
///
/// # Errors
/// The server could not be reached or refused a call, or a file could not be read.
pub fn export(
    m: &Mlflow,
    run: &RunFacts<'_>,
    live: Option<&LiveRun>,
) -> Result<Exported, TrackerError> {
    let c = connect(m)?;
    let benchmark_id = run.summary["benchmark_id"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    let now_ms = ringperf_wire::clock::wall_now_ns() / 1_000_000;
    let (run_id, run_name, artifact_uri) = match live {
        Some(l) => (l.run_id.clone(), l.run_name.clone(), l.artifact_uri.clone()),
        None => {
            let name = run_name(m, &benchmark_id);
            let (id, uri) = create_run(&c, m, &name)?;
            (id, name, uri)
        }
    };

    let metrics = metric_payload(run.summary, run.completed, run.expected);
    let params = param_payload(run.summary, run.endpoint_type, run.dir);
    let mut tags: BTreeMap<String, String> = BTreeMap::new();
    tags.insert(
        "aiperf.version".into(),
        run.summary["aiperf_version"]
            .as_str()
            .unwrap_or("0.13.0")
            .to_owned(),
    );
    tags.insert(
        "ringperf.version".into(),
        env!("CARGO_PKG_VERSION").to_owned(),
    );
    tags.insert(
        "aiperf.was_cancelled".into(),
        run.summary["was_cancelled"]
            .as_bool()
            .unwrap_or(false)
            .to_string(),
    );
    if !benchmark_id.is_empty() {
        tags.insert("benchmark_id".into(), benchmark_id.clone());
    }
    for (k, v) in &m.tags {
        tags.insert(k.clone(), v.clone());
    }
    log_batches(&c, &run_id, &metrics, &params, &tags, now_ms)?;

    let files = artifact_files(run.dir, &m.globs);
    let mut uploaded: Vec<String> = files
        .iter()
        .map(|f| {
            f.strip_prefix(run.dir)
                .map_or_else(|_| f.display().to_string(), |r| r.display().to_string())
        })
        .collect();
    uploaded.push(EXPORT_METADATA_FILE.to_owned());
    let meta = json!({
        "tracking_uri": m.uri.display,
        "experiment": m.experiment,
        "run_id": run_id,
        "run_name": run_name,
        "benchmark_id": benchmark_id,
        "parent_run_id": m.parent_run_id,
        "live_streaming": live.is_some(),
        "reused_live_run": live.is_some(),
        "metric_keys": metrics.keys().collect::<Vec<_>>(),
        "param_keys": params.keys().collect::<Vec<_>>(),
        "tag_keys": tags.keys().collect::<Vec<_>>(),
        "uploaded_artifacts": uploaded,
        "exported_at_ns": ringperf_wire::clock::wall_now_ns(),
    });
    let meta_path = run.dir.join(EXPORT_METADATA_FILE);
    let text = serde_json::to_vec_pretty(&meta).unwrap_or_default();
    std::fs::write(&meta_path, &text)
        .map_err(|e| TrackerError::Files(format!("cannot write {}: {e}", meta_path.display())))?;
    for f in files.iter().chain(std::iter::once(&meta_path)) {
        let to = format!(
            "{}/{}",
            artifact_path(run.dir, f),
            f.file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default()
        );
        upload(&c, &artifact_uri, f, &to)?;
    }
    c.post(
        "/api/2.0/mlflow/runs/update",
        &json!({"run_id": run_id, "status": if run.summary["was_cancelled"] == true { "KILLED" } else { "FINISHED" }, "end_time": ringperf_wire::clock::wall_now_ns() / 1_000_000}),
    )?;
    Ok(Exported {
        run_id,
        run_name,
        metrics: metrics.len(),
        artifacts: uploaded,
    })
}

fn log_batches(
    c: &Client<'_>,
    run_id: &str,
    metrics: &BTreeMap<String, f64>,
    params: &BTreeMap<String, String>,
    tags: &BTreeMap<String, String>,
    ts: u64,
) -> Result<(), TrackerError> {
    let m: Vec<Value> = metrics
        .iter()
        .filter(|(_, v)| v.is_finite())
        .map(|(k, v)| json!({"key": k, "value": v, "timestamp": ts, "step": 0}))
        .collect();
    let p: Vec<Value> = params
        .iter()
        .map(|(k, v)| json!({"key": k, "value": v}))
        .collect();
    let t: Vec<Value> = tags
        .iter()
        .map(|(k, v)| json!({"key": k, "value": v}))
        .collect();
    for chunk in m.chunks(BATCH_METRICS) {
        c.post(
            "/api/2.0/mlflow/runs/log-batch",
            &json!({"run_id": run_id, "metrics": chunk}),
        )?;
    }
    for chunk in p.chunks(BATCH_PARAMS) {
        c.post(
            "/api/2.0/mlflow/runs/log-batch",
            &json!({"run_id": run_id, "params": chunk}),
        )?;
    }
    for chunk in t.chunks(BATCH_TAGS) {
        c.post(
            "/api/2.0/mlflow/runs/log-batch",
            &json!({"run_id": run_id, "tags": chunk}),
        )?;
    }
    Ok(())
}

/// One file into the run's artifacts at `to` (relative to the run's artifact root).
fn upload(c: &Client<'_>, artifact_uri: &str, file: &Path, to: &str) -> Result<(), TrackerError> {
    if let Some(root) = artifact_uri
        .strip_prefix("file://")
        .or_else(|| artifact_uri.starts_with('/').then_some(artifact_uri))
    {
        let dest = Path::new(root).join(to);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| {
                TrackerError::Files(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        std::fs::copy(file, &dest)
            .map_err(|e| TrackerError::Files(format!("cannot copy to {}: {e}", dest.display())))?;
        return Ok(());
    }
    let Some(rest) = artifact_uri.strip_prefix("mlflow-artifacts:") else {
        return Err(TrackerError::Server(format!(
            "the run's artifact store {artifact_uri} is not served by the tracking server; start \
             it with --serve-artifacts (the default of `mlflow server`)"
        )));
    };
    // `mlflow-artifacts:/0/<run>/artifacts` or `mlflow-artifacts://host/0/<run>/artifacts`.
    let rest = rest
        .strip_prefix("//")
        .map_or(rest, |r| r.find('/').map_or("", |i| &r[i..]));
    let body = std::fs::read(file)
        .map_err(|e| TrackerError::Files(format!("cannot read {}: {e}", file.display())))?;
    let path: String = format!("{}/{to}", rest.trim_end_matches('/'))
        .split('/')
        .filter(|s| !s.is_empty())
        .map(url_encode)
        .collect::<Vec<_>>()
        .join("/");
    c.send(
        "PUT",
        &format!("/api/2.0/mlflow-artifacts/artifacts/{path}"),
        &body,
    )?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_are_pairs_lists_or_a_json_object_the_last_value_winning() {
        let t = parse_tags(&[
            "team:perf,env: lab".into(),
            r#"{"gpu":"h100","n":8}"#.into(),
            "team:x".into(),
        ])
        .unwrap();
        assert_eq!(
            t,
            [("env", "lab"), ("gpu", "h100"), ("n", "8"), ("team", "x")]
                .map(|(a, b)| (a.to_owned(), b.to_owned()))
        );
        assert!(parse_tags(&["novalue".into()]).is_err());
        assert!(parse_tags(&["[1]".into(), "{1".into()]).is_err());
    }

    #[test]
    fn the_uri_must_be_a_server_s_http_url() {
        let u = TrackingUri::parse("http://127.0.0.1:5000/").unwrap();
        assert_eq!(
            (u.host.as_str(), u.base_path.as_str()),
            ("127.0.0.1:5000", "")
        );
        let u = TrackingUri::parse("http://h/mlflow/").unwrap();
        assert_eq!(u.base_path, "/mlflow");
        for bad in [
            "file:///tmp/mlruns",
            "sqlite:///x.db",
            "databricks",
            "https://h",
            "http://",
            "http://u:p@h",
        ] {
            assert!(TrackingUri::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn metrics_are_the_avg_under_the_tag_and_each_other_stat_suffixed() {
        let s = json!({
            "request_latency": {"unit": "ms", "avg": 2.5, "p99": 4.0, "std": 1.0, "p42": 9.0},
            "request_count": {"unit": "requests", "avg": 10.0},
            "benchmark_id": "abc",
            "input_config": {"unit_less": {}},
        });
        let m = metric_payload(&s, 10, Some(12));
        let want: BTreeMap<String, f64> = [
            ("aiperf.completed_requests", 10.0),
            ("aiperf.total_expected_requests", 12.0),
            ("request_count", 10.0),
            ("request_latency", 2.5),
            ("request_latency.p99", 4.0),
            ("request_latency.std", 1.0),
        ]
        .map(|(k, v)| (k.to_owned(), v))
        .into();
        assert_eq!(m, want);
    }

    #[test]
    fn globs_read_as_python_s_path_glob() {
        fn p(s: &str) -> Vec<&str> {
            s.split('/').collect()
        }
        assert!(glob_match(&p("*.json"), &p("a.json")));
        assert!(!glob_match(&p("*.json"), &p("phases/a.json")));
        assert!(glob_match(&p("**/*.png"), &p("a.png")));
        assert!(glob_match(&p("**/*.png"), &p("plots/x/a.png")));
        assert!(glob_match(
            &p("*_timeslices.*"),
            &p("profile_export_aiperf_timeslices.csv")
        ));
        assert!(!glob_match(&p("*.json"), &p(".hidden.json")));
        assert!(glob_match(
            &p("phases/*/p?ofile*.json"),
            &p("phases/warmup/profile_x.json")
        ));
    }

    #[test]
    fn files_go_under_plots_or_exports_keeping_their_folder() {
        let d = Path::new("/a");
        assert_eq!(artifact_path(d, Path::new("/a/x.json")), "exports");
        assert_eq!(
            artifact_path(d, Path::new("/a/phases/w/x.json")),
            "exports/phases/w"
        );
        assert_eq!(artifact_path(d, Path::new("/a/plots/c.PNG")), "plots");
        assert_eq!(artifact_path(d, Path::new("/a/plots/s/c.svg")), "plots/s");
        assert_eq!(artifact_path(d, Path::new("/a/report.html")), "plots");
        assert_eq!(artifact_path(d, Path::new("/a/exports/x.csv")), "exports");
    }

    #[test]
    fn the_files_listed_are_each_once_and_never_the_metadata_file() {
        let t = tempfile::tempdir().unwrap();
        for f in [
            "a.json",
            "b.csv",
            "mlflow_export.json",
            "phases/p/c.json",
            "plots/d.png",
            "e.txt",
        ] {
            let p = t.path().join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, "x").unwrap();
        }
        let globs: Vec<String> = ["*.json", "**/*.json", "**/*.png", "*.csv"]
            .map(String::from)
            .to_vec();
        let names: Vec<String> = artifact_files(t.path(), &globs)
            .iter()
            .map(|f| f.strip_prefix(t.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["a.json", "phases/p/c.json", "plots/d.png", "b.csv"]);
    }
}
