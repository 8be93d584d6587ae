//! Prometheus text parser on arbitrary bytes: `prom::parse_scrape` and `prom::Lexer` never
//! panic; the scrape keeps only what the collection rules allow; parsing is deterministic; and
//! the lexer is line-local: a page split after a newline lexes as its two halves in turn.
#![no_main]

use libfuzzer_sys::fuzz_target;
use ringperf_wire::prom::{
    Entry, ErrorKind, Lexer, MetricType, ParseError, Scrape, SeriesValue, is_skipped_family_name,
    parse_scrape,
};

/// A lexer item with its error offset made absolute.
type Item<'a> = Result<Entry<'a>, ParseError>;

/// What the lexer yields for `input`, error offsets shifted by `base`; then the first error
/// (unshifted), and whether lexing stopped early on an error or `# EOF`.
fn lex(input: &[u8], base: usize) -> (Vec<Item<'_>>, Option<ParseError>, bool) {
    let mut items = Vec::new();
    let mut lexer = Lexer::new(input);
    let mut error = None;
    let mut stopped = false;
    for item in lexer.by_ref() {
        match item {
            Ok(entry) => {
                stopped = entry == Entry::Eof;
                items.push(Ok(entry));
            }
            Err(e) => {
                assert!(e.offset <= input.len());
                items.push(Err(ParseError {
                    offset: e.offset + base,
                    kind: e.kind,
                }));
                error = Some(e);
                stopped = true;
            }
        }
        if stopped {
            break;
        }
    }
    // Nothing comes after an error or `# EOF`.
    assert!(lexer.next().is_none());
    (items, error, stopped)
}

/// Item equality with sample values and timestamps compared bit for bit (NaN equals NaN).
fn same(a: &Item<'_>, b: &Item<'_>) -> bool {
    match (a, b) {
        (Ok(Entry::Sample(x)), Ok(Entry::Sample(y))) => {
            x.name == y.name
                && x.labels == y.labels
                && x.value.to_bits() == y.value.to_bits()
                && x.timestamp.map(f64::to_bits) == y.timestamp.map(f64::to_bits)
        }
        _ => a == b,
    }
}

fn check_scrape(scrape: &Scrape) {
    for family in &scrape.families {
        assert!(!family.series.is_empty());
        assert!(!is_skipped_family_name(&family.name));
        assert!(matches!(
            family.kind,
            MetricType::Counter | MetricType::Gauge | MetricType::Unknown | MetricType::Histogram
        ));
        for (labels, value) in &family.series {
            assert!(labels.is_sorted());
            match value {
                SeriesValue::Scalar(v) => assert!(v.is_finite()),
                SeriesValue::Histogram(h) => {
                    assert!(h.sum.is_finite() && h.count.is_finite());
                    assert_eq!(h.buckets.len(), h.le_text.len());
                    assert!(
                        h.buckets
                            .iter()
                            .all(|(le, c)| !le.is_nan() && c.is_finite())
                    );
                    assert!(h.buckets.is_sorted_by(|a, b| a.0 < b.0));
                }
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let parsed = parse_scrape(data);
    match &parsed {
        Ok(scrape) => check_scrape(scrape),
        Err(e) => assert!(e.offset <= data.len()),
    }
    // Deterministic (the grouper uses a HashMap; its order must not leak into the result).
    assert_eq!(parse_scrape(data), parsed);

    let (whole, lex_error, _) = lex(data, 0);
    // A malformed line is left out and counted: parse_scrape reads every other line. It fails
    // only on invalid UTF-8 or when no line reads, with the first error; else the first error is
    // its first malformed line's, and the count is the tolerant lexer's.
    let tolerant: Vec<Item<'_>> = Lexer::tolerant(data).collect();
    let errors: Vec<ParseError> = tolerant.iter().filter_map(|i| i.err()).collect();
    let read = tolerant.iter().filter(|i| i.is_ok()).count();
    assert_eq!(errors.first(), lex_error.as_ref());
    match &parsed {
        Err(e) => {
            assert_eq!(Some(e), errors.first());
            assert!(e.kind == ErrorKind::InvalidUtf8 || read == 0);
        }
        Ok(s) => {
            assert_eq!(s.malformed.first.as_ref(), errors.first());
            assert_eq!(s.malformed.lines as usize, errors.len());
        }
    }

    // Line-local: split after the newline closest to the middle and lex the halves in turn.
    // Invalid UTF-8 is reported for the whole page, so only valid text is split.
    if std::str::from_utf8(data).is_err() {
        return;
    }
    let first_half = data.get(..data.len() / 2 + 1).unwrap_or(&[]);
    let Some(cut) = first_half.iter().rposition(|&b| b == b'\n') else {
        return;
    };
    let (head, tail) = data.split_at(cut + 1);
    let (mut halves, _, stopped) = lex(head, 0);
    if !stopped {
        halves.extend(lex(tail, head.len()).0);
    }
    assert_eq!(halves.len(), whole.len());
    for (h, w) in halves.iter().zip(&whole) {
        assert!(same(h, w), "{h:?} != {w:?}");
    }
});
