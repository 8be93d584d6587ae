//! What the mock answers at `/metrics` and `/prometheus/metrics` in each [`MetricsMode`]: the
//! vLLM page, or one of the modes that exercise the scraper's edge cases (TRT-LLM's JSON
//! `/metrics`, garbage, a slow endpoint, a counter reset, NaN samples, escaped labels, many
//! series, a 404, an endpoint that never answers).

use std::fmt::Write as _;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use monoio::io::AsyncReadRent;
use monoio::net::TcpStream;

use super::settings::MetricsMode;
use super::shared::Shared;
use super::wire;

/// One answer of the metrics routes.
#[derive(Debug)]
pub(crate) struct MetricsReply {
    /// Status code.
    pub(crate) status: u16,
    /// `content-type` value.
    pub(crate) content_type: &'static str,
    /// Body.
    pub(crate) body: Vec<u8>,
    /// Wait this long before answering.
    pub(crate) delay: Duration,
    /// Never answer (see [`MetricsMode::Hang`] and [`hang`]).
    pub(crate) hang: bool,
}

const PROMETHEUS: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What TRT-LLM's `/metrics` returns (iteration stats).
const TRTLLM_JSON: &str = r#"[{"gpuMemUsage":1073741824,"iter":0,"iterLatencyMS":12.5,"numActiveRequests":1,"inflightBatchingStats":{"numScheduledRequests":1}}]"#;

/// An OpenMetrics page: `mock_served` is a counter family served as `mock_served_total`.
const OPENMETRICS: &str = "# TYPE mock_served counter\n# HELP mock_served Requests served.\n\
    mock_served_total{path=\"/v1\"} 5 # {trace_id=\"abc\"} 1.0 1700000000.1\n\
    mock_served_created{path=\"/v1\"} 1700000000\n\
    # TYPE mock_load gauge\nmock_load 0.5\n# EOF\n";

/// A page that any Prometheus text parser rejects.
const GARBAGE: &str = "<html><body><h1>Metrics dashboard</h1>{\"not\": prometheus}</body></html>\n";

fn found(body: String) -> MetricsReply {
    MetricsReply {
        status: 200,
        content_type: PROMETHEUS,
        body: body.into_bytes(),
        delay: Duration::ZERO,
        hang: false,
    }
}

fn not_found() -> MetricsReply {
    MetricsReply {
        status: 404,
        content_type: "application/json",
        body: wire::error_body(404, "not found"),
        delay: Duration::ZERO,
        hang: false,
    }
}

fn json() -> MetricsReply {
    MetricsReply {
        status: 200,
        content_type: "application/json",
        body: TRTLLM_JSON.as_bytes().to_vec(),
        delay: Duration::ZERO,
        hang: false,
    }
}

impl Shared {
    /// The answer of `/metrics` (`prometheus_path` false) or `/prometheus/metrics` (true),
    /// served by thread `thread`.
    pub(crate) fn metrics_reply(&self, thread: usize, prometheus_path: bool) -> MetricsReply {
        let mode = self.cfg.metrics_mode;
        // Pages served so far by every thread (this one counted first).
        if let Some(t) = self.metrics.get(thread) {
            t.pages.fetch_add(1, Relaxed);
        }
        let n: u64 = self.metrics.iter().map(|t| t.pages.load(Relaxed)).sum();
        match (mode, prometheus_path) {
            (MetricsMode::Hang, _) => MetricsReply {
                hang: true,
                ..not_found()
            },
            (MetricsMode::NotFound, _) => not_found(),
            (MetricsMode::TrtLlm, false) | (MetricsMode::JsonOnly, false) => json(),
            (MetricsMode::TrtLlm, true) => found(self.metrics_text()),
            (_, true) => not_found(),
            (MetricsMode::Garbage, false) => MetricsReply {
                status: 200,
                content_type: "text/plain; charset=utf-8",
                body: GARBAGE.as_bytes().to_vec(),
                delay: Duration::ZERO,
                hang: false,
            },
            (MetricsMode::OpenMetrics { openmetrics_type }, false) => MetricsReply {
                content_type: if openmetrics_type {
                    "application/openmetrics-text; version=1.0.0; charset=utf-8"
                } else {
                    PROMETHEUS
                },
                body: OPENMETRICS.as_bytes().to_vec(),
                ..found(String::new())
            },
            (MetricsMode::SglangSpec, false) => {
                let mut page = self.metrics_text();
                sglang_spec(&self.cfg.model, n, &mut page);
                found(page)
            }
            (MetricsMode::Slow { delay_ms }, false) => MetricsReply {
                delay: Duration::from_millis(delay_ms),
                ..found(self.metrics_text())
            },
            (m, false) => {
                let mut page = self.metrics_text();
                extras(m, n, &mut page);
                found(page)
            }
        }
    }
}

/// Holds a connection whose request will never be answered: reads and discards until the peer
/// closes it (or a read fails). A mock stop ends it earlier, by dropping the connection
/// ([`super::worker::Worker::close_connections`]). Memory stays one small buffer however much
/// the peer sends.
pub(crate) async fn hang(stream: &mut TcpStream) {
    // A `Vec` is read into from its start, up to its capacity: the buffer is reused as is.
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    loop {
        let (res, b) = stream.read(buf).await;
        buf = b;
        match res {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// `(accept rate, accept length)` of the leader ranks on the `n`-th page (1-based): a cycle of
/// three, `(0.5, 2.0)`, `(0.6, 2.5)`, `(0.7, 3.0)`. Rank 1 reports a tenth more rate and one
/// more length (a series the console view leaves out).
#[must_use]
pub fn sglang_spec_values(n: u64) -> (f64, f64) {
    let k = ((n.max(1) - 1) % 3) as f64;
    (0.5 + 0.1 * k, 2.0 + 0.5 * k)
}

/// SGLang's speculative-decoding gauges for `model` on page `n`.
fn sglang_spec(model: &str, n: u64, page: &mut String) {
    let (rate, length) = sglang_spec_values(n);
    for (name, help, leader, other) in [
        (
            "sglang:spec_accept_rate",
            "The average acceptance rate of speculative decoding.",
            rate,
            rate + 0.1,
        ),
        (
            "sglang:spec_accept_length",
            "The average acceptance length of speculative decoding.",
            length,
            length + 1.0,
        ),
    ] {
        let _ = writeln!(page, "# HELP {name} {help}\n# TYPE {name} gauge");
        for (rank, v) in [("0", leader), ("1", other)] {
            let _ = writeln!(
                page,
                "{name}{{model_name=\"{model}\",pp_rank=\"0\",tp_rank=\"{rank}\"}} {v:?}"
            );
        }
    }
}

/// Appends the families of mode `m` to `page`; `n` is the 1-based number of this page.
fn extras(m: MetricsMode, n: u64, page: &mut String) {
    match m {
        MetricsMode::CounterReset => {
            page.push_str(
                "# HELP mock_restarts_total Work done since the last (simulated) restart.\n\
                 # TYPE mock_restarts_total counter\n",
            );
            let _ = writeln!(page, "mock_restarts_total {:?}", (5 * ((n - 1) % 4)) as f64);
        }
        MetricsMode::NanSamples => page.push_str(
            "# HELP mock_nan_gauge Always NaN.\n# TYPE mock_nan_gauge gauge\nmock_nan_gauge NaN\n\
             # HELP mock_partial_gauge One series NaN, one finite.\n\
             # TYPE mock_partial_gauge gauge\n\
             mock_partial_gauge{side=\"a\"} NaN\nmock_partial_gauge{side=\"b\"} 7\n\
             mock_partial_gauge{side=\"c\"} +Inf\n\
             # HELP mock_nan_hist A histogram with a NaN sum on one series.\n\
             # TYPE mock_nan_hist histogram\n\
             mock_nan_hist_bucket{path=\"bad\",le=\"1\"} 1\n\
             mock_nan_hist_bucket{path=\"bad\",le=\"+Inf\"} 2\n\
             mock_nan_hist_sum{path=\"bad\"} NaN\nmock_nan_hist_count{path=\"bad\"} 2\n\
             mock_nan_hist_bucket{path=\"good\",le=\"1\"} 3\n\
             mock_nan_hist_bucket{path=\"good\",le=\"+Inf\"} 4\n\
             mock_nan_hist_sum{path=\"good\"} 2.5\nmock_nan_hist_count{path=\"good\"} 4\n",
        ),
        MetricsMode::Escapes => page.push_str(
            "# HELP mock_escaped_info Labels with \\\\ backslash and \\n newline escapes.\n\
             # TYPE mock_escaped_info gauge\n\
             mock_escaped_info{path=\"C:\\\\models\\\\q\",quote=\"say \\\"hi\\\"\",\
             multi=\"a\\nb\"} 1\n",
        ),
        MetricsMode::MalformedLine => page.push_str(
            "mock_malformed_gauge{a=\"1\"} not_a_number\n\
             # HELP mock_after_malformed A gauge after a malformed line.\n\
             # TYPE mock_after_malformed gauge\n\
             mock_after_malformed 3\n",
        ),
        MetricsMode::PageCounter => {
            page.push_str(
                "# HELP mock_metrics_pages_total Metrics pages served so far, this one included.\n\
                 # TYPE mock_metrics_pages_total counter\n",
            );
            let _ = writeln!(page, "mock_metrics_pages_total {:?}", n as f64);
        }
        MetricsMode::ManySeries { series } => {
            page.reserve(series as usize * 32);
            page.push_str(
                "# HELP mock_shard_load Load of one shard.\n# TYPE mock_shard_load gauge\n",
            );
            for i in 0..series {
                let _ = writeln!(page, "mock_shard_load{{shard=\"{i}\"}} {i}");
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_wire::prom::{SeriesValue, parse_scrape};

    fn family<'a>(
        s: &'a ringperf_wire::prom::Scrape,
        name: &str,
    ) -> Option<&'a ringperf_wire::prom::Family> {
        s.families.iter().find(|f| f.name == name)
    }

    #[test]
    fn page_counter_makes_every_page_unique() {
        let pages: Vec<String> = (1..=3)
            .map(|n| {
                let mut p = String::new();
                extras(MetricsMode::PageCounter, n, &mut p);
                p
            })
            .collect();
        let scrape = parse_scrape(pages[1].as_bytes()).unwrap();
        let f = family(&scrape, "mock_metrics_pages").expect("the counter (`_total` dropped)");
        assert_eq!(f.series[0].1, SeriesValue::Scalar(2.0));
        assert!(pages[0] != pages[1] && pages[1] != pages[2]);
    }

    #[test]
    fn garbage_is_not_prometheus() {
        assert!(parse_scrape(GARBAGE.as_bytes()).is_err());
    }

    #[test]
    fn a_malformed_line_is_left_out_and_the_rest_read() {
        let mut p = String::new();
        extras(MetricsMode::MalformedLine, 1, &mut p);
        let s = parse_scrape(p.as_bytes()).unwrap();
        assert_eq!(s.malformed.lines, 1);
        let f = family(&s, "mock_after_malformed").expect("the gauge after the bad line");
        assert_eq!(f.series[0].1, SeriesValue::Scalar(3.0));
        assert!(family(&s, "mock_malformed_gauge").is_none());
    }

    #[test]
    fn counter_reset_cycles() {
        let vals: Vec<String> = (1..=6)
            .map(|n| {
                let mut p = String::new();
                extras(MetricsMode::CounterReset, n, &mut p);
                p.lines().last().unwrap().to_owned()
            })
            .collect();
        assert_eq!(
            vals,
            [
                "mock_restarts_total 0.0",
                "mock_restarts_total 5.0",
                "mock_restarts_total 10.0",
                "mock_restarts_total 15.0",
                "mock_restarts_total 0.0",
                "mock_restarts_total 5.0"
            ]
        );
    }

    #[test]
    fn nan_samples_parse_with_aiperf_rules() {
        let mut p = String::new();
        extras(MetricsMode::NanSamples, 1, &mut p);
        let s = parse_scrape(p.as_bytes()).unwrap();
        assert!(
            family(&s, "mock_nan_gauge").is_none(),
            "all-NaN family omitted"
        );
        let g = family(&s, "mock_partial_gauge").unwrap();
        assert_eq!(g.series.len(), 1);
        assert_eq!(g.series[0].1, SeriesValue::Scalar(7.0));
        let h = family(&s, "mock_nan_hist").unwrap();
        assert_eq!(h.series.len(), 1, "the NaN-sum label set is dropped");
        assert_eq!(h.series[0].0, vec![("path".to_owned(), "good".to_owned())]);
    }

    #[test]
    fn escapes_are_resolved() {
        let mut p = String::new();
        extras(MetricsMode::Escapes, 1, &mut p);
        let s = parse_scrape(p.as_bytes()).unwrap();
        let f = family(&s, "mock_escaped_info").unwrap();
        assert_eq!(
            f.description,
            "Labels with \\ backslash and \n newline escapes."
        );
        assert_eq!(
            f.series[0].0,
            vec![
                ("multi".to_owned(), "a\nb".to_owned()),
                ("path".to_owned(), "C:\\models\\q".to_owned()),
                ("quote".to_owned(), "say \"hi\"".to_owned()),
            ]
        );
    }

    #[test]
    fn many_series_page() {
        let mut p = String::new();
        extras(MetricsMode::ManySeries { series: 12_000 }, 1, &mut p);
        let s = parse_scrape(p.as_bytes()).unwrap();
        let f = family(&s, "mock_shard_load").unwrap();
        assert_eq!(f.series.len(), 12_000);
        assert_eq!(f.series[11_999].1, SeriesValue::Scalar(11_999.0));
    }
}
