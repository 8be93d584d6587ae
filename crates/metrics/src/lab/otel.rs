//! `--otel-url`: the run's per-request metrics as OTLP/HTTP protobuf histograms, with the GenAI
//! semantic conventions AIPerf 0.13 uses (docs/integrations.md). The aggregator thread folds
//! every record ([`Fold::add`]) and, every [`INTERVAL`], hands a snapshot of the cumulative
//! histograms to a sender thread ([`Exporter`]); the last snapshot is sent when the records
//! end. Snapshots are cumulative, so one dropped (the receiver slow) or refused (down, 500)
//! loses nothing the next one does not carry; failures are one warning line each kind.

use std::collections::BTreeMap;
use std::net::{SocketAddr, ToSocketAddrs};
use std::sync::mpsc::{Receiver, SyncSender, TrySendError, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::http::{Request, call};
use super::otlp::{
    AttrValue, HistogramMetric, HistogramPoint, SumMetric, SumPoint, export_request,
};
use crate::aggregate::metrics::{MetricValue, RecordMetrics};
use ringperf_wire::record::RecordFacts;

/// Time between live exports (AIPerf's `AIPERF_OTEL_FLUSH_INTERVAL_SECONDS` default).
pub const INTERVAL: Duration = Duration::from_secs(2);
/// The limit of one export call (AIPerf's `AIPERF_OTEL_REQUEST_TIMEOUT_SECONDS` default).
const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// The instrumentation scope AIPerf's meter is named.
const SCOPE: &str = "aiperf.records";

/// The GenAI semantic-convention buckets (seconds and tokens), as AIPerf sets them.
const DURATION_BOUNDS: &[f64] = &[
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
];
const CHUNK_BOUNDS: &[f64] = &[
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.12, 0.14, 0.16, 0.18, 0.2, 0.25, 0.3, 0.35,
    0.4, 0.45, 0.5, 0.75, 1.0, 2.0, 5.0,
];
const TOKEN_BOUNDS: &[f64] = &[
    1.0, 4.0, 16.0, 64.0, 256.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0,
];
/// The OpenTelemetry SDK's default histogram buckets, for every other metric.
const DEFAULT_BOUNDS: &[f64] = &[
    0.0, 5.0, 10.0, 25.0, 50.0, 75.0, 100.0, 250.0, 500.0, 750.0, 1000.0, 2500.0, 5000.0, 7500.0,
    10000.0,
];

/// Why `--otel-*` cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OtelError(pub String);

impl std::fmt::Display for OtelError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for OtelError {}

/// `--otel-*`, checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Otel {
    /// The endpoint as normalised (`http://host:port/…/v1/metrics`).
    pub url: String,
    /// `host[:port]` (the `Host` header).
    pub host: String,
    /// From `/`, ending in `/v1/metrics`.
    pub path: String,
    /// `--stream` selects the per-request metrics.
    pub metrics: bool,
    /// `--stream` selects the phase timing counters.
    pub timing: bool,
    /// `--otel-resource-attributes`, in order.
    pub resource: Vec<(String, String)>,
    /// `--gen-ai-provider`.
    pub provider: Option<String>,
}

/// `--otel-url` as AIPerf normalises it: `http://` added to a bare `host[:port]`, the path
/// completed to end in `/v1/metrics`.
///
/// # Errors
/// Empty, no host, a scheme other than http (https is refused: ringperf's control-plane client
/// speaks plain HTTP).
pub fn parse_url(raw: &str) -> Result<(String, String, String), OtelError> {
    let t = raw.trim();
    if t.is_empty() {
        return Err(OtelError("--otel-url cannot be empty.".into()));
    }
    let with_scheme = if t.contains("://") {
        t.to_owned()
    } else {
        format!("http://{t}")
    };
    let Some(rest) = with_scheme.strip_prefix("http://") else {
        return Err(OtelError(format!(
            "Invalid --otel-url value: '{raw}'. ringperf exports OTLP/HTTP over http:// only \
             (OTLP/gRPC is not supported; use the OTLP/HTTP exporter endpoint)."
        )));
    };
    let (host, path) = rest.split_once('/').unwrap_or((rest, ""));
    if host.is_empty() || host.starts_with(':') || host.contains('@') {
        return Err(OtelError(format!(
            "Invalid --otel-url value: '{raw}'. Expected host[:port] or a full URL."
        )));
    }
    let path = format!("/{path}");
    let path = path.trim_end_matches('/');
    let path = if path.ends_with("/v1/metrics") {
        path.to_owned()
    } else {
        format!("{path}/v1/metrics")
    };
    Ok((format!("http://{host}{path}"), host.to_owned(), path))
}

/// `--otel-resource-attributes`: `key=value` items, each possibly a comma-separated list.
///
/// # Errors
/// An item without `=`, or with an empty key or value.
pub fn parse_resource(items: &[String]) -> Result<Vec<(String, String)>, OtelError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for pair in items.iter().flat_map(|i| i.split(',')) {
        let pair = pair.trim();
        if pair.is_empty() {
            continue;
        }
        let bad = |why: &str| {
            OtelError(format!(
                "Invalid --otel-resource-attributes entry '{pair}': {why}."
            ))
        };
        let (k, v) = pair
            .split_once('=')
            .ok_or_else(|| bad("expected key=value"))?;
        let (k, v) = (k.trim(), v.trim());
        if k.is_empty() {
            return Err(bad("key cannot be empty"));
        }
        if v.is_empty() {
            return Err(bad("value cannot be empty"));
        }
        // A repeated key keeps its first place, as in AIPerf's dict.
        match out.iter_mut().find(|(old, _)| old == k) {
            Some(slot) => slot.1 = v.to_owned(),
            None => out.push((k.to_owned(), v.to_owned())),
        }
    }
    Ok(out)
}

/// `--stream` values: (metrics, timing).
///
/// # Errors
/// A value other than `default`, `metrics`, `timing`, `none`.
pub fn parse_stream(values: &[String]) -> Result<(bool, bool), OtelError> {
    let bad: Vec<&String> = values
        .iter()
        .filter(|v| !matches!(v.as_str(), "default" | "metrics" | "timing" | "none"))
        .collect();
    if !bad.is_empty() {
        return Err(OtelError(format!(
            "Invalid --stream value(s) {bad:?}. Allowed: ['default', 'metrics', 'none', 'timing']."
        )));
    }
    if values.iter().any(|v| v == "none") {
        return Ok((false, false));
    }
    let all = values.is_empty() || values.iter().any(|v| v == "default");
    Ok((
        all || values.iter().any(|v| v == "metrics"),
        all || values.iter().any(|v| v == "timing"),
    ))
}

/// `gen_ai.provider.name`: the override, else inferred from a known API host, else `_OTHER`.
pub fn provider_name(explicit: Option<&str>, urls: &[String]) -> String {
    if let Some(p) = explicit.filter(|p| !p.is_empty()) {
        return p.to_owned();
    }
    const EXACT: &[(&str, &str)] = &[
        ("api.openai.com", "openai"),
        ("api.anthropic.com", "anthropic"),
        ("api.deepseek.com", "deepseek"),
        ("api.mistral.ai", "mistral_ai"),
        ("api.cohere.ai", "cohere"),
        ("api.cohere.com", "cohere"),
        ("api.x.ai", "x_ai"),
        ("api.groq.com", "groq"),
        ("api.perplexity.ai", "perplexity"),
        ("generativelanguage.googleapis.com", "gcp.gemini"),
    ];
    for u in urls {
        let l = u.trim().to_ascii_lowercase();
        let rest = l.split_once("://").map_or(l.as_str(), |(_, r)| r);
        let host = rest.split(['/', ':']).next().unwrap_or("");
        if let Some((_, p)) = EXACT.iter().find(|(h, _)| host.ends_with(h)) {
            return (*p).to_owned();
        }
        let suffixed = [
            ("-aiplatform.googleapis.com", "gcp.vertex_ai"),
            (".openai.azure.com", "azure.ai.openai"),
            (".services.ai.azure.com", "azure.ai.inference"),
            (".ibm.com", "ibm.watsonx.ai"),
        ];
        if let Some((_, p)) = suffixed.iter().find(|(s, _)| host.ends_with(s)) {
            return (*p).to_owned();
        }
        if host.starts_with("bedrock-runtime.") && host.ends_with(".amazonaws.com") {
            return "aws.bedrock".into();
        }
    }
    "_OTHER".into()
}

/// `gen_ai.operation.name` of an endpoint type (AIPerf falls back to `chat`).
pub fn operation_name(endpoint_type: &str) -> &'static str {
    match endpoint_type {
        "completions" => "text_completion",
        "embeddings" => "embeddings",
        _ => "chat",
    }
}

/// What every data point and the resource carry, fixed for the run.
#[derive(Clone, Debug)]
pub struct RunLabels {
    pub resource: Vec<(String, String)>,
    pub operation: &'static str,
    pub provider: String,
    pub model: String,
}

impl RunLabels {
    /// The resource attributes AIPerf sets, then the user's (which override).
    pub fn new(o: &Otel, endpoint_type: &str, model: &str, urls: &[String]) -> Self {
        let mut resource = vec![
            ("service.name".to_owned(), "aiperf".to_owned()),
            (
                "service.instance.id".to_owned(),
                "records_manager".to_owned(),
            ),
            ("aiperf.endpoint.type".to_owned(), endpoint_type.to_owned()),
            ("aiperf.model.name".to_owned(), model.to_owned()),
        ];
        for (k, v) in &o.resource {
            resource.retain(|(old, _)| old != k);
            resource.push((k.clone(), v.clone()));
        }
        Self {
            resource,
            operation: operation_name(endpoint_type),
            provider: provider_name(o.provider.as_deref(), urls),
            model: model.to_owned(),
        }
    }
}

/// The spec metric an AIPerf metric maps to.
struct Spec {
    name: &'static str,
    unit: &'static str,
    bounds: &'static [f64],
    /// Nanoseconds in, seconds out.
    ns: bool,
    /// `gen_ai.token.type`.
    token: Option<&'static str>,
}

fn semconv(tag: &str) -> Option<Spec> {
    let (name, unit, bounds, ns, token) = match tag {
        "request_latency" => (
            "gen_ai.client.operation.duration",
            "s",
            DURATION_BOUNDS,
            true,
            None,
        ),
        "time_to_first_token" => (
            "gen_ai.client.operation.time_to_first_chunk",
            "s",
            CHUNK_BOUNDS,
            true,
            None,
        ),
        "inter_token_latency" => (
            "gen_ai.client.operation.time_per_output_chunk",
            "s",
            CHUNK_BOUNDS,
            true,
            None,
        ),
        "input_token_count" => (
            "gen_ai.client.token.usage",
            "{token}",
            TOKEN_BOUNDS,
            false,
            Some("input"),
        ),
        "output_token_count" => (
            "gen_ai.client.token.usage",
            "{token}",
            TOKEN_BOUNDS,
            false,
            Some("output"),
        ),
        _ => return None,
    };
    Some(Spec {
        name,
        unit,
        bounds,
        ns,
        token,
    })
}

/// The instrument a metric's values go to, and the factor its values are scaled by: the GenAI
/// convention's name (durations in seconds), else `aiperf.<tag>` in the metric's base unit.
/// MLflow's live values take the same names (prefixed `live.`).
pub fn instrument(tag: &str) -> (String, f64) {
    match semconv(tag) {
        Some(s) => (s.name.to_owned(), if s.ns { 1e-9 } else { 1.0 }),
        None => (format!("aiperf.{tag}"), 1.0),
    }
}

/// `error.type` of a failed request, as AIPerf classifies it.
fn error_type(e: &ringperf_wire::record::RequestError) -> &'static str {
    match e.code {
        Some(500..=599) => return "http_5xx",
        Some(400..=499) => return "http_4xx",
        _ => {}
    }
    match e.kind.as_str() {
        "timeout" | "asyncio.TimeoutError" | "TimeoutError" => return "timeout",
        "cancelled" => return "cancelled",
        _ => {}
    }
    let m = e.message.to_ascii_lowercase();
    if m.contains("json") && (m.contains("parse") || m.contains("decode")) {
        "parse_error"
    } else {
        "_OTHER"
    }
}

type Attrs = Vec<(String, AttrValue)>;

/// One cumulative histogram.
#[derive(Clone, Debug)]
struct Hist {
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
    buckets: Vec<u64>,
}

impl Hist {
    fn new(bounds: &[f64]) -> Self {
        Self {
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
            buckets: vec![0; bounds.len() + 1],
        }
    }

    /// OTel buckets are upper-inclusive: bucket i holds (bounds[i-1], bounds[i]].
    fn add(&mut self, v: f64, bounds: &[f64]) {
        self.count += 1;
        self.sum += v;
        self.min = self.min.min(v);
        self.max = self.max.max(v);
        let i = bounds.partition_point(|b| *b < v);
        self.buckets[i] += 1;
    }
}

/// A metric's identity and its series, one per attribute set.
#[derive(Debug)]
struct Series {
    unit: &'static str,
    description: String,
    bounds: &'static [f64],
    points: BTreeMap<String, (Attrs, Hist)>,
}

/// The aggregator's fold of every record into cumulative histograms.
#[derive(Debug)]
pub struct Fold {
    labels: RunLabels,
    metrics: BTreeMap<String, Series>,
    /// The `timing` domain's counters and gauges (cumulative), by name.
    sums: Vec<SumMetric>,
    start_wall_ns: u64,
}

fn attrs_key(a: &Attrs) -> String {
    a.iter().map(|(k, v)| format!("{k}={v:?};")).collect()
}

impl Fold {
    pub fn new(labels: RunLabels, start_wall_ns: u64) -> Self {
        Self {
            labels,
            metrics: BTreeMap::new(),
            sums: Vec::new(),
            start_wall_ns,
        }
    }

    /// One record's metrics, each value a histogram observation (AIPerf records every element
    /// of a list metric, such as inter-chunk latency).
    pub fn add(&mut self, f: &RecordFacts, m: &RecordMetrics) {
        let base: Attrs = vec![
            (
                "aiperf.worker.id".into(),
                AttrValue::Str(format!("worker_{}", f.worker_id)),
            ),
            (
                "aiperf.record_processor.id".into(),
                AttrValue::Str(ringperf_wire::record::RECORD_PROCESSOR_ID.into()),
            ),
            (
                "aiperf.benchmark_phase".into(),
                AttrValue::Str(f.phase.as_str().into()),
            ),
            (
                "aiperf.was_cancelled".into(),
                AttrValue::Bool(f.was_cancelled),
            ),
            (
                "aiperf.has_error".into(),
                AttrValue::Bool(f.error.is_some()),
            ),
        ];
        for (id, v) in &m.values {
            let d = id.def();
            if d.hidden() {
                continue;
            }
            let values: Vec<f64> = match v {
                MetricValue::Int(x) => vec![*x as f64],
                MetricValue::Float(x) => vec![*x],
                MetricValue::List(l) => l.iter().map(|x| *x as f64).collect(),
            };
            if values.is_empty() {
                continue;
            }
            self.observe(d.tag, d.unit.as_str(), &base, f, &values);
        }
    }

    fn observe(
        &mut self,
        tag: &str,
        unit: &'static str,
        base: &Attrs,
        f: &RecordFacts,
        vs: &[f64],
    ) {
        let (name, unit, desc, bounds, scale, attrs) = match semconv(tag) {
            Some(Spec {
                name,
                unit,
                bounds,
                ns,
                token,
            }) => {
                let mut a = base.clone();
                let l = &self.labels;
                a.push((
                    "gen_ai.operation.name".into(),
                    AttrValue::Str(l.operation.into()),
                ));
                a.push((
                    "gen_ai.provider.name".into(),
                    AttrValue::Str(l.provider.clone()),
                ));
                a.push((
                    "gen_ai.request.model".into(),
                    AttrValue::Str(l.model.clone()),
                ));
                match token {
                    Some(t) => a.push(("gen_ai.token.type".into(), AttrValue::Str(t.into()))),
                    None => {
                        if let Some(e) = &f.error {
                            a.push(("error.type".into(), AttrValue::Str(error_type(e).into())));
                        }
                    }
                }
                let scale = if ns { 1e-9 } else { 1.0 };
                (
                    name.to_owned(),
                    unit,
                    format!("GenAI semconv metric: {name}"),
                    bounds,
                    scale,
                    a,
                )
            }
            None => (
                format!("aiperf.{tag}"),
                unit,
                format!("AIPerf streaming metric: {tag}"),
                DEFAULT_BOUNDS,
                1.0,
                base.clone(),
            ),
        };
        let series = self.metrics.entry(name).or_insert_with(|| Series {
            unit,
            description: desc,
            bounds,
            points: BTreeMap::new(),
        });
        let (_, h) = series
            .points
            .entry(attrs_key(&attrs))
            .or_insert_with(|| (attrs, Hist::new(bounds)));
        for v in vs {
            h.add(v * scale, bounds);
        }
    }

    /// The export request of everything folded so far.
    pub fn encode(&self, now_wall_ns: u64) -> Vec<u8> {
        let metrics: Vec<HistogramMetric> = self
            .metrics
            .iter()
            .map(|(name, s)| HistogramMetric {
                name: name.clone(),
                description: s.description.clone(),
                unit: s.unit.to_owned(),
                points: s
                    .points
                    .values()
                    .map(|(a, h)| HistogramPoint {
                        attributes: a.clone(),
                        count: h.count,
                        sum: h.sum,
                        min: h.min,
                        max: h.max,
                        bucket_counts: h.buckets.clone(),
                        bounds: s.bounds,
                    })
                    .collect(),
            })
            .collect();
        export_request(
            &self.labels.resource,
            SCOPE,
            &metrics,
            &self.sums,
            self.start_wall_ns,
            now_wall_ns,
        )
    }

    /// Whether anything was folded.
    pub fn is_empty(&self) -> bool {
        self.metrics.is_empty() && self.sums.is_empty()
    }

    /// Moves a counter (`monotonic`) or an up-down counter by `delta` at the point of `attrs`.
    pub fn add_sum(
        &mut self,
        name: &str,
        unit: &str,
        description: &str,
        monotonic: bool,
        attrs: &[(String, AttrValue)],
        delta: f64,
    ) {
        let i = match self.sums.iter().position(|s| s.name == name) {
            Some(i) => i,
            None => {
                self.sums.push(SumMetric {
                    name: name.to_owned(),
                    description: description.to_owned(),
                    unit: unit.to_owned(),
                    monotonic,
                    points: Vec::new(),
                });
                self.sums.len() - 1
            }
        };
        let points = &mut self.sums[i].points;
        match points.iter_mut().find(|p| p.attributes == attrs) {
            Some(p) => p.value += delta,
            None => points.push(SumPoint {
                attributes: attrs.to_vec(),
                value: delta,
            }),
        }
    }
}

/// The aggregator's side of the export: the fold, and the channel to the sender thread.
pub struct Exporter {
    fold: Fold,
    /// `--stream` with `metrics`: records are folded.
    metrics: bool,
    tx: Option<SyncSender<Vec<u8>>>,
    sender: Option<JoinHandle<()>>,
    last: Instant,
}

fn resolve(host: &str) -> Option<SocketAddr> {
    let with_port = if host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.parse::<u16>().is_ok())
    {
        host.to_owned()
    } else {
        format!("{host}:80")
    };
    with_port.to_socket_addrs().ok()?.next()
}

/// The sender thread: posts each snapshot; the first failure of a kind is one warning line.
fn send_loop(o: Otel, rx: Receiver<Vec<u8>>) {
    let headers = vec![(
        "Content-Type".to_owned(),
        "application/x-protobuf".to_owned(),
    )];
    let mut warned = false;
    let mut sent = 0u64;
    for body in rx {
        let result = match resolve(&o.host) {
            None => Err(format!("cannot resolve {}", o.host)),
            Some(addr) => call(&Request {
                method: "POST",
                addr,
                host: &o.host,
                path: &o.path,
                headers: &headers,
                body: &body,
                timeout: CALL_TIMEOUT,
            })
            .map_err(|e| format!("{e:?}"))
            .and_then(|r| match r.status {
                200..=299 => Ok(()),
                s => Err(format!("HTTP {s}")),
            }),
        };
        match result {
            Ok(()) => sent += 1,
            Err(e) if !warned => {
                warned = true;
                eprintln!(
                    "ringperf: warning: OTLP export to {} failed ({e}); the run goes on and later \
                     exports carry the cumulative values",
                    o.url
                );
            }
            Err(_) => {}
        }
    }
    if sent == 0 && !warned {
        eprintln!("ringperf: warning: no OTLP export reached {}", o.url);
    }
}

impl Exporter {
    /// Starts the sender thread.
    ///
    /// # Errors
    /// The thread cannot be spawned.
    pub fn start(o: &Otel, fold: Fold) -> std::io::Result<Self> {
        let (tx, rx) = sync_channel::<Vec<u8>>(1);
        let cfg = o.clone();
        let sender = std::thread::Builder::new()
            .name("otel-export".into())
            .spawn(move || send_loop(cfg, rx))?;
        Ok(Self {
            fold,
            metrics: o.metrics,
            tx: Some(tx),
            sender: Some(sender),
            last: Instant::now(),
        })
    }

    /// One record (the aggregator's thread).
    pub fn add(&mut self, f: &RecordFacts, m: &RecordMetrics) {
        if self.metrics {
            self.fold.add(f, m);
        }
    }

    /// A timing counter's or gauge's change ([`Fold::add_sum`]).
    pub fn add_sum(
        &mut self,
        name: &str,
        unit: &str,
        description: &str,
        monotonic: bool,
        attrs: &[(String, AttrValue)],
        delta: f64,
    ) {
        self.fold
            .add_sum(name, unit, description, monotonic, attrs, delta);
    }

    /// Whether the next [`Self::tick`] exports.
    pub fn due(&self) -> bool {
        self.last.elapsed() >= INTERVAL
    }

    /// A live export when [`INTERVAL`] has passed; skipped (not queued) while the sender is
    /// still busy with the previous one.
    pub fn tick(&mut self, now_wall_ns: u64) {
        if self.last.elapsed() < INTERVAL || self.fold.is_empty() {
            return;
        }
        self.last = Instant::now();
        if let Some(tx) = &self.tx {
            match tx.try_send(self.fold.encode(now_wall_ns)) {
                Ok(()) | Err(TrySendError::Full(_)) | Err(TrySendError::Disconnected(_)) => {}
            }
        }
    }

    /// The final export, waited for (each call is bounded by its timeout).
    pub fn finish(mut self, now_wall_ns: u64) {
        if let Some(tx) = self.tx.take() {
            if !self.fold.is_empty() {
                let _ = tx.send(self.fold.encode(now_wall_ns));
            }
            drop(tx);
        }
        if let Some(h) = self.sender.take() {
            let _ = h.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_normalised_as_aiperf_does() {
        let u = |s: &str| parse_url(s).map(|(u, _, p)| (u, p));
        assert_eq!(
            u("localhost:4318").unwrap(),
            (
                "http://localhost:4318/v1/metrics".into(),
                "/v1/metrics".into()
            )
        );
        assert_eq!(
            u("http://h:1/otlp/").unwrap().0,
            "http://h:1/otlp/v1/metrics"
        );
        assert_eq!(u("http://h/v1/metrics").unwrap().1, "/v1/metrics");
        assert!(u("").is_err());
        assert!(u("http://:4318").is_err());
        assert!(u("grpc://h:4317").is_err());
    }

    #[test]
    fn resource_attributes_and_stream_domains() {
        let r = parse_resource(&["a=1,b=2".into(), " c = 3 ".into(), "a=9".into()]).unwrap();
        assert_eq!(
            r,
            [("a", "9"), ("b", "2"), ("c", "3")].map(|(k, v)| (k.to_owned(), v.to_owned()))
        );
        assert!(parse_resource(&["novalue".into()]).is_err());
        assert!(parse_resource(&["=x".into()]).is_err());
        assert!(parse_resource(&["k=".into()]).is_err());
        let s = |v: &[&str]| parse_stream(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        assert_eq!(s(&[]).unwrap(), (true, true));
        assert_eq!(s(&["metrics"]).unwrap(), (true, false));
        assert_eq!(s(&["timing"]).unwrap(), (false, true));
        assert_eq!(s(&["metrics", "none"]).unwrap(), (false, false));
        assert!(s(&["traces"]).is_err());
    }

    #[test]
    fn providers_are_inferred_from_the_host() {
        let p = |u: &str| provider_name(None, &[u.to_owned()]);
        assert_eq!(p("https://api.openai.com/v1"), "openai");
        assert_eq!(p("https://x.openai.azure.com"), "azure.ai.openai");
        assert_eq!(p("bedrock-runtime.us-east-1.amazonaws.com"), "aws.bedrock");
        assert_eq!(p("http://127.0.0.1:8000"), "_OTHER");
        assert_eq!(provider_name(Some("vllm"), &[]), "vllm");
    }

    #[test]
    fn buckets_are_upper_inclusive() {
        let mut h = Hist::new(&[1.0, 4.0]);
        for v in [0.5, 1.0, 1.5, 4.0, 5.0] {
            h.add(v, &[1.0, 4.0]);
        }
        assert_eq!(h.buckets, [2, 2, 1]);
        assert_eq!((h.count, h.sum, h.min, h.max), (5, 12.0, 0.5, 5.0));
    }
}
