//! `--stats-interval` and AIPerf's two environment switches of its realtime stats block: when
//! the block of the profiling phase so far is printed on stderr, and how often
//! (docs/dashboard.md "Realtime stats block").
//!
//! The interval resolves as AIPerf's `realtime_metrics_interval`: the flag, else
//! `AIPERF_UI_REALTIME_METRICS_INTERVAL`, else 5 s under the dashboard and 30 s with another UI;
//! 0 means no block. AIPerf prints the block only when its realtime publishing is on (an API
//! port, a Kubernetes run, or `AIPERF_UI_REALTIME_METRICS_ENABLED`), never under the dashboard.
//! ringperf prints it when `--stats-interval` is given (the flag asks for it), with `--api-port`,
//! or when `AIPERF_UI_REALTIME_METRICS_ENABLED` is true, never under the dashboard (which shows
//! the same figures). With `--api-port` the same ticks publish the results so far to the live
//! API (docs/api.md), at the per-UI default interval when the block is off with 0.

use std::time::Duration;

use super::{ConfigError, UiType};

/// AIPerf's `Environment.UI.REALTIME_METRICS_INTERVAL`: seconds, 0 to 1000.
pub const INTERVAL_VAR: &str = "AIPERF_UI_REALTIME_METRICS_INTERVAL";
/// AIPerf's `Environment.UI.REALTIME_METRICS_ENABLED`: a boolean, false by default.
pub const ENABLED_VAR: &str = "AIPERF_UI_REALTIME_METRICS_ENABLED";
/// The longest interval, seconds (AIPerf's, flag and variable alike).
const MAX_S: f64 = crate::cli::STATS_INTERVAL_MAX_S;

/// The realtime ticks of a run: how often, and whether each prints the block.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Realtime {
    pub every: Duration,
    /// The block is printed at each tick (false: the ticks only feed the live API).
    pub print: bool,
}

/// The realtime ticks, `None` when there are none (no block printed, no API). `flag` is
/// `--stats-interval` (already in range); `api`: `--api-port` is given.
///
/// # Errors
/// Either variable holds something AIPerf refuses at start-up.
pub fn ticks(
    flag: Option<f64>,
    ui: UiType,
    api: bool,
    lookup: impl Fn(&str) -> Option<String>,
) -> Result<Option<Realtime>, ConfigError> {
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
    let print = ui != UiType::Dashboard && (flag.is_some() || enabled || api) && seconds > 0.0;
    // `--stats-interval 0` stops the block, not the API's snapshots (AIPerf's default cadence).
    let every = if seconds > 0.0 { seconds } else { default };
    Ok((print || api).then(|| Realtime {
        every: Duration::from_secs_f64(every),
        print,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The printed block's interval (the ticks without an API port).
    fn with(
        flag: Option<f64>,
        ui: UiType,
        vars: &[(&str, &str)],
    ) -> Result<Option<Duration>, ConfigError> {
        let r = ticks(flag, ui, false, |k| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        })?;
        if let Some(r) = r {
            assert!(r.print, "without an API port a tick prints");
        }
        Ok(r.map(|r| r.every))
    }

    #[test]
    fn an_api_port_prints_the_block_and_ticks_even_when_it_is_off() {
        let s = Duration::from_secs_f64;
        let api = |flag, ui| ticks(flag, ui, true, |_| None).unwrap();
        assert_eq!(
            api(None, UiType::None),
            Some(Realtime {
                every: s(30.0),
                print: true
            })
        );
        assert_eq!(
            api(Some(0.0), UiType::Lines),
            Some(Realtime {
                every: s(30.0),
                print: false
            })
        );
        assert_eq!(
            api(Some(0.0), UiType::Dashboard),
            Some(Realtime {
                every: s(5.0),
                print: false
            })
        );
        assert_eq!(
            api(Some(2.0), UiType::Dashboard),
            Some(Realtime {
                every: s(2.0),
                print: false
            })
        );
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
