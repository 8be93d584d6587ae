//! `AIPERF_HTTP_VIDEO_POLL_INTERVAL`: seconds between the status polls of a `video-generation`
//! job (AIPerf 0.13's `Environment.HTTP.VIDEO_POLL_INTERVAL`: 0.001 to 10, default 0.1). A value
//! out of range or not a number is refused before the run, as AIPerf refuses it at start-up.

use std::time::Duration;

use super::ConfigError;

/// The variable's name.
pub const VAR: &str = "AIPERF_HTTP_VIDEO_POLL_INTERVAL";
/// Its default, AIPerf's.
pub const DEFAULT: Duration = Duration::from_millis(100);
/// The accepted range in seconds, AIPerf's.
const MIN_S: f64 = 0.001;
const MAX_S: f64 = 10.0;

/// The interval `lookup` (an environment) gives.
///
/// # Errors
/// A value that is not a number of seconds from 0.001 to 10.
pub fn interval(lookup: impl Fn(&str) -> Option<String>) -> Result<Duration, ConfigError> {
    let Some(raw) = lookup(VAR) else {
        return Ok(DEFAULT);
    };
    match raw.trim().parse::<f64>() {
        Ok(s) if (MIN_S..=MAX_S).contains(&s) => Ok(Duration::from_secs_f64(s)),
        _ => Err(ConfigError::environment(format!(
            "{VAR}={raw}: expected a number of seconds from {MIN_S} to {MAX_S}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: Option<&str>) -> Result<Duration, ConfigError> {
        interval(|k| {
            assert_eq!(k, VAR);
            value.map(str::to_string)
        })
    }

    #[test]
    fn default_bounds_and_refusals_follow_aiperf() {
        assert_eq!(with(None).unwrap(), Duration::from_millis(100));
        assert_eq!(with(Some(" 0.02 ")).unwrap(), Duration::from_millis(20));
        assert_eq!(with(Some("0.001")).unwrap(), Duration::from_millis(1));
        assert_eq!(with(Some("10")).unwrap(), Duration::from_secs(10));
        for bad in ["0", "0.0009", "10.5", "-1", "NaN", "fast", ""] {
            let e = with(Some(bad)).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("{VAR}={bad}: expected a number of seconds from 0.001 to 10")
            );
            assert_eq!(e.kind(), crate::config::ErrorKind::Environment);
        }
    }
}
