//! `profile_export_aiperf.json` (schema "1.4", docs/output-formats.md).

use serde_json::{Map, Value};

use super::{RunInfo, ShardHealth, ThreadCpu};
use crate::aggregate::health::{ClientHealth, HostLoad, MergedHealth};
use crate::aggregate::stats::PERCENTILE_KEYS;
use crate::aggregate::{Kind, LagSummary, MetricResult, ResultValue, Summary};

/// The metric fields `JsonExportData` declares, in declaration order; they come first.
pub const DECLARED_METRICS: [&str; 25] = [
    "request_throughput",
    "request_latency",
    "request_count",
    "time_to_first_token",
    "time_to_second_token",
    "inter_token_latency",
    "output_token_throughput",
    "output_token_throughput_per_user",
    "output_sequence_length",
    "input_sequence_length",
    "goodput",
    "good_request_count",
    "output_token_count",
    "reasoning_token_count",
    "min_request_timestamp",
    "max_response_timestamp",
    "inter_chunk_latency",
    "total_output_tokens",
    "total_reasoning_tokens",
    "benchmark_duration",
    "total_isl",
    "total_osl",
    "error_request_count",
    "error_isl",
    "total_error_isl",
];

/// A finite f64 as a JSON number; NaN and ±inf become `null` (`scrub_non_finite`).
fn num(v: f64) -> Value {
    serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number)
}

/// One metric in display units: `{unit, avg, p1…p99, min, max, std, count, sum}`, absent stats
/// omitted; scalars are `{unit, avg}`; sweep-line metrics `{unit, avg, p50…p99, min, max, std}`.
pub fn metric_json(r: &MetricResult) -> Value {
    let d = r.def;
    let mut m = Map::new();
    m.insert("unit".into(), Value::from(d.shown_unit().as_str()));
    match &r.value {
        ResultValue::Scalar(v) => {
            m.insert("avg".into(), num(d.to_display(*v)));
        }
        ResultValue::Dist(s) => {
            m.insert("avg".into(), num(d.to_display(s.avg)));
            for (k, v) in PERCENTILE_KEYS.iter().zip(s.pct) {
                m.insert((*k).into(), num(d.to_display(v)));
            }
            m.insert("min".into(), num(d.to_display(s.min)));
            m.insert("max".into(), num(d.to_display(s.max)));
            if let Some(std) = s.std {
                m.insert("std".into(), num(d.to_display(std)));
            }
            // AIPerf writes no count for what it joins after aggregation.
            if d.kind != Kind::Joined {
                m.insert("count".into(), Value::from(s.count));
            }
            m.insert("sum".into(), num(d.to_display(s.sum)));
        }
        ResultValue::Share { avg, count, sum } => {
            m.insert("avg".into(), num(*avg));
            m.insert("count".into(), Value::from(*count));
            m.insert("sum".into(), Value::from(*sum));
        }
        // AIPerf's `SweepLineStats` fields, already in the display unit.
        ResultValue::TimeWeighted(t) => {
            for (k, v) in [
                ("avg", t.avg),
                ("p50", t.p50),
                ("p90", t.p90),
                ("p95", t.p95),
                ("p99", t.p99),
                ("min", t.min),
                ("max", t.max),
                ("std", t.std),
            ] {
                m.insert(k.into(), num(v));
            }
        }
    }
    Value::Object(m)
}

fn visible(r: &MetricResult) -> bool {
    !r.def.hidden()
}

/// Naive local ISO datetime of epoch ns, as Python's `datetime.fromtimestamp(s).isoformat()`:
/// microsecond precision, fraction omitted when zero.
pub fn local_iso(wall_ns: u64) -> String {
    let micros = wall_ns.saturating_add(500) / 1_000;
    let ts =
        jiff::Timestamp::from_microsecond(micros as i64).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let dt = ts.to_zoned(jiff::tz::TimeZone::system()).datetime();
    let base = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    let frac = micros % 1_000_000;
    if frac == 0 {
        base
    } else {
        format!("{base}.{frac:06}")
    }
}

/// The `run_info` block: the run's identity as AIPerf writes it (and serves it at `/api/run`):
/// `benchmark_id`, the sweep's id, the seed, the trial and its variation, the command line.
pub fn run_info_json(
    benchmark_id: &str,
    random_seed: Option<u64>,
    trial: Option<&super::Trial>,
    cli_command: &str,
) -> Value {
    let mut info = Map::new();
    info.insert("benchmark_id".into(), Value::from(benchmark_id));
    if let Some(t) = trial {
        info.insert("sweep_id".into(), Value::from(t.sweep_id.as_str()));
    }
    if let Some(seed) = random_seed {
        info.insert("random_seed".into(), Value::from(seed));
    }
    // A single run is trial 0; the runs of `--num-profile-runs` are numbered from 0, with
    // AIPerf's label and (one, unvaried) variation.
    match trial {
        None => {
            info.insert("trial".into(), Value::from(0));
        }
        Some(t) => {
            info.insert("trial".into(), Value::from(t.index));
            info.insert("run_label".into(), Value::from(t.label.as_str()));
            match &t.variation {
                None => {
                    info.insert("variation_label".into(), Value::from("base"));
                    info.insert("variation_index".into(), Value::from(0));
                    info.insert("variation_values".into(), Value::Object(Map::new()));
                }
                Some(v) => {
                    info.insert("variation_label".into(), Value::from(v.label.as_str()));
                    info.insert("variation_index".into(), Value::from(v.index));
                    info.insert("variation_values".into(), Value::Object(v.values.clone()));
                }
            }
        }
    }
    info.insert("cli_command".into(), Value::from(cli_command));
    Value::Object(info)
}

/// The summary JSON document. `warmup` is the warmup phase's summary, if there was one.
pub fn summary_json(summary: &Summary, warmup: Option<&Summary>, run: &RunInfo) -> Value {
    let mut o = Map::new();
    o.insert("schema_version".into(), Value::from("1.4"));
    o.insert(
        "aiperf_version".into(),
        Value::from(run.aiperf_version.as_str()),
    );
    o.insert(
        "benchmark_id".into(),
        Value::from(run.benchmark_id.as_str()),
    );
    for tag in DECLARED_METRICS {
        if let Some(r) = summary.get(tag).filter(|r| visible(r)) {
            o.insert(tag.into(), metric_json(r));
        }
    }
    o.insert("input_config".into(), run.input_config.clone());
    o.insert(
        "run_info".into(),
        run_info_json(
            &run.benchmark_id,
            run.random_seed,
            run.trial.as_ref(),
            &run.cli_command,
        ),
    );
    o.insert("was_cancelled".into(), Value::from(run.was_cancelled));
    if let Some(c) = run.is_complete {
        o.insert("is_complete".into(), Value::from(c));
    }
    if let Some(reason) = &run.incomplete_reason {
        o.insert("incomplete_reason".into(), Value::from(reason.as_str()));
    }
    let errors = summary
        .error_summary
        .iter()
        .map(|e| {
            let mut details = Map::new();
            if let Some(code) = e.code {
                details.insert("code".into(), Value::from(code));
            }
            details.insert("type".into(), Value::from(e.kind.as_str()));
            details.insert("message".into(), Value::from(e.message.as_str()));
            let mut item = Map::new();
            item.insert("error_details".into(), Value::Object(details));
            item.insert("count".into(), Value::from(e.count));
            Value::Object(item)
        })
        .collect();
    o.insert("error_summary".into(), Value::Array(errors));
    o.insert(
        "start_time".into(),
        Value::from(local_iso(run.start_wall_ns)),
    );
    o.insert("end_time".into(), Value::from(local_iso(run.end_wall_ns)));
    if let Some(b) = &run.branch_stats {
        let stats: Map<String, Value> = b
            .iter()
            .map(|(k, v)| ((*k).to_string(), Value::from(*v)))
            .collect();
        o.insert("branch_stats".into(), Value::Object(stats));
    }
    if !summary.spec_decode_histogram.is_empty() {
        let pooled: Map<String, Value> = (summary.spec_decode_histogram.iter())
            .map(|(j, c)| (j.to_string(), Value::from(*c)))
            .collect();
        o.insert(
            "pooled_spec_decode_acceptance_histogram".into(),
            Value::Object(pooled),
        );
    }
    if let Some(w) = warmup {
        let mut wm: Map<String, Value> = w
            .results
            .iter()
            .filter(|r| visible(r))
            .map(|r| (r.tag().into_owned(), metric_json(r)))
            .collect();
        add_skipped_overflows(&mut wm, w.skipped_context_overflows, false);
        if !wm.is_empty() {
            o.insert("warmup_metrics".into(), Value::Object(wm));
        }
    }
    for r in summary.results.iter().filter(|r| visible(r)) {
        let tag = r.tag();
        if !DECLARED_METRICS.contains(&tag.as_ref()) {
            o.insert(tag.into_owned(), metric_json(r));
        }
    }
    add_skipped_overflows(&mut o, summary.skipped_context_overflows, true);
    if let Some(s) = &run.scenario {
        let mut m = Map::new();
        m.insert("scenario".into(), Value::from(s.name.as_str()));
        m.insert(
            "submission_valid".into(),
            Value::from(s.invalid_reasons.is_empty()),
        );
        if !s.invalid_reasons.is_empty() {
            m.insert(
                "submission_invalid_reasons".into(),
                Value::from(s.invalid_reasons.clone()),
            );
        }
        o.insert("metadata".into(), Value::Object(m));
    }
    o.insert("ringperf".into(), ringperf_block(summary, run));
    Value::Object(o)
}

/// The records over the model's context a scenario's agentic replay left out of every metric:
/// added to `context_overflow_count` (written with only its unit and value when no error
/// record counted one) and, with `apart`, also written alone as `skipped_context_overflow_count`
/// (what a re-summing of runs adds to their responses), as AIPerf writes them.
fn add_skipped_overflows(o: &mut Map<String, Value>, skipped: u64, apart: bool) {
    if skipped == 0 {
        return;
    }
    let count = |n: f64| {
        let mut m = Map::new();
        m.insert("unit".into(), Value::from("requests"));
        m.insert("avg".into(), Value::from(n));
        Value::Object(m)
    };
    let key = "context_overflow_count";
    match o.get_mut(key).and_then(|v| v.get_mut("avg")) {
        Some(avg) => *avg = Value::from(avg.as_f64().unwrap_or(0.0) + skipped as f64),
        None => {
            o.insert(key.into(), count(skipped as f64));
        }
    }
    if apart {
        o.insert(
            "skipped_context_overflow_count".into(),
            count(skipped as f64),
        );
    }
}

/// ringperf's own run facts: dispatch lag, I/O driver, ring stalls, workers; a shard's place in
/// its run, or a merged run's shards; each thread's CPU time and the client-health verdict.
fn ringperf_block(summary: &Summary, run: &RunInfo) -> Value {
    let mut m = Map::new();
    if let Some(l) = &summary.dispatch_lag {
        m.insert("dispatch_lag_ns".into(), lag_json(l));
    }
    m.insert(
        "receive_lag_ns".into(),
        summary.receive_lag.as_ref().map_or(Value::Null, lag_json),
    );
    // With `--network-latency-*`: the kernel's RTT estimate of the requests' connections.
    if let Some(l) = &summary.kernel_rtt {
        m.insert("kernel_rtt_ns".into(), lag_json(l));
    }
    m.insert("timestamps".into(), Value::from(run.timestamps));
    m.insert("io_driver".into(), Value::from(run.io_driver.as_str()));
    m.insert("ring_stalls".into(), Value::from(run.ring_stalls));
    m.insert("workers".into(), Value::from(run.workers));
    let mut clock = Map::new();
    clock.insert(
        "monotonic_origin_ns".into(),
        Value::from(run.monotonic_origin_ns),
    );
    clock.insert("wall_origin_ns".into(), Value::from(run.wall_origin_ns));
    // The profiling window of `start_time` / `end_time` in wall-clock epoch ns (a run of one
    // phase has no phase manifest to give it).
    clock.insert("start_ns".into(), Value::from(run.start_wall_ns));
    clock.insert("end_ns".into(), Value::from(run.end_wall_ns));
    if let Some(o) = run.realtime_offset {
        clock.insert(
            "realtime_to_monotonic_offset_ns".into(),
            Value::from(o.offset_ns),
        );
        clock.insert(
            "realtime_to_monotonic_uncertainty_ns".into(),
            Value::from(o.uncertainty_ns),
        );
    }
    m.insert("clock".into(), Value::Object(clock));
    if !run.phases.is_empty() {
        let phases = (run.phases.iter())
            .map(|p| {
                serde_json::json!({"kind": p.kind.as_str(), "name": p.name,
                    "start_ns": p.start_ns, "end_ns": p.end_ns})
            })
            .collect();
        m.insert("phases".into(), Value::Array(phases));
    }
    if let Some(s) = &run.shard {
        let mut shard = Map::new();
        shard.insert("index".into(), Value::from(s.index));
        shard.insert("count".into(), Value::from(s.count));
        shard.insert("run_id".into(), Value::from(s.run_id.as_str()));
        shard.insert("start_at_ns".into(), Value::from(s.start_at_ns));
        shard.insert("start_lag_ns".into(), Value::from(s.start_lag_ns));
        shard.insert("server_metrics".into(), Value::from(s.server_metrics));
        m.insert("shard".into(), Value::Object(shard));
    }
    if let Some(merge) = &run.merge {
        let shards = merge.shards.iter().map(shard_health_json).collect();
        m.insert("shards".into(), Value::Array(shards));
    }
    if !run.threads.is_empty() {
        let threads = run.threads.iter().map(thread_json).collect();
        m.insert("threads".into(), Value::Array(threads));
    }
    if let Some(loaded) = run.tokenizer_loaded {
        m.insert("tokenizer_loaded".into(), Value::from(loaded));
    }
    if let Some(h) = &run.client_health {
        m.insert("client_health".into(), health_json(h));
    } else if let Some(merge) = &run.merge {
        m.insert(
            "client_health".into(),
            merged_health_json(&merge.client_health()),
        );
    }
    Value::Object(m)
}

/// One entry of `ringperf.threads`: `{name, cpu_ns}`, and `busy_fraction` (and `naps`, with
/// batched wake-ups; `warm_pool`, when its warm pool opened connections; `idle_wakes`) for a
/// worker.
fn thread_json(t: &ThreadCpu) -> Value {
    let mut m = Map::new();
    m.insert("name".into(), Value::from(t.name.as_str()));
    m.insert("cpu_ns".into(), Value::from(t.cpu_ns));
    if let Some(b) = t.busy_fraction {
        m.insert("busy_fraction".into(), num(b));
    }
    if let Some(n) = t.naps {
        let mut naps = Map::new();
        naps.insert("count".into(), Value::from(n.naps));
        naps.insert("napped_ns".into(), Value::from(n.napped_ns));
        naps.insert("reads_gathered".into(), Value::from(n.gathered));
        m.insert("naps".into(), Value::Object(naps));
    }
    if let Some(w) = t.warm_pool {
        let mut pool = Map::new();
        pool.insert("opened".into(), Value::from(w.opened));
        pool.insert("failed".into(), Value::from(w.failed));
        m.insert("warm_pool".into(), Value::Object(pool));
    }
    if let Some(n) = t.idle_wakes {
        m.insert("idle_wakes".into(), Value::from(n));
    }
    Value::Object(m)
}

/// `ringperf.client_health`: the verdict, its reasons, its limits and the figures judged.
fn health_json(h: &ClientHealth) -> Value {
    let opt = |v: Option<Value>| v.unwrap_or(Value::Null);
    let (l, o) = (&h.limits, &h.observed);
    let mut limits = Map::new();
    limits.insert("lag_p99_ns".into(), Value::from(l.lag_p99_ns));
    limits.insert("worker_busy_fraction".into(), num(l.busy_fraction));
    limits.insert("ring_stalls".into(), Value::from(l.ring_stalls));
    let mut observed = Map::new();
    let p99 = |lag: &Option<LagSummary>| opt(lag.as_ref().map(|l| num(l.p99_ns)));
    observed.insert("dispatch_lag_p99_ns".into(), p99(&o.dispatch_lag));
    observed.insert(
        "dispatch_lag_max_ns".into(),
        opt(o.dispatch_lag.as_ref().map(|l| num(l.max_ns))),
    );
    observed.insert("receive_lag_p99_ns".into(), p99(&o.receive_lag));
    observed.insert(
        "busiest_worker".into(),
        opt(o
            .busiest_worker
            .as_ref()
            .map(|(n, _)| Value::from(n.as_str()))),
    );
    observed.insert(
        "busiest_worker_busy_fraction".into(),
        opt(o.busiest_worker.as_ref().map(|(_, b)| num(*b))),
    );
    observed.insert("ring_stalls".into(), Value::from(o.ring_stalls));
    observed.insert(
        "run_queue_wait_ns".into(),
        opt(o.run_queue_wait_ns.map(Value::from)),
    );
    if let Some(c) = o.connection_waits {
        observed.insert("connection_waits".into(), Value::from(c.waits));
        observed.insert("connection_limit".into(), Value::from(c.limit));
    }
    if let Some(d) = o.descriptor_waits {
        observed.insert("descriptor_waits".into(), Value::from(d.waits));
        observed.insert("descriptor_limit".into(), opt(d.limit.map(Value::from)));
    }
    if let Some(host) = &o.host {
        observed.insert("host".into(), host_json(host));
    }
    let mut m = Map::new();
    m.insert("verdict".into(), Value::from(h.label()));
    m.insert("kept_up".into(), Value::from(h.kept_up));
    m.insert("enforced".into(), Value::from(l.enforced));
    m.insert(
        "reasons".into(),
        Value::Array(h.reasons.iter().map(|r| Value::from(r.as_str())).collect()),
    );
    // With the embedded mock: it shared the workers' cores, and the lag figures their wait for
    // a CPU accounts for (reported, failing nothing).
    m.insert(
        "shares_cores_with_mock".into(),
        Value::from(o.shares_cores_with_mock),
    );
    m.insert(
        "shared_core_lag".into(),
        Value::Array(
            h.shared_cores
                .iter()
                .map(|r| Value::from(r.as_str()))
                .collect(),
        ),
    );
    m.insert("limits".into(), Value::Object(limits));
    m.insert("observed".into(), Value::Object(observed));
    Value::Object(m)
}

/// `observed.host`: what else ran on the host while the client did.
fn host_json(h: &HostLoad) -> Value {
    let busiest = h
        .busiest
        .iter()
        .map(|p| serde_json::json!({"pid": p.pid, "name": p.name, "cpu_ns": p.cpu_ns}))
        .collect();
    let mut m = Map::new();
    m.insert("other_cpu_ns".into(), Value::from(h.other_cpu_ns));
    m.insert(
        "other_cpu_on_worker_cores_ns".into(),
        h.other_cpu_on_worker_cores_ns
            .map_or(Value::Null, Value::from),
    );
    m.insert("steal_ns".into(), Value::from(h.steal_ns));
    m.insert("span_ns".into(), Value::from(h.span_ns));
    m.insert("cores".into(), Value::from(h.cores));
    m.insert("busiest_processes".into(), Value::Array(busiest));
    Value::Object(m)
}

/// A merged run's `ringperf.client_health`: `kept_up` (`null`: not judged, a shard has no
/// verdict), `enforced`, the reasons naming their shard, and every shard's own verdict.
fn merged_health_json(h: &MergedHealth) -> Value {
    let shards = h
        .shards
        .iter()
        .map(|(index, v)| {
            let mut m = Map::new();
            m.insert("index".into(), Value::from(*index));
            m.insert(
                "kept_up".into(),
                v.as_ref().map_or(Value::Null, |v| Value::from(v.kept_up)),
            );
            m.insert(
                "enforced".into(),
                v.as_ref().map_or(Value::Null, |v| Value::from(v.enforced)),
            );
            let reasons = v.as_ref().map_or(&[][..], |v| &v.reasons[..]);
            m.insert(
                "reasons".into(),
                Value::Array(reasons.iter().map(|r| Value::from(r.as_str())).collect()),
            );
            Value::Object(m)
        })
        .collect();
    let mut m = Map::new();
    m.insert(
        "kept_up".into(),
        h.kept_up().map_or(Value::Null, Value::from),
    );
    m.insert("enforced".into(), Value::from(h.enforced()));
    m.insert(
        "reasons".into(),
        Value::Array(h.reasons().into_iter().map(Value::from).collect()),
    );
    m.insert(
        "unjudged_shards".into(),
        Value::Array(h.unjudged().into_iter().map(Value::from).collect()),
    );
    m.insert("shards".into(), Value::Array(shards));
    Value::Object(m)
}

/// Dispatch-lag statistics in ns: `{p50, p99, max, count}`.
fn lag_json(l: &LagSummary) -> Value {
    let mut lag = Map::new();
    lag.insert("p50".into(), num(l.p50_ns));
    lag.insert("p99".into(), num(l.p99_ns));
    lag.insert("max".into(), num(l.max_ns));
    lag.insert("count".into(), Value::from(l.count));
    Value::Object(lag)
}

/// One entry of `ringperf.shards` (a merged run): every key present, `null` when unknown.
fn shard_health_json(s: &ShardHealth) -> Value {
    let opt = |v: Option<Value>| v.unwrap_or(Value::Null);
    let mut m = Map::new();
    m.insert("index".into(), Value::from(s.index));
    m.insert(
        "dir".into(),
        opt(s.dir.as_ref().map(|d| Value::from(d.display().to_string()))),
    );
    m.insert("status".into(), Value::from(s.status.to_string()));
    m.insert("request_count".into(), Value::from(s.request_count));
    m.insert(
        "error_request_count".into(),
        Value::from(s.error_request_count),
    );
    m.insert(
        "dispatch_lag_ns".into(),
        opt(s.dispatch_lag.as_ref().map(lag_json)),
    );
    m.insert("ring_stalls".into(), opt(s.ring_stalls.map(Value::from)));
    m.insert("workers".into(), opt(s.workers.map(Value::from)));
    m.insert(
        "io_driver".into(),
        opt(s.io_driver.as_deref().map(Value::from)),
    );
    m.insert("start_lag_ns".into(), opt(s.start_lag_ns.map(Value::from)));
    m.insert("server_metrics".into(), Value::from(s.server_metrics));
    m.insert("torn_lines".into(), Value::from(s.torn_lines));
    Value::Object(m)
}

/// The summary JSON as written to disk: 2-space indent, trailing newline-free like orjson.
pub fn summary_json_string(summary: &Summary, warmup: Option<&Summary>, run: &RunInfo) -> String {
    serde_json::to_string_pretty(&summary_json(summary, warmup, run)).unwrap_or_default()
}
