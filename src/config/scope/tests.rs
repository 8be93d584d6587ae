use super::*;
use crate::config::{Config, ConfigError};

/// `flags` after `ringperf profile -m m`, through clap and [`Config::from_args`]
/// (the files named need not exist: nothing here reads them).
fn resolve(flags: &str) -> Result<Config, ConfigError> {
    let line = format!("ringperf profile -m m {flags}");
    let argv: Vec<String> = line.split_whitespace().map(str::to_string).collect();
    Config::from_plan(&crate::plan::Plan::parse(&argv).expect("parses"), false)
}

enum Expect {
    /// Accepted without a warning.
    Ok,
    /// Refused; the message holds this.
    Refused(&'static str),
    /// Accepted with exactly one warning, which holds this.
    Warned(&'static str),
}
use Expect::{Ok as Fine, Refused, Warned};

const FILE: &str = "--input-file st.jsonl --custom-dataset-type single_turn";
const TRACE: &str = "--input-file mc.jsonl --custom-dataset-type mooncake_trace";
const POOL: &str = "--input-file pool.jsonl --custom-dataset-type random_pool";
const PUBLIC: &str = "--public-dataset sharegpt";

/// (flags, what AIPerf 0.13 does with them and so what ringperf must): the refusals were read
/// in AIPerf's converter and checked by running `aiperf profile` with each line.
fn table() -> Vec<(String, Expect)> {
    let mut t: Vec<(String, Expect)> = Vec::new();
    let mut row = |flags: String, e: Expect| t.push((flags, e));
    // Synthetic prompt shaping: with a file or public dataset, refused (issue #22: `--isl 32
    // --osl 8` with `--input-file` ran with both ignored).
    for f in [
        "--isl 32",
        "--isl-stddev 3",
        "--synthetic-input-tokens-mean 550",
        "--conversation-turn-mean 2",
        "--conversation-turn-stddev 1",
        "--conversation-turn-delay-mean 5",
        "--conversation-turn-delay-stddev 5",
        "--conversation-turn-delay-ratio 2",
        "--seq-dist 10,5:100",
        "--prompt-prefix-pool-size 2 --prompt-prefix-length 10",
        "--shared-system-prompt-length 5",
        "--user-context-prompt-length 4",
    ] {
        row(f.to_string(), Fine);
        for source in [FILE, TRACE, POOL, PUBLIC] {
            row(format!("{source} {f}"), Refused("synthetic prompts only"));
        }
    }
    row(
        format!("{FILE} --isl 32 --osl 8"),
        Refused("--prompt-input-tokens-mean/--synthetic-input-tokens-mean/--isl shapes"),
    );
    row(
        format!("{FILE} --isl 32 --isl-stddev 2"),
        Refused("each of --prompt-input-tokens-mean/"),
    );
    // --osl stays a per-record fallback for files, as in AIPerf.
    for source in ["", FILE, TRACE, PUBLIC] {
        row(format!("{source} --osl 8 --osl-stddev 1"), Fine);
    }
    // Batch size: synthetic or random_pool.
    row("-b 2".into(), Fine);
    row(format!("{POOL} -b 2"), Fine);
    row(
        format!("{FILE} -b 2"),
        Refused("needs --custom-dataset-type random_pool"),
    );
    row(
        "--input-file st.jsonl -b 2".into(),
        Refused("needs --custom-dataset-type random_pool"),
    );
    row(format!("{PUBLIC} -b 2"), Refused("not to --public-dataset"));
    // Block size: hash-id traces.
    row(format!("{TRACE} --isl-block-size 16"), Fine);
    row("--input-file t.jsonl --isl-block-size 16".into(), Fine);
    row(
        format!("{FILE} --isl-block-size 16"),
        Refused("hash-id traces"),
    );
    row(
        format!("{PUBLIC} --isl-block-size 16"),
        Refused("hash-id traces"),
    );
    row("--isl-block-size 16".into(), Warned("no hash ids"));
    // Entries: the synthetic dataset's size or a random pool's draws.
    row("--num-dataset-entries 5".into(), Fine);
    row(format!("{POOL} --num-dataset-entries 5"), Fine);
    row(
        format!("{FILE} --num-dataset-entries 5"),
        Warned("are the dataset"),
    );
    row(
        format!("{PUBLIC} --num-dataset-entries 5"),
        Warned("are the dataset"),
    );
    // Trace delays: a file's, unless its timestamps drive the run.
    row(format!("{FILE} --ignore-trace-delays"), Fine);
    row(
        format!("{TRACE} --no-fixed-schedule --ignore-trace-delays"),
        Fine,
    );
    row(
        format!("{TRACE} --fixed-schedule --ignore-trace-delays"),
        Warned("fixed schedule"),
    );
    row(
        "--ignore-trace-delays".into(),
        Warned("only an --input-file"),
    );
    row(
        format!("{PUBLIC} --ignore-trace-delays"),
        Warned("only an --input-file"),
    );
    // Open-loop pacing has no place in a replay at the trace's timestamps (config/timing.rs).
    row(
        format!("{TRACE} --fixed-schedule --request-rate 5"),
        Refused("cannot be combined with it"),
    );
    row(
        format!("{TRACE} --fixed-schedule --arrival-smoothness 2"),
        Refused("cannot be combined with it"),
    );
    row(
        format!("{TRACE} --no-fixed-schedule --request-rate 5"),
        Fine,
    );
    row("--request-rate 5 --arrival-smoothness 2".into(), Fine);
    // The closed loop's pattern beside a rate changes nothing (Poisson, as AIPerf).
    row(
        "--concurrency 3 --arrival-pattern concurrency-burst".into(),
        Fine,
    );
    row("--request-rate 3 --arrival-pattern constant".into(), Fine);
    row(
        "--request-rate 3 --arrival-pattern concurrency-burst".into(),
        Warned("arrivals are Poisson"),
    );
    // Streaming on an endpoint that cannot stream: AIPerf warns and turns it off (issue #22).
    row("--streaming".into(), Fine);
    for e in [
        "embeddings",
        "chat-embeddings",
        "nim-embeddings",
        "nim-rankings",
        "cohere-rankings",
        "hf-tei-rankings",
    ] {
        row(
            format!("--endpoint-type {e} --streaming"),
            Warned("cannot stream"),
        );
    }
    for e in [
        "completions",
        "responses",
        "messages",
        "huggingface-generate",
    ] {
        row(format!("--endpoint-type {e} --streaming"), Fine);
    }
    // Output limits on endpoints that generate nothing.
    row(
        "--endpoint-type embeddings --osl 8".into(),
        Warned("generates no tokens"),
    );
    row(
        "--endpoint-type nim-rankings --osl 8".into(),
        Warned("generates no tokens"),
    );
    row("--use-legacy-max-tokens".into(), Fine);
    row(
        "--endpoint-type completions --use-legacy-max-tokens".into(),
        Warned("only --endpoint-type chat"),
    );
    // The video content is downloaded from a video job only.
    row(
        "--endpoint-type video-generation --download-video-content".into(),
        Fine,
    );
    row(
        "--download-video-content".into(),
        Warned("only --endpoint-type video-generation"),
    );
    // Rankings shape on a rankings endpoint only.
    row(
        "--endpoint-type nim-rankings --rankings-passages-mean 3".into(),
        Fine,
    );
    row(
        "--rankings-passages-mean 3".into(),
        Warned("not a rankings type"),
    );
    row(
        "--rankings-query-prompt-token-mean 9".into(),
        Warned("not a rankings type"),
    );
    // Multi-run companions: AIPerf refuses them with one run, accepts --confidence-level.
    for f in [
        "--profile-run-cooldown-seconds 2",
        "--set-consistent-seed",
        "--no-set-consistent-seed",
        "--profile-run-disable-warmup-after-first",
        "--no-profile-run-disable-warmup-after-first",
    ] {
        row(f.to_string(), Refused("only applies to repeated runs"));
        row(format!("--num-profile-runs 2 {f}"), Fine);
    }
    row(
        "--confidence-level 0.9".into(),
        Warned("no confidence interval"),
    );
    row("--num-profile-runs 2 --confidence-level 0.9".into(), Fine);
    // Server metrics off.
    row(
        "--no-server-metrics --server-metrics http://x:1/metrics".into(),
        Refused("--server-metrics and --no-server-metrics"),
    );
    row("--server-metrics http://x:1/metrics".into(), Fine);
    row(
        "--no-server-metrics --server-metrics-formats jsonl".into(),
        Warned("collects nothing"),
    );
    row("--server-metrics-formats jsonl".into(), Fine);
    // The HTTP trace needs the records file.
    row("--export-http-trace".into(), Fine);
    row(
        "--export-level summary --export-http-trace".into(),
        Warned("no per-request records"),
    );
    row("--export-level summary --show-trace-timing".into(), Fine);
    // Prefill concurrency: streaming only (AIPerf refuses it without).
    row(
        "--concurrency 4 --prefill-concurrency 2".into(),
        Refused("needs --streaming"),
    );
    row(
        "--streaming --concurrency 4 --prefill-concurrency 2".into(),
        Fine,
    );
    row(
        "--endpoint-type embeddings --streaming --concurrency 4 --prefill-concurrency 2".into(),
        Refused("needs --streaming"),
    );
    row(
        "--streaming --concurrency 4 --warmup-prefill-concurrency 2".into(),
        Warned("no warmup phase"),
    );
    row(
        "--concurrency 4 --warmup-request-count 2 --warmup-prefill-concurrency 2".into(),
        Refused("needs --streaming"),
    );
    row(
        "--streaming --concurrency 4 --warmup-request-count 2 --warmup-prefill-concurrency 2"
            .into(),
        Fine,
    );
    // A concurrency ramp needs a concurrency to ramp to.
    row("--concurrency 8 --concurrency-ramp-duration 2".into(), Fine);
    row(
        "--request-rate 5 --concurrency 8 --concurrency-ramp-duration 2".into(),
        Fine,
    );
    row(
        "--concurrency-ramp-duration 2".into(),
        Warned("no concurrency above 1"),
    );
    row(
        "--request-rate 5 --concurrency-ramp-duration 2".into(),
        Warned("no concurrency above 1"),
    );
    // ringperf's own: the mock's shape, --url beside --mock, batched wake-ups.
    row(
        "--mock --mock-ttft-ms 5 --mock-faults reset-before:0.1".into(),
        Fine,
    );
    row("--mock-ttft-ms 5".into(), Warned("--mock is not given"));
    row("--mock-threads 2".into(), Warned("--mock is not given"));
    row("--url 127.0.0.1:2".into(), Fine);
    row(
        "--mock --url 127.0.0.1:2".into(),
        Warned("embedded mock server"),
    );
    row("--batch-wakeups-us 50".into(), Fine);
    row(
        "--timestamps user --batch-wakeups-us 50".into(),
        Warned("kernel receive stamps"),
    );
    // Agentic replay's only (its acting row needs a config file:
    // `allow_dataset_wrap_acts_in_agentic_replay`).
    row(
        "--allow-dataset-wrap".into(),
        Warned("only concerns agentic replay"),
    );
    row(
        format!("{TRACE} --no-allow-dataset-wrap"),
        Warned("only concerns agentic replay"),
    );
    // Rules checked where the flags resolve, kept here so the table shows every mode.
    row(
        "--num-users 3".into(),
        Refused("--num-users needs --user-centric-rate"),
    );
    row(
        "--request-rate-ramp-duration 2".into(),
        Refused("needs rate pacing"),
    );
    row(
        "--request-cancellation-delay 1".into(),
        Refused("needs --request-cancellation-rate"),
    );
    row(
        "--fixed-schedule-end-offset 1".into(),
        Refused("need --fixed-schedule"),
    );
    row(
        "--benchmark-grace-period 5".into(),
        Refused("requires --benchmark-duration"),
    );
    row(
        "--endpoint-type completions --system-prompt hi".into(),
        Refused("needs --endpoint-type chat"),
    );
    row(
        "--replay-speedup 2".into(),
        Refused("needs --fixed-schedule"),
    );
    row(
        "--custom-dataset-type single_turn".into(),
        Refused("needs --input-file"),
    );
    // Several warnings: one line each.
    t
}

#[test]
fn every_row_of_the_table_resolves_as_aiperf_does() {
    let mut failures = Vec::new();
    for (flags, expect) in table() {
        let got = resolve(&flags);
        let ok = match (&expect, &got) {
            (Fine, Ok(c)) => c.warnings.is_empty(),
            (Refused(s), Err(e)) => e.message().contains(s),
            (Warned(s), Ok(c)) => c.warnings.len() == 1 && c.warnings[0].contains(s),
            _ => false,
        };
        if !ok {
            let what = match &got {
                Ok(c) => format!("accepted, warnings {:?}", c.warnings),
                Err(e) => format!("refused: {e}"),
            };
            let want = match expect {
                Fine => "accepted without warning".to_string(),
                Refused(s) => format!("refused with `{s}`"),
                Warned(s) => format!("one warning with `{s}`"),
            };
            failures.push(format!("{flags}\n    want {want}\n    got  {what}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn each_flag_given_where_it_acts_nowhere_gets_its_own_line() {
    let c = resolve("--mock-ttft-ms 5 --mock-itl-ms 1 --allow-dataset-wrap").unwrap();
    assert_eq!(c.warnings.len(), 3, "{:?}", c.warnings);
    assert!(c.warnings[0].starts_with("--allow-dataset-wrap has no effect"));
    assert!(c.warnings.iter().all(|w| !w.contains('\n')));
}

/// `--allow-dataset-wrap` in a run whose profiling phase is agentic replay (a config file's
/// `timing_mode: agentic_replay`): no warning, and the setting reaches the run.
#[test]
fn allow_dataset_wrap_acts_in_agentic_replay() {
    let argv: Vec<String> = "ringperf profile -m m --concurrency 2 --benchmark-duration 5 \
                             --allow-dataset-wrap"
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let mut plan = crate::plan::Plan::parse(&argv).expect("parses");
    plan.file_only.agentic = true;
    let c = Config::from_plan(&plan, false).unwrap();
    assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    assert!(c.input.allow_dataset_wrap);
    assert!(matches!(
        c.profiling.timing.mode,
        crate::config::timing::Mode::Agentic(_)
    ));
    assert_eq!(c.warmup_name(), Some("agentic.warmup"));
}

/// Every scope that refuses or warns is exercised by the table, in a mode where its flags act
/// and in one where they do not.
#[test]
fn the_table_covers_every_scope_both_ways() {
    let table = table();
    let scopes: Vec<(&str, Scope)> = crate::cli::flags::scopes().collect();
    for &(_, scope) in &scopes {
        if matches!(
            scope,
            Scope::Any | Scope::Resolved(_) | Scope::Synthetic | Scope::Inert(_) | Scope::Agentic
        ) {
            continue;
        }
        let names: Vec<String> = scopes
            .iter()
            .filter(|(_, s)| *s == scope)
            .flat_map(|(id, _)| {
                flag_names(id)
                    .split('/')
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            })
            .chain((scope == Scope::SyntheticOrPool).then(|| "-b".to_string()))
            .collect();
        let rows = table
            .iter()
            .filter(|(f, _)| f.split_whitespace().any(|w| names.iter().any(|n| n == w)));
        let (mut acts, mut not) = (false, false);
        for (_, e) in rows {
            match e {
                Fine => acts = true,
                Refused(_) | Warned(_) => not = true,
            }
        }
        assert!(
            acts && not,
            "{scope:?}: the table has no row where it acts ({acts}) or none where it does not \
             ({not})"
        );
    }
}

#[test]
fn flag_names_lists_the_visible_aliases() {
    assert_eq!(
        flag_names("isl_mean"),
        "--prompt-input-tokens-mean/--synthetic-input-tokens-mean/--isl"
    );
    assert_eq!(flag_names("streaming"), "--streaming");
}
