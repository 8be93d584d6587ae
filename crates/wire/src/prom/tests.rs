//! The Prometheus parser against the real vLLM captures (tests/data/), hand-written pages and
//! property tests.

use super::*;
use proptest::prelude::*;

const IDLE: &[u8] = include_bytes!("../../../../tests/data/vllm-cpu-metrics-idle.txt");
const DURING: &[u8] = include_bytes!("../../../../tests/data/vllm-cpu-metrics-during-load.txt");
const AFTER: &[u8] = include_bytes!("../../../../tests/data/vllm-cpu-metrics-after-load.txt");

fn family<'s>(s: &'s Scrape, name: &str) -> &'s Family {
    s.families
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no family {name}"))
}

fn labels(pairs: &[(&str, &str)]) -> LabelSet {
    let mut v: LabelSet = pairs
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    v.sort();
    v
}

fn scalar(f: &Family, l: &[(&str, &str)]) -> f64 {
    let want = labels(l);
    match f.series.iter().find(|(k, _)| *k == want) {
        Some((_, SeriesValue::Scalar(v))) => *v,
        other => panic!("{}: {other:?}", f.name),
    }
}

fn count_kinds(s: &Scrape) -> [usize; 4] {
    let mut n = [0; 4];
    for f in &s.families {
        let i = match f.kind {
            MetricType::Counter => 0,
            MetricType::Gauge => 1,
            MetricType::Histogram => 2,
            _ => 3,
        };
        n[i] += 1;
    }
    n
}

#[test]
fn vllm_pages_family_counts() {
    // Counted by hand from the `# TYPE` lines: 22 counters, 12 gauges, 18 histograms, 2 summaries
    // (skipped), plus one `*_created` gauge per counter/histogram (skipped). The idle page declares
    // `http_requests_total` and `http_request_duration_seconds` without any sample: omitted.
    for (page, want) in [
        (IDLE, [21, 12, 17, 0]),
        (DURING, [22, 12, 18, 0]),
        (AFTER, [22, 12, 18, 0]),
    ] {
        let s = parse_scrape(page).unwrap();
        assert_eq!(count_kinds(&s), want);
        assert!(s.families.iter().all(|f| !f.name.ends_with("_created")));
        assert!(
            s.families
                .iter()
                .all(|f| !f.name.starts_with("http_request_size"))
        );
    }
}

#[test]
fn vllm_during_load_values() {
    let s = parse_scrape(DURING).unwrap();
    let eng = [("engine", "0"), ("model_name", "tiny-llm")];
    let prompt = family(&s, "vllm:prompt_tokens");
    assert_eq!(prompt.kind, MetricType::Counter);
    assert_eq!(prompt.description, "Number of prefill tokens processed.");
    assert_eq!(scalar(prompt, &eng), 7958.0);
    let gc = family(&s, "python_gc_collections");
    assert_eq!(scalar(gc, &[("generation", "0")]), 1819.0);
    assert_eq!(scalar(family(&s, "vllm:num_requests_running"), &eng), 3.0);
    assert_eq!(
        scalar(family(&s, "vllm:kv_cache_usage_perc"), &eng),
        0.04761904761904767
    );

    let ttft = family(&s, "vllm:time_to_first_token_seconds");
    assert_eq!(ttft.kind, MetricType::Histogram);
    assert_eq!(ttft.series.len(), 1);
    let (l, SeriesValue::Histogram(h)) = &ttft.series[0] else {
        panic!("not a histogram")
    };
    assert_eq!(*l, labels(&eng));
    assert_eq!(h.count, 158.0);
    assert_eq!(h.sum, 5.49915623664856);
    let les: Vec<f64> = h.buckets.iter().map(|b| b.0).collect();
    assert_eq!(&les[..4], &[0.001, 0.005, 0.01, 0.02]);
    assert_eq!(les.last(), Some(&f64::INFINITY));
    let counts: Vec<f64> = h.buckets.iter().map(|b| b.1).take(7).collect();
    assert_eq!(counts, vec![0.0, 0.0, 1.0, 35.0, 105.0, 151.0, 158.0]);
    assert_eq!(h.buckets.len(), 23);
    assert_eq!(h.le_text[..3], ["0.001", "0.005", "0.01"]);
    assert_eq!(h.le_text.last().map(String::as_str), Some("+Inf"));
}

#[test]
fn vllm_after_load_values() {
    let s = parse_scrape(AFTER).unwrap();
    let ok = family(&s, "vllm:request_success");
    assert_eq!(ok.series.len(), 5);
    let l = [
        ("engine", "0"),
        ("finished_reason", "length"),
        ("model_name", "tiny-llm"),
    ];
    assert_eq!(scalar(ok, &l), 204.0);
    let f = family(&s, "vllm:request_prompt_tokens");
    let SeriesValue::Histogram(h) = &f.series[0].1 else {
        panic!()
    };
    assert_eq!((h.count, h.sum), (204.0, 10348.0));
    let counts: Vec<f64> = h.buckets.iter().map(|b| b.1).collect();
    assert_eq!(
        counts,
        vec![0., 0., 2., 2., 2., 4., 204., 204., 204., 204., 204., 204.]
    );
    let info = family(&s, "python_info");
    assert_eq!(info.kind, MetricType::Gauge);
    assert_eq!(info.series[0].0.len(), 5);
}

/// The Prometheus exposition-format example, written out with our own values.
const EXPOSITION: &str = r#"# A free-form comment
# HELP http_requests_total Requests served, by method and status.
# TYPE http_requests_total counter
http_requests_total{method="post",code="200"} 1027 1395066363000
http_requests_total{method="post",code="400"}    3 1395066363000

# Escaping in label values:
msdos_file_access_time_seconds{path="C:\\DIR\\FILE.TXT",error="Cannot find file:\n\"FILE.TXT\""} 1.458255915e9

# Minimalistic line:
metric_without_timestamp_and_labels 12.47

# A weird metric from before the epoch:
something_weird{problem="division by zero"} +Inf -3982045

# HELP rpc_duration_seconds RPC latency.
# TYPE rpc_duration_seconds histogram
rpc_duration_seconds_bucket{le="0.05"} 24054
rpc_duration_seconds_bucket{le="0.1"} 33444
rpc_duration_seconds_bucket{le="0.2"} 100392
rpc_duration_seconds_bucket{le="0.5"} 129389
rpc_duration_seconds_bucket{le="1"} 133988
rpc_duration_seconds_bucket{le="+Inf"} 144320
rpc_duration_seconds_sum 53423
rpc_duration_seconds_count 144320
# HELP rpc_summary_seconds A summary.
# TYPE rpc_summary_seconds summary
rpc_summary_seconds{quantile="0.5"} 4773
rpc_summary_seconds_sum 1.7560473e+07
rpc_summary_seconds_count 2693
"#;

#[test]
fn exposition_example() {
    let s = parse_scrape(EXPOSITION.as_bytes()).unwrap();
    let names: Vec<&str> = s.families.iter().map(|f| f.name.as_str()).collect();
    // `something_weird` is +Inf: dropped (and reported); the summary is skipped.
    assert_eq!(s.nonfinite, ["something_weird"]);
    assert_eq!(
        names,
        [
            "http_requests",
            "msdos_file_access_time_seconds",
            "metric_without_timestamp_and_labels",
            "rpc_duration_seconds"
        ]
    );
    let req = family(&s, "http_requests");
    assert_eq!(scalar(req, &[("method", "post"), ("code", "400")]), 3.0);
    let dos = family(&s, "msdos_file_access_time_seconds");
    assert_eq!(dos.kind, MetricType::Unknown);
    let want = labels(&[
        ("path", r"C:\DIR\FILE.TXT"),
        ("error", "Cannot find file:\n\"FILE.TXT\""),
    ]);
    assert_eq!(dos.series[0].0, want);
    assert_eq!(
        scalar(family(&s, "metric_without_timestamp_and_labels"), &[]),
        12.47
    );
    let SeriesValue::Histogram(h) = &family(&s, "rpc_duration_seconds").series[0].1 else {
        panic!()
    };
    assert_eq!(h.buckets[4], (1.0, 133988.0));
    assert_eq!((h.sum, h.count), (53423.0, 144320.0));
}

#[test]
fn lexer_borrows_unescaped_values() {
    let page = "m{a=\"plain\",b=\"x\\\"y\"} 1\n";
    let Some(Ok(Entry::Sample(s))) = Lexer::new(page.as_bytes()).next() else {
        panic!()
    };
    let v: Vec<_> = s.labels.iter().map(|(n, v)| (n, v.value())).collect();
    assert!(matches!(v[0].1, std::borrow::Cow::Borrowed("plain")));
    assert!(matches!(&v[1].1, std::borrow::Cow::Owned(o) if o == "x\"y"));
}

#[test]
fn openmetrics_page() {
    let page = "# TYPE req counter\n# UNIT req requests\n# HELP req Served.\n\
        req_total{path=\"/\"} 5 # {trace_id=\"abc\"} 1.0 1700000000.1\n\
        req_created{path=\"/\"} 1700000000\n\
        # TYPE lat histogram\nlat_bucket{le=\"1.0\"} 2\nlat_bucket{le=\"+Inf\"} 3 # {id=\"x\"} 7\n\
        lat_sum 4.5\nlat_count 3\nlat_created 1.7e9\n\
        # TYPE build info\nbuild_info{version=\"1\"} 1\n\
        # TYPE proc_uptime gauge\nproc_uptime 9\n# EOF\nthis is ignored\n";
    let s = parse_scrape(page.as_bytes()).unwrap();
    let names: Vec<&str> = s.families.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["req", "lat"]);
    assert_eq!(family(&s, "req").description, "Served.");
    assert_eq!(scalar(family(&s, "req"), &[("path", "/")]), 5.0);
    let SeriesValue::Histogram(h) = &family(&s, "lat").series[0].1 else {
        panic!()
    };
    assert_eq!(h.buckets, vec![(1.0, 2.0), (f64::INFINITY, 3.0)]);
}

/// An OpenMetrics page (`# TYPE req counter` with `req_total` samples) read by each dialect:
/// families and types as AIPerf keeps them after Python's parsers. Classic: what
/// `prometheus_client.parser.text_string_to_metric_families` makes of this page (run on it:
/// `req` counter with no sample, `req_total` untyped, `req_created` / `lat_created` untyped,
/// `lat` histogram, `served` counter, `temp` gauge), less the empty and `*_created` families
/// AIPerf drops. OpenMetrics: `req` is the counter.
#[test]
fn a_pages_dialect_names_its_counters_as_aiperfs_parser_does() {
    let page = b"# TYPE req counter\n# HELP req Served.\n\
        req_total{path=\"/\"} 5 # {trace_id=\"abc\"} 1.0 1700000000.1\n\
        req_created{path=\"/\"} 1700000000\n\
        # TYPE lat histogram\nlat_bucket{le=\"1.0\"} 2\nlat_bucket{le=\"+Inf\"} 3\n\
        lat_sum 4.5\nlat_count 3\nlat_created 1.7e9\n\
        # TYPE served_total counter\nserved_total 7\n# TYPE temp gauge\ntemp 21.5\n# EOF\n";
    let kinds = |d: Dialect| -> Vec<(String, MetricType)> {
        parse_scrape_as(page, d)
            .expect("a valid page")
            .families
            .iter()
            .map(|f| (f.name.clone(), f.kind))
            .collect()
    };
    let named = |v: &[(&str, MetricType)]| -> Vec<(String, MetricType)> {
        v.iter().map(|(n, k)| ((*n).to_owned(), *k)).collect()
    };
    assert_eq!(
        kinds(Dialect::Classic),
        named(&[
            ("req_total", MetricType::Unknown),
            ("lat", MetricType::Histogram),
            ("served", MetricType::Counter),
            ("temp", MetricType::Gauge),
        ])
    );
    assert_eq!(
        kinds(Dialect::OpenMetrics),
        named(&[
            ("req", MetricType::Counter),
            ("lat", MetricType::Histogram),
            ("served", MetricType::Counter),
            ("temp", MetricType::Gauge),
        ])
    );
    let classic = parse_scrape_as(page, Dialect::Classic).unwrap();
    assert_eq!(scalar(family(&classic, "req_total"), &[("path", "/")]), 5.0);
    assert_eq!(scalar(family(&classic, "served"), &[]), 7.0);
    // A classic page (counters declared with `_total`, as vLLM and Go exporters write them)
    // reads the same in both.
    let vllm = b"# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{m=\"a\"} 9\n";
    assert_eq!(
        parse_scrape_as(vllm, Dialect::Classic),
        parse_scrape_as(vllm, Dialect::OpenMetrics)
    );
}

#[test]
fn nonfinite_histogram_drops_label_set_and_last_value_wins() {
    let page = "# TYPE h histogram\nh_bucket{x=\"a\",le=\"1\"} NaN\nh_bucket{x=\"a\",le=\"+Inf\"} 1\n\
        h_sum{x=\"a\"} 1\nh_count{x=\"a\"} 1\nh_bucket{x=\"b\"} 2\nh_sum{x=\"b\"} 3\nh_count{x=\"b\"} 2\n\
        # TYPE g gauge\ng{k=\"1\"} 1\ng{k=\"1\"} 2\ng{k=\"2\"} NaN\n";
    let s = parse_scrape(page.as_bytes()).unwrap();
    let h = family(&s, "h");
    assert_eq!(h.series.len(), 1);
    assert_eq!(h.series[0].0, labels(&[("x", "b")]));
    let SeriesValue::Histogram(v) = &h.series[0].1 else {
        panic!()
    };
    assert_eq!(v.buckets, vec![(f64::INFINITY, 2.0)]);
    assert_eq!(v.le_text, ["+Inf"]);
    assert_eq!(s.nonfinite, ["h", "g"]);
    let g = family(&s, "g");
    assert_eq!(g.series.len(), 1);
    assert_eq!(scalar(g, &[("k", "1")]), 2.0);
}

#[test]
fn errors_carry_offsets() {
    let cases: &[(&str, usize, ErrorKind)] = &[
        ("ok 1\nbad{a=1} 2\n", 11, ErrorKind::InvalidLabels),
        ("m 1x\n", 2, ErrorKind::InvalidValue),
        ("m{a=\"x} 1\n", 5, ErrorKind::InvalidEscape),
        ("9m 1\n", 0, ErrorKind::InvalidName),
        ("m 1 2 3\n", 6, ErrorKind::TrailingGarbage),
        ("# TYPE m bogus\n", 8, ErrorKind::InvalidType),
        ("m\n", 1, ErrorKind::InvalidValue),
        ("m 1 abc\n", 4, ErrorKind::InvalidTimestamp),
    ];
    for (page, offset, kind) in cases {
        let err = Lexer::new(page.as_bytes())
            .find_map(Result::err)
            .expect("the lexer stops at the line");
        assert_eq!((err.offset, err.kind), (*offset, *kind), "{page:?}");
        // The page reads without it when another line reads; alone, it is no page at all.
        match parse_scrape(page.as_bytes()) {
            Ok(s) => assert_eq!(s.malformed.first, Some(err), "{page:?}"),
            Err(e) => assert_eq!(e, err, "{page:?}"),
        }
    }
    assert!(parse_scrape(b"ok 1\nbad{a=1} 2\n").is_ok());
    // An escape other than `\\`, `\"` and `\n` is kept as written, as prometheus_client keeps
    // it: `"b\\a\z"` reads `b\a\z`.
    let page = b"m{a=\"b\\\\a\\z\"} 1\n";
    let Some(Ok(Entry::Sample(sample))) = Lexer::new(page).next() else {
        panic!("a sample");
    };
    let (_, v) = sample.labels.iter().next().expect("one label");
    assert_eq!(v.value(), "b\\a\\z");
    let err = parse_scrape(b"m 1\n\xff 2\n").unwrap_err();
    assert_eq!((err.offset, err.kind), (4, ErrorKind::InvalidUtf8));
}

/// A malformed line costs that line: the lines before and after it are read as if it were not
/// there, and it is counted with its error; a page of which no line reads is an error.
#[test]
fn a_malformed_line_is_left_out_and_counted() {
    let good = b"# TYPE a gauge\na{x=\"1\"} 1\n# TYPE b counter\nb_total 5\nc 7\n";
    let bad = b"# TYPE a gauge\na{x=\"1\"} 1\na{x=\"2\"} one\n# TYPE b counter\nb_total 5\n\
                c 7 8 9\nc 7\n";
    let read = parse_scrape(good).expect("valid");
    let mut with_bad = parse_scrape(bad).expect("read without its bad lines");
    assert_eq!(with_bad.malformed.lines, 2);
    let first = with_bad.malformed.first.expect("the first bad line");
    assert_eq!(first.kind, ErrorKind::InvalidValue);
    assert_eq!(&bad[first.offset..first.offset + 3], b"one");
    with_bad.malformed = Default::default();
    assert_eq!(with_bad, read);
    // The tolerant lexer yields each bad line's error and goes on; the strict one stops.
    let errors = Lexer::tolerant(bad).filter(Result::is_err).count();
    assert_eq!(errors, 2);
    assert_eq!(Lexer::new(bad).filter(Result::is_err).count(), 1);
    // Nothing readable: not Prometheus text.
    assert!(parse_scrape(b"<html>\n<body>no</body>\n</html>\n").is_err());
    assert!(parse_scrape(b"").expect("empty").families.is_empty());
}

/// Blanks between the tokens of a sample line (`name {a = "1" , b="2"} 8`), which Go's `expfmt`
/// and Python's `prometheus_client` both read, give the same samples as the tight spelling.
#[test]
fn blanks_between_tokens_read_as_the_tight_spelling() {
    let loose = parse_scrape(
        b"# TYPE x counter\nx_total {a = \"1\" , b=\"2\" } 8\nx_total\t{a=\"3\"}\t9 1700000000000\n",
    )
    .expect("a valid page");
    let tight = parse_scrape(
        b"# TYPE x counter\nx_total{a=\"1\",b=\"2\"} 8\nx_total{a=\"3\"} 9 1700000000000\n",
    )
    .expect("a valid page");
    assert_eq!(loose, tight);
    let f = family(&loose, "x");
    assert_eq!(scalar(f, &[("a", "1"), ("b", "2")]), 8.0);
    assert_eq!(scalar(f, &[("a", "3")]), 9.0);
}

fn lex_all(page: &[u8]) -> Vec<String> {
    Lexer::new(page).map(|e| format!("{e:?}")).collect()
}

proptest! {
    #[test]
    fn no_panic_on_arbitrary_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        let _ = parse_scrape(&bytes);
        let _ = lex_all(&bytes);
    }

    #[test]
    fn no_panic_on_metric_like_text(s in "[a-z_{}=\",\\\\ #\nle0-9.+InfNa-]{0,200}") {
        let _ = parse_scrape(s.as_bytes());
    }

    #[test]
    fn line_split_concatenation_is_identical(cuts in proptest::collection::vec(0usize..650, 0..6)) {
        let text = std::str::from_utf8(DURING).unwrap();
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(lines.len())).collect();
        cuts.push(lines.len());
        cuts.sort_unstable();
        cuts.dedup();
        let mut pieces = Vec::new();
        let mut start = 0;
        for c in cuts {
            let chunk: String = lines[start..c].concat();
            pieces.extend(lex_all(chunk.as_bytes()));
            start = c;
        }
        prop_assert_eq!(pieces, lex_all(DURING));
    }
}
