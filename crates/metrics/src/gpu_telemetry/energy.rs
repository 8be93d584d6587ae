//! GPU energy efficiency (docs/metrics.md, "GPU energy efficiency"): AIPerf 0.13's `nvidia_*`
//! family, joined after aggregation from the DCGM samples of the profiling window and the
//! phase's own results.
//!
//! - Fleet power: the sum over GPUs of each GPU's mean `nvidia_power_usage` over
//!   `[start, end]` (the profiling window, both ends included).
//! - Fleet energy: the sum over GPUs of each GPU's `nvidia_energy_consumption` increase over
//!   `[start, end + FINAL_SCRAPE_GRACE_NS]` (the counter rule of [`super::summary`]), in J.
//! - The energy is the counter's when it grew, and the average power is energy over the
//!   window's length; else, with only a power gauge, the energy is fleet power times the
//!   window's length and the average power is the fleet power; else nothing but, when there is
//!   a power reading, the fleet power.
//! - The ratios divide by the phase's `total_osl`, `total_isl`, `request_count`,
//!   `request_latency`, `request_throughput`, `output_token_throughput` and `goodput`, and by
//!   the phase's concurrency; each is left out when its input is missing or zero.

use super::FINAL_SCRAPE_GRACE_NS;
use super::fields::FIELDS;
use super::records::GpuRecord;
use super::summary::{Stat, summarize};
use crate::aggregate::{MetricId, MetricResult, ResultValue, Summary};

/// Joules in the `nvidia_energy_consumption` unit (MJ).
const JOULES_PER_MJ: f64 = 1e6;

/// What the GPUs drew over the profiling window.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Fleet {
    /// Sum over GPUs of each one's mean power, W.
    pub power_w: f64,
    /// GPUs with a power sample in the window.
    pub power_gpus: usize,
    /// Sum over GPUs of each one's energy-counter increase, J.
    pub energy_j: f64,
    /// GPUs with an energy sample in the window.
    pub energy_gpus: usize,
    /// The window's length, s: the profiling window, or, when that is empty, the span of the
    /// scrapes.
    pub duration_s: f64,
}

/// Where the total energy came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Source {
    /// The DCGM energy counter's increase.
    Counter,
    /// Fleet power times the window's length (no energy counter).
    PowerIntegration,
}

fn field(key: &str) -> usize {
    FIELDS
        .iter()
        .position(|f| f.key == key)
        .unwrap_or(usize::MAX)
}

impl Fleet {
    /// Measures every GPU of every endpoint (each endpoint's records in time order) over the
    /// profiling window `[start_ns, end_ns]`.
    #[must_use]
    pub fn measure(per_endpoint: &[Vec<GpuRecord>], start_ns: u64, end_ns: u64) -> Fleet {
        let (power, energy) = (
            field("nvidia_power_usage"),
            field("nvidia_energy_consumption"),
        );
        let mut fleet = Fleet::default();
        for records in per_endpoint {
            let mut uuids: Vec<&str> = Vec::new();
            for r in records {
                if !uuids.contains(&r.meta.uuid.as_str()) {
                    uuids.push(&r.meta.uuid);
                }
            }
            for uuid in uuids {
                let samples = |i: usize| -> Vec<(u64, f64)> {
                    records
                        .iter()
                        .filter(|r| r.meta.uuid == uuid)
                        .filter_map(|r| r.values.get(i).copied().flatten().map(|v| (r.ts_ns, v)))
                        .filter(|(_, v)| !v.is_nan())
                        .collect()
                };
                if let Some(Stat::Gauge { avg, .. }) =
                    summarize(&samples(power), false, start_ns, end_ns)
                {
                    fleet.power_w += avg;
                    fleet.power_gpus += 1;
                }
                let grace_end = end_ns.saturating_add(FINAL_SCRAPE_GRACE_NS);
                if let Some(Stat::Delta(d)) = summarize(&samples(energy), true, start_ns, grace_end)
                {
                    fleet.energy_j += d * JOULES_PER_MJ;
                    fleet.energy_gpus += 1;
                }
            }
        }
        fleet.duration_s = if end_ns > start_ns {
            (end_ns - start_ns) as f64 / 1e9
        } else {
            let ts = per_endpoint.iter().flatten().map(|r| r.ts_ns);
            match (ts.clone().min(), ts.max()) {
                (Some(a), Some(b)) if b > a => (b - a) as f64 / 1e9,
                _ => 0.0,
            }
        };
        fleet
    }

    /// Total energy (J), average power (W) and their source; `None` when neither a growing
    /// energy counter nor a power reading over a non-empty window exists.
    #[must_use]
    pub fn resolve(&self) -> Option<(f64, f64, Source)> {
        if self.energy_gpus > 0 && self.energy_j > 0.0 {
            let avg = if self.duration_s > 0.0 {
                self.energy_j / self.duration_s
            } else {
                0.0
            };
            return Some((self.energy_j, avg, Source::Counter));
        }
        if self.power_gpus > 0 && self.power_w > 0.0 && self.duration_s > 0.0 {
            return Some((
                self.power_w * self.duration_s,
                self.power_w,
                Source::PowerIntegration,
            ));
        }
        None
    }
}

/// The energy-efficiency results of a phase, in AIPerf's order (fleet power, average power,
/// energy, then the ratios); empty when the GPUs gave no power or energy. `concurrency` is the
/// profiling phase's (`None` for an open loop without a cap).
#[must_use]
pub fn efficiency(fleet: &Fleet, summary: &Summary, concurrency: Option<u64>) -> Vec<MetricResult> {
    use MetricId as M;
    let mut out = Vec::new();
    let mut put = |id: M, v: f64| {
        out.push(MetricResult {
            def: id.def(),
            adjusted: false,
            value: ResultValue::Scalar(v),
        });
    };
    if fleet.power_gpus > 0 {
        put(M::NvidiaTotalGpuPower, fleet.power_w);
    }
    let Some((energy, avg_power, _)) = fleet.resolve().filter(|(e, _, _)| *e > 0.0) else {
        return out;
    };
    // The phase's figures in the units AIPerf divides (display units: latency in ms).
    let metric = |id: M| {
        summary
            .result(id)
            .map(|r| r.def.to_display(r.avg()))
            .filter(|v| v.is_finite())
    };
    let nonzero = |v: Option<f64>| v.filter(|v| *v != 0.0);
    if avg_power > 0.0 {
        put(M::NvidiaAverageGpuPower, avg_power);
    }
    put(M::NvidiaTotalGpuEnergy, energy);
    let output_tokens = nonzero(metric(M::TotalOsl));
    if let Some(osl) = output_tokens {
        put(M::NvidiaOutputTokensPerJoule, osl / energy);
        put(M::NvidiaEnergyPerOutputToken, energy * 1000.0 / osl);
    }
    let total_tokens = metric(M::TotalIsl).unwrap_or(0.0) + output_tokens.unwrap_or(0.0);
    if total_tokens > 0.0 {
        put(M::NvidiaEnergyPerTotalToken, energy * 1000.0 / total_tokens);
    }
    let per_request = nonzero(metric(M::RequestCount)).map(|n| energy / n);
    if let Some(j) = per_request {
        put(M::NvidiaEnergyPerRequest, j);
    }
    if let Some(c) = concurrency.filter(|c| *c > 0) {
        put(M::NvidiaEnergyPerUser, energy / c as f64);
    }
    if let (Some(j), Some(ms)) = (per_request, nonzero(metric(M::RequestLatency))) {
        put(M::NvidiaEnergyDelayProduct, j * (ms / 1000.0));
    }
    if avg_power > 0.0 {
        for (source, id) in [
            (M::RequestThroughput, M::NvidiaPerformancePerWatt),
            (M::OutputTokenThroughput, M::NvidiaOutputTpsPerWatt),
            (M::Goodput, M::NvidiaGoodputPerWatt),
        ] {
            if let Some(v) = metric(source) {
                put(id, v / avg_power);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_telemetry::records::GpuMeta;

    fn gpu(uuid: &str, index: u32) -> GpuMeta {
        GpuMeta {
            index,
            uuid: uuid.into(),
            model_name: "H100".into(),
            ..GpuMeta::default()
        }
    }

    /// A record of one GPU: power W and the energy counter in MJ.
    fn rec(ts_ns: u64, meta: &GpuMeta, power: Option<f64>, energy_mj: Option<f64>) -> GpuRecord {
        let mut values = [None; FIELDS.len()];
        values[field("nvidia_power_usage")] = power;
        values[field("nvidia_energy_consumption")] = energy_mj;
        GpuRecord {
            ts_ns,
            meta: meta.clone(),
            values,
            source_url: "http://h:9400/metrics".into(),
        }
    }

    const S: u64 = 1_000_000_000;

    /// Two GPUs scraped each second from t=0 to t=4 s (and once in the grace period), the
    /// window [1 s, 3 s].
    fn two_gpus() -> Vec<Vec<GpuRecord>> {
        let (a, b) = (gpu("GPU-a", 0), gpu("GPU-b", 1));
        let mut recs = Vec::new();
        for (k, t) in [0, S, 2 * S, 3 * S, 3 * S + 500_000_000, 4 * S]
            .into_iter()
            .enumerate()
        {
            let k = k as f64;
            // GPU a: 100, 110, … W; its counter grows 100 J a scrape. GPU b: 200 W flat, its
            // counter 300 J a scrape.
            recs.push(rec(t, &a, Some(100.0 + 10.0 * k), Some(1.0 + k * 1e-4)));
            recs.push(rec(t, &b, Some(200.0), Some(5.0 + k * 3e-4)));
        }
        vec![recs]
    }

    #[test]
    fn fleet_power_is_the_window_mean_and_energy_the_counter_increase_with_grace() {
        let f = Fleet::measure(&two_gpus(), S, 3 * S);
        // GPU a's samples at 1, 2, 3 s: 110, 120, 130 W (mean 120); GPU b's 200 W.
        assert!((f.power_w - 320.0).abs() < 1e-9, "{f:?}");
        assert_eq!((f.power_gpus, f.energy_gpus), (2, 2));
        // Baseline at 0 s, last sample in [1 s, 3.666 s] at 3.5 s (4 scrapes on): 400 J + 1200 J.
        assert!((f.energy_j - 1600.0).abs() < 1e-6, "{f:?}");
        assert_eq!(f.duration_s, 2.0);
        let (e, p, source) = f.resolve().unwrap();
        assert_eq!(source, Source::Counter);
        assert!((e - 1600.0).abs() < 1e-6 && (p - 800.0).abs() < 1e-6);
    }

    #[test]
    fn without_an_energy_counter_power_is_integrated_and_without_either_nothing() {
        let a = gpu("GPU-a", 0);
        let recs = vec![
            (0..5)
                .map(|k| rec(k * S, &a, Some(250.0), None))
                .collect::<Vec<_>>(),
        ];
        let f = Fleet::measure(&recs, S, 3 * S);
        assert_eq!(f.resolve(), Some((500.0, 250.0, Source::PowerIntegration)));
        let none = vec![
            (0..5)
                .map(|k| rec(k * S, &a, None, None))
                .collect::<Vec<_>>(),
        ];
        let f = Fleet::measure(&none, S, 3 * S);
        assert_eq!((f.power_gpus, f.energy_gpus, f.resolve()), (0, 0, None));
        // A counter that did not move and no power: no energy either.
        let flat = vec![
            (0..5)
                .map(|k| rec(k * S, &a, None, Some(2.0)))
                .collect::<Vec<_>>(),
        ];
        assert_eq!(Fleet::measure(&flat, S, 3 * S).resolve(), None);
    }

    #[test]
    fn an_empty_window_takes_the_scrape_span() {
        let f = Fleet::measure(&two_gpus(), 0, 0);
        assert_eq!(f.duration_s, 4.0);
    }

    fn summary(values: &[(MetricId, f64)]) -> Summary {
        Summary {
            results: values
                .iter()
                .map(|(id, v)| MetricResult {
                    def: id.def(),
                    adjusted: false,
                    value: ResultValue::Scalar(*v),
                })
                .collect(),
            error_summary: Vec::new(),
            dispatch_lag: None,
            receive_lag: None,
            kernel_rtt: None,
            spec_decode_histogram: Vec::new(),
            skipped_context_overflows: 0,
        }
    }

    fn get(out: &[MetricResult], id: MetricId) -> Option<f64> {
        out.iter().find(|r| r.def.id == id).map(MetricResult::avg)
    }

    #[test]
    fn ratios_by_hand() {
        use MetricId as M;
        let fleet = Fleet {
            power_w: 390.0,
            power_gpus: 2,
            energy_j: 800.0,
            energy_gpus: 2,
            duration_s: 2.0,
        };
        // 200 requests of 16 + 16 tokens, 36.5 ms mean latency (kept in ns), 100 req/s,
        // 1,600 tokens/s.
        let s = summary(&[
            (M::TotalOsl, 3200.0),
            (M::TotalIsl, 3200.0),
            (M::RequestCount, 200.0),
            (M::RequestLatency, 36_500_000.0),
            (M::RequestThroughput, 100.0),
            (M::OutputTokenThroughput, 1600.0),
        ]);
        let out = efficiency(&fleet, &s, Some(4));
        let order: Vec<M> = out.iter().map(|r| r.def.id).collect();
        assert_eq!(
            order,
            [
                M::NvidiaTotalGpuPower,
                M::NvidiaAverageGpuPower,
                M::NvidiaTotalGpuEnergy,
                M::NvidiaOutputTokensPerJoule,
                M::NvidiaEnergyPerOutputToken,
                M::NvidiaEnergyPerTotalToken,
                M::NvidiaEnergyPerRequest,
                M::NvidiaEnergyPerUser,
                M::NvidiaEnergyDelayProduct,
                M::NvidiaPerformancePerWatt,
                M::NvidiaOutputTpsPerWatt,
            ]
        );
        let v = |id| get(&out, id).unwrap();
        assert_eq!(v(M::NvidiaTotalGpuPower), 390.0);
        assert_eq!(v(M::NvidiaAverageGpuPower), 400.0);
        assert_eq!(v(M::NvidiaOutputTokensPerJoule), 4.0);
        assert_eq!(v(M::NvidiaEnergyPerOutputToken), 250.0);
        assert_eq!(v(M::NvidiaEnergyPerTotalToken), 125.0);
        assert_eq!(v(M::NvidiaEnergyPerRequest), 4.0);
        assert_eq!(v(M::NvidiaEnergyPerUser), 200.0);
        assert!((v(M::NvidiaEnergyDelayProduct) - 0.146).abs() < 1e-12);
        assert_eq!(v(M::NvidiaPerformancePerWatt), 0.25);
        assert_eq!(v(M::NvidiaOutputTpsPerWatt), 4.0);
        // Goodput (with --goodput) gives its per-watt figure, a zero one included.
        let mut with_goodput = s.clone();
        with_goodput
            .results
            .extend(summary(&[(M::Goodput, 0.0)]).results);
        assert_eq!(
            get(
                &efficiency(&fleet, &with_goodput, None),
                M::NvidiaGoodputPerWatt
            ),
            Some(0.0)
        );
        // No concurrency (an uncapped open loop): no energy per user.
        assert_eq!(
            get(&efficiency(&fleet, &s, None), M::NvidiaEnergyPerUser),
            None
        );
    }

    #[test]
    fn power_only_without_energy_and_no_ratio_without_its_input() {
        use MetricId as M;
        // A power reading but a zero-length window: fleet power alone.
        let fleet = Fleet {
            power_w: 300.0,
            power_gpus: 1,
            ..Fleet::default()
        };
        let out = efficiency(&fleet, &summary(&[(M::RequestCount, 10.0)]), Some(1));
        assert_eq!(out.len(), 1);
        assert_eq!(get(&out, M::NvidiaTotalGpuPower), Some(300.0));
        // Energy but no tokens (an embeddings run) and no requests: energy, power, per user.
        let fleet = Fleet {
            energy_j: 50.0,
            energy_gpus: 1,
            duration_s: 5.0,
            ..Fleet::default()
        };
        let out = efficiency(&fleet, &summary(&[]), Some(5));
        let ids: Vec<M> = out.iter().map(|r| r.def.id).collect();
        assert_eq!(
            ids,
            [
                M::NvidiaAverageGpuPower,
                M::NvidiaTotalGpuEnergy,
                M::NvidiaEnergyPerUser
            ]
        );
    }
}
