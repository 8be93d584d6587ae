//! The shards' per-request records, streamed: each shard's JSONL read line by line, the shards
//! k-way merged by `request_end_ns`, every line copied verbatim to the merged JSONL and its
//! record fed to the run's accumulators, as the live aggregator feeds them. Memory holds one line
//! per shard beside what the accumulators keep (one value per record and metric, as in a live
//! run).

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{self, BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use super::MergeError;
use super::line::{Record, parse_line};
use ringperf_metrics::aggregate::stats::linear;
use ringperf_metrics::aggregate::{Accumulator, LagSummary, MetricConfig};
use ringperf_metrics::export::timeslices::TimesliceCollector;
use ringperf_wire::record::Phase;

/// One shard's JSONL, read a line at a time.
#[derive(Debug)]
pub struct ShardLines {
    path: PathBuf,
    /// Monotonic stamps are wall-clock ones less this (see [`parse_line`]).
    origin_ns: u64,
    reader: Option<BufReader<File>>,
    buf: Vec<u8>,
    line_no: u64,
    /// Torn last lines skipped (0 or 1).
    torn: u64,
}

/// The next record of a shard and its line as written (without the newline).
#[derive(Debug)]
pub struct Entry {
    /// The line's bytes.
    pub line: Vec<u8>,
    /// Its record.
    pub record: Record,
}

impl ShardLines {
    /// Opens `path`; a shard that wrote no JSONL has no records (`Ok(None)`). `origin_ns`: the
    /// shard's clock origin (wall-clock epoch ns), or any instant before its first record.
    ///
    /// # Errors
    /// The file exists and cannot be opened.
    pub fn open(path: &Path, origin_ns: u64) -> io::Result<Option<Self>> {
        match File::open(path) {
            Ok(f) => Ok(Some(Self {
                path: path.to_path_buf(),
                origin_ns,
                reader: Some(BufReader::with_capacity(1 << 16, f)),
                buf: Vec::with_capacity(4096),
                line_no: 0,
                torn: 0,
            })),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Torn last lines skipped so far.
    pub fn torn(&self) -> u64 {
        self.torn
    }

    /// The next record. A last line with no newline that does not parse is torn (the shard was
    /// killed while writing it): skipped, counted, the end of the file. Empty lines are skipped.
    ///
    /// # Errors
    /// [`MergeError::Failed`] naming the file and line: a read error, or a complete line that
    /// is not a record.
    pub fn next_entry(&mut self) -> Result<Option<Entry>, MergeError> {
        loop {
            let Some(reader) = self.reader.as_mut() else {
                return Ok(None);
            };
            self.buf.clear();
            let n = reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| MergeError::Failed(format!("reading {}: {e}", self.path.display())))?;
            if n == 0 {
                self.reader = None;
                return Ok(None);
            }
            self.line_no += 1;
            let complete = self.buf.last() == Some(&b'\n');
            if complete {
                self.buf.pop();
            }
            if self.buf.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match parse_line(&self.buf, self.origin_ns) {
                Ok(record) => {
                    return Ok(Some(Entry {
                        line: self.buf.clone(),
                        record,
                    }));
                }
                Err(_) if !complete => {
                    self.torn += 1;
                    self.reader = None;
                    return Ok(None);
                }
                Err(e) => {
                    return Err(MergeError::Failed(format!(
                        "{} line {}: not a per-request record: {e}",
                        self.path.display(),
                        self.line_no
                    )));
                }
            }
        }
    }
}

/// What one shard's records add up to.
#[derive(Debug, Default)]
pub struct ShardTally {
    /// Valid profiling records.
    pub request_count: u64,
    /// Failed profiling records.
    pub error_request_count: u64,
    /// `request_start − credit_issued` of every profiling record, ns.
    lag_ns: Vec<f64>,
    /// Torn last lines skipped.
    pub torn_lines: u64,
}

impl ShardTally {
    /// Dispatch lag over the shard's profiling records, as the accumulator computes the run's.
    pub fn dispatch_lag(&self) -> Option<LagSummary> {
        let mut v = self.lag_ns.clone();
        v.sort_unstable_by(f64::total_cmp);
        let max = *v.last()?;
        Some(LagSummary {
            p50_ns: linear(&v, 50.0),
            p99_ns: linear(&v, 99.0),
            max_ns: max,
            count: v.len() as u64,
        })
    }
}

/// Earliest request start and latest request end of one phase's records, epoch ns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Span {
    /// Earliest `request_start_ns`.
    pub start_ns: u64,
    /// Latest `request_end_ns`.
    pub end_ns: u64,
}

impl Span {
    fn widen(this: &mut Option<Span>, start_ns: u64, end_ns: u64) {
        *this = Some(match *this {
            Some(s) => Span {
                start_ns: s.start_ns.min(start_ns),
                end_ns: s.end_ns.max(end_ns),
            },
            None => Span { start_ns, end_ns },
        });
    }
}

/// Everything the merged records add up to.
#[derive(Debug)]
pub struct Tally {
    /// The profiling phase.
    pub profiling: Accumulator,
    /// The warmup phase.
    pub warmup: Accumulator,
    /// Whether any warmup record was seen.
    pub warmup_seen: bool,
    /// `--slice-duration`: the profiling records for the timeslices.
    pub timeslices: Option<TimesliceCollector>,
    /// Per shard, in the order the shards were given to [`merge`].
    pub shards: Vec<ShardTally>,
    /// The records' own span in each phase.
    pub profiling_span: Option<Span>,
    /// See `profiling_span`.
    pub warmup_span: Option<Span>,
    /// Lines written to the merged JSONL.
    pub lines: u64,
}

impl Tally {
    fn new(cfg: &MetricConfig, slice_ns: Option<u64>, shards: usize) -> Self {
        Self {
            profiling: Accumulator::new(cfg.clone()),
            warmup: Accumulator::new(cfg.clone()),
            warmup_seen: false,
            timeslices: slice_ns.map(|ns| TimesliceCollector::new(cfg.clone(), ns)),
            shards: (0..shards).map(|_| ShardTally::default()).collect(),
            profiling_span: None,
            warmup_span: None,
            lines: 0,
        }
    }

    fn add(&mut self, shard: usize, r: &Record) {
        let f = &r.facts;
        match f.phase {
            Phase::Warmup => {
                self.warmup_seen = true;
                self.warmup.add(f, &r.metrics);
                Span::widen(
                    &mut self.warmup_span,
                    f.request_start_wall_ns,
                    f.request_end_wall_ns,
                );
            }
            Phase::Profiling => {
                self.profiling.add(f, &r.metrics);
                if let Some(t) = self.timeslices.as_mut() {
                    t.add(f, &r.metrics);
                }
                Span::widen(
                    &mut self.profiling_span,
                    f.request_start_wall_ns,
                    f.request_end_wall_ns,
                );
                let s = &mut self.shards[shard];
                if f.error.is_some() {
                    s.error_request_count += 1;
                } else {
                    s.request_count += 1;
                }
                s.lag_ns.push(f.start_ns as f64 - f.intended_ns as f64);
            }
        }
    }
}

/// Merges the shards' records: `sources[i]` is shard `i`'s JSONL (`None`: it wrote none). Every
/// line goes to `out` verbatim, in `request_end_ns` order across shards (each shard's own order
/// kept; ties go to the lower shard), and every record to the tally.
///
/// # Errors
/// [`MergeError::Failed`]: a shard's line that is not a record, or a read or write error.
pub fn merge(
    sources: Vec<Option<ShardLines>>,
    cfg: &MetricConfig,
    slice_ns: Option<u64>,
    out: &mut impl Write,
    out_path: &Path,
) -> Result<Tally, MergeError> {
    let mut tally = Tally::new(cfg, slice_ns, sources.len());
    let mut sources = sources;
    let mut heads: Vec<Option<Entry>> = Vec::with_capacity(sources.len());
    let mut queue = BinaryHeap::new();
    for (i, s) in sources.iter_mut().enumerate() {
        let head = match s {
            Some(s) => s.next_entry()?,
            None => None,
        };
        if let Some(e) = &head {
            queue.push(Reverse((e.record.facts.request_end_wall_ns, i)));
        }
        heads.push(head);
    }
    let write_failed =
        |e: io::Error| MergeError::Failed(format!("writing {}: {e}", out_path.display()));
    while let Some(Reverse((_, i))) = queue.pop() {
        let Some(entry) = heads[i].take() else {
            continue;
        };
        out.write_all(&entry.line).map_err(write_failed)?;
        out.write_all(b"\n").map_err(write_failed)?;
        tally.lines += 1;
        tally.add(i, &entry.record);
        if let Some(src) = sources[i].as_mut()
            && let Some(next) = src.next_entry()?
        {
            queue.push(Reverse((next.record.facts.request_end_wall_ns, i)));
            heads[i] = Some(next);
        }
    }
    out.flush().map_err(write_failed)?;
    for (t, s) in tally.shards.iter_mut().zip(&sources) {
        t.torn_lines = s.as_ref().map_or(0, ShardLines::torn);
    }
    Ok(tally)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_metrics::aggregate::record_metrics;
    use ringperf_metrics::aggregate::testing::facts;
    use ringperf_metrics::export::jsonl::encode_line;
    use ringperf_wire::record::RecordFacts;

    fn line(end_offset: u64, session: u64, failed: bool) -> Vec<u8> {
        let f = RecordFacts {
            session_num: session,
            request_end_wall_ns: facts().request_end_wall_ns + end_offset,
            error: failed.then(|| {
                Box::new(ringperf_wire::record::RequestError::new(
                    Some(500),
                    "E",
                    "e",
                ))
            }),
            ..facts()
        };
        let mut out = Vec::new();
        let cfg = MetricConfig::new(true, false);
        encode_line(&mut out, &f, &record_metrics(&cfg, &f)).unwrap();
        out
    }

    fn file(dir: &Path, name: &str, lines: &[Vec<u8>], tail: &[u8]) -> PathBuf {
        let path = dir.join(name);
        let mut bytes = Vec::new();
        for l in lines {
            bytes.extend_from_slice(l);
            bytes.push(b'\n');
        }
        bytes.extend_from_slice(tail);
        std::fs::write(&path, bytes).unwrap();
        path
    }

    #[test]
    fn lines_merge_by_end_and_torn_tails_are_counted() {
        let tmp = tempfile::tempdir().unwrap();
        let a = file(
            tmp.path(),
            "a",
            &[line(10, 0, false), line(30, 2, true)],
            b"",
        );
        let torn = &line(25, 9, false)[..40];
        let b = file(
            tmp.path(),
            "b",
            &[line(20, 1, false), line(40, 3, false)],
            torn,
        );
        let origin = facts().credit_issued_wall_ns;
        let sources = vec![
            ShardLines::open(&a, origin).unwrap(),
            ShardLines::open(&b, origin).unwrap(),
            ShardLines::open(&tmp.path().join("none"), origin).unwrap(),
        ];
        assert!(sources[2].is_none());
        let mut out = Vec::new();
        let cfg = MetricConfig::new(true, false);
        let t = merge(sources, &cfg, Some(1_000), &mut out, Path::new("out")).unwrap();
        let want: Vec<u8> = [line(10, 0, false), line(20, 1, false), line(30, 2, true)]
            .into_iter()
            .chain([line(40, 3, false)])
            .flat_map(|mut l| {
                l.push(b'\n');
                l
            })
            .collect();
        assert_eq!(
            String::from_utf8(out).unwrap(),
            String::from_utf8(want).unwrap()
        );
        assert_eq!(t.lines, 4);
        assert_eq!(
            (t.shards[0].request_count, t.shards[0].error_request_count),
            (1, 1)
        );
        assert_eq!((t.shards[1].request_count, t.shards[1].torn_lines), (2, 1));
        assert_eq!(t.profiling.request_count(), 3);
        assert_eq!(t.profiling.error_request_count(), 1);
        // Lag 100 ns for every record (facts: issued W, started W + 100).
        let lag = t.shards[1].dispatch_lag().unwrap();
        assert_eq!((lag.p50_ns, lag.max_ns, lag.count), (100.0, 100.0, 2));
        assert!(t.timeslices.is_some() && !t.warmup_seen);
    }

    #[test]
    fn a_malformed_line_is_named() {
        let tmp = tempfile::tempdir().unwrap();
        let a = file(tmp.path(), "a", &[line(10, 0, false), b"{}".to_vec()], b"");
        let sources = vec![ShardLines::open(&a, 0).unwrap()];
        let cfg = MetricConfig::new(true, false);
        match merge(sources, &cfg, None, &mut Vec::new(), Path::new("out")) {
            Err(MergeError::Failed(m)) => {
                assert!(m.contains("line 2: not a per-request record"), "{m}");
                assert!(m.contains(&a.display().to_string()), "{m}");
            }
            other => panic!("{other:?}"),
        }
    }
}
