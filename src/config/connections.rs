//! `AIPERF_HTTP_CONNECTION_LIMIT`: the most connections one worker holds open at once (AIPerf
//! 0.13's `Environment.HTTP.CONNECTION_LIMIT`, the `limit` of each worker's aiohttp connector:
//! 1 to 65 000, default 2 500). A request that finds no idle connection while its worker holds
//! that many waits for one to come back rather than opening another.

use super::ConfigError;

/// The variable's name.
pub const VAR: &str = "AIPERF_HTTP_CONNECTION_LIMIT";
/// Its default, AIPerf's.
pub const DEFAULT: usize = 2_500;
/// Its largest accepted value, AIPerf's.
const MAX: usize = 65_000;

/// The limit `lookup` (an environment) gives.
///
/// # Errors
/// A value that is not a whole number from 1 to 65 000 (AIPerf refuses it at start-up).
pub fn limit(lookup: impl Fn(&str) -> Option<String>) -> Result<usize, ConfigError> {
    let Some(raw) = lookup(VAR) else {
        return Ok(DEFAULT);
    };
    match raw.trim().parse::<usize>() {
        Ok(n) if (1..=MAX).contains(&n) => Ok(n),
        _ => Err(ConfigError::environment(format!(
            "{VAR}={raw}: expected a whole number from 1 to {MAX}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(value: Option<&str>) -> Result<usize, ConfigError> {
        limit(|k| {
            assert_eq!(k, VAR);
            value.map(str::to_string)
        })
    }

    #[test]
    fn default_bounds_and_refusals_follow_aiperf() {
        assert_eq!(with(None).unwrap(), 2_500);
        assert_eq!(with(Some(" 16 ")).unwrap(), 16);
        assert_eq!(with(Some("1")).unwrap(), 1);
        assert_eq!(with(Some("65000")).unwrap(), 65_000);
        for bad in ["0", "65001", "-3", "2.5", "many", ""] {
            let e = with(Some(bad)).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("{VAR}={bad}: expected a whole number from 1 to 65000")
            );
            assert_eq!(e.kind(), crate::config::ErrorKind::Environment);
        }
    }
}
