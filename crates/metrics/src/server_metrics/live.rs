//! The server's figures while the run goes, from the scrapes so far: AIPerf 0.13's realtime
//! server snapshot (the `srv` row of the realtime stats block, the `_srv` rows of the live
//! API's results) and its per-endpoint summaries (the live API's `/api/server-metrics`).
//!
//! The snapshot reads vLLM's families first and SGLang's equivalents when vLLM's are absent,
//! as AIPerf does: gauges at their latest value (the largest over endpoints), counters as their
//! rise since the profiling phase started (summed over endpoints, a reset counted as 0), rates as
//! that rise over the time it took.

use serde_json::{Map, Value};

use super::analysis::{Window, endpoint_info_in, summarize_endpoints};
use super::store::{EndpointStore, ScalarSeries, SeriesData, Store};
use ringperf_wire::prom::MetricType;

/// The snapshot's figures, in the order AIPerf builds them: its tag, header and unit.
pub const SNAPSHOT_FIELDS: [(&str, &str, &str); 10] = [
    ("prefix_cache_hit_rate", "Prefix Cache Hit Rate", "%"),
    ("unique_input_tokens_srv", "Unique Input Tokens", "tokens"),
    (
        "external_prefix_cache_hit_rate",
        "External Prefix Cache Hit Rate",
        "%",
    ),
    ("kv_cache_usage_pct", "KV Cache Usage", "%"),
    ("cpu_kv_cache_usage_pct", "CPU KV Cache Usage", "%"),
    ("num_running", "Server Running Requests", "req"),
    ("num_waiting", "Server Waiting Requests", "req"),
    ("num_preemptions", "Server Preemptions", "req"),
    (
        "input_token_throughput_srv",
        "Server Input Throughput",
        "tokens/s",
    ),
    (
        "output_token_throughput_srv",
        "Server Output Throughput",
        "tokens/s",
    ),
];

/// The header and unit of a snapshot tag.
#[must_use]
pub fn display(tag: &str) -> Option<(&'static str, &'static str)> {
    SNAPSHOT_FIELDS
        .iter()
        .find(|f| f.0 == tag)
        .map(|f| (f.1, f.2))
}

/// The scalar series of `name` (or `name_total`, the name a counter's family may keep) and
/// kind `kind` in every endpoint.
fn series<'a>(
    endpoints: &'a [EndpointStore],
    name: &'a str,
    kind: MetricType,
) -> impl Iterator<Item = (usize, &'a ScalarSeries)> + 'a {
    endpoints.iter().enumerate().flat_map(move |(i, ep)| {
        ep.series.iter().filter_map(move |((n, _), e)| {
            let named = n == name || n.strip_suffix("_total") == Some(name);
            match (&e.data, named && e.kind == kind) {
                (SeriesData::Scalar(s), true) => Some((i, s)),
                _ => None,
            }
        })
    })
}

/// The largest latest value of gauge `name` over the endpoints.
fn gauge_latest_max(endpoints: &[EndpointStore], name: &str) -> Option<f64> {
    series(endpoints, name, MetricType::Gauge)
        .filter_map(|(_, s)| s.values.last().copied())
        .reduce(f64::max)
}

/// The first of `names` (in order of preference) that `f` gives a figure for.
fn first(names: &[&str], f: impl Fn(&str) -> Option<f64>) -> Option<f64> {
    names.iter().find_map(|n| f(n))
}

/// A ratio (0–1) as a percentage; a value above 1 is taken as a percentage already.
fn pct(v: f64) -> f64 {
    if v <= 1.0 { v * 100.0 } else { v }
}

/// The index of `start_ns` in ascending `ts`: the first sample at or after it.
fn first_at(ts: &[u64], start_ns: u64) -> usize {
    ts.partition_point(|&t| t < start_ns)
}

/// Counter `name`'s rise since `start_ns` (from the last sample before it), summed over its
/// series; `None` when no series has two samples to compare.
fn counter_delta(endpoints: &[EndpointStore], name: &str, start_ns: Option<u64>) -> Option<f64> {
    let mut total = None;
    for (_, s) in series(endpoints, name, MetricType::Counter) {
        let n = s.values.len();
        if n < 2 {
            continue;
        }
        let base = match start_ns {
            None => 0,
            Some(t) => {
                let i = first_at(&s.ts_ns, t);
                if i >= n {
                    continue;
                }
                i.saturating_sub(1)
            }
        };
        if base == n - 1 {
            continue;
        }
        *total.get_or_insert(0.0) += (s.values[n - 1] - s.values[base]).max(0.0);
    }
    total
}

/// Counter `name`'s rise from its first sample at or after `start_ns` to its last, summed over
/// its series, per second of the longest of those spans.
fn counter_rate(endpoints: &[EndpointStore], name: &str, start_ns: Option<u64>) -> Option<f64> {
    let (mut delta, mut elapsed_ns, mut found) = (0.0, 0.0f64, false);
    for (_, s) in series(endpoints, name, MetricType::Counter) {
        let n = s.values.len();
        if n < 2 {
            continue;
        }
        let base = start_ns.map_or(0, |t| first_at(&s.ts_ns, t));
        if base >= n - 1 {
            continue;
        }
        delta += (s.values[n - 1] - s.values[base]).max(0.0);
        elapsed_ns = elapsed_ns.max((s.ts_ns[n - 1] - s.ts_ns[base]) as f64);
        found = true;
    }
    (found && elapsed_ns > 0.0).then(|| delta / (elapsed_ns / 1e9))
}

/// The largest per-endpoint ratio of gauges `num / den` (paired within each endpoint).
fn max_endpoint_ratio(endpoints: &[EndpointStore], num: &str, den: &str) -> Option<f64> {
    let latest = |i: usize, name: &str| {
        series(&endpoints[i..=i], name, MetricType::Gauge)
            .find_map(|(_, s)| s.values.last().copied())
    };
    (0..endpoints.len())
        .filter_map(|i| {
            let (n, d) = (latest(i, num)?, latest(i, den)?);
            (d > 0.0).then(|| n / d)
        })
        .reduce(f64::max)
}

/// AIPerf's realtime server snapshot of the scrapes so far (counters counted from `start_ns`,
/// the profiling phase's start, when given): each figure the server's families give, in
/// [`SNAPSHOT_FIELDS`] order. Empty before any scrape.
#[must_use]
pub fn snapshot(store: &Store, start_ns: Option<u64>) -> Vec<(&'static str, f64)> {
    let eps = &store.endpoints;
    let mut out = Vec::new();
    if eps.is_empty() {
        return out;
    }
    // Prefix cache: vLLM's counter pair, SGLang's, else SGLang's per-batch gauge.
    let pair = |hits: &str, queries: &str| {
        let h = counter_delta(eps, hits, start_ns)?;
        let q = counter_delta(eps, queries, start_ns).filter(|q| *q > 0.0)?;
        Some((h, q))
    };
    if let Some((h, q)) = pair("vllm:prefix_cache_hits", "vllm:prefix_cache_queries")
        .or_else(|| pair("sglang:cached_tokens", "sglang:prompt_tokens"))
    {
        out.push(("prefix_cache_hit_rate", 100.0 * h.min(q) / q));
        out.push(("unique_input_tokens_srv", (q - h).max(0.0)));
    } else if let Some(r) = gauge_latest_max(eps, "sglang:cache_hit_rate") {
        out.push(("prefix_cache_hit_rate", pct(r)));
    }
    if let Some((h, q)) = pair(
        "vllm:external_prefix_cache_hits",
        "vllm:external_prefix_cache_queries",
    ) {
        out.push(("external_prefix_cache_hit_rate", 100.0 * h.min(q) / q));
    }
    let gauge = |n: &str| gauge_latest_max(eps, n);
    if let Some(kv) = first(
        &[
            "vllm:kv_cache_usage_perc",
            "vllm:gpu_cache_usage_perc",
            "sglang:token_usage",
        ],
        gauge,
    ) {
        out.push(("kv_cache_usage_pct", pct(kv)));
    }
    if let Some(cpu) = gauge_latest_max(eps, "vllm:cpu_cache_usage_perc").or_else(|| {
        max_endpoint_ratio(
            eps,
            "sglang:hicache_host_used_tokens",
            "sglang:hicache_host_total_tokens",
        )
    }) {
        out.push(("cpu_kv_cache_usage_pct", pct(cpu)));
    }
    if let Some(v) = first(
        &["vllm:num_requests_running", "sglang:num_running_reqs"],
        gauge,
    ) {
        out.push(("num_running", v));
    }
    if let Some(v) = first(
        &["vllm:num_requests_waiting", "sglang:num_queue_reqs"],
        gauge,
    ) {
        out.push(("num_waiting", v));
    }
    let delta = |n: &str| counter_delta(eps, n, start_ns);
    let rate = |n: &str| counter_rate(eps, n, start_ns);
    if let Some(v) = first(
        &["vllm:num_preemptions", "sglang:num_retracted_reqs"],
        delta,
    ) {
        out.push(("num_preemptions", v));
    }
    if let Some(v) = first(&["vllm:prompt_tokens", "sglang:prompt_tokens"], rate) {
        out.push(("input_token_throughput_srv", v));
    }
    if let Some(v) = first(
        &["vllm:generation_tokens", "sglang:generation_tokens"],
        rate,
    ) {
        out.push(("output_token_throughput_srv", v));
    }
    out
}

/// `host:port` (or the URL itself) of an endpoint URL, AIPerf's key of its summary.
fn endpoint_key(url: &str) -> String {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    rest.split('/').next().unwrap_or(rest).to_owned()
}

/// Each endpoint's summary of the scrapes from `start_ns` to `now_ns`, keyed by `host:port`:
/// `{endpoint_url, info, metrics: {NAME: {type, description, series: [{labels, stats,
/// buckets}]}}}`, the statistics the final export computes over that window.
#[must_use]
pub fn endpoint_summaries(store: &Store, start_ns: u64, now_ns: u64) -> Value {
    let window = Window::widened(store, start_ns, now_ns);
    let mut out = Map::new();
    for ep in &store.endpoints {
        let Some(info) = endpoint_info_in(ep, Some((start_ns, now_ns))) else {
            continue;
        };
        let mut metrics = Map::new();
        for (name, m) in summarize_endpoints(std::iter::once(ep), &window) {
            let mut v = serde_json::to_value(&m).unwrap_or(Value::Null);
            if let Some(o) = v.as_object_mut() {
                o.remove("unit");
                if let Some(Value::Array(series)) = o.get_mut("series") {
                    for s in series {
                        if let Some(s) = s.as_object_mut() {
                            s.remove("endpoint_url");
                        }
                    }
                }
            }
            metrics.insert(name, v);
        }
        let mut e = Map::new();
        e.insert("endpoint_url".into(), ep.url.clone().into());
        e.insert(
            "info".into(),
            serde_json::to_value(&info).unwrap_or(Value::Null),
        );
        e.insert("metrics".into(), Value::Object(metrics));
        out.insert(endpoint_key(&ep.url), Value::Object(e));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::prom::parse_scrape;

    /// A store of `pages` scraped from one endpoint at 1 s intervals from t = 10 s.
    fn store(pages: &[&str]) -> Store {
        let mut s = Store::default();
        for (i, p) in pages.iter().enumerate() {
            let page = parse_scrape(p.as_bytes()).unwrap();
            let ts = (10 + i as u64) * 1_000_000_000;
            let ep = s.endpoint_mut("http://h:8000/metrics");
            ep.record_fetch(ts, 1_000_000, false);
            ep.insert(ts, &page);
        }
        s
    }

    fn vllm(prompt: f64, hits: f64, queries: f64, running: f64, kv: f64) -> String {
        format!(
            "# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{{model_name=\"m\"}} {prompt}\n\
             # TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total{{model_name=\"m\"}} {hits}\n\
             # TYPE vllm:prefix_cache_queries_total counter\nvllm:prefix_cache_queries_total{{model_name=\"m\"}} {queries}\n\
             # TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{{model_name=\"m\"}} {running}\n\
             # TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{{model_name=\"m\"}} {kv}\n"
        )
    }

    #[test]
    fn the_snapshot_follows_aiperfs_rules() {
        let pages = [
            vllm(100.0, 0.0, 100.0, 0.0, 0.0),
            vllm(300.0, 50.0, 300.0, 3.0, 0.25),
            vllm(700.0, 150.0, 700.0, 4.0, 0.5),
        ];
        let pages: Vec<&str> = pages.iter().map(String::as_str).collect();
        let s = store(&pages);
        // From the start: every rise counts; 600 prompt tokens over 2 s.
        let all = snapshot(&s, None);
        assert_eq!(
            all,
            vec![
                ("prefix_cache_hit_rate", 100.0 * 150.0 / 600.0),
                ("unique_input_tokens_srv", 450.0),
                ("kv_cache_usage_pct", 50.0),
                ("num_running", 4.0),
                ("input_token_throughput_srv", 300.0),
            ]
        );
        // From t = 11 s: the delta's baseline is the last sample before it (t = 10 s), the
        // rate's the first at or after it (t = 11 s: 400 tokens in 1 s).
        let from = snapshot(&s, Some(11_000_000_000));
        assert!(
            from.contains(&("input_token_throughput_srv", 400.0)),
            "{from:?}"
        );
        assert!(
            from.contains(&("unique_input_tokens_srv", 450.0)),
            "{from:?}"
        );
        // After the last sample: no counter figure, the gauges still.
        let late = snapshot(&s, Some(20_000_000_000));
        assert_eq!(
            late,
            vec![("kv_cache_usage_pct", 50.0), ("num_running", 4.0)]
        );
        assert!(snapshot(&Store::default(), None).is_empty());
    }

    #[test]
    fn sglang_names_stand_in_and_resets_count_zero() {
        let page = |prompt: f64, usage: f64, queue: f64| {
            format!(
                "# TYPE sglang:prompt_tokens_total counter\nsglang:prompt_tokens_total {prompt}\n\
                 # TYPE sglang:token_usage gauge\nsglang:token_usage {usage}\n\
                 # TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs {queue}\n\
                 # TYPE sglang:cache_hit_rate gauge\nsglang:cache_hit_rate 0.4\n"
            )
        };
        let pages = [page(500.0, 0.1, 2.0), page(100.0, 0.2, 1.0)];
        let pages: Vec<&str> = pages.iter().map(String::as_str).collect();
        let got = snapshot(&store(&pages), None);
        assert_eq!(
            got,
            vec![
                ("prefix_cache_hit_rate", 40.0),
                ("kv_cache_usage_pct", 20.0),
                ("num_waiting", 1.0),
                ("input_token_throughput_srv", 0.0),
            ]
        );
    }

    #[test]
    fn endpoint_summaries_are_keyed_by_host_and_port() {
        let pages = [
            vllm(100.0, 0.0, 100.0, 1.0, 0.1),
            vllm(200.0, 10.0, 200.0, 2.0, 0.2),
        ];
        let pages: Vec<&str> = pages.iter().map(String::as_str).collect();
        let v = endpoint_summaries(&store(&pages), 10_000_000_000, 11_000_000_000);
        let e = &v["h:8000"];
        assert_eq!(e["endpoint_url"], "http://h:8000/metrics");
        assert_eq!(e["info"]["total_fetches"], 2);
        let running = &e["metrics"]["vllm:num_requests_running"];
        assert_eq!(running["type"], "gauge");
        assert_eq!(running["series"][0]["labels"]["model_name"], "m");
        assert!(running["series"][0].get("endpoint_url").is_none());
        assert_eq!(running["series"][0]["stats"]["max"], 2.0);
    }
}
