use super::*;
use serde_json::json;

fn cfg(s: &str) -> Result<Config, ConfigError> {
    let argv: Vec<String> = s.split_whitespace().map(str::to_string).collect();
    Config::from_plan(&crate::plan::Plan::parse(&argv).expect("parses"), false)
}

#[test]
fn default_stop_condition_is_ten_requests() {
    let c = cfg("ringperf profile -m m -u 127.0.0.1:1").unwrap();
    assert_eq!(c.profiling.request_count, Some(10));
    assert_eq!(c.profiling.load, Load::Concurrency(1));
    assert_eq!(c.profiling.grace, None);
    assert!(c.warmup.is_none());
    assert_eq!(c.artifact_dir, here("artifacts/m-openai-chat-concurrency1"));
}

#[test]
fn duration_mode_has_no_default_count_and_a_grace() {
    let c = cfg("ringperf profile -m m -u 127.0.0.1:1 --benchmark-duration 5").unwrap();
    assert_eq!(c.profiling.request_count, None);
    assert_eq!(c.profiling.duration, Some(Duration::from_secs(5)));
    assert_eq!(c.profiling.grace, Some(Duration::from_secs(30)));
    let c = cfg(
        "ringperf profile -m m -u 127.0.0.1:1 --benchmark-duration 5 --benchmark-grace-period inf",
    )
    .unwrap();
    assert_eq!(c.profiling.grace, None);
}

#[test]
fn rate_modes_and_artifact_names() {
    let c = cfg("ringperf profile -m org/model -u 127.0.0.1:1 --request-rate 10").unwrap();
    assert_eq!(
        c.profiling.load,
        Load::Rate {
            rate: 10.0,
            arrival: Arrival::Poisson,
            cap: None
        }
    );
    assert_eq!(
        c.artifact_dir,
        here("artifacts/org_model-openai-chat-request_rate10.0")
    );
    let c = cfg(
        "ringperf profile -m a -m b -u 127.0.0.1:1 --request-rate 2.5 --concurrency 4 \
                 --arrival-pattern constant --endpoint-type completions",
    )
    .unwrap();
    assert_eq!(
        c.profiling.load,
        Load::Rate {
            rate: 2.5,
            arrival: Arrival::Constant,
            cap: Some(4)
        }
    );
    assert_eq!(
        c.artifact_dir,
        here("artifacts/a_multi-openai-completions-concurrency4-request_rate2.5")
    );
    // Smoothness without a pattern selects gamma (docs/timing.md, "Rules between flags").
    let c = cfg("ringperf profile -m a -u 127.0.0.1:1 --request-rate 5 --arrival-smoothness 2")
        .unwrap();
    assert_eq!(
        c.profiling.load,
        Load::Rate {
            rate: 5.0,
            arrival: Arrival::Gamma { smoothness: 2.0 },
            cap: None
        }
    );
}

#[test]
fn warmup_inherits_pacing() {
    let c = cfg("ringperf profile -m a -u 127.0.0.1:1 --concurrency 8 --warmup-request-count 3")
        .unwrap();
    let w = c.warmup.unwrap();
    assert_eq!(w.load, Load::Concurrency(8));
    assert_eq!(w.request_count, Some(3));
    let c = cfg(
        "ringperf profile -m a -u 127.0.0.1:1 --request-rate 9 --arrival-pattern constant \
                 --concurrency 2 --warmup-request-count 3",
    )
    .unwrap();
    assert_eq!(
        c.warmup.unwrap().load,
        Load::Rate {
            rate: 9.0,
            arrival: Arrival::Constant,
            cap: Some(2)
        }
    );
    let c = cfg(
        "ringperf profile -m a -u 127.0.0.1:1 --concurrency 8 --warmup-request-count 3 \
                 --warmup-concurrency 2",
    )
    .unwrap();
    assert_eq!(c.warmup.unwrap().load, Load::Concurrency(2));
}

#[test]
fn headers_api_key_and_redaction() {
    let c = cfg("ringperf profile -m a -u 127.0.0.1:1 --api-key sk-SECRET -H X-A:1 -H Content-Type:text/plain")
        .unwrap();
    assert_eq!(
        c.headers,
        vec![
            ("X-A".to_string(), "1".to_string()),
            ("Authorization".to_string(), "Bearer sk-SECRET".to_string())
        ]
    );
    assert!(!c.cli_command.contains("sk-SECRET"), "{}", c.cli_command);
    assert!(c.cli_command.contains("--api-key '<redacted>'"));
    assert!(!c.input_config().to_string().contains("sk-SECRET"));
    let c = cfg("ringperf profile -m a -u 127.0.0.1:1 -H Authorization:Bearer_tok").unwrap();
    assert!(!c.cli_command.contains("Bearer_tok"), "{}", c.cli_command);
}

#[test]
fn extra_inputs_keep_json_types() {
    let c = cfg(
        "ringperf profile -m a -u 127.0.0.1:1 --extra-inputs temperature:0.7 ignore_eos:true \
                 --extra-inputs name:abc",
    )
    .unwrap();
    assert_eq!(c.extra_inputs["temperature"], json!(0.7));
    assert_eq!(c.extra_inputs["ignore_eos"], json!(true));
    assert_eq!(c.extra_inputs["name"], json!("abc"));
    let argv: Vec<String> = [
        "ringperf",
        "profile",
        "-m",
        "a",
        "-u",
        "127.0.0.1:1",
        "--extra-inputs",
        r#"{"top_p": 0.9}"#,
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let c = Config::from_plan(&crate::plan::Plan::parse(&argv).unwrap(), false).unwrap();
    assert_eq!(c.extra_inputs["top_p"], json!(0.9));
}

#[test]
fn bad_combinations_are_clear_errors() {
    let cases = [
        ("ringperf profile -u 127.0.0.1:1", "--model"),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --concurrency 0",
            "--concurrency",
        ),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --request-rate 0",
            "--request-rate",
        ),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --arrival-smoothness 2",
            "--request-rate",
        ),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --warmup-concurrency 2",
            "--warmup",
        ),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --endpoint-type image-edit \
             --request-content-type application/json",
            "endpoint type image_edit requires multipart/form-data",
        ),
        (
            "ringperf profile -m a -u ftp://x:1",
            "unsupported scheme `ftp`",
        ),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --extra-inputs novalue",
            "key:value",
        ),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --request-count 0",
            "--request-count",
        ),
    ];
    for (line, needle) in cases {
        let e = cfg(line).expect_err(line);
        assert!(e.message().contains(needle), "{line}: {e}");
    }
}

#[test]
fn tokenizer_defaults() {
    assert_eq!(
        cfg("ringperf profile -m mock-model -u 127.0.0.1:1")
            .unwrap()
            .tokenizer,
        "builtin"
    );
    assert_eq!(
        cfg("ringperf profile -m org/m -u 127.0.0.1:1")
            .unwrap()
            .tokenizer,
        "org/m"
    );
    assert_eq!(
        cfg("ringperf profile -m org/m -u 127.0.0.1:1 --tokenizer /t")
            .unwrap()
            .tokenizer,
        "/t"
    );
}

#[test]
fn workers_capped_by_concurrency() {
    assert_eq!(
        cfg("ringperf profile -m a -u 127.0.0.1:1 --concurrency 1 --workers-max 4")
            .unwrap()
            .workers,
        1
    );
    assert_eq!(
        cfg("ringperf profile -m a -u 127.0.0.1:1 --concurrency 9 --workers-max 3")
            .unwrap()
            .workers,
        3
    );
}

#[test]
fn server_metrics_flags() {
    let c = cfg(
        "ringperf profile -m m --server-metrics node1:8081 http://node1:8081/metrics/ \
                 http://b:2/x --server-metrics-formats jsonl json jsonl --slice-duration 2.5",
    )
    .unwrap();
    assert!(c.server_metrics.enabled);
    assert_eq!(
        c.server_metrics.extra_urls,
        vec!["http://node1:8081/metrics", "http://b:2/x/metrics"]
    );
    use ringperf_metrics::server_metrics::output::Format;
    assert_eq!(c.server_metrics.formats, vec![Format::Json, Format::Jsonl]);
    assert_eq!(
        c.slice_duration,
        Some(std::time::Duration::from_millis(2500))
    );
    // Defaults: on, JSON + CSV (AIPerf's), no timeslices; a bare --server-metrics is accepted.
    let d = cfg("ringperf profile -m m --server-metrics").unwrap();
    assert!(d.server_metrics.enabled && d.server_metrics.extra_urls.is_empty());
    assert_eq!(d.server_metrics.formats, vec![Format::Json, Format::Csv]);
    assert_eq!(d.slice_duration, None);
    assert!(
        !cfg("ringperf profile -m m --no-server-metrics")
            .unwrap()
            .server_metrics
            .enabled
    );
    let e = cfg("ringperf profile -m m --slice-duration 0").unwrap_err();
    assert!(e.message().contains("--slice-duration"), "{e}");
    let e = cfg("ringperf profile -m m --server-metrics ftp://x/metrics").unwrap_err();
    assert!(e.message().contains("http:// and https://"), "{e}");
    let https = cfg("ringperf profile -m m --server-metrics https://x:9/metrics").unwrap();
    assert_eq!(https.server_metrics.extra_urls, vec!["https://x:9/metrics"]);
}

#[test]
fn session_affinity_headers_follow_aiperf_env() {
    let none = |_: &str| None;
    assert_eq!(affinity_headers(none).unwrap(), vec!["X-Session-Affinity"]);
    let all_on = |k: &str| {
        Some(
            if k.contains("AFFINITY") {
                "false"
            } else {
                "TRUE"
            }
            .to_string(),
        )
    };
    assert_eq!(
        affinity_headers(all_on).unwrap(),
        vec!["X-Session-ID", "X-SMG-Routing-Key", "X-Dynamo-Session-ID"]
    );
    let bad = |k: &str| k.contains("SMG").then(|| "maybe".to_string());
    assert!(affinity_headers(bad).unwrap_err().message().contains("SMG"));
}

#[test]
fn input_group_builds_a_load_spec() {
    use ringperf_wire::conversation::Sampling;
    use ringperf_workload::workload::loader::{DatasetKind, Source};
    let c = cfg("ringperf profile -m m -u 127.0.0.1:1").unwrap();
    assert_eq!(c.input.load, None, "synthetic by default");
    assert_eq!(c.input.sampling_for(Sampling::Shuffle), Sampling::Shuffle);
    let c = cfg(
        "ringperf profile -m m -u 127.0.0.1:1 --input-file t.jsonl --custom-dataset-type \
         mooncake-trace --isl-block-size 16 --ignore-trace-delays --random-seed 3 \
         --dataset-sampling-strategy random --allow-dataset-wrap",
    )
    .unwrap();
    let spec = c.input.load.as_ref().expect("a file dataset");
    assert_eq!(
        spec.source,
        Source::File {
            path: PathBuf::from("t.jsonl"),
            kind: Some(DatasetKind::MooncakeTrace)
        }
    );
    assert_eq!(
        (spec.block_size, spec.seed, spec.seeded),
        (Some(16), 3, true)
    );
    assert!(spec.ignore_trace_delays && spec.system_message && !spec.osl_given);
    assert_eq!(c.input.sampling_for(Sampling::Sequential), Sampling::Random);
    let d = &c.input_config()["datasets"][0];
    assert_eq!(d["type"], "file");
    assert_eq!(d["path"], "t.jsonl");
    assert_eq!(d["format"], "mooncake_trace");
    assert_eq!(d["sampling"], "random");
    assert_eq!(d["block_size"], 16);
    assert_eq!(d["ignore_trace_delays"], true);
    assert_eq!(d["synthesis"]["allow_dataset_wrap"], true);
    // Without a type, the file decides at load; without a seed, session ids are UUIDs.
    let c = cfg(
        "ringperf profile -m m -u 127.0.0.1:1 --input-file t.jsonl --endpoint-type completions",
    )
    .unwrap();
    let spec = c.input.load.as_ref().unwrap();
    assert!(matches!(spec.source, Source::File { kind: None, .. }));
    assert!(!spec.seeded && !spec.system_message);
    assert_eq!(spec.block_size, None);
    // ShareGPT, with or without a local path.
    let c = cfg("ringperf profile -m m -u 127.0.0.1:1 --public-dataset sharegpt --osl 20").unwrap();
    let spec = c.input.load.as_ref().unwrap();
    assert_eq!(spec.source, Source::ShareGpt { input_file: None });
    assert!(spec.osl_given);
    assert_eq!(c.input_config()["datasets"][0]["dataset"], "sharegpt");
}

#[test]
fn input_group_cross_flag_rules() {
    let base = "ringperf profile -m m -u 127.0.0.1:1";
    let e = |flags: &str| cfg(&format!("{base} {flags}")).unwrap_err().to_string();
    assert!(e("--custom-dataset-type single_turn").contains("needs --input-file"));
    assert!(
        e("--public-dataset sharegpt --custom-dataset-type single_turn --input-file x")
            .contains("mutually exclusive")
    );
    let msg = e("--input-file x --custom-dataset-type dag_jsonl --system-prompt hi");
    assert!(
        msg.contains("--system-prompt and --system-prompt-file are not supported with dag_jsonl"),
        "{msg}"
    );
    let msg = e("--input-file x --custom-dataset-type dag_jsonl --endpoint-type completions");
    assert!(
        msg.contains("which endpoint type completions does not send"),
        "{msg}"
    );
    let msg = e("--input-file x --custom-dataset-type speed_bench_quiz");
    assert!(
        msg.contains("speed_bench_quiz is not an AIPerf dataset type"),
        "{msg}"
    );
    // The baseten_trace flags, with AIPerf's refusals.
    assert_eq!(
        e("--omit-kv-hints --no-force-min-tokens"),
        "--omit-kv-hints, --no-force-min-tokens is only supported by the baseten_trace loader; \
         provide --input-file and --custom-dataset-type baseten_trace."
    );
    assert_eq!(
        e("--input-file x --custom-dataset-type mooncake_trace --open-loop-strict"),
        "--open-loop-strict is only supported by the baseten_trace loader, but \
         --custom-dataset-type is mooncake_trace."
    );
    let bt = "--input-file x --custom-dataset-type baseten_trace";
    assert!(
        e(&format!("{bt} --open-loop-strict --no-open-loop-replay"))
            .starts_with("--open-loop-strict requires open-loop replay")
    );
    for r in ["0", "1.5", "-1"] {
        assert!(
            e(&format!("{bt} --trace-session-sample-ratio {r}"))
                .contains("must be greater than 0 and at most 1")
        );
    }
    assert!(e(&format!("{bt} --max-idle-gap-cap-seconds 0")).contains("greater than 0"));
    let c = cfg(&format!(
        "{base} {bt} --no-open-loop-replay --max-idle-gap-cap-seconds 5 \
         --inter-turn-delay-cap-seconds 2 --trace-session-sample-ratio 0.5"
    ))
    .unwrap();
    let p = &c.input.load.as_ref().unwrap().baseten;
    assert!(!p.open_loop && p.force_min_tokens && !p.omit_kv_hints);
    assert_eq!(
        (p.sample_ratio, p.idle_gap_cap_s, p.delay_cap_s),
        (Some(0.5), Some(5.0), Some(2.0))
    );
    let d = &c.input_config()["datasets"][0];
    assert_eq!(d["open_loop_replay"], false);
    assert_eq!(d["trace_session_sample_ratio"], 0.5);
    // SPEED-Bench's formats are read (the file's existence is the run's to check).
    assert!(
        cfg(&format!(
            "{base} --input-file x --custom-dataset-type speed-bench-qa"
        ))
        .is_ok()
    );
    assert!(e("--input-file x --custom-dataset-type csv").contains("not an AIPerf dataset type"));
    let msg = e("--public-dataset mmstar");
    assert!(
        msg.contains("mmstar") && msg.contains("needs a download"),
        "{msg}"
    );
    assert!(e("--public-dataset vision-arena").contains("needs a download"));
    assert!(e("--public-dataset nope").contains("not an AIPerf public dataset"));
    assert!(e("--input-file x --prompt-input-tokens-block-size 0").contains("at least 1"));
    let wrap = |flags: &str| {
        cfg(&format!("{base} {flags}"))
            .unwrap()
            .input
            .allow_dataset_wrap
    };
    assert!(!wrap("--allow-dataset-wrap --no-allow-dataset-wrap"));
    assert!(wrap("--no-allow-dataset-wrap --allow-dataset-wrap"));
}

mod timing_flags {
    use super::*;
    use crate::config::timing::{Mode, check_user_centric_turns, promote_trace};
    use ringperf_workload::schedule::{FixedSchedule, Window};

    const BASE: &str = "ringperf profile -m m -u 127.0.0.1:1";

    fn ok(extra: &str) -> Config {
        cfg(&format!("{BASE} {extra}")).unwrap_or_else(|e| panic!("{extra}: {e}"))
    }

    fn bad(extra: &str, needle: &str) {
        let e = cfg(&format!("{BASE} {extra}")).expect_err(extra);
        assert!(e.message().contains(needle), "{extra}: {e}");
    }

    #[test]
    fn fixed_schedule_resolves_like_aiperf() {
        let c = ok("--fixed-schedule");
        let Mode::FixedSchedule(fs) = c.profiling.timing.mode else {
            panic!("not fixed")
        };
        assert_eq!(
            fs,
            FixedSchedule {
                auto_offset: true,
                window: Window::default(),
                speedup: 1.0
            }
        );
        // The whole trace unless a count or duration is given.
        assert_eq!(c.profiling.request_count, None);
        assert_eq!(c.profiling.load.max_in_flight(), None);
        assert_eq!(
            c.artifact_dir,
            here("artifacts/m-openai-chat-fixed_schedule")
        );
        let c = ok(
            "--fixed-schedule --fixed-schedule-start-offset 100 --fixed-schedule-end-offset 100 \
             --replay-speedup 2.5 --concurrency 4 --request-count 7",
        );
        let Mode::FixedSchedule(fs) = c.profiling.timing.mode else {
            panic!("not fixed")
        };
        assert!(!fs.auto_offset, "a start offset turns auto-offset off");
        assert_eq!(fs.window.start_ms, Some(100));
        assert_eq!(fs.window.end_ms, Some(100));
        assert_eq!(fs.speedup, 2.5);
        assert_eq!(c.profiling.load.max_in_flight(), Some(4));
        assert_eq!(c.profiling.request_count, Some(7));
        let phases = c.input_config()["phases"].clone();
        assert_eq!(phases[0]["type"], "fixed_schedule");
        assert_eq!(phases[0]["start_offset"], 100);
    }

    #[test]
    fn fixed_schedule_bad_combinations() {
        bad("--fixed-schedule-start-offset 5", "need --fixed-schedule");
        bad("--fixed-schedule-auto-offset", "need --fixed-schedule");
        bad(
            "--fixed-schedule --fixed-schedule-auto-offset --fixed-schedule-start-offset 5",
            "mutually exclusive",
        );
        bad(
            "--fixed-schedule --fixed-schedule-start-offset 9 --fixed-schedule-end-offset 5",
            "must be at most",
        );
        bad("--fixed-schedule --request-rate 5", "--request-rate cannot");
        bad(
            "--fixed-schedule --user-centric-rate 5 --num-users 2",
            "--user-centric-rate cannot",
        );
        bad(
            "--fixed-schedule --arrival-smoothness 2",
            "--arrival-smoothness cannot",
        );
        bad(
            "--fixed-schedule --num-users 2",
            "--num-users needs --user-centric-rate",
        );
        bad("--fixed-schedule --no-fixed-schedule", "contradict");
        bad(
            "--replay-speedup 2",
            "--replay-speedup needs --fixed-schedule",
        );
        bad("--fixed-schedule --replay-speedup 0", "positive");
        bad("--fixed-schedule --replay-speedup=-1", "positive");
        bad(
            "--fixed-schedule --request-rate-ramp-duration 3",
            "needs rate pacing",
        );
    }

    #[test]
    fn trace_auto_promotion() {
        let argv: Vec<String> = BASE.split_whitespace().map(str::to_string).collect();
        let parse = |extra: &str| {
            let mut a = argv.clone();
            a.extend(extra.split_whitespace().map(str::to_string));
            let plan = crate::plan::Plan::parse(&a).unwrap();
            let c = Config::from_plan(&plan, false).unwrap();
            (plan.settings, c)
        };
        let (p, mut c) = parse("--concurrency 3");
        assert!(promote_trace(&p, &mut c.profiling, true, 42).unwrap());
        assert!(matches!(c.profiling.timing.mode, Mode::FixedSchedule(_)));
        assert_eq!(c.profiling.request_count, Some(42));
        assert_eq!(c.profiling.load.max_in_flight(), Some(3));
        let (p, mut c) = parse("--no-fixed-schedule");
        assert!(!promote_trace(&p, &mut c.profiling, true, 42).unwrap());
        assert_eq!(c.profiling.timing.mode, Mode::Load);
        let (p, mut c) = parse("");
        assert!(!promote_trace(&p, &mut c.profiling, false, 42).unwrap());
        let (p, mut c) = parse("--request-rate 5");
        let e = promote_trace(&p, &mut c.profiling, true, 42).unwrap_err();
        assert!(
            e.message().contains("--request-rate") && e.message().contains("--no-fixed-schedule"),
            "{e}"
        );
        // An explicit --fixed-schedule takes its default count from the records too.
        let (p, mut c) = parse("--fixed-schedule");
        assert!(!promote_trace(&p, &mut c.profiling, true, 9).unwrap());
        assert_eq!(c.profiling.request_count, Some(9));
    }

    #[test]
    fn user_centric_resolves_and_rejects() {
        let c =
            ok("--user-centric-rate 2.5 --num-users 4 --concurrency 3 --conversation-turn-mean 2");
        assert_eq!(
            c.profiling.timing.mode,
            Mode::UserCentric {
                rate: 2.5,
                users: 4
            }
        );
        assert_eq!(c.profiling.request_count, Some(10));
        assert_eq!(c.profiling.load.max_in_flight(), Some(3));
        assert!(
            c.artifact_dir.to_string_lossy().contains("user_centric"),
            "{}",
            c.artifact_dir.display()
        );
        assert!(check_user_centric_turns(&c.profiling.timing, 1.0).is_err());
        assert!(check_user_centric_turns(&c.profiling.timing, 2.0).is_ok());
        bad("--num-users 3", "--num-users needs --user-centric-rate");
        bad("--user-centric-rate 2", "needs --num-users");
        bad(
            "--user-centric-rate 2 --num-users 2",
            "needs multi-turn sessions",
        );
        bad("--user-centric-rate 0 --num-users 2", "positive");
        bad("--user-centric-rate 2 --num-users 0", "at least 1");
        bad(
            "--user-centric-rate 2 --num-users 20",
            "--request-count (10) must be at least",
        );
        bad(
            "--user-centric-rate 2 --num-users 2 --request-rate 3",
            "pass only one",
        );
        bad(
            "--user-centric-rate 2 --num-users 2 --arrival-smoothness 2",
            "--arrival-smoothness",
        );
        bad(
            "--user-centric-rate 2 --num-users 2 --arrival-pattern poisson",
            "--arrival-pattern",
        );
    }

    #[test]
    fn prefill_concurrency_resolves_and_rejects() {
        let c = ok("--streaming --concurrency 4 --prefill-concurrency 2 --warmup-request-count 3");
        assert_eq!(c.profiling.timing.prefill_concurrency, Some(2));
        assert_eq!(c.warmup.unwrap().timing.prefill_concurrency, Some(2));
        let c = ok(
            "--streaming --concurrency 4 --prefill-concurrency 2 --warmup-request-count 3 \
                    --warmup-prefill-concurrency 1",
        );
        assert_eq!(c.warmup.unwrap().timing.prefill_concurrency, Some(1));
        bad(
            "--concurrency 2 --prefill-concurrency 3",
            "at most the concurrency (2)",
        );
        bad("--prefill-concurrency 0", "at least 1");
        bad(
            "--concurrency 2 --warmup-request-count 3 --warmup-prefill-concurrency 5",
            "--warmup-prefill-concurrency (5)",
        );
    }

    #[test]
    fn ramps_resolve_and_reject() {
        let c =
            ok("--request-rate 10 --request-rate-ramp-duration 2.5 --concurrency-ramp-duration 1");
        assert_eq!(
            c.profiling.timing.rate_ramp,
            Some(Duration::from_millis(2500))
        );
        assert_eq!(
            c.profiling.timing.concurrency_ramp,
            Some(Duration::from_secs(1))
        );
        let c = ok("--concurrency 8 --concurrency-ramp-duration 4");
        assert_eq!(
            c.profiling.timing.concurrency_ramp,
            Some(Duration::from_secs(4))
        );
        let c = ok(
            "--user-centric-rate 2 --num-users 2 --request-rate-ramp-duration 3 --conversation-turn-mean 2",
        );
        assert_eq!(c.profiling.timing.rate_ramp, Some(Duration::from_secs(3)));
        bad("--request-rate-ramp-duration 3", "needs rate pacing");
        bad(
            "--concurrency-ramp-duration 0",
            "positive number of seconds",
        );
        bad(
            "--request-rate 2 --request-rate-ramp-duration=-1",
            "positive number of seconds",
        );
        bad(
            "--request-rate 2 --request-rate-ramp-duration nan",
            "positive number of seconds",
        );
    }

    #[test]
    fn warmup_ramps_inherit_and_reject() {
        let c = ok(
            "--request-rate 10 --request-rate-ramp-duration 2 --concurrency-ramp-duration 3 \
             --warmup-request-count 5",
        );
        let w = c.warmup.unwrap();
        assert_eq!(w.timing.rate_ramp, Some(Duration::from_secs(2)));
        assert_eq!(w.timing.concurrency_ramp, Some(Duration::from_secs(3)));
        assert_eq!(w.timing.cancellation, None);
        let c = ok(
            "--request-rate 10 --request-rate-ramp-duration 2 --warmup-request-count 5 \
             --warmup-request-rate-ramp-duration 1 --warmup-concurrency-ramp-duration 0.5",
        );
        let w = c.warmup.unwrap();
        assert_eq!(w.timing.rate_ramp, Some(Duration::from_secs(1)));
        assert_eq!(w.timing.concurrency_ramp, Some(Duration::from_millis(500)));
        // A closed-loop warmup drops an inherited rate ramp but refuses an explicit one.
        let c = ok(
            "--user-centric-rate 2 --num-users 2 --request-rate-ramp-duration 2 \
             --warmup-request-count 5 --concurrency 3 --conversation-turn-mean 2",
        );
        let w = c.warmup.unwrap();
        assert_eq!(w.load, Load::Concurrency(3));
        assert_eq!(w.timing.rate_ramp, None);
        bad(
            "--warmup-request-count 5 --warmup-request-rate-ramp-duration 1",
            "needs a rate-paced warmup",
        );
        bad(
            "--warmup-concurrency-ramp-duration 1",
            "need --warmup-request-count",
        );
        // A replay's warmup is closed-loop at --concurrency.
        let c = ok("--fixed-schedule --warmup-request-count 2");
        assert_eq!(c.warmup.unwrap().load, Load::Concurrency(1));
    }

    #[test]
    fn cancellation_resolves_and_rejects() {
        let c = ok(
            "--request-cancellation-rate 12.5 --request-cancellation-delay 0.25 --warmup-request-count 3",
        );
        let k = c.profiling.timing.cancellation.unwrap();
        assert_eq!(k.rate_pct, 12.5);
        assert_eq!(k.delay, Duration::from_millis(250));
        assert_eq!(c.warmup.unwrap().timing.cancellation, None);
        let c = ok("--request-cancellation-rate 100");
        assert_eq!(
            c.profiling.timing.cancellation.unwrap().delay,
            Duration::ZERO
        );
        bad(
            "--request-cancellation-delay 1",
            "needs --request-cancellation-rate",
        );
        bad("--request-cancellation-rate 0", "(0, 100]");
        bad("--request-cancellation-rate 101", "(0, 100]");
        bad(
            "--request-cancellation-rate 5 --request-cancellation-delay=-1",
            "non-negative",
        );
    }
}

#[test]
fn a_timestamped_trace_file_is_replayed_on_a_fixed_schedule() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(
        &trace,
        "{\"timestamp\": 0, \"text_input\": \"a\"}\n\n{\"timestamp\": 5, \"text_input\": \"b\"}\n",
    )
    .unwrap();
    let untimed = dir.path().join("u.jsonl");
    std::fs::write(&untimed, "{\"text_input\": \"a\"}\n").unwrap();
    let base = format!(
        "ringperf profile -m m -u 127.0.0.1:1 --input-file {}",
        trace.display()
    );
    let c = cfg(&format!(
        "{base} --custom-dataset-type mooncake_trace --ignore-trace-delays"
    ))
    .unwrap();
    assert!(matches!(
        c.profiling.timing.mode,
        timing::Mode::FixedSchedule(_)
    ));
    assert_eq!(
        c.profiling.request_count,
        Some(2),
        "the trace's record count"
    );
    assert!(
        !c.input.load.as_ref().unwrap().ignore_trace_delays,
        "timestamps drive a fixed schedule"
    );
    // Detected as a trace too; --no-fixed-schedule keeps the load mode.
    let c = cfg(&base).unwrap();
    assert!(matches!(
        c.profiling.timing.mode,
        timing::Mode::FixedSchedule(_)
    ));
    let c = cfg(&format!("{base} --no-fixed-schedule --ignore-trace-delays")).unwrap();
    assert!(matches!(c.profiling.timing.mode, timing::Mode::Load));
    assert!(c.input.load.as_ref().unwrap().ignore_trace_delays);
    let e = cfg(&format!("{base} --request-rate 5")).unwrap_err();
    assert!(e.to_string().contains("--no-fixed-schedule"), "{e}");
    // No timestamp in the first record, or not a trace type: no promotion.
    let c = cfg(&format!(
        "ringperf profile -m m -u 127.0.0.1:1 --input-file {}",
        untimed.display()
    ))
    .unwrap();
    assert!(matches!(c.profiling.timing.mode, timing::Mode::Load));
    let c = cfg(&format!("{base} --custom-dataset-type single_turn")).unwrap();
    assert!(matches!(c.profiling.timing.mode, timing::Mode::Load));
}

#[test]
fn echoed_command_line_quotes_strings_but_not_numbers_as_aiperf_does() {
    // AIPerf 0.13's own echo of this command (tests/data/aiperf-input-config/exp_b3.json's run):
    // aiperf profile --model 'mock-model' ... --ui-type None --streaming --benchmark-duration 1
    // --benchmark-grace-period 2 --concurrency 2 --profile-export-prefix 'foo' --random-seed 7
    // --slice-duration 0.3
    let argv: Vec<String> = "ringperf profile --model mock-model --ui-type None --streaming \
         --benchmark-duration 1 --benchmark-grace-period 2 --concurrency 2 \
         --profile-export-prefix foo --random-seed 7 --slice-duration 0.3 --isl 08 --osl 5."
        .split_whitespace()
        .map(str::to_string)
        .collect();
    assert_eq!(
        redact_command(&argv, &[]),
        "ringperf profile --model 'mock-model' --ui-type None --streaming --benchmark-duration 1 \
         --benchmark-grace-period 2 --concurrency 2 --profile-export-prefix 'foo' --random-seed 7 \
         --slice-duration 0.3 --isl '08' --osl 5.0"
    );
}

/// `--help` marks which endpoint types ringperf rejects; the mark and the run-time behaviour
/// agree for every type clap offers.
#[test]
fn help_marks_exactly_the_endpoint_types_that_are_rejected() {
    use clap::ValueEnum;
    for v in crate::cli::EndpointTypeArg::value_variants() {
        let pv = v.to_possible_value().unwrap();
        let name = pv.get_name();
        let marked = pv
            .get_help()
            .is_some_and(|h| h.to_string().contains("rejected"));
        // Each type with what it needs to be accepted: a template, or a dataset for raw bodies.
        let extra = match name {
            "template" => " --extra-inputs payload_template:{\"x\":1}",
            _ => "",
        };
        let got = cfg(&format!(
            "ringperf profile --endpoint-type {name} -m m{extra}"
        ));
        let rejected_as_unsupported =
            matches!(&got, Err(e) if e.to_string().contains("is not supported by ringperf"));
        assert_eq!(marked, rejected_as_unsupported, "{name}: {got:?}");
    }
}

#[test]
fn repeated_runs_get_a_consistent_seed() {
    let base = "ringperf profile -m m -u 127.0.0.1:1";
    // One run: the seed stays unset (drawn, not echoed).
    let one = cfg(base).unwrap();
    assert!(!one.seed_given);
    assert_eq!(one.multi_run.runs, 1);
    // Repeated: AIPerf's --set-consistent-seed default gives 42.
    let three = cfg(&format!("{base} --num-profile-runs 3")).unwrap();
    assert_eq!((three.seed, three.seed_given), (42, true));
    // As AIPerf: the run uses it (run_info), the echo of the command line does not show it.
    assert!(
        three.input_config()["datasets"][0]
            .get("random_seed")
            .is_none()
    );
    let given = cfg(&format!("{base} --num-profile-runs 3 --random-seed 7")).unwrap();
    assert_eq!(given.seed, 7);
    assert_eq!(given.input_config()["datasets"][0]["random_seed"], 7);
    let off = cfg(&format!(
        "{base} --num-profile-runs 3 --no-set-consistent-seed"
    ))
    .unwrap();
    assert!(!off.seed_given);
    // The last of a --flag / --no-flag pair wins.
    let back = cfg(&format!(
        "{base} --num-profile-runs 3 --no-set-consistent-seed --set-consistent-seed"
    ))
    .unwrap();
    assert_eq!(back.seed, 42);
    let warm = cfg(&format!(
        "{base} --num-profile-runs 2 --no-profile-run-disable-warmup-after-first"
    ))
    .unwrap();
    assert!(!warm.multi_run.warmup_first_run_only);
    let e = cfg(&format!(
        "{base} --num-profile-runs 2 --shard-count 2 --start-at 2026-11-23T10:00:00Z"
    ))
    .unwrap_err();
    assert!(e.message().contains("--shard-count"), "{e}");
}
#[test]
fn gpu_telemetry_urls_are_the_defaults_then_the_named_ones() {
    use crate::config::gpu_telemetry;
    let given = |v: &[&str]| -> Vec<String> { v.iter().map(|s| (*s).to_owned()).collect() };
    let g = gpu_telemetry(None, false).unwrap();
    assert!(g.enabled && !g.dashboard);
    assert_eq!(
        g.urls,
        [
            "http://localhost:9400/metrics",
            "http://localhost:9401/metrics"
        ]
    );
    let g = gpu_telemetry(
        Some(&given(&[
            "node1:9401",
            "dashboard",
            "http://localhost:9400/metrics/",
        ])),
        false,
    )
    .unwrap();
    assert!(g.dashboard);
    assert_eq!(
        g.urls,
        [
            "http://localhost:9400/metrics",
            "http://localhost:9401/metrics",
            "http://node1:9401/metrics"
        ]
    );
    assert!(!gpu_telemetry(None, true).unwrap().enabled);
    let e = gpu_telemetry(Some(&given(&["node1:9401"])), true).unwrap_err();
    assert!(e.to_string().starts_with("Cannot use both"), "{e}");
    for bad in [
        "pynvml",
        "AMDSMI",
        "metrics.csv",
        "ftp://h/metrics",
        "node1",
    ] {
        let e = gpu_telemetry(Some(&given(&[bad])), false).unwrap_err();
        assert!(
            e.to_string()
                .starts_with(&format!("--gpu-telemetry {bad}:")),
            "{e}"
        );
    }
}

/// The rules called directly with a chosen [`Environment`]: what the process gives them.
mod with_an_environment {
    use std::collections::BTreeMap;
    use std::path::PathBuf;

    use super::*;
    use crate::cli::UiTypeArg;

    const BASE: &str = "ringperf profile -m m -u 127.0.0.1:1";
    const SPLIT: &str = "--shard-count 2 --start-at 1795428000000000000 --concurrency 2";

    fn resolve(flags: &str, env: &Environment) -> Result<Config, ConfigError> {
        let line = format!("{BASE} {flags}");
        let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
        Config::resolve(
            &crate::plan::Plan::parse(&argv).expect("parses"),
            false,
            env,
        )
    }

    fn vars(pairs: &[(&str, &str)]) -> Environment {
        Environment {
            vars: pairs
                .iter()
                .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
                .collect(),
            ..Environment::default()
        }
    }

    #[test]
    fn the_drawn_seed_is_used_only_when_no_rule_gives_one() {
        let env = Environment {
            drawn_seed: 987_654_321,
            ..Environment::default()
        };
        let seed = |flags: &str| {
            let c = resolve(flags, &env).unwrap();
            (c.seed, c.seed_given)
        };
        assert_eq!(seed(""), (987_654_321, false));
        assert_eq!(seed("--random-seed 5"), (5, true));
        assert_eq!(seed("--num-profile-runs 3"), (42, true));
        assert_eq!(
            seed(&format!("{SPLIT} --shard-index 1")),
            (
                ringperf_workload::schedule::child_seed(1_795_428_000_000_000_000, "shard"),
                false
            )
        );
        assert_eq!(
            seed(&format!("{SPLIT} --shard-index 1 --random-seed 5")),
            (5, true)
        );
    }

    #[test]
    fn environment_variables_reach_the_config() {
        let c = resolve("", &Environment::default()).unwrap();
        assert_eq!(c.connection_limit, 2_500);
        assert_eq!(c.video_poll_interval, Duration::from_millis(100));
        assert_eq!(c.tls, TlsSettings::default());
        assert_eq!(c.correlation_copies, ["X-Session-Affinity"]);
        let env = vars(&[
            ("AIPERF_HTTP_CONNECTION_LIMIT", "16"),
            ("AIPERF_HTTP_SSL_VERIFY", "false"),
            ("SSL_CERT_FILE", "/etc/ca.pem"),
            ("AIPERF_HTTP_X_SESSION_AFFINITY_FROM_CORRELATION_ID", "off"),
            ("AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID", "true"),
            ("JOB_COMPLETION_INDEX", "1"),
            ("AIPERF_HTTP_VIDEO_POLL_INTERVAL", "0.25"),
        ]);
        let c = resolve(SPLIT, &env).unwrap();
        assert_eq!(c.connection_limit, 16);
        assert_eq!(c.video_poll_interval, Duration::from_millis(250));
        assert_eq!(
            c.tls,
            TlsSettings {
                verify: false,
                ca_file: Some(PathBuf::from("/etc/ca.pem")),
            }
        );
        assert_eq!(c.correlation_copies, ["X-Session-ID"]);
        assert_eq!(
            c.shard.shard,
            ringperf_workload::schedule::Shard::new(1, 2).unwrap()
        );
    }

    #[test]
    fn a_bad_variable_is_an_environment_error_after_every_flag_error() {
        for (var, value, message) in [
            (
                "AIPERF_HTTP_CONNECTION_LIMIT",
                "0",
                "AIPERF_HTTP_CONNECTION_LIMIT=0: expected a whole number from 1 to 65000",
            ),
            (
                "AIPERF_HTTP_SSL_VERIFY",
                "maybe",
                "AIPERF_HTTP_SSL_VERIFY=maybe: expected true or false",
            ),
            (
                "AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID",
                "2",
                "AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID=2: expected true or false",
            ),
            (
                "AIPERF_HTTP_VIDEO_POLL_INTERVAL",
                "0",
                "AIPERF_HTTP_VIDEO_POLL_INTERVAL=0: expected a number of seconds from 0.001 to 10",
            ),
        ] {
            let env = vars(&[(var, value)]);
            let e = resolve("", &env).unwrap_err();
            assert_eq!(
                (e.kind(), e.to_string().as_str()),
                (ErrorKind::Environment, message)
            );
            // A flag error is reported first.
            let e = resolve("--concurrency 0", &env).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Flag, "{e}");
        }
        let env = vars(&[("JOB_COMPLETION_INDEX", "x")]);
        let e = resolve(SPLIT, &env).unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            (
                ErrorKind::Environment,
                "JOB_COMPLETION_INDEX=\"x\" is not a shard index (a whole number)"
            )
        );
    }

    #[test]
    fn workers_default_to_the_cores_capped_by_the_concurrency() {
        let env = Environment {
            cores: 3,
            ..Environment::default()
        };
        let workers = |flags: &str| resolve(flags, &env).unwrap().workers;
        assert_eq!(workers("--concurrency 8"), 3);
        assert_eq!(workers("--concurrency 2"), 2);
        assert_eq!(workers("--concurrency 8 --workers-max 5"), 5);
        assert_eq!(workers("--request-rate 10"), 3);
        // A shard runs its share of the concurrency: 3 of 5 for shard 0 of 2.
        let split = "--shard-count 2 --shard-index 0 --start-at 1795428000000000000";
        assert_eq!(workers(&format!("{split} --concurrency 5")), 3);
        assert_eq!(workers(&format!("{split} --concurrency 4")), 2);
    }

    #[test]
    fn the_system_prompt_file_is_the_text_read_at_the_edge() {
        let path = PathBuf::from("/p/sys.txt");
        let with = |read: std::io::Result<String>| Environment {
            files: BTreeMap::from([(path.clone(), read)]),
            ..Environment::default()
        };
        let flags = "--system-prompt-file /p/sys.txt";
        let c = resolve(flags, &with(Ok("Be brief.".into()))).unwrap();
        assert_eq!(c.prompt.shaping.system_prompt.as_deref(), Some("Be brief."));
        let denied = std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied");
        let e = resolve(flags, &with(Err(denied))).unwrap_err();
        assert_eq!(
            (e.kind(), e.to_string().as_str()),
            (
                ErrorKind::File,
                "--system-prompt-file /p/sys.txt: cannot be read as UTF-8 text: denied"
            )
        );
        let e = resolve(flags, &with(Ok(" \n".into()))).unwrap_err();
        assert!(e.message().contains("is empty or whitespace only"), "{e}");
        let e = resolve(flags, &Environment::default()).unwrap_err();
        assert!(
            e.kind() == ErrorKind::File && e.message().contains("cannot be read"),
            "{e}"
        );
    }

    #[test]
    fn a_trace_seen_at_the_edge_switches_to_a_fixed_schedule() {
        let with = |trace| Environment {
            trace,
            ..Environment::default()
        };
        let flags = "--input-file /d/t.jsonl";
        let c = resolve(flags, &with(Some((true, 7)))).unwrap();
        assert!(matches!(
            c.profiling.timing.mode,
            timing::Mode::FixedSchedule(_)
        ));
        assert_eq!(c.profiling.request_count, Some(7));
        for (flags, trace) in [
            (flags, Some((false, 7))),
            (flags, None),
            // A public dataset is no trace, whatever the edge saw.
            (
                "--public-dataset sharegpt --input-file /d/t.jsonl",
                Some((true, 7)),
            ),
        ] {
            let c = resolve(flags, &with(trace)).unwrap();
            assert!(
                matches!(c.profiling.timing.mode, timing::Mode::Load),
                "{flags} {trace:?}"
            );
        }
    }

    #[test]
    fn a_payload_template_file_is_the_text_read_at_the_edge() {
        let env = Environment {
            template_files: BTreeMap::from([
                ("/t/good".to_string(), "prompt={{text}}".to_string()),
                ("/t/bad".to_string(), "{{text".to_string()),
            ]),
            ..Environment::default()
        };
        let template = "--endpoint-type template --extra-inputs";
        let c = resolve(&format!("{template} payload_template:/t/good"), &env).unwrap();
        assert!(c.payload_template.is_some());
        assert!(!c.extra_inputs.contains_key("payload_template"));
        let e = resolve(&format!("{template} payload_template:/t/bad"), &env).unwrap_err();
        assert!(
            e.message().starts_with(
                "--extra-inputs payload_template: the payload template does not compile"
            ),
            "{e}"
        );
    }

    #[test]
    fn ui_follows_the_flag_and_the_terminal() {
        for (arg, tty, ui) in [
            (None, true, UiType::Progress),
            (None, false, UiType::None),
            (Some(UiTypeArg::Dashboard), true, UiType::Dashboard),
            (Some(UiTypeArg::Dashboard), false, UiType::Lines),
            (Some(UiTypeArg::Simple), true, UiType::Progress),
            (Some(UiTypeArg::Simple), false, UiType::Lines),
            (Some(UiTypeArg::None), true, UiType::None),
        ] {
            assert_eq!(resolve::ui_type(arg, tty), ui, "{arg:?} {tty}");
        }
    }
}

/// A default artifact directory as the resolved config holds it: under the working directory,
/// absolute (as AIPerf echoes and prints it).
fn here(relative: &str) -> PathBuf {
    std::env::current_dir().unwrap().join(relative)
}

/// Connection reuse is echoed as AIPerf's enum value (its run of the `multi_turn_conversation`
/// template wrote `sticky-user-sessions`, tests/data/aiperf-template-runs).
#[test]
fn connection_reuse_is_echoed_as_aiperfs_value() {
    for (arg, echoed) in [
        ("sticky-user-sessions", "sticky-user-sessions"),
        ("never", "never"),
        ("pooled", "pooled"),
    ] {
        let c = cfg(&format!(
            "ringperf profile -m a -u 127.0.0.1:1 --connection-reuse-strategy {arg}"
        ))
        .unwrap();
        assert_eq!(c.input_config()["endpoint"]["connection_reuse"], echoed);
    }
}

/// `--conversation-turn-delay-ratio` is echoed as the dataset's `turn_delay_ratio`, as AIPerf's
/// converter writes it (tests/data/aiperf-flag-configs: `0.5` → `0.5`; its template run echoed
/// a file's `turnDelayRatio: 1.0` as `1.0`).
#[test]
fn the_turn_delay_ratio_is_echoed_when_given() {
    let ic = |flags: &str| {
        cfg(&format!("ringperf profile -m a -u 127.0.0.1:1 {flags}"))
            .unwrap()
            .input_config()
    };
    let d = ic("--conversation-turn-delay-ratio 0.5");
    assert_eq!(d["datasets"][0]["turn_delay_ratio"], 0.5);
    let d = ic("--conversation-turn-delay-ratio 1");
    assert_eq!(d["datasets"][0]["turn_delay_ratio"], 1.0);
    assert!(ic("")["datasets"][0].get("turn_delay_ratio").is_none());
}

/// A user-centric phase's rate ramp is read and warned of, not applied: AIPerf 0.13's
/// user-centric strategy takes no new rate (its run of a 3 s ramp sent 21, 20, 20, 18 requests
/// in the first four seconds at 20/s, as ringperf's).
#[test]
fn a_user_centric_rate_ramp_is_warned_of() {
    let c = cfg(
        "ringperf profile -m m -u 127.0.0.1:1 --user-centric-rate 20 --num-users 4 \
         --conversation-turn-mean 3 --benchmark-duration 4 --request-rate-ramp-duration 3",
    )
    .unwrap();
    let warned: Vec<&String> = (c.warnings.iter())
        .filter(|w| w.contains("a user-centric phase's rate does not ramp"))
        .collect();
    assert_eq!(warned.len(), 1, "{:?}", c.warnings);
    let c = cfg(
        "ringperf profile -m m -u 127.0.0.1:1 --request-rate 20 --request-count 4 \
         --request-rate-ramp-duration 3",
    )
    .unwrap();
    assert!(!c.warnings.iter().any(|w| w.contains("does not ramp")));
}
