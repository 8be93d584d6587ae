//! `--stats-interval` and AIPerf's two environment switches of its realtime stats block: when
//! the block of the profiling phase so far is printed on stderr, and how often
//! (docs/dashboard.md "Realtime stats block").
//!
//! The interval resolves as AIPerf's `realtime_metrics_interval`: the flag, else
//! `AIPERF_UI_REALTIME_METRICS_INTERVAL`, else 5 s under the dashboard and 30 s with another UI;
//! 0 means no block. AIPerf prints the block only when its realtime publishing is on (an API
//! port, a Kubernetes run, or `AIPERF_UI_REALTIME_METRICS_ENABLED`), never under the dashboard.
//! ringperf has no API port: the block prints when `--stats-interval` is given (the flag asks
//! for it) or `AIPERF_UI_REALTIME_METRICS_ENABLED` is true, never under the dashboard (which
//! shows the same figures).

use std::time::Duration;

use super::{ConfigError, UiType};

/// AIPerf's `Environment.UI.REALTIME_METRICS_INTERVAL`: seconds, 0 to 1000.
pub const INTERVAL_VAR: &str = "AIPERF_UI_REALTIME_METRICS_INTERVAL";
/// AIPerf's `Environment.UI.REALTIME_METRICS_ENABLED`: a boolean, false by default.
pub const ENABLED_VAR: &str = "AIPERF_UI_REALTIME_METRICS_ENABLED";
/// The longest interval, seconds (AIPerf's, flag and variable alike).
const MAX_S: f64 = crate::cli::STATS_INTERVAL_MAX_S;

/// The interval between the blocks when they are printed, `None` when they are not. `flag` is
/// `--stats-interval` (already in range).
///
/// # Errors
/// Either variable holds something AIPerf refuses at start-up.
pub fn block_interval(
    flag: Option<f64>,
    ui: UiType,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<Duration>, ConfigError> {
    let env_interval = match lookup(INTERVAL_VAR) {
        None => None,
        Some(raw) => match raw.trim().parse::<f64>() {
            Ok(s) if (0.0..=MAX_S).contains(&s) => Some(s),
            _ => {
                return Err(ConfigError::environment(format!(
                    "{INTERVAL_VAR}={raw}: expected a number of seconds from 0 to 1000"
                )));
            }
        },
    };
    let enabled = match lookup(ENABLED_VAR) {
        None => false,
        // pydantic's boolean words (case-insensitive).
        Some(v) => match v.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "t" | "yes" | "y" | "on" => true,
            "0" | "false" | "f" | "no" | "n" | "off" => false,
            _ => {
                return Err(ConfigError::environment(format!(
                    "{ENABLED_VAR}={v}: expected true or false"
                )));
            }
        },
    };
    let default = if ui == UiType::Dashboard { 5.0 } else { 30.0 };
    let seconds = flag.or(env_interval).unwrap_or(default);
    let shown = ui != UiType::Dashboard && (flag.is_some() || enabled) && seconds > 0.0;
    Ok(shown.then(|| Duration::from_secs_f64(seconds)))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(
        flag: Option<f64>,
        ui: UiType,
        vars: &[(&str, &str)],
    ) -> Result<Option<Duration>, ConfigError> {
        block_interval(flag, ui, |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn the_flag_prints_the_block_at_its_interval_except_under_the_dashboard() {
        let s = Duration::from_secs_f64;
        assert_eq!(with(None, UiType::Lines, &[]).unwrap(), None);
        assert_eq!(with(None, UiType::None, &[]).unwrap(), None);
        assert_eq!(with(Some(2.5), UiType::None, &[]).unwrap(), Some(s(2.5)));
        assert_eq!(
            with(Some(2.5), UiType::Progress, &[]).unwrap(),
            Some(s(2.5))
        );
        assert_eq!(with(Some(2.5), UiType::Dashboard, &[]).unwrap(), None);
        assert_eq!(with(Some(0.0), UiType::Lines, &[]).unwrap(), None);
        // The flag wins over the variable.
        let v = [(INTERVAL_VAR, "7")];
        assert_eq!(with(Some(1.0), UiType::Lines, &v).unwrap(), Some(s(1.0)));
    }

    #[test]
    fn the_switch_prints_it_at_the_variable_or_per_ui_default_interval() {
        let s = Duration::from_secs_f64;
        let on = (ENABLED_VAR, "true");
        assert_eq!(with(None, UiType::Lines, &[on]).unwrap(), Some(s(30.0)));
        assert_eq!(with(None, UiType::None, &[on]).unwrap(), Some(s(30.0)));
        assert_eq!(with(None, UiType::Dashboard, &[on]).unwrap(), None);
        let every_3 = (INTERVAL_VAR, " 3 ");
        assert_eq!(
            with(None, UiType::Lines, &[on, every_3]).unwrap(),
            Some(s(3.0))
        );
        // The variable alone does not turn the block on (as in AIPerf without an API port).
        assert_eq!(with(None, UiType::Lines, &[every_3]).unwrap(), None);
        assert_eq!(
            with(None, UiType::Lines, &[on, (INTERVAL_VAR, "0")]).unwrap(),
            None
        );
        assert_eq!(
            with(None, UiType::Lines, &[(ENABLED_VAR, "off")]).unwrap(),
            None
        );
    }

    #[test]
    fn values_aiperf_refuses_are_refused() {
        for bad in ["-1", "1000.5", "NaN", "soon", ""] {
            let e = with(None, UiType::Lines, &[(INTERVAL_VAR, bad)]).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!("{INTERVAL_VAR}={bad}: expected a number of seconds from 0 to 1000")
            );
        }
        let e = with(None, UiType::Lines, &[(ENABLED_VAR, "maybe")]).unwrap_err();
        assert_eq!(
            e.to_string(),
            format!("{ENABLED_VAR}=maybe: expected true or false")
        );
    }
}
