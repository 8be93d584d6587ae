//! The `AIPERF_SERVER_METRICS_*` environment variables of the collection doc (and the scrape read
//! timeout `AIPERF_HTTP_METRICS_SCRAPE_READ_TIMEOUT`), AIPerf's defaults (docs/output-formats.md).

use std::fmt;
use std::time::Duration;

/// Collection timing and batching.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Settings {
    /// `AIPERF_SERVER_METRICS_COLLECTION_INTERVAL` (0.333 s): period of the background scrapes.
    pub interval: Duration,
    /// `AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD` (2.0 s): collection continues this long
    /// after profiling ends, then the final scrape is taken.
    pub flush_period: Duration,
    /// `AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT` (10 s): the reachability check, and every
    /// connect.
    pub reachability_timeout: Duration,
    /// `AIPERF_HTTP_METRICS_SCRAPE_READ_TIMEOUT` (30 s): each read of a scrape response.
    pub read_timeout: Duration,
    /// `AIPERF_SERVER_METRICS_SCRAPE_TIMEOUT` (30 s): bound on the baseline, boundary-awaited and
    /// final scrapes.
    pub scrape_timeout: Duration,
    /// `AIPERF_SERVER_METRICS_EXPORT_BATCH_SIZE` (100): JSONL lines buffered between flushes.
    pub export_batch_size: usize,
    /// `AIPERF_SERVER_METRICS_SHUTDOWN_DELAY` (5.0 s): how long the stop waits for scrapes still
    /// in flight before the final scrape.
    pub shutdown_delay: Duration,
}

/// Why an `AIPERF_*` variable was rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error {
    /// A duration variable does not hold a number.
    NotSeconds {
        /// The variable.
        name: &'static str,
        /// Its value as set.
        raw: String,
    },
    /// A duration variable holds a number out of range: negative, not finite, above 1e9 s, or
    /// zero where zero is not allowed.
    SecondsOutOfRange {
        /// The variable.
        name: &'static str,
        /// Its value as set.
        raw: String,
        /// Zero would have been accepted.
        allow_zero: bool,
    },
    /// `AIPERF_SERVER_METRICS_EXPORT_BATCH_SIZE` is not a positive integer.
    BatchSize {
        /// Its value as set.
        raw: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::NotSeconds { name, raw } => write!(f, "{name}={raw} is not a number of seconds"),
            Error::SecondsOutOfRange {
                name,
                raw,
                allow_zero,
            } => {
                let sign = if *allow_zero {
                    "non-negative"
                } else {
                    "positive"
                };
                write!(f, "{name}={raw} must be a {sign} number of seconds")
            }
            Error::BatchSize { raw } => write!(
                f,
                "AIPERF_SERVER_METRICS_EXPORT_BATCH_SIZE={raw} must be a positive integer"
            ),
        }
    }
}

impl std::error::Error for Error {}

impl Default for Settings {
    fn default() -> Self {
        Self {
            interval: Duration::from_millis(333),
            flush_period: Duration::from_secs(2),
            reachability_timeout: Duration::from_secs(10),
            read_timeout: Duration::from_secs(30),
            scrape_timeout: Duration::from_secs(30),
            export_batch_size: 100,
            shutdown_delay: Duration::from_secs(5),
        }
    }
}

impl Settings {
    /// Reads the process environment.
    ///
    /// # Errors
    /// A variable whose value is not a valid number.
    pub fn from_env() -> Result<Self, Error> {
        Self::from_lookup(|k| std::env::var(k).ok())
    }

    /// Reads the variables through `get` (tests pass a map).
    ///
    /// # Errors
    /// A variable whose value is not a valid number.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Result<Self, Error> {
        let d = Self::default();
        let secs = |name: &'static str, default: Duration, allow_zero: bool| {
            let Some(raw) = get(name) else {
                return Ok(default);
            };
            let Ok(v) = raw.trim().parse::<f64>() else {
                return Err(Error::NotSeconds { name, raw });
            };
            if !v.is_finite() || v < 0.0 || (v == 0.0 && !allow_zero) || v > 1e9 {
                return Err(Error::SecondsOutOfRange {
                    name,
                    raw,
                    allow_zero,
                });
            }
            Ok(Duration::from_secs_f64(v))
        };
        let batch = match get("AIPERF_SERVER_METRICS_EXPORT_BATCH_SIZE") {
            None => d.export_batch_size,
            Some(raw) => match raw.trim().parse::<usize>() {
                Ok(n) if n > 0 => n,
                _ => return Err(Error::BatchSize { raw }),
            },
        };
        Ok(Self {
            interval: secs(
                "AIPERF_SERVER_METRICS_COLLECTION_INTERVAL",
                d.interval,
                false,
            )?,
            flush_period: secs(
                "AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD",
                d.flush_period,
                true,
            )?,
            reachability_timeout: secs(
                "AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT",
                d.reachability_timeout,
                false,
            )?,
            read_timeout: secs(
                "AIPERF_HTTP_METRICS_SCRAPE_READ_TIMEOUT",
                d.read_timeout,
                false,
            )?,
            scrape_timeout: secs(
                "AIPERF_SERVER_METRICS_SCRAPE_TIMEOUT",
                d.scrape_timeout,
                false,
            )?,
            export_batch_size: batch,
            shutdown_delay: secs(
                "AIPERF_SERVER_METRICS_SHUTDOWN_DELAY",
                d.shutdown_delay,
                true,
            )?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn with(pairs: &[(&str, &str)]) -> Result<Settings, Error> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        Settings::from_lookup(|k| m.get(k).cloned())
    }

    #[test]
    fn defaults_are_aiperfs() {
        let s = with(&[]).unwrap();
        assert_eq!(s.interval, Duration::from_millis(333));
        assert_eq!(s.flush_period, Duration::from_secs(2));
        assert_eq!(s.reachability_timeout, Duration::from_secs(10));
        assert_eq!(s.export_batch_size, 100);
        assert_eq!(s.shutdown_delay, Duration::from_secs(5));
    }

    #[test]
    fn overrides_and_bad_values() {
        let s = with(&[
            ("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0.05"),
            ("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "0"),
            ("AIPERF_SERVER_METRICS_EXPORT_BATCH_SIZE", "7"),
        ])
        .unwrap();
        assert_eq!(s.interval, Duration::from_millis(50));
        assert_eq!(s.flush_period, Duration::ZERO);
        assert_eq!(s.export_batch_size, 7);
        let e = with(&[("AIPERF_SERVER_METRICS_COLLECTION_INTERVAL", "0")]).unwrap_err();
        assert!(e.to_string().contains("COLLECTION_INTERVAL"), "{e}");
        assert_eq!(
            e.to_string(),
            "AIPERF_SERVER_METRICS_COLLECTION_INTERVAL=0 must be a positive number of seconds"
        );
        let e = with(&[("AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD", "-1")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AIPERF_SERVER_METRICS_COLLECTION_FLUSH_PERIOD=-1 must be a non-negative number of \
             seconds"
        );
        let e = with(&[("AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT", "x")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AIPERF_SERVER_METRICS_REACHABILITY_TIMEOUT=x is not a number of seconds"
        );
        let e = with(&[("AIPERF_SERVER_METRICS_EXPORT_BATCH_SIZE", "0")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            "AIPERF_SERVER_METRICS_EXPORT_BATCH_SIZE=0 must be a positive integer"
        );
    }
}
