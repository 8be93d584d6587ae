//! `--request-rate-series FILE` (docs/timing.md "Load shape"): a piecewise-linear request rate,
//! as AIPerf 0.13 reads and applies it.
//!
//! - **File**: a JSON array of points, or an object whose only key is `points` holding one; a
//!   point is `{"time_s": t, "qps": q}` with `t ≥ 0`, `q > 0`, nothing else; at least two
//!   points, `time_s` strictly increasing.
//! - **Rate at elapsed time `e`** (from the series start): `qps₀` up to the first point's time,
//!   linear between neighbouring points, the last point's rate from its time on.
//! - **Updates**: the series starts once a request-rate ramp is over (at `start`, the ramp's
//!   duration, else the phase start) and sets the rate at `e = 0`, then every update interval
//!   `u` (100 ms) at `e = k·u` until `k·u` reaches the last point's time, which sets the last
//!   rate for good. Between updates the rate is constant, as with the ramp
//!   ([`super::ramp`]).

use std::fmt;

use serde_json::Value;

use super::RATE_RAMP_UPDATE_NS;

/// A request-rate series read from its file: at least two points, times strictly increasing.
#[derive(Clone, Debug, PartialEq)]
pub struct RateSeries {
    times_s: Vec<f64>,
    qps: Vec<f64>,
}

/// Why a series file was refused (AIPerf's sentences).
#[derive(Clone, Debug, PartialEq)]
pub enum SeriesError {
    /// Not JSON.
    Json,
    /// Neither an array nor an object.
    Shape,
    /// An object with a key other than `points`, or without it.
    TopLevelKeys,
    /// `points` is not an array.
    PointsNotArray,
    /// Point `index` is malformed: `why` says how.
    Point { index: usize, why: String },
    /// Fewer than two points.
    TooFew,
    /// `time_s` not strictly increasing.
    NotIncreasing,
}

impl fmt::Display for SeriesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SeriesError::Json => f.write_str("invalid request-rate series JSON"),
            SeriesError::Shape => f.write_str(
                "request-rate series JSON must be an object with points or a points array",
            ),
            SeriesError::TopLevelKeys => f.write_str(
                "request-rate series JSON must contain exactly one top-level key: points",
            ),
            SeriesError::PointsNotArray => {
                f.write_str("request-rate series JSON points must be an array")
            }
            SeriesError::Point { index, why } => {
                write!(f, "invalid request-rate series point {index}: {why}")
            }
            SeriesError::TooFew => f.write_str("request-rate series requires at least two points"),
            SeriesError::NotIncreasing => {
                f.write_str("request-rate series time_s values must be strictly increasing")
            }
        }
    }
}

impl std::error::Error for SeriesError {}

/// One number of a point, by its key.
fn field(point: &serde_json::Map<String, Value>, key: &str) -> Result<f64, String> {
    match point.get(key) {
        None => Err(format!("{key} is required")),
        Some(Value::Number(n)) => n.as_f64().ok_or_else(|| format!("{key} must be a number")),
        Some(_) => Err(format!("{key} must be a number")),
    }
}

fn point(v: &Value) -> Result<(f64, f64), String> {
    let Value::Object(m) = v else {
        return Err("a point must be an object with time_s and qps".into());
    };
    if let Some(k) = m.keys().find(|k| *k != "time_s" && *k != "qps") {
        return Err(format!("{k}: extra inputs are not permitted"));
    }
    let t = field(m, "time_s")?;
    let q = field(m, "qps")?;
    if !t.is_finite() || !q.is_finite() {
        return Err("request-rate series values must be finite".into());
    }
    if t < 0.0 {
        return Err("time_s must be greater than or equal to 0".into());
    }
    if q <= 0.0 {
        return Err("qps must be greater than 0".into());
    }
    Ok((t, q))
}

impl RateSeries {
    /// Reads a series from the text of its file.
    ///
    /// # Errors
    /// Anything AIPerf refuses: see [`SeriesError`].
    pub fn parse(text: &str) -> Result<Self, SeriesError> {
        let doc: Value = serde_json::from_str(text).map_err(|_| SeriesError::Json)?;
        let points = match &doc {
            Value::Array(_) => &doc,
            Value::Object(m) => match (m.len(), m.get("points")) {
                (1, Some(p)) => p,
                _ => return Err(SeriesError::TopLevelKeys),
            },
            _ => return Err(SeriesError::Shape),
        };
        let Value::Array(points) = points else {
            return Err(SeriesError::PointsNotArray);
        };
        let mut times_s = Vec::with_capacity(points.len());
        let mut qps = Vec::with_capacity(points.len());
        for (index, v) in points.iter().enumerate() {
            let (t, q) = point(v).map_err(|why| SeriesError::Point { index, why })?;
            times_s.push(t);
            qps.push(q);
        }
        Self::new(times_s, qps)
    }

    /// A series from its points (`time_s`, `qps`), checked as [`RateSeries::parse`] checks them.
    ///
    /// # Errors
    /// Fewer than two points, or times not strictly increasing.
    pub fn new(times_s: Vec<f64>, qps: Vec<f64>) -> Result<Self, SeriesError> {
        if times_s.len() < 2 || times_s.len() != qps.len() {
            return Err(SeriesError::TooFew);
        }
        if times_s.windows(2).any(|w| w[1] <= w[0]) {
            return Err(SeriesError::NotIncreasing);
        }
        Ok(Self { times_s, qps })
    }

    /// The points, as (`time_s`, `qps`).
    pub fn points(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.times_s.iter().copied().zip(self.qps.iter().copied())
    }

    /// The first point's rate: the phase's rate before and at the series start.
    pub fn initial_qps(&self) -> f64 {
        self.qps[0]
    }

    /// The rate at `elapsed_s` seconds from the series start.
    pub fn value_at(&self, elapsed_s: f64) -> f64 {
        let (first, last) = (self.times_s[0], self.times_s[self.times_s.len() - 1]);
        if elapsed_s <= first {
            return self.qps[0];
        }
        if elapsed_s >= last {
            return self.qps[self.qps.len() - 1];
        }
        let right = self.times_s.partition_point(|t| *t <= elapsed_s);
        let left = right - 1;
        let progress =
            (elapsed_s - self.times_s[left]) / (self.times_s[right] - self.times_s[left]);
        self.qps[left] + (self.qps[right] - self.qps[left]) * progress
    }

    /// Time of update `k` (k ≥ 0) from the series start, in ns.
    pub fn update_at_ns(k: u64) -> f64 {
        k as f64 * RATE_RAMP_UPDATE_NS as f64
    }

    /// The rate set by update `k`, and whether it is the last one.
    pub fn rate_after_update(&self, k: u64) -> (f64, bool) {
        let elapsed_s = Self::update_at_ns(k) / 1e9;
        let last = self.times_s[self.times_s.len() - 1];
        if k > 0 && elapsed_s >= last {
            (self.qps[self.qps.len() - 1], true)
        } else {
            (self.value_at(elapsed_s), false)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err(text: &str) -> SeriesError {
        RateSeries::parse(text).unwrap_err()
    }

    #[test]
    fn both_file_forms_read_the_same_points() {
        let a = RateSeries::parse(r#"[{"time_s": 0, "qps": 5}, {"time_s": 2.5, "qps": 20}]"#);
        let b = RateSeries::parse(
            r#"{"points": [{"qps": 5, "time_s": 0.0}, {"time_s": 2.5, "qps": 20.0}]}"#,
        );
        assert_eq!(a, b);
        let s = a.unwrap();
        assert_eq!(
            s.points().collect::<Vec<_>>(),
            vec![(0.0, 5.0), (2.5, 20.0)]
        );
        assert_eq!(s.initial_qps(), 5.0);
    }

    #[test]
    fn refuses_what_aiperf_refuses() {
        assert_eq!(err("nope"), SeriesError::Json);
        assert_eq!(err("5"), SeriesError::Shape);
        assert_eq!(err(r#"{"points": [], "x": 1}"#), SeriesError::TopLevelKeys);
        assert_eq!(err(r#"{"pts": []}"#), SeriesError::TopLevelKeys);
        assert_eq!(err(r#"{"points": 5}"#), SeriesError::PointsNotArray);
        assert_eq!(err(r#"[{"time_s": 0, "qps": 5}]"#), SeriesError::TooFew);
        assert_eq!(err("[]"), SeriesError::TooFew);
        assert_eq!(
            err(r#"[{"time_s": 1, "qps": 5}, {"time_s": 1, "qps": 6}]"#),
            SeriesError::NotIncreasing
        );
        assert_eq!(
            err(r#"[{"time_s": 2, "qps": 5}, {"time_s": 1, "qps": 6}]"#),
            SeriesError::NotIncreasing
        );
        for (text, index, why) in [
            (
                r#"[{"time_s": 0, "qps": 0}, {"time_s": 1, "qps": 6}]"#,
                0,
                "qps must be greater than 0",
            ),
            (
                r#"[{"time_s": 0, "qps": 1}, {"time_s": -1, "qps": 6}]"#,
                1,
                "time_s must be greater",
            ),
            (
                r#"[{"time_s": 0, "qps": 5, "foo": 1}, {"time_s": 1, "qps": 6}]"#,
                0,
                "foo: extra",
            ),
            (
                r#"[{"time_s": 0}, {"time_s": 1, "qps": 6}]"#,
                0,
                "qps is required",
            ),
            (
                r#"[{"time_s": 0, "qps": "x"}, {"time_s": 1, "qps": 6}]"#,
                0,
                "qps must be a number",
            ),
            (r#"[5, {"time_s": 1, "qps": 6}]"#, 0, "must be an object"),
        ] {
            match err(text) {
                SeriesError::Point { index: i, why: w } => {
                    assert_eq!(i, index, "{text}");
                    assert!(w.contains(why), "{text}: {w}");
                }
                other => panic!("{text}: {other:?}"),
            }
        }
        // A value too large for a double is refused, never a panic.
        assert_eq!(
            err(r#"[{"time_s": 0, "qps": 1e999}, {"time_s": 1, "qps": 1}]"#),
            SeriesError::Json
        );
    }

    #[test]
    fn rate_is_linear_between_points_and_held_outside() {
        let s = RateSeries::new(vec![1.0, 2.0, 4.0], vec![10.0, 30.0, 20.0]).unwrap();
        let close = |a: f64, b: f64| (a - b).abs() < 1e-9;
        for (e, want) in [
            (0.0, 10.0),
            (1.0, 10.0),
            (1.5, 20.0),
            (2.0, 30.0),
            (3.0, 25.0),
            (3.5, 22.5),
            (4.0, 20.0),
            (99.0, 20.0),
        ] {
            assert!(close(s.value_at(e), want), "at {e}: {}", s.value_at(e));
        }
    }

    #[test]
    fn updates_every_100_ms_until_the_last_point() {
        // 0 → 1 s from 10/s to 20/s: update k at k·0.1 s sets 10 + 10·k/10; update 10 is last.
        let s = RateSeries::new(vec![0.0, 1.0], vec![10.0, 20.0]).unwrap();
        assert_eq!(s.rate_after_update(0), (10.0, false));
        let (r, last) = s.rate_after_update(3);
        assert!((r - 13.0).abs() < 1e-9 && !last);
        assert_eq!(RateSeries::update_at_ns(3), 3e8);
        assert_eq!(s.rate_after_update(10), (20.0, true));
        assert_eq!(s.rate_after_update(12), (20.0, true));
    }

    /// Constant arrivals, the series starting once a 0.2 s rate ramp to its first rate is over.
    /// By hand: the ramp starts at 10·0.1/0.2 = 5/s and sets 7.5/s at 0.1 s and 10/s at 0.2 s;
    /// the series sets 10/s at 0.2 s, 11/s at 0.3 s, 12/s at 0.4 s. A change moves the pending
    /// request to min(its time, change + one new interval):
    /// 0; 0 + 1/5 = 0.2; 0.2 + 1/7.5 = 0.333 → min(·, 0.2 + 1/10) = 0.3;
    /// 0.3 + 1/10 = 0.4 → min(·, 0.3 + 1/11) = 0.3909; 0.3909 + 1/11 = 0.4818 → min(·, 0.4 + 1/12)
    /// = 0.4818; then 0.4818 + 1/12.
    #[test]
    fn arrivals_follow_the_series_after_the_rate_ramp() {
        use std::time::Duration;

        use crate::schedule::{Arrival, Arrivals, RateRamp};
        let series =
            std::sync::Arc::new(RateSeries::new(vec![0.0, 1.0], vec![10.0, 20.0]).unwrap());
        let ramp = RateRamp::new(10.0, Duration::from_millis(200));
        let mut a = Arrivals::ramped(ramp, Arrival::Constant, 1);
        a.follow_series(series.clone(), Duration::from_millis(200));
        let third = 0.3 + 1.0 / 11.0;
        let fourth = third + 1.0 / 11.0;
        let want = [0.0, 0.2, 0.3, third, fourth, fourth + 1.0 / 12.0];
        for (i, w) in want.iter().enumerate() {
            let got = a.next_offset_ns() as f64 / 1e9;
            assert!(
                (got - w).abs() < 1e-6,
                "request {i}: {got} s, by hand {w} s"
            );
        }
        // Without a ramp the series rules from the phase start: 10/s, then 11/s from 0.1 s.
        let mut b = Arrivals::new(1.0, Arrival::Constant, 1);
        b.follow_series(series, Duration::ZERO);
        let want = [0.0, 0.1, 0.1 + 1.0 / 11.0];
        for (i, w) in want.iter().enumerate() {
            let got = b.next_offset_ns() as f64 / 1e9;
            assert!(
                (got - w).abs() < 1e-6,
                "request {i}: {got} s, by hand {w} s"
            );
        }
    }
}
