//! The server panel's figures, read from one parsed `/metrics` page: requests waiting and
//! running, KV-cache use, and the server's own mean TTFT between two pages. Names of vLLM and
//! SGLang are known; a page without them leaves the figure empty.

use super::{GpuLive, ServerLive};
use ringperf_wire::prom::{Family, Scrape, SeriesValue};

/// Requests queued at the server.
const WAITING: [&str; 2] = ["vllm:num_requests_waiting", "sglang:num_queue_reqs"];
/// Requests running.
const RUNNING: [&str; 2] = ["vllm:num_requests_running", "sglang:num_running_reqs"];
/// KV-cache use as a fraction (1 = full).
const KV_CACHE: [&str; 3] = [
    "vllm:kv_cache_usage_perc",
    "vllm:gpu_cache_usage_perc",
    "sglang:token_usage",
];
/// The server's TTFT histogram, seconds.
const TTFT: [&str; 2] = [
    "vllm:time_to_first_token_seconds",
    "sglang:time_to_first_token_seconds",
];

/// One endpoint's reading across pages: the TTFT histogram's running sum and count, and the
/// last mean it gave (kept while no request completes its first token).
#[derive(Clone, Debug, Default)]
pub struct Highlights {
    ttft_total: Option<(f64, f64)>,
    ttft_ms: Option<f64>,
}

fn family<'a>(page: &'a Scrape, names: &[&str]) -> Option<&'a Family> {
    names
        .iter()
        .find_map(|n| page.families.iter().find(|f| f.name == *n))
}

fn scalars(f: &Family) -> impl Iterator<Item = f64> + '_ {
    f.series.iter().filter_map(|(_, v)| match v {
        SeriesValue::Scalar(x) => Some(*x),
        SeriesValue::Histogram(_) => None,
    })
}

/// The sum over the family's series (several engines or models add up).
fn total(page: &Scrape, names: &[&str]) -> Option<f64> {
    let f = family(page, names)?;
    let mut it = scalars(f).peekable();
    it.peek()?;
    Some(it.sum())
}

/// The mean over the family's series.
fn mean(page: &Scrape, names: &[&str]) -> Option<f64> {
    let values: Vec<f64> = scalars(family(page, names)?).collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

impl Highlights {
    /// The figures of `page`, scraped from `endpoint`; the TTFT is the mean of the first tokens
    /// the server completed since the previous page (its histogram's sum and count deltas).
    pub fn read(&mut self, endpoint: &str, page: &Scrape) -> ServerLive {
        if let Some(h) = family(page, &TTFT) {
            let (sum, count) = h.series.iter().fold((0.0, 0.0), |(s, c), (_, v)| match v {
                SeriesValue::Histogram(h) => (s + h.sum, c + h.count),
                SeriesValue::Scalar(_) => (s, c),
            });
            if let Some((s0, c0)) = self.ttft_total
                && count > c0
            {
                self.ttft_ms = Some((sum - s0) / (count - c0) * 1e3);
            }
            // A counter reset (server restarted) starts the deltas again.
            self.ttft_total = Some((sum, count));
        }
        ServerLive {
            endpoint: endpoint.to_string(),
            waiting: total(page, &WAITING),
            running: total(page, &RUNNING),
            kv_cache_pct: mean(page, &KV_CACHE).map(|f| f * 100.0),
            ttft_ms: self.ttft_ms,
        }
    }
}

/// The GPU panel's lines from one DCGM exporter page: per `gpu` label, its power, utilization,
/// memory used and temperature, in AIPerf's units (the field mapping and scaling of
/// [`ringperf_metrics::gpu_telemetry::fields`]). Each GPU is labelled `<endpoint> gpu <index> <model>`.
pub fn gpu_readings(endpoint: &str, page: &Scrape) -> Vec<GpuLive> {
    use ringperf_metrics::gpu_telemetry::fields::{FIELDS, lookup};
    let mut gpus: Vec<(String, GpuLive)> = Vec::new();
    for f in &page.families {
        let Some(field) = lookup(&f.name).map(|i| FIELDS[i]) else {
            continue;
        };
        for (labels, v) in &f.series {
            let SeriesValue::Scalar(x) = v else { continue };
            let get = |k: &str| labels.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
            let Some(index) = get("gpu") else { continue };
            let at = match gpus.iter().position(|(i, _)| i == index) {
                Some(at) => at,
                None => {
                    let model = get("modelName").unwrap_or_default();
                    let label = format!(
                        "{} gpu {index} {model}",
                        super::render::short_endpoint(endpoint)
                    );
                    gpus.push((
                        index.to_string(),
                        GpuLive {
                            label: label.trim_end().to_string(),
                            ..GpuLive::default()
                        },
                    ));
                    gpus.len() - 1
                }
            };
            let g = &mut gpus[at].1;
            let value = Some(x * field.scale);
            match field.key {
                "nvidia_power_usage" => g.power_w = value,
                "nvidia_gpu_utilization" => g.utilization_pct = value,
                "nvidia_memory_used" => g.memory_used_gb = value,
                "nvidia_temperature" => g.temperature_c = value,
                _ => {}
            }
        }
    }
    gpus.into_iter().map(|(_, g)| g).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::prom::parse_scrape;

    #[test]
    fn a_dcgm_page_reads_as_one_line_per_gpu_in_aiperfs_units() {
        let p = parse_scrape(
            b"# TYPE DCGM_FI_DEV_POWER_USAGE gauge\n\
              DCGM_FI_DEV_POWER_USAGE{gpu=\"0\",modelName=\"H100\"} 300.5\n\
              DCGM_FI_DEV_POWER_USAGE{gpu=\"1\",modelName=\"H100\"} 120\n\
              # TYPE DCGM_FI_DEV_FB_USED gauge\n\
              DCGM_FI_DEV_FB_USED{gpu=\"0\",modelName=\"H100\"} 1000\n\
              # TYPE DCGM_FI_DEV_GPU_UTIL gauge\n\
              DCGM_FI_DEV_GPU_UTIL{gpu=\"1\",modelName=\"H100\"} 87\n\
              # TYPE DCGM_FI_DEV_GPU_TEMP gauge\n\
              DCGM_FI_DEV_GPU_TEMP{gpu=\"0\",modelName=\"H100\"} 41\n\
              # TYPE DCGM_FI_DEV_SM_CLOCK gauge\n\
              DCGM_FI_DEV_SM_CLOCK{gpu=\"0\",modelName=\"H100\"} 1980\n",
        )
        .unwrap();
        let g = gpu_readings("http://node1:9400/metrics", &p);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].label, "node1:9400 gpu 0 H100");
        assert_eq!(g[0].power_w, Some(300.5));
        // MiB to GB, AIPerf's factor 1.048576e-3.
        assert!((g[0].memory_used_gb.unwrap() - 1.048576).abs() < 1e-12);
        assert_eq!(g[0].temperature_c, Some(41.0));
        assert_eq!(g[0].utilization_pct, None);
        assert_eq!(
            (g[1].power_w, g[1].utilization_pct),
            (Some(120.0), Some(87.0))
        );
    }

    fn page(ttft_sum: f64, ttft_count: u64) -> Scrape {
        let text = format!(
            "# TYPE vllm:num_requests_waiting gauge\n\
             vllm:num_requests_waiting{{engine=\"0\"}} 3\n\
             vllm:num_requests_waiting{{engine=\"1\"}} 4\n\
             # TYPE vllm:num_requests_running gauge\n\
             vllm:num_requests_running{{engine=\"0\"}} 16\n\
             # TYPE vllm:kv_cache_usage_perc gauge\n\
             vllm:kv_cache_usage_perc{{engine=\"0\"}} 0.25\n\
             vllm:kv_cache_usage_perc{{engine=\"1\"}} 0.5\n\
             # TYPE vllm:time_to_first_token_seconds histogram\n\
             vllm:time_to_first_token_seconds_bucket{{le=\"+Inf\"}} {ttft_count}\n\
             vllm:time_to_first_token_seconds_sum {ttft_sum}\n\
             vllm:time_to_first_token_seconds_count {ttft_count}\n"
        );
        parse_scrape(text.as_bytes()).unwrap()
    }

    #[test]
    fn a_vllm_page_reads_as_the_panel_shows_it() {
        let mut h = Highlights::default();
        let first = h.read("http://s/metrics", &page(2.0, 10));
        assert_eq!(first.waiting, Some(7.0), "engines add up");
        assert_eq!(first.running, Some(16.0));
        assert_eq!(
            first.kv_cache_pct,
            Some(37.5),
            "mean of the engines, in percent"
        );
        assert_eq!(first.ttft_ms, None, "one page gives no delta yet");
        // 5 more first tokens taking 1.5 s in all: 300 ms each.
        let second = h.read("http://s/metrics", &page(3.5, 15));
        assert!((second.ttft_ms.unwrap() - 300.0).abs() < 1e-9);
        // No new first token: the last mean stays.
        let third = h.read("http://s/metrics", &page(3.5, 15));
        assert!((third.ttft_ms.unwrap() - 300.0).abs() < 1e-9);
    }

    #[test]
    fn a_page_without_the_names_leaves_the_figures_empty() {
        let mut h = Highlights::default();
        let p = parse_scrape(b"# TYPE other gauge\nother 1\n").unwrap();
        assert_eq!(
            h.read("e", &p),
            ServerLive {
                endpoint: "e".into(),
                ..ServerLive::default()
            }
        );
    }

    #[test]
    fn sglang_names_are_read_too() {
        let mut h = Highlights::default();
        let p = parse_scrape(
            b"# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs 2\n\
              # TYPE sglang:token_usage gauge\nsglang:token_usage 0.125\n",
        )
        .unwrap();
        let r = h.read("e", &p);
        assert_eq!((r.waiting, r.kv_cache_pct), (Some(2.0), Some(12.5)));
    }
}
