//! `--network-latency-*` (docs/metrics.md, "Network-adjusted latencies"): the round-trip time
//! subtracted from the start-anchored latencies, fixed or measured, with AIPerf 0.13's rules
//! for combining the three flags and its echo.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use super::ConfigError;
use crate::cli::network::NetworkLatencyArgs;

/// AIPerf's default probe interval (s) when `--network-latency-ping-interval` is not given.
pub const INTERVAL_VAR: &str = "AIPERF_NETWORK_LATENCY_DEFAULT_PROBE_INTERVAL";

/// How the RTT is known.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub enum NetworkLatency {
    /// No adjustment (the default).
    #[default]
    Off,
    /// `--network-latency-mean`: this RTT, ms (0 adjusts nothing).
    Mean(f64),
    /// `--network-latency-automatic`: measured by TCP connect probes this far apart;
    /// `interval_given` is the flag's value, echoed only when given.
    Automatic {
        interval: Duration,
        interval_given: Option<f64>,
    },
}

impl NetworkLatency {
    /// Reads the three flags and [`INTERVAL_VAR`].
    ///
    /// # Errors
    /// AIPerf's: the mean beside automatic, the interval without automatic; a negative mean, an
    /// interval that is not positive, or a variable that is not a number from 0.001 to 300.
    pub fn resolve(
        args: &NetworkLatencyArgs,
        vars: &BTreeMap<String, String>,
    ) -> Result<Self, ConfigError> {
        let flag = |m: &str| Err(ConfigError::flag(m));
        match (
            args.network_latency_automatic,
            args.network_latency_mean,
            args.network_latency_ping_interval,
        ) {
            (true, Some(_), _) => flag(
                "Cannot use both --network-latency-automatic and --network-latency-mean together. \
                 Automatic measures the RTT; mean sets it directly.",
            ),
            (false, Some(_), Some(_)) => flag(
                "--network-latency-ping-interval only applies with --network-latency-automatic, \
                 not with --network-latency-mean.",
            ),
            (false, None, Some(_)) => flag(
                "--network-latency-ping-interval only applies when --network-latency-automatic is \
                 set (or --network-latency-mean is provided).",
            ),
            (false, None, None) => Ok(Self::Off),
            (false, Some(ms), None) => {
                if !(ms.is_finite() && ms >= 0.0) {
                    return flag("--network-latency-mean must be a number of ms, at least 0");
                }
                Ok(Self::Mean(ms))
            }
            (true, None, given) => {
                let secs = match given {
                    Some(s) if !(s.is_finite() && s > 0.0) => {
                        return flag("--network-latency-ping-interval must be more than 0 seconds");
                    }
                    Some(s) => s,
                    None => match vars.get(INTERVAL_VAR) {
                        None => 1.0,
                        Some(v) => match v.trim().parse::<f64>() {
                            Ok(s) if (0.001..=300.0).contains(&s) => s,
                            _ => {
                                return Err(ConfigError::flag(format!(
                                    "{INTERVAL_VAR}={v}: a number of seconds from 0.001 to 300"
                                )));
                            }
                        },
                    },
                };
                Ok(Self::Automatic {
                    interval: Duration::from_secs_f64(secs),
                    interval_given: given,
                })
            }
        }
    }

    /// AIPerf's `input_config.network_latency`: `enabled`, then `mean_ms` or the interval when
    /// given.
    pub fn echo(&self) -> Value {
        match *self {
            Self::Off => json!({"enabled": false}),
            Self::Mean(ms) => json!({"enabled": true, "mean_ms": ms}),
            Self::Automatic { interval_given, .. } => match interval_given {
                Some(s) => json!({"enabled": true, "ping_interval": s}),
                None => json!({"enabled": true}),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resolve(
        automatic: bool,
        mean: Option<f64>,
        interval: Option<f64>,
        var: Option<&str>,
    ) -> Result<NetworkLatency, String> {
        let args = NetworkLatencyArgs {
            network_latency_automatic: automatic,
            network_latency_mean: mean,
            network_latency_ping_interval: interval,
        };
        let vars = var
            .map(|v| BTreeMap::from([(INTERVAL_VAR.to_owned(), v.to_owned())]))
            .unwrap_or_default();
        NetworkLatency::resolve(&args, &vars).map_err(|e| e.to_string())
    }

    #[test]
    fn aiperfs_combinations_and_echo() {
        assert_eq!(resolve(false, None, None, None), Ok(NetworkLatency::Off));
        let mean = resolve(false, Some(5.0), None, None).unwrap();
        assert_eq!(mean.echo(), json!({"enabled": true, "mean_ms": 5.0}));
        let auto = resolve(true, None, Some(0.5), None).unwrap();
        assert_eq!(auto.echo(), json!({"enabled": true, "ping_interval": 0.5}));
        assert!(
            matches!(auto, NetworkLatency::Automatic { interval, .. } if interval == Duration::from_millis(500))
        );
        let default = resolve(true, None, None, None).unwrap();
        assert_eq!(default.echo(), json!({"enabled": true}));
        assert!(
            matches!(default, NetworkLatency::Automatic { interval, .. } if interval == Duration::from_secs(1))
        );
        let from_var = resolve(true, None, None, Some("2.5")).unwrap();
        assert!(
            matches!(from_var, NetworkLatency::Automatic { interval, interval_given: None } if interval == Duration::from_millis(2500))
        );
        assert_eq!(NetworkLatency::Off.echo(), json!({"enabled": false}));
    }

    #[test]
    fn refusals_say_why() {
        let both = resolve(true, Some(5.0), None, None).unwrap_err();
        assert!(
            both.starts_with("Cannot use both --network-latency-automatic"),
            "{both}"
        );
        let e = resolve(false, Some(5.0), Some(1.0), None).unwrap_err();
        assert!(e.contains("not with --network-latency-mean"), "{e}");
        let e = resolve(false, None, Some(1.0), None).unwrap_err();
        assert!(
            e.contains("only applies when --network-latency-automatic is set"),
            "{e}"
        );
        assert!(resolve(false, Some(-1.0), None, None).is_err());
        assert!(resolve(true, None, Some(0.0), None).is_err());
        assert!(resolve(true, None, None, Some("0")).is_err());
        // Zero is a mean (that adjusts nothing), as in AIPerf.
        assert_eq!(
            resolve(false, Some(0.0), None, None),
            Ok(NetworkLatency::Mean(0.0))
        );
    }
}
