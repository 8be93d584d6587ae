//! Prometheus / OpenMetrics text parsing.
//!
//! Two layers: [`lex::Lexer`] yields borrowed entries (no allocation per sample), and
//! [`parse_scrape`] groups them into metric families by AIPerf's rules (docs/output-formats.md):
//! `*_created` / `*_uptime` families and `_created` samples skipped, summaries and the OpenMetrics
//! `gaugehistogram` / `info` / `stateset` types skipped, per label set last value wins, non-finite
//! scalar values dropped, histograms grouped from `_bucket{le}`, `_sum`, `_count` and dropped per
//! label set when any of their samples is non-finite.

pub mod lex;

pub use lex::{Entry, ErrorKind, LabelValue, Labels, Lexer, MetricType, ParseError, Sample};

use std::borrow::Cow;
use std::collections::HashMap;

/// Sorted `(name, value)` label pairs identifying one series within a family.
pub type LabelSet = Vec<(String, String)>;

/// One histogram observation set for a label set: cumulative buckets sorted by `le`.
#[derive(Clone, Debug, PartialEq)]
pub struct HistogramValue {
    /// `(le, cumulative count)` sorted numerically, `+Inf` last.
    pub buckets: Vec<(f64, f64)>,
    /// The `le` label text of each bucket as written on the page (aligned with `buckets`).
    pub le_text: Vec<String>,
    /// `_sum` (0 when absent).
    pub sum: f64,
    /// `_count` (0 when absent).
    pub count: f64,
}

/// The value of one series in one scrape.
#[derive(Clone, Debug, PartialEq)]
pub enum SeriesValue {
    /// Gauge, counter or unknown value.
    Scalar(f64),
    /// Histogram value.
    Histogram(HistogramValue),
}

/// One metric family of a scrape.
#[derive(Clone, Debug, PartialEq)]
pub struct Family {
    /// Family name (counters without their `_total` suffix, as Python's client reports them).
    pub name: String,
    /// Counter, gauge, histogram or unknown.
    pub kind: MetricType,
    /// HELP text with escapes resolved (empty when absent).
    pub description: String,
    /// Series in first-seen order, one per distinct label set.
    pub series: Vec<(LabelSet, SeriesValue)>,
}

/// All kept families of one page, in page order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Scrape {
    /// Families with at least one series.
    pub families: Vec<Family>,
    /// Families that had NaN/±Inf samples dropped (for a warn-once per metric).
    pub nonfinite: Vec<String>,
    /// Lines that did not parse and were left out (the rest of the page is kept).
    pub malformed: Malformed,
}

/// The malformed lines of a page that was read without them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Malformed {
    /// How many.
    pub lines: u32,
    /// The first one's error (`None`: none).
    pub first: Option<ParseError>,
}

/// True for family names the collector never records (`*_created`, `*_uptime`, `*_uptime_*`).
#[must_use]
pub fn is_skipped_family_name(name: &str) -> bool {
    name.ends_with("_created") || name.ends_with("_uptime") || name.contains("_uptime_")
}

/// Which rules group a page's samples into families: AIPerf reads a page served as
/// `application/openmetrics-text` with Python's OpenMetrics parser and any other page with its
/// classic text parser, and the two name counters differently.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Dialect {
    /// OpenMetrics: a counter family `x` has the samples `x_total` and `x_created` (a classic
    /// page's `# TYPE x_total counter` with samples `x_total` is read too).
    #[default]
    OpenMetrics,
    /// The classic text format, as Python's `prometheus_client.parser` reads it: a sample
    /// belongs to the family declared before it only under the declared name (a counter declared
    /// `x_total` is the family `x`), so `x_total` samples under `# TYPE x counter`, and
    /// `_created` samples, are families of their own (untyped; `*_created` ones skipped).
    Classic,
}

/// Family under construction.
struct Building {
    /// Name from TYPE/HELP (or the sample name for a stray sample).
    declared: String,
    kind: MetricType,
    help: String,
    dialect: Dialect,
}

impl Building {
    fn new(declared: &str, dialect: Dialect) -> Self {
        Self {
            declared: declared.to_owned(),
            kind: MetricType::Unknown,
            help: String::new(),
            dialect,
        }
    }

    /// Name the family is exported under.
    fn family_name(&self) -> &str {
        match self.kind {
            MetricType::Counter => self
                .declared
                .strip_suffix("_total")
                .unwrap_or(&self.declared),
            MetricType::Info => self
                .declared
                .strip_suffix("_info")
                .unwrap_or(&self.declared),
            _ => &self.declared,
        }
    }

    /// What role a sample plays in this family, or `None` if it does not belong to it.
    fn role(&self, sample: &str) -> Option<Role> {
        let base = self.family_name();
        let suffix = sample.strip_prefix(base)?;
        let classic = self.dialect == Dialect::Classic;
        let declared_total = self.declared.ends_with("_total");
        let role = match (self.kind, suffix) {
            (_, "_created") if !classic => Role::Created,
            (MetricType::Counter, "") if !classic || !declared_total => Role::Value,
            (MetricType::Counter, "_total") if !classic || declared_total => Role::Value,
            (MetricType::Gauge | MetricType::Unknown | MetricType::StateSet, "") => Role::Value,
            (MetricType::Info, "_info") => Role::Value,
            (MetricType::Histogram | MetricType::GaugeHistogram, "_bucket") => Role::Bucket,
            (MetricType::Histogram, "_sum") | (MetricType::GaugeHistogram, "_gsum") => Role::Sum,
            (MetricType::Histogram, "_count") | (MetricType::GaugeHistogram, "_gcount") => {
                Role::Count
            }
            (MetricType::Summary, "" | "_sum" | "_count") => Role::Value,
            _ => return None,
        };
        Some(role)
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Role {
    Value,
    Bucket,
    Sum,
    Count,
    Created,
}

/// Labels borrowed from the page (owned only when a value had escapes).
type BorrowedLabels<'a> = Vec<(&'a str, Cow<'a, str>)>;

fn to_owned_labels(labels: BorrowedLabels<'_>) -> LabelSet {
    labels
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.into_owned()))
        .collect()
}

#[derive(Default)]
struct HistAcc<'a> {
    buckets: Vec<(f64, f64, Cow<'a, str>)>,
    sum: Option<f64>,
    count: Option<f64>,
    bad: bool,
}

/// Accumulates families of one scrape. Per sample it only borrows from the page and reuses
/// `scratch`; owned strings are made once per series when a family is finished.
#[derive(Default)]
struct Grouper<'a> {
    dialect: Dialect,
    out: Scrape,
    /// name → index in `out.families`.
    index: HashMap<String, usize>,
    current: Option<Building>,
    scalars: Vec<(BorrowedLabels<'a>, f64)>,
    hists: Vec<(BorrowedLabels<'a>, HistAcc<'a>)>,
    /// Scratch label set reused for every sample.
    scratch: BorrowedLabels<'a>,
}

impl<'a> Grouper<'a> {
    fn finish_current(&mut self) {
        let Some(b) = self.current.take() else { return };
        let scalars = std::mem::take(&mut self.scalars);
        let hists = std::mem::take(&mut self.hists);
        let name = b.family_name().to_owned();
        let keep = matches!(
            b.kind,
            MetricType::Counter | MetricType::Gauge | MetricType::Unknown | MetricType::Histogram
        ) && !is_skipped_family_name(&name);
        if !keep {
            return;
        }
        let mut series: Vec<(LabelSet, SeriesValue)> = scalars
            .into_iter()
            .map(|(l, v)| (to_owned_labels(l), SeriesValue::Scalar(v)))
            .collect();
        for (labels, acc) in hists {
            if acc.bad {
                continue;
            }
            let mut buckets = acc.buckets;
            buckets.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (buckets, le_text) = buckets
                .into_iter()
                .map(|(le, c, t)| ((le, c), t.into_owned()))
                .unzip();
            series.push((
                to_owned_labels(labels),
                SeriesValue::Histogram(HistogramValue {
                    buckets,
                    le_text,
                    sum: acc.sum.unwrap_or(0.0),
                    count: acc.count.unwrap_or(0.0),
                }),
            ));
        }
        if series.is_empty() {
            return;
        }
        if let Some(&i) = self.index.get(&name)
            && let Some(existing) = self.out.families.get_mut(i)
            && existing.kind == b.kind
        {
            for (labels, value) in series {
                match existing.series.iter_mut().find(|(l, _)| *l == labels) {
                    Some(slot) => slot.1 = value,
                    None => existing.series.push((labels, value)),
                }
            }
            return;
        }
        self.index.insert(name.clone(), self.out.families.len());
        self.out.families.push(Family {
            name,
            kind: b.kind,
            description: b.help,
            series,
        });
    }

    fn note_nonfinite(&mut self) {
        if let Some(b) = &self.current {
            let name = b.family_name();
            if !self.out.nonfinite.iter().any(|n| n == name) {
                self.out.nonfinite.push(name.to_owned());
            }
        }
    }

    fn start_if_new(&mut self, name: &str) {
        if self.current.as_ref().is_some_and(|b| b.declared == name) {
            return;
        }
        self.finish_current();
        self.current = Some(Building::new(name, self.dialect));
    }

    fn entry(&mut self, entry: Entry<'a>) {
        match entry {
            Entry::Help { name, text } => {
                self.start_if_new(name);
                if let Some(b) = self.current.as_mut() {
                    b.help.clear();
                    lex::unescape_into(text, &mut b.help);
                }
            }
            Entry::Type { name, kind } => {
                self.start_if_new(name);
                if let Some(b) = self.current.as_mut() {
                    b.kind = kind;
                }
            }
            Entry::Sample(s) => self.sample(s),
            Entry::Eof => {}
        }
    }

    fn sample(&mut self, s: Sample<'a>) {
        let role = self.current.as_ref().and_then(|b| b.role(s.name));
        let role = match role {
            Some(r) => r,
            None => {
                // A sample outside the declared family starts an untyped family of its own.
                self.finish_current();
                let b = Building::new(s.name, self.dialect);
                let r = b.role(s.name);
                self.current = Some(b);
                match r {
                    Some(r) => r,
                    None => return,
                }
            }
        };
        if role == Role::Created || s.name.ends_with("_created") {
            return;
        }
        let is_hist = self
            .current
            .as_ref()
            .is_some_and(|b| b.kind == MetricType::Histogram);
        self.scratch.clear();
        let mut le = None;
        for (name, value) in s.labels.iter() {
            if is_hist && name == "le" {
                le = Some(value);
                continue;
            }
            self.scratch.push((name, value.value()));
        }
        self.scratch.sort();
        if !is_hist {
            if !s.value.is_finite() {
                self.note_nonfinite();
                return;
            }
            match self.scalars.iter_mut().find(|(l, _)| *l == self.scratch) {
                Some(slot) => slot.1 = s.value,
                None => self
                    .scalars
                    .push((std::mem::take(&mut self.scratch), s.value)),
            }
            return;
        }
        let pos = match self.hists.iter().position(|(l, _)| *l == self.scratch) {
            Some(p) => p,
            None => {
                self.hists
                    .push((std::mem::take(&mut self.scratch), HistAcc::default()));
                self.hists.len() - 1
            }
        };
        let Some((_, acc)) = self.hists.get_mut(pos) else {
            return;
        };
        if !s.value.is_finite() {
            acc.bad = true;
            self.note_nonfinite();
            return;
        }
        match role {
            Role::Bucket => {
                let text = le.map_or(Cow::Borrowed("+Inf"), |v| v.value());
                let bound = match le {
                    None => f64::INFINITY,
                    Some(_) => match text.trim() {
                        "+Inf" | "Inf" | "inf" | "+inf" => f64::INFINITY,
                        t => match t.parse::<f64>() {
                            Ok(x) if !x.is_nan() => x,
                            _ => {
                                acc.bad = true;
                                return;
                            }
                        },
                    },
                };
                match acc.buckets.iter_mut().find(|(b, _, _)| *b == bound) {
                    Some(slot) => slot.1 = s.value,
                    None => acc.buckets.push((bound, s.value, text)),
                }
            }
            Role::Sum => acc.sum = Some(s.value),
            Role::Count => acc.count = Some(s.value),
            Role::Value | Role::Created => {}
        }
    }
}

/// Parses one page into families with AIPerf's collection rules (docs/output-formats.md), by
/// the OpenMetrics grouping ([`Dialect::OpenMetrics`]). A malformed line is left out and counted
/// ([`Scrape::malformed`]); the rest of the page is read.
///
/// # Errors
/// The page is not valid UTF-8, or no line of it reads (it is not Prometheus text): the first
/// error, with its byte offset.
pub fn parse_scrape(input: &[u8]) -> Result<Scrape, ParseError> {
    parse_scrape_as(input, Dialect::OpenMetrics)
}

/// [`parse_scrape`] by the grouping of `dialect` (the page's `Content-Type` chooses it, as it
/// chooses AIPerf's parser).
///
/// # Errors
/// As [`parse_scrape`].
pub fn parse_scrape_as(input: &[u8], dialect: Dialect) -> Result<Scrape, ParseError> {
    let mut g = Grouper {
        dialect,
        ..Grouper::default()
    };
    let mut malformed = Malformed::default();
    let mut read = 0usize;
    for entry in Lexer::tolerant(input) {
        match entry {
            Ok(e) => {
                read += 1;
                g.entry(e);
            }
            Err(e) if e.kind == ErrorKind::InvalidUtf8 => return Err(e),
            Err(e) => {
                malformed.lines = malformed.lines.saturating_add(1);
                malformed.first.get_or_insert(e);
            }
        }
    }
    if read == 0
        && let Some(e) = malformed.first
    {
        return Err(e);
    }
    g.finish_current();
    g.out.malformed = malformed;
    Ok(g.out)
}

#[cfg(test)]
mod tests;
