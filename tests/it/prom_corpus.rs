//! ringperf's Prometheus / OpenMetrics lexer against the reference parser AIPerf reads server
//! `/metrics` pages with, Python's `prometheus_client` (#40 item 3), on pages nobody here wrote:
//! tests/data/prom-corpus/ (real exporters' test fixtures and documentation examples, each with
//! its provenance in that folder's README.md) and the vLLM captures in tests/data/.
//!
//! For every page, tests/data/prom-corpus/dump.py prints what `prometheus_client` reads (the
//! OpenMetrics parser for `*.om.txt`, the classic text parser for any other page), and the page
//! is lexed with `ringperf_wire::prom::Lexer`. The two must agree on every sample, in page order:
//! its name, its label set (values unescaped), its value (NaN equal to NaN, ±Inf) and its
//! timestamp (the classic parser reports the page's milliseconds as seconds, so ringperf's
//! milliseconds are divided by 1000 before comparing; OpenMetrics timestamps are seconds on both
//! sides). Where `prometheus_client` raises, ringperf must report an error on the same line, and
//! the samples Python yielded before it (whole families only) must begin ringperf's.
//!
//! The pages on which the two differ are listed in [`KNOWN`], each with the difference asserted
//! exactly: a listed page that stops differing, or differs otherwise, fails the test too.
//!
//! The Python is `$RINGPERF_PROM_PYTHON`, else target/ci-venv/bin/python, else python3, the first
//! that imports `prometheus_client`; without one the test is skipped (and fails under `CI=true`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use ringperf_wire::prom::{Entry, Lexer};
use serde_json::Value;

use crate::common::require_tool;

fn python() -> Option<PathBuf> {
    let candidates = [
        std::env::var_os("RINGPERF_PROM_PYTHON").map(PathBuf::from),
        Some(Path::new(env!("CARGO_MANIFEST_DIR")).join("target/ci-venv/bin/python")),
        Some(PathBuf::from("python3")),
    ];
    candidates.into_iter().flatten().find(|p| {
        Command::new(p)
            .args(["-c", "import prometheus_client.openmetrics.parser"])
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    })
}

/// How one page's reading by the two parsers is expected to differ.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Difference {
    /// `prometheus_client` raises on this line; ringperf reads the whole page without an error
    /// (and every sample Python yielded before raising is ringperf's too).
    OnlyPythonRejects { line: usize },
    /// ringperf stops with an error on this line; `prometheus_client` reads the whole page.
    OnlyRingperfRejects { line: usize },
    /// Both reject the page, on different lines.
    RejectedOnOtherLines { python: usize, ringperf: usize },
}

/// The pages (paths relative to tests/data/) on which ringperf and `prometheus_client` differ,
/// and how. The comment on each names the mismatch.
const KNOWN: &[(&str, Difference)] = &[
    // Mismatch (OpenMetrics only): a blank line, which the OpenMetrics parser rejects ("Received
    // blank line"); ringperf's lexer skips blank lines in both formats.
    (
        "prom-corpus/openmetrics-suite/bad_blank_line.om.txt",
        Difference::OnlyPythonRejects { line: 2 },
    ),
    // Mismatch (OpenMetrics only): an empty page, without `# EOF` ("Missing # EOF at end",
    // reported after the last line); ringperf reads no entries and no error.
    (
        "prom-corpus/openmetrics-suite/bad_no_eof.om.txt",
        Difference::OnlyPythonRejects { line: 1 },
    ),
    // Mismatch (OpenMetrics only): text after `# EOF` ("Received line after # EOF"); ringperf's
    // lexer stops reading at `# EOF` and never sees it.
    (
        "prom-corpus/openmetrics-suite/bad_text_after_eof_0.om.txt",
        Difference::OnlyPythonRejects { line: 3 },
    ),
    // Mismatch (OpenMetrics only): a histogram's negative `_sum`
    // (`rpc_durations_histogram_seconds_sum -8.45e-05`, a page Prometheus's own test data
    // serves): the OpenMetrics parser rejects counter-like samples below zero ("Counter-like
    // samples cannot be negative"), ringperf's lexer checks no value's sign.
    (
        "prom-corpus/prometheus-alltypes-5mfs.om.txt",
        Difference::OnlyPythonRejects { line: 33 },
    ),
];

/// One sample as either side reports it.
#[derive(Clone, Debug)]
struct Got {
    name: String,
    labels: Vec<(String, String)>,
    value: f64,
    /// Seconds.
    timestamp: Option<f64>,
}

/// What ringperf's lexer reads from a page: its samples with their line, and the line of its
/// first error.
fn ringperf_read(page: &[u8], openmetrics: bool) -> (Vec<(usize, Got)>, Option<usize>) {
    let line_of = |offset: usize| {
        page.get(..offset)
            .map_or(0, |b| b.iter().filter(|&&c| c == b'\n').count())
            + 1
    };
    let mut samples = Vec::new();
    for entry in Lexer::new(page) {
        match entry {
            Ok(Entry::Sample(s)) => {
                let offset = s.name.as_ptr() as usize - page.as_ptr() as usize;
                let mut labels: Vec<(String, String)> = s
                    .labels
                    .iter()
                    .map(|(n, v)| (n.to_owned(), v.value().into_owned()))
                    .collect();
                labels.sort();
                // Classic pages carry milliseconds, OpenMetrics pages seconds.
                let scale = if openmetrics { 1.0 } else { 1000.0 };
                samples.push((
                    line_of(offset),
                    Got {
                        name: s.name.to_owned(),
                        labels,
                        value: s.value,
                        timestamp: s.timestamp.map(|t| t / scale),
                    },
                ));
            }
            Ok(Entry::Eof) => break,
            Ok(_) => {}
            // Only the first error counts: after it the page is not the reference's either.
            Err(e) => return (samples, Some(line_of(e.offset))),
        }
    }
    (samples, None)
}

/// What `prometheus_client` reads from a page: its samples (with the type and name of the
/// family each belongs to) and the line it raised on.
fn python_read(py: &Path, path: &Path) -> (Vec<(String, String, Got)>, Option<usize>, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/prom-corpus/dump.py");
    let out = Command::new(py).arg(&script).arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "dump.py {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let json: Value = serde_json::from_slice(&out.stdout).unwrap();
    let number = |v: &Value| -> f64 { v.as_str().unwrap().parse().unwrap() };
    let mut samples = Vec::new();
    for family in json["families"].as_array().unwrap() {
        let fname = family["name"].as_str().unwrap();
        let ftype = family["type"].as_str().unwrap();
        for s in family["samples"].as_array().unwrap() {
            let mut labels: Vec<(String, String)> = s[1]
                .as_object()
                .unwrap()
                .iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect();
            labels.sort();
            samples.push((
                ftype.to_owned(),
                fname.to_owned(),
                Got {
                    name: s[0].as_str().unwrap().to_owned(),
                    labels,
                    value: number(&s[2]),
                    timestamp: (!s[3].is_null()).then(|| number(&s[3])),
                },
            ));
        }
    }
    let error = &json["error"];
    let line = (!error.is_null()).then(|| error["line"].as_u64().unwrap() as usize);
    let message = if error.is_null() {
        String::new()
    } else {
        error["message"].as_str().unwrap().to_owned()
    };
    (samples, line, message)
}

fn same_value(a: f64, b: f64) -> bool {
    (a.is_nan() && b.is_nan()) || a == b
}

/// Timestamps: Python's OpenMetrics parser sums whole seconds and nanoseconds, so the last bit
/// may differ from ringperf's one parse of the text.
fn same_timestamp(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => (a - b).abs() <= 1e-9 + 4.0 * f64::EPSILON * a.abs().max(b.abs()),
        _ => false,
    }
}

/// The first sample on which the two disagree, described; `None` when every sample Python
/// reports is ringperf's, in order (the classic parser names a counter declared `x` by its
/// samples `x_total`, which is accepted for ringperf's `x`).
fn first_sample_mismatch(
    ours: &[(usize, Got)],
    theirs: &[(String, String, Got)],
    ours_stopped: bool,
) -> Option<String> {
    // When ringperf stopped at an error, only the samples before it are compared.
    let n = if ours_stopped {
        theirs.len().min(ours.len())
    } else {
        theirs.len()
    };
    for (i, (ftype, fname, t)) in theirs.iter().take(n).enumerate() {
        let Some((line, o)) = ours.get(i) else {
            return Some(format!(
                "sample {i} ({} {:?}): Python has it, ringperf has only {} samples",
                t.name,
                t.labels,
                ours.len()
            ));
        };
        let renamed_counter =
            ftype == "counter" && *fname == o.name && t.name == format!("{}_total", o.name);
        let name_ok = t.name == o.name || renamed_counter;
        if !name_ok
            || t.labels != o.labels
            || !same_value(t.value, o.value)
            || !same_timestamp(t.timestamp, o.timestamp)
        {
            return Some(format!("line {line}: ringperf {o:?}, Python {t:?}"));
        }
    }
    None
}

/// Every page of the corpus, relative to tests/data/.
fn pages() -> Vec<String> {
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let mut pages = Vec::new();
    for dir in ["prom-corpus", "prom-corpus/openmetrics-suite"] {
        for entry in std::fs::read_dir(data.join(dir)).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if name.ends_with(".txt") {
                pages.push(format!("{dir}/{name}"));
            }
        }
    }
    for name in [
        "vllm-cpu-metrics-idle.txt",
        "vllm-cpu-metrics-during-load.txt",
        "vllm-cpu-metrics-after-load.txt",
    ] {
        pages.push(name.to_owned());
    }
    pages.sort();
    pages
}

#[test]
fn every_corpus_page_reads_as_prometheus_client_reads_it() {
    let py = python();
    if !require_tool(
        "prometheus_client",
        py.is_some(),
        "skipped: no Python with prometheus_client (pip install prometheus_client; or set \
         RINGPERF_PROM_PYTHON)",
    ) {
        return;
    }
    let py = py.unwrap();
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let pages = pages();
    assert!(pages.len() >= 40, "the corpus has {} pages", pages.len());
    let known: BTreeMap<&str, Difference> = KNOWN.iter().copied().collect();
    for k in known.keys() {
        assert!(pages.iter().any(|p| p == k), "KNOWN names {k}, not a page");
    }
    let mut failures = Vec::new();
    for page in &pages {
        let path = data.join(page);
        let bytes = std::fs::read(&path).unwrap();
        let openmetrics = page.ends_with(".om.txt");
        let (ours, our_error) = ringperf_read(&bytes, openmetrics);
        let (theirs, their_error, message) = python_read(&py, &path);
        let observed = match (their_error, our_error) {
            (None, None) => None,
            (Some(line), None) => Some(Difference::OnlyPythonRejects { line }),
            (None, Some(line)) => Some(Difference::OnlyRingperfRejects { line }),
            (Some(a), Some(b)) if a == b => None,
            (Some(python), Some(ringperf)) => {
                Some(Difference::RejectedOnOtherLines { python, ringperf })
            }
        };
        let expected = known.get(page.as_str()).copied();
        if observed != expected {
            failures.push(format!(
                "{page}: expected {expected:?}, observed {observed:?} (Python: {message})"
            ));
        }
        // Samples: in order, the same up to the first error either side reports, and as many
        // when neither reports one.
        if let Some(m) = first_sample_mismatch(&ours, &theirs, our_error.is_some()) {
            failures.push(format!("{page}: {m}"));
        }
        if their_error.is_none() && our_error.is_none() && ours.len() != theirs.len() {
            failures.push(format!(
                "{page}: ringperf reads {} samples, Python {}",
                ours.len(),
                theirs.len()
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
