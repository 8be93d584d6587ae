use clap::Parser;

use super::*;
use crate::cli::{Cli, Command};

fn cfg(s: &str) -> Result<Config, ConfigError> {
    let argv: Vec<String> = s.split_whitespace().map(str::to_string).collect();
    let cli = Cli::try_parse_from(&argv).expect("clap parses");
    let Command::Profile(p) = cli.command else {
        panic!("not profile")
    };
    Config::from_args(&p, &argv, false)
}

#[test]
fn default_stop_condition_is_ten_requests() {
    let c = cfg("ringperf profile -m m -u 127.0.0.1:1").unwrap();
    assert_eq!(c.profiling.request_count, Some(10));
    assert_eq!(c.profiling.load, Load::Concurrency(1));
    assert_eq!(c.profiling.grace, None);
    assert!(c.warmup.is_none());
    assert_eq!(
        c.artifact_dir,
        PathBuf::from("artifacts/m-openai-chat-concurrency1")
    );
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
        PathBuf::from("artifacts/org_model-openai-chat-request_rate10.0")
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
        PathBuf::from("artifacts/a_multi-openai-completions-concurrency4-request_rate2.5")
    );
    // Smoothness without a pattern selects gamma (spec §1.3).
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
    let Command::Profile(p) = Cli::try_parse_from(&argv).unwrap().command else {
        panic!()
    };
    let c = Config::from_args(&p, &argv, false).unwrap();
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
            "ringperf profile -m a -u 127.0.0.1:1 --endpoint-type embeddings",
            "embeddings",
        ),
        ("ringperf profile -m a -u https://x:1", "https"),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --extra-inputs novalue",
            "key:value",
        ),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --export-level raw",
            "raw",
        ),
        (
            "ringperf profile -m a -u 127.0.0.1:1 --request-count 0",
            "--request-count",
        ),
    ];
    for (line, needle) in cases {
        let e = cfg(line).expect_err(line);
        assert!(e.0.contains(needle), "{line}: {e}");
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
    use crate::server_metrics::output::Format;
    assert_eq!(c.server_metrics.formats, vec![Format::Json, Format::Jsonl]);
    assert_eq!(
        c.slice_duration,
        Some(std::time::Duration::from_millis(2500))
    );
    // Defaults: on, JSON + CSV + Parquet, no timeslices; a bare --server-metrics is accepted.
    let d = cfg("ringperf profile -m m --server-metrics").unwrap();
    assert!(d.server_metrics.enabled && d.server_metrics.extra_urls.is_empty());
    assert_eq!(
        d.server_metrics.formats,
        vec![Format::Json, Format::Csv, Format::Parquet]
    );
    assert_eq!(d.slice_duration, None);
    assert!(
        !cfg("ringperf profile -m m --no-server-metrics")
            .unwrap()
            .server_metrics
            .enabled
    );
    let e = cfg("ringperf profile -m m --slice-duration 0").unwrap_err();
    assert!(e.0.contains("--slice-duration"), "{e}");
    let e = cfg("ringperf profile -m m --server-metrics https://x/metrics").unwrap_err();
    assert!(e.0.contains("http://"), "{e}");
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
    assert!(affinity_headers(bad).unwrap_err().0.contains("SMG"));
}

#[test]
fn input_group_builds_a_load_spec() {
    use crate::conversation::Sampling;
    use crate::workload::loader::{DatasetKind, Source};
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
    assert_eq!((spec.block_size, spec.seed, spec.seeded), (16, 3, true));
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
    assert_eq!(spec.block_size, 512);
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
    let msg = e("--input-file x --custom-dataset-type bailian_trace");
    assert!(
        msg.contains("bailian_trace is not supported by ringperf yet"),
        "{msg}"
    );
    assert!(e("--input-file x --custom-dataset-type speed-bench-qa").contains("not supported"));
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
