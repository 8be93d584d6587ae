//! The server-lifecycle flags checked (`--wait-for-model-*`, `--reset-kv-cache*`,
//! `--server-profiler*`), as AIPerf 0.13 checks them: a companion flag given alone turns its
//! hook on, a path must start with '/' and name no other server, timeouts are positive.

use std::time::Duration;

use super::ConfigError;
use super::url::BaseUrl;
use crate::cli::lab::{LifecycleArgs, MlflowArgs, WandbArgs};
use ringperf_metrics::lab::lifecycle::{
    DEFAULT_CONTROL_TIMEOUT, DEFAULT_PROFILER_START_PATH, DEFAULT_PROFILER_STOP_PATH,
    DEFAULT_RESET_PATH, Lifecycle, Profiler, Reset, Server, Wait,
};
use ringperf_metrics::lab::mlflow::{DEFAULT_EXPERIMENT, DEFAULT_GLOBS, Mlflow, TrackingUri};

fn relative_path(p: Option<&str>, field: &str, default: &str) -> Result<String, ConfigError> {
    match p {
        None => Ok(default.to_owned()),
        Some(p) if p.contains("://") || !p.starts_with('/') => Err(ConfigError::flag(format!(
            "{field} must be a relative path starting with '/', got '{p}'"
        ))),
        Some(p) => Ok(p.to_owned()),
    }
}

fn positive(v: Option<f64>, flag: &str) -> Result<Duration, ConfigError> {
    match v {
        None => Ok(DEFAULT_CONTROL_TIMEOUT),
        Some(s) if s.is_finite() && s > 0.0 => Ok(Duration::from_secs_f64(s)),
        Some(s) => Err(ConfigError::flag(format!(
            "{flag} must be a finite number greater than 0 (got {s})"
        ))),
    }
}

/// Checks the lifecycle flags against the URLs they will call.
///
/// # Errors
/// A value out of range, a path that is not relative, or an `https://` URL (the control calls
/// speak plain HTTP only).
pub fn lifecycle(a: &LifecycleArgs, urls: &[BaseUrl]) -> Result<Lifecycle, ConfigError> {
    let t = a.wait_for_model_timeout;
    if !(t.is_finite() && t >= 0.0) {
        return Err(ConfigError::flag(format!(
            "--wait-for-model-timeout must be a finite number of seconds, 0 or more (got {t})"
        )));
    }
    let i = a.wait_for_model_interval;
    if !(i.is_finite() && i > 0.0) {
        return Err(ConfigError::flag(format!(
            "--wait-for-model-interval must be a finite number of seconds greater than 0 (got {i})"
        )));
    }
    let wait = (t > 0.0).then(|| Wait {
        timeout: Duration::from_secs_f64(t),
        interval: Duration::from_secs_f64(i),
        mode: a.wait_for_model_mode,
    });
    let reset = (a.reset_kv_cache
        || a.reset_kv_cache_timeout_seconds.is_some()
        || a.reset_kv_cache_path.is_some())
    .then(|| -> Result<Reset, ConfigError> {
        Ok(Reset {
            path: relative_path(
                a.reset_kv_cache_path.as_deref(),
                "endpoint.reset_kv_cache.path",
                DEFAULT_RESET_PATH,
            )?,
            timeout: positive(
                a.reset_kv_cache_timeout_seconds,
                "--reset-kv-cache-timeout-seconds",
            )?,
            retry_budget: ringperf_metrics::lab::lifecycle::RESET_RETRY_BUDGET,
        })
    })
    .transpose()?;
    let profiler = (a.server_profiler
        || a.server_profiler_timeout_seconds.is_some()
        || a.server_profiler_start_path.is_some()
        || a.server_profiler_stop_path.is_some())
    .then(|| -> Result<Profiler, ConfigError> {
        Ok(Profiler {
            start_path: relative_path(
                a.server_profiler_start_path.as_deref(),
                "endpoint.server_profiler.start_path",
                DEFAULT_PROFILER_START_PATH,
            )?,
            stop_path: relative_path(
                a.server_profiler_stop_path.as_deref(),
                "endpoint.server_profiler.stop_path",
                DEFAULT_PROFILER_STOP_PATH,
            )?,
            timeout: positive(
                a.server_profiler_timeout_seconds,
                "--server-profiler-timeout-seconds",
            )?,
        })
    })
    .transpose()?;
    let l = Lifecycle {
        wait,
        reset,
        profiler,
    };
    if l != Lifecycle::default()
        && let Some(u) = urls.iter().find(|u| u.https)
    {
        return Err(ConfigError::flag(format!(
            "--wait-for-model-timeout, --reset-kv-cache and --server-profiler call the server \
             over plain HTTP only; {} is https://",
            u.display
        )));
    }
    Ok(l)
}

/// `--wait-for-model-mode` / `-interval` given a value other than the default without
/// `--wait-for-model-timeout`: one warning each (the run does not wait).
pub fn unused(a: &LifecycleArgs) -> Vec<String> {
    let mut w = Vec::new();
    if a.wait_for_model_timeout == 0.0 {
        if a.wait_for_model_mode != ringperf_metrics::lab::lifecycle::WaitMode::Inference {
            w.push(
                "--wait-for-model-mode has no effect: without --wait-for-model-timeout the run \
                 does not wait"
                    .to_owned(),
            );
        }
        if a.wait_for_model_interval != 5.0 {
            w.push(
                "--wait-for-model-interval has no effect: without --wait-for-model-timeout the \
                 run does not wait"
                    .to_owned(),
            );
        }
    }
    w
}

/// `--mlflow-*`: `None` without `--mlflow-tracking-uri`, whose companions are then warned.
///
/// # Errors
/// The URI is not a tracking server's `http://` URL, or a tag is not `key:value`.
pub fn mlflow(a: &MlflowArgs) -> Result<(Option<Mlflow>, Vec<String>), ConfigError> {
    let Some(uri) = &a.mlflow_tracking_uri else {
        let given = [
            ("--mlflow-experiment", a.mlflow_experiment.is_some()),
            ("--mlflow-run-name", a.mlflow_run_name.is_some()),
            ("--mlflow-tag", !a.mlflow_tag.is_empty()),
            ("--mlflow-parent-run-id", a.mlflow_parent_run_id.is_some()),
            ("--mlflow-artifact-glob", !a.mlflow_artifact_glob.is_empty()),
        ];
        let w = given
            .iter()
            .filter(|(_, g)| *g)
            .map(|(f, _)| {
                format!("{f} has no effect: nothing goes to MLflow without --mlflow-tracking-uri")
            })
            .collect();
        return Ok((None, w));
    };
    let e = |e: ringperf_metrics::lab::mlflow::TrackerError| ConfigError::flag(e.to_string());
    let globs: Vec<String> = a
        .mlflow_artifact_glob
        .iter()
        .map(|g| g.trim().to_owned())
        .filter(|g| !g.is_empty())
        .collect();
    Ok((
        Some(Mlflow {
            uri: TrackingUri::parse(uri).map_err(e)?,
            experiment: a
                .mlflow_experiment
                .clone()
                .unwrap_or_else(|| DEFAULT_EXPERIMENT.to_owned()),
            run_name: a.mlflow_run_name.clone(),
            tags: ringperf_metrics::lab::mlflow::parse_tags(&a.mlflow_tag).map_err(e)?,
            parent_run_id: a.mlflow_parent_run_id.clone(),
            globs: if globs.is_empty() {
                DEFAULT_GLOBS.iter().map(|g| (*g).to_owned()).collect()
            } else {
                globs
            },
        }),
        Vec::new(),
    ))
}

/// `--wandb-*`: `None` without `--wandb-project`, whose companions are then warned.
pub fn wandb(a: &WandbArgs) -> (Option<ringperf_metrics::lab::wandb::Wandb>, Vec<String>) {
    let Some(project) = &a.wandb_project else {
        let given = [
            ("--wandb-entity", a.wandb_entity.is_some()),
            ("--wandb-run-name", a.wandb_run_name.is_some()),
            ("--wandb-tag", !a.wandb_tag.is_empty()),
        ];
        let w = given
            .iter()
            .filter(|(_, g)| *g)
            .map(|(f, _)| format!("{f} has no effect: nothing goes to W&B without --wandb-project"))
            .collect();
        return (None, w);
    };
    let w = ringperf_metrics::lab::wandb::Wandb {
        project: project.clone(),
        entity: a.wandb_entity.clone(),
        run_name: a.wandb_run_name.clone(),
        tags: a
            .wandb_tag
            .iter()
            .map(|t| t.trim().to_owned())
            .filter(|t| !t.is_empty())
            .collect(),
    };
    (Some(w), Vec::new())
}

/// `--otel-url` and its companions: `None` without `--otel-url`; a companion given without it
/// is refused, as AIPerf refuses it.
pub fn otel(
    a: &crate::cli::otel::OtelArgs,
) -> Result<Option<ringperf_metrics::lab::otel::Otel>, ConfigError> {
    use ringperf_metrics::lab::otel::{parse_resource, parse_stream, parse_url};
    let e = |e: ringperf_metrics::lab::otel::OtelError| ConfigError::flag(e.to_string());
    let Some(raw) = &a.otel_url else {
        let given: Vec<&str> = [
            ("--stream", !a.stream.is_empty()),
            (
                "--otel-resource-attributes",
                !a.otel_resource_attributes.is_empty(),
            ),
            ("--gen-ai-provider", a.gen_ai_provider.is_some()),
        ]
        .iter()
        .filter(|(_, g)| *g)
        .map(|(f, _)| *f)
        .collect();
        if given.is_empty() {
            return Ok(None);
        }
        return Err(ConfigError::flag(format!(
            "{} requires --otel-url to be set; OTel streaming is disabled when no OTLP endpoint \
             is configured.",
            given.join(", ")
        )));
    };
    let (url, host, path) = parse_url(raw).map_err(e)?;
    let (metrics, timing) = parse_stream(&a.stream).map_err(e)?;
    Ok(Some(ringperf_metrics::lab::otel::Otel {
        url,
        host,
        path,
        metrics,
        timing,
        resource: parse_resource(&a.otel_resource_attributes).map_err(e)?,
        provider: a.gen_ai_provider.clone(),
    }))
}

/// The run's URLs as the lifecycle calls need them.
pub fn servers(urls: &[BaseUrl]) -> Vec<Server> {
    urls.iter()
        .map(|u| Server {
            display: u.display.clone(),
            addr: u.addr,
            host: u.host_header.clone(),
            base_path: u.base_path.trim_end_matches('/').to_owned(),
            request_path: u.request_path.clone(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn resolve(line: &str) -> Result<Lifecycle, ConfigError> {
        let Command::Profile(p) = Cli::try_parse_from(line.split_whitespace())
            .expect("parses")
            .command
        else {
            panic!("profile")
        };
        lifecycle(&p.lifecycle, &[])
    }

    #[test]
    fn nothing_given_is_nothing_done() {
        assert_eq!(
            resolve("ringperf profile -m m").unwrap(),
            Lifecycle::default()
        );
    }

    #[test]
    fn a_companion_flag_alone_turns_its_hook_on_with_the_defaults_elsewhere() {
        let l = resolve("ringperf profile -m m --reset-kv-cache-path /r").unwrap();
        let r = l.reset.unwrap();
        assert_eq!(
            (r.path.as_str(), r.timeout),
            ("/r", Duration::from_secs(30))
        );
        assert!(l.profiler.is_none() && l.wait.is_none());
        let l = resolve("ringperf profile -m m --server-profiler-timeout-seconds 2.5").unwrap();
        let p = l.profiler.unwrap();
        assert_eq!(
            (p.start_path.as_str(), p.stop_path.as_str(), p.timeout),
            (
                "/start_profile",
                "/stop_profile",
                Duration::from_millis(2500)
            )
        );
        let l = resolve("ringperf profile -m m --reset-kv-cache").unwrap();
        assert_eq!(l.reset.unwrap().path, "/reset_prefix_cache");
    }

    #[test]
    fn the_wait_needs_a_positive_timeout_and_reads_its_mode_case_insensitively() {
        let l = resolve(
            "ringperf profile -m m --wait-for-model-timeout 3 --wait-for-model-mode BOTH \
             --wait-for-model-interval 0.25",
        )
        .unwrap();
        let w = l.wait.unwrap();
        assert_eq!(
            (w.timeout, w.interval, w.mode),
            (
                Duration::from_secs(3),
                Duration::from_millis(250),
                ringperf_metrics::lab::lifecycle::WaitMode::Both
            )
        );
        assert!(
            resolve("ringperf profile -m m --wait-for-model-interval 1")
                .unwrap()
                .wait
                .is_none()
        );
    }

    #[test]
    fn wait_companions_without_the_timeout_are_warned_once_each() {
        let args = |line: &str| {
            let Command::Profile(p) = Cli::try_parse_from(line.split_whitespace())
                .unwrap()
                .command
            else {
                panic!()
            };
            p.lifecycle
        };
        let w = unused(&args(
            "ringperf profile --wait-for-model-interval 1 --wait-for-model-mode models",
        ));
        assert_eq!(w.len(), 2, "{w:?}");
        assert!(w[0].starts_with("--wait-for-model-mode has no effect"));
        assert!(w[1].starts_with("--wait-for-model-interval has no effect"));
        assert!(
            unused(&args(
                "ringperf profile --wait-for-model-timeout 1 --wait-for-model-interval 1"
            ))
            .is_empty()
        );
        assert!(unused(&args("ringperf profile")).is_empty());
    }

    #[test]
    fn bad_values_are_flag_errors() {
        for (line, says) in [
            ("--wait-for-model-timeout -1", "--wait-for-model-timeout"),
            ("--wait-for-model-timeout nan", "--wait-for-model-timeout"),
            ("--wait-for-model-interval 0", "--wait-for-model-interval"),
            (
                "--reset-kv-cache-timeout-seconds 0",
                "--reset-kv-cache-timeout-seconds",
            ),
            (
                "--server-profiler-timeout-seconds inf",
                "--server-profiler-timeout-seconds",
            ),
            (
                "--reset-kv-cache-path reset",
                "endpoint.reset_kv_cache.path must be a relative path",
            ),
            (
                "--server-profiler-start-path http://x/start",
                "endpoint.server_profiler.start_path",
            ),
            (
                "--server-profiler-stop-path stop",
                "endpoint.server_profiler.stop_path",
            ),
        ] {
            let e = resolve(&format!("ringperf profile -m m {line}")).unwrap_err();
            assert!(e.message().contains(says), "{line}: {}", e.message());
        }
    }

    #[test]
    fn an_https_url_is_refused_with_a_hook_and_accepted_without() {
        let u = BaseUrl::parse("https://127.0.0.1:9/v1", "/chat/completions").unwrap();
        let Command::Profile(p) =
            Cli::try_parse_from("ringperf profile -m m --reset-kv-cache".split_whitespace())
                .unwrap()
                .command
        else {
            panic!()
        };
        let e = lifecycle(&p.lifecycle, std::slice::from_ref(&u)).unwrap_err();
        assert!(
            e.message().contains("https://127.0.0.1:9/v1"),
            "{}",
            e.message()
        );
        let Command::Profile(p) = Cli::try_parse_from(["ringperf", "profile"])
            .unwrap()
            .command
        else {
            panic!()
        };
        assert!(lifecycle(&p.lifecycle, &[u]).is_ok());
    }
}
