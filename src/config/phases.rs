//! A config file's phases of their own ([`PhaseSpec`], docs/config-files.md) resolved into
//! [`PhaseConfig`]s with AIPerf 0.13's phase rules: at least one stop condition,
//! `prefill_concurrency` at most `concurrency`, `grace_period` only with `duration`, a rate for
//! every rated type, `users` for a user-centric phase and at most as many users as requests or
//! sessions. A warmup runs as AIPerf runs one: paced by its rate and its type's arrival pattern
//! (a user-centric warmup sends Poisson arrivals at its rate; its users pace nothing), closed
//! loop without a rate, and waited for until its last request ends unless it has a grace period.

use std::time::Duration;

use super::timing::{Mode, PhaseTiming};
use super::{Arrival, ConfigError, Load, PhaseConfig, err};
use crate::plan::{Pacing, PhaseSpec};

/// A named phase of its own, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct NamedPhase {
    pub name: String,
    /// A warmup (in no result but its own phase export), else a profiling phase.
    pub warmup: bool,
    pub config: PhaseConfig,
    /// Its own error budget (`failed_request_threshold`), a profiling phase's.
    pub failed_request_threshold: Option<f64>,
    /// AIPerf's `seamless`.
    pub seamless: bool,
}

impl NamedPhase {
    /// `spec`, resolved ([`resolve`]).
    ///
    /// # Errors
    /// See [`resolve`].
    pub fn resolve(spec: &PhaseSpec) -> Result<Self, ConfigError> {
        Ok(NamedPhase {
            name: spec.name.clone(),
            warmup: spec.warmup,
            config: resolve(spec)?,
            // A warmup's is echoed and unused (its records count toward no budget).
            failed_request_threshold: spec.failed_request_threshold.filter(|_| !spec.warmup),
            seamless: spec.seamless,
        })
    }
}

/// The phase `spec` declares.
///
/// # Errors
/// A rule above, named by the phase's path in the file.
pub fn resolve(spec: &PhaseSpec) -> Result<PhaseConfig, ConfigError> {
    let p = format!("benchmark.phases.{}", spec.name);
    let positive = |v: Option<f64>, key: &str| -> Result<Option<Duration>, ConfigError> {
        match v {
            None => Ok(None),
            Some(s) if s.is_finite() && s > 0.0 && s < 1e9 => Ok(Some(Duration::from_secs_f64(s))),
            Some(_) => err(format!("{p}.{key}: must be a positive number of seconds")),
        }
    };
    for (v, key) in [
        (spec.requests, "requests"),
        (spec.sessions, "sessions"),
        (spec.concurrency, "concurrency"),
        (spec.prefill_concurrency, "prefill_concurrency"),
        (spec.users, "users"),
    ] {
        if v == Some(0) {
            return err(format!("{p}.{key}: must be at least 1"));
        }
    }
    if let (Some(pc), Some(c)) = (spec.prefill_concurrency, spec.concurrency)
        && pc > c
    {
        return err(format!(
            "{p}.prefill_concurrency ({pc}) must be at most its concurrency ({c})"
        ));
    }
    let fixed = spec.pacing == Pacing::FixedSchedule;
    if fixed && spec.warmup && spec.requests.is_none() {
        return err(format!(
            "{p}: a fixed_schedule warmup needs requests: AIPerf 0.13 runs a warmup on its plain \
             scheduler, the trace's timestamps unread, and never ends one without a count"
        ));
    }
    // A fixed schedule's stop is its trace's end.
    if !fixed && spec.requests.is_none() && spec.duration.is_none() && spec.sessions.is_none() {
        return err(format!(
            "Phase '{}': at least one of 'requests', 'duration', or 'sessions' must be specified",
            spec.name
        ));
    }
    if let Some(users) = spec.users {
        for (v, key) in [(spec.requests, "requests"), (spec.sessions, "sessions")] {
            if let Some(n) = v.filter(|n| *n < users) {
                return err(format!(
                    "{p}.{key} ({n}) must be at least its users ({users}): each user needs one"
                ));
            }
        }
    }
    let duration = positive(spec.duration, "duration")?;
    let grace = match (spec.grace_period, duration) {
        (Some(_), None) => {
            return err(format!(
                "{p}.grace_period requires {p}.duration: the grace period only applies after a \
                 duration-bounded phase"
            ));
        }
        (Some(g), Some(_)) if g.is_infinite() && g > 0.0 => None,
        (Some(g), Some(_)) if g.is_finite() && g >= 0.0 => Some(Duration::from_secs_f64(g)),
        (Some(_), Some(_)) => {
            return err(format!(
                "{p}.grace_period: must be a number of seconds, or inf"
            ));
        }
        // A warmup is waited for until its last request ends; a profiling phase of a file
        // gets the grace period `--benchmark-grace-period` defaults to.
        (None, Some(_)) if !spec.warmup => Some(Duration::from_secs(30)),
        (None, _) => None,
    };
    let series = match &spec.rate_series {
        None => None,
        Some(points) => {
            let (t, q) = points.iter().copied().unzip();
            let s = ringperf_workload::schedule::RateSeries::new(t, q)
                .map_err(|e| ConfigError::file(format!("{p}.rate_series: {e}")))?;
            Some(std::sync::Arc::new(s))
        }
    };
    let rate = match (
        spec.pacing,
        spec.rate.or(series.as_ref().map(|s| s.initial_qps())),
    ) {
        (Pacing::Concurrency | Pacing::FixedSchedule, _) => 0.0,
        (_, Some(r)) if r.is_finite() && r > 0.0 => r,
        (ty, _) => {
            return err(format!(
                "{p}.rate: a {} phase needs a positive rate",
                ty.name()
            ));
        }
    };
    let arrival = match spec.pacing {
        Pacing::Gamma => {
            let s = spec.smoothness.unwrap_or(1.0);
            if !(s.is_finite() && s > 0.0) {
                return err(format!("{p}.smoothness: must be a positive number"));
            }
            Arrival::Gamma { smoothness: s }
        }
        Pacing::Poisson => Arrival::Poisson,
        _ => Arrival::Constant,
    };
    let (load, mode) = match spec.pacing {
        Pacing::Concurrency => (Load::Concurrency(spec.concurrency.unwrap_or(1)), Mode::Load),
        // AIPerf's warmup of this type: its requests sent as its concurrency allows, all at once
        // without one.
        Pacing::FixedSchedule if spec.warmup => (
            Load::Concurrency(spec.concurrency.or(spec.requests).unwrap_or(1)),
            Mode::Load,
        ),
        // The trace replayed from its start, on the phase's clock (the dataset's speedup is set
        // where the configuration knows it).
        Pacing::FixedSchedule => {
            if let (Some(s), Some(e)) = (spec.start_offset, spec.end_offset)
                && s > e
            {
                return err(format!(
                    "{p}: start_offset ({s}) must be at most end_offset ({e})"
                ));
            }
            (
                Load::Rate {
                    rate: 0.0,
                    arrival: Arrival::Constant,
                    cap: spec.concurrency,
                },
                Mode::FixedSchedule(ringperf_workload::schedule::FixedSchedule {
                    auto_offset: spec.auto_offset.unwrap_or(spec.start_offset.is_none()),
                    window: ringperf_workload::schedule::Window {
                        start_ms: spec.start_offset,
                        end_ms: spec.end_offset,
                        applied_at_load: false,
                    },
                    speedup: 1.0,
                }),
            )
        }
        Pacing::UserCentric if spec.warmup => (
            Load::Rate {
                rate,
                arrival: Arrival::Poisson,
                cap: spec.concurrency,
            },
            Mode::Load,
        ),
        Pacing::UserCentric => {
            let Some(users) = spec.users else {
                return err(format!("{p}.users: a user_centric phase needs users"));
            };
            (
                Load::Rate {
                    rate,
                    arrival,
                    cap: spec.concurrency,
                },
                Mode::UserCentric { rate, users },
            )
        }
        _ => (
            Load::Rate {
                rate,
                arrival,
                cap: spec.concurrency,
            },
            Mode::Load,
        ),
    };
    let request_count = spec.requests;
    let prefill_ramp = positive(spec.prefill_ramp, "prefill_ramp")?;
    // AIPerf's `CancellationConfig`: a percentage in [0, 100] (0: none) and a delay of 0 or more.
    // A warmup's is echoed and unused: AIPerf 0.13 cancels none of a warmup's requests (its run
    // of `tests/data/aiperf-yaml/warmup-cancel.yaml`: 10 of 10 answered).
    let cancellation = match spec.cancellation.filter(|_| !spec.warmup) {
        None => None,
        Some((rate, _)) if !(0.0..=100.0).contains(&rate) => {
            return err(format!(
                "{p}.cancellation.rate: must be a percentage in [0, 100]"
            ));
        }
        Some((_, Some(d))) if !(d.is_finite() && (0.0..1e9).contains(&d)) => {
            return err(format!(
                "{p}.cancellation.delay: must be a non-negative number of seconds"
            ));
        }
        Some((0.0, _)) => None,
        Some((rate, delay)) => Some(super::timing::Cancellation {
            rate_pct: rate,
            delay: Duration::from_secs_f64(delay.unwrap_or(0.0)),
        }),
    };
    let adaptive = match &spec.adaptive {
        // (Agentic replay wins over it, as in AIPerf 0.13: read, echoed, unused.)
        Some(a) if a.runs() && !spec.warmup && !matches!(mode, super::timing::Mode::Agentic(_)) => {
            Some(super::adaptive_settings(
                a,
                (&load, &mode, spec.prefill_concurrency),
                &p,
            )?)
        }
        _ => None,
    };
    let timing = PhaseTiming {
        mode,
        rate_ramp: positive(spec.rate_ramp, "rate_ramp")?,
        concurrency_ramp: positive(spec.concurrency_ramp, "concurrency_ramp")?,
        cancellation,
        prefill_concurrency: spec.prefill_concurrency,
        prefill_ramp: prefill_ramp.filter(|_| spec.prefill_concurrency.is_some()),
        rate_series: series,
        adaptive,
    };
    Ok(PhaseConfig {
        load,
        request_count,
        sessions: spec.sessions,
        duration,
        grace,
        timing,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(pacing: Pacing) -> PhaseSpec {
        let mut s = PhaseSpec::new("warmup", pacing);
        s.warmup = true;
        s.exclude_from_results = true;
        s
    }

    #[test]
    fn a_concurrency_phase_is_a_closed_loop() {
        let mut s = spec(Pacing::Concurrency);
        s.concurrency = Some(8);
        s.requests = Some(100);
        let p = resolve(&s).expect("valid");
        assert_eq!(p.load, Load::Concurrency(8));
        assert_eq!(p.request_count, Some(100));
        assert_eq!(p.duration, None);
        assert_eq!(p.grace, None);
        assert_eq!(p.timing.mode, Mode::Load);
    }

    #[test]
    fn a_gamma_phase_is_an_open_loop_with_its_own_shape_and_cap() {
        let mut s = spec(Pacing::Gamma);
        s.rate = Some(50.0);
        s.smoothness = Some(1.5);
        s.concurrency = Some(64);
        s.duration = Some(300.0);
        s.rate_ramp = Some(30.0);
        let p = resolve(&s).expect("valid");
        assert_eq!(
            p.load,
            Load::Rate {
                rate: 50.0,
                arrival: Arrival::Gamma { smoothness: 1.5 },
                cap: Some(64)
            }
        );
        // A duration and no count: no request limit; a warmup is waited for to its end, a
        // profiling phase 30 s.
        assert_eq!(p.request_count, None);
        assert_eq!(p.grace, None);
        assert_eq!(p.timing.rate_ramp, Some(Duration::from_secs(30)));
        s.warmup = false;
        s.exclude_from_results = false;
        assert_eq!(resolve(&s).unwrap().grace, Some(Duration::from_secs(30)));
    }

    #[test]
    fn a_user_centric_warmup_sends_poisson_arrivals_at_its_rate() {
        let mut s = spec(Pacing::UserCentric);
        s.rate = Some(1.0);
        s.users = Some(10);
        s.duration = Some(30.0);
        let p = resolve(&s).expect("valid");
        assert_eq!(p.timing.mode, Mode::Load);
        assert_eq!(
            p.load,
            Load::Rate {
                rate: 1.0,
                arrival: Arrival::Poisson,
                cap: None
            }
        );
        s.warmup = false;
        s.exclude_from_results = false;
        let p = resolve(&s).expect("valid");
        assert_eq!(
            p.timing.mode,
            Mode::UserCentric {
                rate: 1.0,
                users: 10
            }
        );
    }

    #[test]
    fn the_phase_rules_are_refused_by_the_phase_path() {
        let mut s = spec(Pacing::Poisson);
        let e = resolve(&s).expect_err("no stop condition");
        assert_eq!(
            e.message(),
            "Phase 'warmup': at least one of 'requests', 'duration', or 'sessions' must be \
             specified"
        );
        s.requests = Some(10);
        let e = resolve(&s).expect_err("no rate");
        assert!(e.message().contains("benchmark.phases.warmup.rate"), "{e}");
        s.rate = Some(2.0);
        s.grace_period = Some(5.0);
        let e = resolve(&s).expect_err("grace without duration");
        assert!(e.message().contains("grace_period requires"), "{e}");
        s.grace_period = None;
        s.concurrency = Some(2);
        s.prefill_concurrency = Some(3);
        let e = resolve(&s).expect_err("prefill over concurrency");
        assert!(e.message().contains("prefill_concurrency (3)"), "{e}");
        let mut u = spec(Pacing::UserCentric);
        u.rate = Some(1.0);
        u.users = Some(20);
        u.requests = Some(10);
        let e = resolve(&u).expect_err("fewer requests than users");
        assert!(e.message().contains("requests (10)"), "{e}");
    }
}
