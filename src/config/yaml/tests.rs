//! The loader's rules, each expectation written by hand from AIPerf 0.13's documented behaviour
//! (its loader's env-var, duration and Jinja rules, `extra=forbid`, the `--config` routing).

use crate::plan::{Pacing, UserFileFormat};
use serde_json::{Value, json};

use super::*;

fn env(k: &str) -> Option<String> {
    match k {
        "HOST" => Some("10.0.0.1".into()),
        "PORT" => Some("9000".into()),
        "FLAG" => Some("TRUE".into()),
        "RATE" => Some("2.5".into()),
        _ => None,
    }
}

fn load(text: &str) -> Result<Map<String, Value>, YamlError> {
    load_str(text, &env)
}

fn body(text: &str) -> Value {
    Value::Object(load(text).expect("loads"))["benchmark"].clone()
}

fn translate_str(text: &str) -> FileArgs {
    let root = load(text).expect("loads");
    translate(&Loaded {
        path: "t.yaml".into(),
        root,
    })
    .expect("translates")
}

fn words(text: &str) -> Vec<String> {
    translate_str(text).words()
}

fn refused(text: &str) -> YamlError {
    match load(text) {
        Err(e) => e,
        Ok(root) => translate(&Loaded {
            path: "t.yaml".into(),
            root,
        })
        .expect_err("refused"),
    }
}

const MIN: &str =
    "benchmark:\n  model: m\n  endpoint: {url: 'http://h:1'}\n  dataset: {type: synthetic}\n";

#[test]
fn env_references_substitute_with_defaults_and_whole_values_become_scalars() {
    let b = body(
        "benchmark:\n  endpoint:\n    url: http://${HOST}:${PORT}/v1\n    a: ${PORT}\n    b: ${FLAG}\n    c: ${RATE}\n    d: ${NOPE:fallback}\n    e: x${NOPE:}y\n    f: ${NOPE:7}\n",
    );
    let ep = &b["endpoint"];
    assert_eq!(ep["url"], json!("http://10.0.0.1:9000/v1"));
    assert_eq!(ep["a"], json!(9000));
    assert_eq!(ep["b"], json!(true));
    assert_eq!(ep["c"], json!(2.5));
    assert_eq!(ep["d"], json!("fallback"));
    assert_eq!(ep["e"], json!("xy"));
    assert_eq!(ep["f"], json!(7));
}

#[test]
fn an_unset_variable_without_default_and_an_unclosed_reference_are_errors() {
    assert_eq!(
        load("a: ${MISSING_VAR}\n").unwrap_err(),
        YamlError::MissingEnv("MISSING_VAR".into())
    );
    let e = load("a: 'x ${HOST'\n").unwrap_err();
    assert!(e.to_string().contains("Unterminated"), "{e}");
}

#[test]
fn durations_read_as_aiperf_reads_them() {
    let d = |s: Value| duration_secs(&s);
    assert_eq!(d(json!(30)), Some(30.0));
    assert_eq!(d(json!(5.5)), Some(5.5));
    assert_eq!(d(json!("30s")), Some(30.0));
    assert_eq!(d(json!("30 sec")), Some(30.0));
    assert_eq!(d(json!("5m")), Some(300.0));
    assert_eq!(d(json!("5 MIN")), Some(300.0));
    assert_eq!(d(json!("2h")), Some(7200.0));
    assert_eq!(d(json!("1hr")), Some(3600.0));
    assert_eq!(d(json!("1hour")), Some(3600.0));
    assert_eq!(d(json!("1.5m")), Some(90.0));
    assert_eq!(d(json!("inf")), Some(f64::INFINITY));
    for bad in ["", "s", "5 days", "-3s", "1.2.3s", ".5s", "5ms"] {
        assert_eq!(d(json!(bad)), None, "{bad:?}");
    }
}

#[test]
fn jinja_subset_computes_python_arithmetic_from_variables() {
    let b = body(
        "variables:\n  base: 16\n  mult: 10\n  twice: '{{ base * 2 }}'\n  half: '{{ base / 32 }}'\nbenchmark:\n  a: '{{ base * mult }}'\n  b: '{{ base // 3 }}'\n  c: '{{ base / 4 }}'\n  d: '{{ base % 5 }}'\n  e: '{{ base + 0.5 }}'\n  f: 'n-{{ twice }}'\n  g: '{{ half }}'\n  h: '{{ base - 20 }}'\n  i: '{{ -7 // 2 }}'\n  template: '{{ not_rendered }}'\n",
    );
    assert_eq!(b["a"], json!(160));
    assert_eq!(b["b"], json!(5));
    assert_eq!(b["c"], json!(4.0));
    assert_eq!(b["d"], json!(1));
    assert_eq!(b["e"], json!(16.5));
    assert_eq!(b["f"], json!("n-32"));
    assert_eq!(b["g"], json!(0.5));
    assert_eq!(b["h"], json!(-4));
    assert_eq!(b["i"], json!(-4));
    assert_eq!(b["template"], json!("{{ not_rendered }}"));
}

/// AIPerf's `user_files` template's variables: text, numbers from text, concatenation, filters;
/// the `artifacts.user_files` subtree is left for the run to render.
#[test]
fn jinja_renders_text_variables_and_leaves_user_files_for_the_run() {
    let root = load(
        "variables:\n  label: dense-agg\n  per_gpu: 32\n  gpus: '4'\n  total: '{{ per_gpu * gpus | int }}'\n  tag: '{{ label }}-{{ total }}'\nbenchmark:\n  a: '{{ total * 4 }}'\n  b: '{{ tag | upper }}'\n  c: 'x{{ gpus * 2 }}'\n  d: '{{ missing | default(label ~ \"!\") }}'\n  e: '{{ 2.5 | round }}'\n  f: '{{ per_gpu > 1 }}'\n  artifacts:\n    userFiles:\n      - {path: a.txt, content: '{{ job_name }}'}\n",
    );
    // A comparison renders `True`, coerced to a boolean as AIPerf coerces it.
    assert_eq!(root.unwrap()["benchmark"]["f"], json!(true));
    let b = body(
        "variables:\n  label: dense-agg\n  per_gpu: 32\n  gpus: '4'\n  total: '{{ per_gpu * gpus | int }}'\n  tag: '{{ label }}-{{ total }}'\nbenchmark:\n  a: '{{ total * 4 }}'\n  b: '{{ tag | upper }}'\n  c: 'x{{ gpus * 2 }}'\n  d: '{{ missing | default(label ~ \"!\") }}'\n  e: '{{ 2.5 | round }}'\n  artifacts:\n    userFiles:\n      - {path: a.txt, content: '{{ job_name }}'}\n",
    );
    assert_eq!(b["a"], json!(512));
    assert_eq!(b["b"], json!("DENSE-AGG-128"));
    assert_eq!(b["c"], json!("x44"));
    assert_eq!(b["d"], json!("dense-agg!"));
    assert_eq!(b["e"], json!(2.0));
    assert_eq!(
        b["artifacts"]["user_files"][0]["content"],
        json!("{{ job_name }}")
    );
}

/// A template reads the config's own values as AIPerf's context holds them: top-level and
/// `benchmark:` keys as written (camelCase and all, not rendered), a list of named entries by
/// name; blocks, tests and filters as Jinja2 runs them. AIPerf's `config expand --full` of the
/// same file: timeout 30.0, headers `3-x+y`, `many`, `mock-model`, concurrency 4.
#[test]
fn templates_read_the_configs_own_values_as_aiperf_does() {
    let b = body(include_str!(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/aiperf-yaml/jinja-config-values.yaml"
    )));
    assert_eq!(b["endpoint"]["timeout"], json!(30));
    let h = &b["endpoint"]["headers"];
    assert_eq!(
        (&h["X-A"], &h["X-B"], &h["X-C"]),
        (&json!("3-x+y"), &json!("many"), &json!("mock-model"))
    );
    assert_eq!(b["phases"][0]["concurrency"], json!(4));
    // The values are as written: a value that is itself a template is its text.
    let b = body(
        "variables: {conc: 4}\nbenchmark:\n  phases: [{name: p, concurrency: '{{ conc }}'}]\n  \
         a: '{{ phases.p.concurrency }}'\n",
    );
    assert_eq!(b["a"], json!("{{ conc }}"));
}

#[test]
fn jinja_outside_the_subset_is_refused_by_name() {
    for (text, what) in [
        ("a: '{% if x %}1{% endif %}'\n", "'x' is undefined"),
        (
            "variables: {x: 1}\na: '{{ x | title }}'\n",
            "the filter `title`",
        ),
        (
            "variables: {x: 1}\na: '{{ x.y }}'\n",
            "'int object' has no attribute 'y'",
        ),
        (
            "a: '{{ phases.profiling.rate }}'\n",
            "'phases' is undefined",
        ),
        (
            "a: '{% macro m() %}{% endmacro %}'\n",
            "the `{% macro %}` block",
        ),
        ("a: '{{ range(3) }}'\n", "a call"),
        ("a: '{{ y }}'\n", "'y' is undefined"),
        (
            "variables: {a: '{{ b }}', b: '{{ a }}'}\nx: 1\n",
            "Circular",
        ),
    ] {
        let e = load(text).unwrap_err();
        assert!(matches!(e, YamlError::Template(_)), "{text}: {e:?}");
        assert!(e.to_string().contains(what), "{text}: {e}");
    }
}

#[test]
fn camel_case_keys_and_shorthands_normalise_to_the_envelope() {
    let b = body(
        "randomSeed: 3\nmodel: m\nendpoint: {url: 'http://h:1', headers: {X-Token: a}}\ndataset: {type: synthetic}\nwarmup: {type: concurrency, requests: 2}\nprofiling: {type: gamma, rateRamp: 10s}\n",
    );
    assert_eq!(b["models"], json!("m"));
    assert_eq!(b["endpoint"]["headers"], json!({"X-Token": "a"}));
    assert_eq!(b["datasets"][0]["name"], json!("default"));
    assert_eq!(b["phases"][0]["name"], json!("warmup"));
    assert_eq!(b["phases"][1]["rate_ramp"], json!("10s"));
}

#[test]
fn unknown_keys_are_refused_as_aiperf_refuses_them() {
    assert_eq!(
        refused(&format!("{MIN}  endpointt: 1\n")),
        YamlError::Schema(
            "benchmark.endpointt: Extra inputs are not permitted (did you mean 'endpoint'?)".into()
        )
    );
    assert_eq!(
        refused("benchmark:\n  model: m\n  endpoint: {url: u, bogusKey: 3}\n  dataset: {}\n"),
        YamlError::Schema("benchmark.endpoint.bogus_key: Extra inputs are not permitted".into())
    );
    assert_eq!(
        refused("tpo: 1\n"),
        YamlError::Schema("tpo: Extra inputs are not permitted".into())
    );
    assert!(matches!(
        load("benchmark:\n  model: a\n  model: b\n").unwrap_err(),
        YamlError::Parse(m) if m.contains("duplicated key")
    ));
    assert!(matches!(load("- 1\n").unwrap_err(), YamlError::Parse(m) if m.contains("got list")));
    assert!(matches!(load("").unwrap_err(), YamlError::Parse(m) if m.contains("empty")));
    assert!(
        matches!(load("1: x\n").unwrap_err(), YamlError::Parse(m) if m.contains("not a string"))
    );
}

#[test]
fn phases_map_onto_the_warmup_and_profiling_flags() {
    let w = words(&format!(
        "{MIN}  warmup: {{type: gamma, rate: 10, smoothness: 1.5, concurrency: 2, requests: 4, rateRamp: 3s}}\n  profiling: {{type: gamma, rate: 40, smoothness: 1.5, duration: 2m, gracePeriod: 5s, rateRamp: 10s}}\n"
    ));
    let line = w.join(" ");
    for part in [
        "--warmup-arrival-pattern gamma",
        "--warmup-request-rate 10",
        "--warmup-concurrency 2",
        "--warmup-request-count 4",
        "--warmup-request-rate-ramp-duration 3",
        "--arrival-pattern gamma",
        "--request-rate 40",
        "--arrival-smoothness 1.5",
        "--benchmark-duration 120",
        "--benchmark-grace-period 5",
        "--request-rate-ramp-duration 10",
    ] {
        assert!(line.contains(part), "{part} in {line}");
    }
}

#[test]
fn phases_ringperf_cannot_run_are_refused_naming_the_phase() {
    // Two profiling phases: the first is the flags', the second a phase of its own.
    let f = translate_str(&format!(
        "{MIN}  phases:\n    - {{name: ramp-up, kind: profiling, type: concurrency, requests: 1}}\n    - {{name: main, kind: profiling, type: poisson, rate: 2, requests: 1}}\n"
    ));
    assert_eq!(f.file_only.profiling_name.as_deref(), Some("ramp-up"));
    let names: Vec<&str> = f
        .file_only
        .phases_after
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["main"]);
    // A warmup after a profiling phase: a later phase of its own, of its kind.
    let f = translate_str(&format!(
        "{MIN}  phases:\n    - {{name: main, kind: profiling, type: concurrency, requests: 1}}\n    - {{name: cool, kind: warmup, type: concurrency, requests: 1}}\n"
    ));
    let after: Vec<(&str, bool)> = (f.file_only.phases_after.iter())
        .map(|p| (p.name.as_str(), p.warmup))
        .collect();
    assert_eq!(after, [("cool", true)]);
    assert!(f.file_only.phases_before.is_empty());
    let e = refused(&format!(
        "{MIN}  profiling: {{type: agentic_replay, requests: 2}}\n"
    ));
    assert!(e.to_string().contains("Input tag 'agentic_replay'"), "{e}");
    // A fixed-schedule warmup, and a fixed-schedule phase after the first: phases of their own.
    let f = translate_str(&format!(
        "{MIN}  phases:\n    - {{name: warmup, type: fixed_schedule, requests: 6, concurrency: 2}}\n    - {{name: p1, kind: profiling, type: concurrency, requests: 2}}\n    - {{name: p2, kind: profiling, type: fixed_schedule, startOffset: 40, endOffset: 200}}\n"
    ));
    let w = &f.file_only.phases_before[0];
    assert_eq!((w.pacing, w.requests), (Pacing::FixedSchedule, Some(6)));
    let p2 = &f.file_only.phases_after[0];
    assert_eq!(
        (p2.pacing, p2.start_offset, p2.end_offset),
        (Pacing::FixedSchedule, Some(40), Some(200))
    );
}

#[test]
fn distributions_beyond_fixed_and_normal_run_at_their_expected_value() {
    // The rankings' passage count: AIPerf's `int(expected_value)`, no spread.
    let w = words(
        "benchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {type: synthetic, rankings: {passages: {mean: 5.5, median: 4, min: 2}}}\n",
    );
    let at = w
        .iter()
        .position(|x| x == "--rankings-passages-mean")
        .unwrap();
    assert_eq!(w[at + 1], "5");
    assert!(!w.iter().any(|x| x == "--rankings-passages-stddev"));
    // A conversation's turns: the expected value (5), truncated, no spread.
    let w = words(
        "benchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {type: synthetic, turns: {mean: 5.5, median: 4, max: 9}}\n",
    );
    let at = w
        .iter()
        .position(|x| x == "--conversation-turn-mean")
        .unwrap();
    assert_eq!(w[at + 1], "5");
    assert!(!w.iter().any(|x| x == "--conversation-turn-stddev"));
    let w = words(
        "benchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {type: synthetic, prompts: {isl: {value: 7}, osl: {mean: 3, stddev: 1}}}\n",
    );
    assert_eq!(
        w[w.len() - 6..],
        [
            "--prompt-input-tokens-mean",
            "7",
            "--prompt-output-tokens-mean",
            "3",
            "--prompt-output-tokens-stddev",
            "1"
        ]
    );
}

fn file_args(text: &str) -> FileArgs {
    let root = load(text).expect("loads");
    translate(&Loaded {
        path: "t.yaml".into(),
        root,
    })
    .expect("translates")
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn a_flag_given_on_the_command_line_replaces_the_files_value() {
    let f = file_args(&format!(
        "{MIN}  profiling: {{type: concurrency, concurrency: 8, requests: 100}}\n"
    ));
    let cli = crate::plan::Plan::parse(&s(&[
        "ringperf",
        "profile",
        "--concurrency",
        "3",
        "-m",
        "other",
    ]))
    .unwrap();
    let (settings, given) = under(&cli, &f);
    // What the same flags give on one command line, the file's first and the given ones after.
    let expected = crate::plan::Plan::parse(&s(&[
        "ringperf",
        "profile",
        "--url",
        "http://h:1",
        "--request-count",
        "100",
        "--concurrency",
        "3",
        "-m",
        "other",
    ]))
    .unwrap();
    assert_eq!(settings, expected.settings);
    assert_eq!(given, expected.given);
}

/// `f`'s settings under `cli`'s.
fn under(cli: &crate::plan::Plan, f: &FileArgs) -> (crate::cli::ProfileArgs, crate::cli::Given) {
    let file: Vec<crate::cli::parse::Setting> = f
        .flags
        .iter()
        .map(|(flag, vs)| {
            let vs = vs.iter().map(|v| (v.value.clone(), v.written.clone()));
            (flag.clone(), vs.collect())
        })
        .collect();
    crate::cli::parse::under_file(&cli.settings, &cli.given, &file).expect("settings apply")
}

/// Every file of ringperf's `config init` templates and of the fixtures, read into typed
/// settings, equals what clap makes of the flags `config expand` prints for it: the typed
/// route and the command line agree on every setting and on what was given.
#[test]
fn a_files_typed_settings_are_what_its_flags_parse_to() {
    let mut texts: Vec<(String, String)> = super::templates::TEMPLATES
        .iter()
        .map(|t| (t.name.to_owned(), t.text.to_owned()))
        .collect();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/aiperf-yaml");
    for entry in std::fs::read_dir(dir).expect("fixtures") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).expect("reads");
            texts.push((path.display().to_string(), text));
        }
    }
    let mut checked = 0;
    for (name, text) in texts {
        let Ok(root) = load(&text) else { continue };
        let Ok(f) = translate(&Loaded {
            path: "t.yaml".into(),
            root,
        }) else {
            continue;
        };
        let bare = crate::plan::Plan::parse(&s(&["ringperf", "profile"])).unwrap();
        let (settings, given) = under(&bare, &f);
        let mut argv = s(&["ringperf", "profile"]);
        for (flag, vs) in &f.flags {
            argv.push(flag.clone());
            argv.extend(vs.iter().map(|v| v.written.clone()));
        }
        let expected =
            crate::plan::Plan::parse(&argv).unwrap_or_else(|e| panic!("{name}: {argv:?}: {e}"));
        assert_eq!(settings, expected.settings, "{name}");
        let ids = |g: &crate::cli::Given| g.keys().cloned().collect::<Vec<_>>();
        assert_eq!(ids(&given), ids(&expected.given), "{name}");
        checked += 1;
    }
    assert!(checked >= 5, "only {checked} files translated");
}

#[test]
fn flags_aiperf_cannot_route_under_config_are_refused_by_name() {
    let e = argv::refuse_unrouted(
        &s(&["--sweep-type", "grid", "--public-dataset", "sharegpt"]),
        Some("synthetic"),
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        "These CLI flags cannot be combined with --config and would otherwise be ignored: \
         --public-dataset, --sweep-type. Set the equivalent values in the YAML config file, or \
         drop --config and pass the run entirely on the command line."
    );
    let e = argv::refuse_unrouted(&s(&["--input-file", "x.jsonl"]), Some("synthetic")).unwrap_err();
    assert!(e.to_string().contains(": --input-file."), "{e}");
    assert!(argv::refuse_unrouted(&s(&["--input-file", "x.jsonl"]), Some("file")).is_ok());
}

#[test]
fn a_sweep_block_translates_to_the_sweep_flags_and_is_gated_in_one_place() {
    // A `datasets.` path sweeps a dataset of the `datasets:` list (beside the `dataset:`
    // shorthand AIPerf refuses it: below).
    let base = MIN.replace(
        "  dataset: {type: synthetic}\n",
        "  datasets: [{name: default, type: synthetic}]\n",
    );
    let text = format!(
        "{base}  profiling: {{type: concurrency, concurrency: 1, requests: 10}}\nsweep:\n  type: zip\n  parameters:\n    concurrency: [1, 2, 4]\n    datasets.default.prompts.isl: [128, 256, 512]\n  cooldownSeconds: 5\n  iteration_order: independent\n"
    );
    let f = file_args(&text);
    assert_eq!(
        f.sweep,
        vec![
            ("--sweep-type".to_string(), s(&["zip"])),
            ("--concurrency".to_string(), s(&["1,2,4"])),
            (
                "--prompt-input-tokens-mean".to_string(),
                s(&["128,256,512"])
            ),
            ("--parameter-sweep-cooldown-seconds".to_string(), s(&["5"])),
            ("--parameter-sweep-mode".to_string(), s(&["independent"])),
        ]
    );
    let e = refused(&text.replace("iteration_order: independent", "iteration_order: inner"));
    assert!(e.to_string().contains("'repeated' or 'independent'"), "{e}");
    assert!(
        !f.flags.iter().any(|(k, _)| k == "--concurrency"),
        "the list replaces the scalar"
    );
    let root = load(&text).unwrap();
    assert!(argv::sweep_gate(&root).is_ok());
    let e = load(&text.replace(&base, MIN)).expect_err("refused");
    assert!(
        matches!(&e, YamlError::Sweep(m) if m.contains("'dataset' cannot be used with 'datasets'")),
        "{e:?}"
    );
    let e = refused(&format!(
        "{MIN}sweep:\n  type: grid\n  parameters:\n    phases.profiling.smoothness: [1, 2]\n"
    ));
    // A path no flag sweeps is written into the file per point; this file has no phase to
    // write it into.
    assert!(
        e.to_string().contains("a 'profiling' phase is required"),
        "{e}"
    );
}

#[test]
fn a_warmup_the_flags_cannot_pace_is_a_phase_of_its_own() {
    // AIPerf runs a closed-loop warmup before a Poisson profiling phase; the `--warmup-*` flags
    // would pace it at the profiling rate, so it is a phase of its own, typed as written.
    let f = translate_str(&format!(
        "{MIN}  warmup: {{type: concurrency, concurrency: 2, requests: 4}}\n  profiling: {{type: poisson, rate: 40, requests: 12}}\n"
    ));
    let mut expected = crate::plan::PhaseSpec::new("warmup", crate::plan::Pacing::Concurrency);
    expected.warmup = true;
    expected.exclude_from_results = true;
    expected.concurrency = Some(2);
    expected.requests = Some(4);
    assert_eq!(f.file_only.phases_before, vec![expected]);
    let flags: Vec<&str> = f.flags.iter().map(|(k, _)| k.as_str()).collect();
    assert!(
        !flags.iter().any(|k| k.starts_with("--warmup-")),
        "{flags:?}"
    );
    assert!(flags.contains(&"--request-rate"), "{flags:?}");
    // One paced as the flags pace it stays flags, so `--warmup-*` on the command line
    // override it.
    let ok = words(&format!(
        "{MIN}  warmup: {{type: poisson, rate: 20, requests: 4}}\n  profiling: {{type: poisson, rate: 40, requests: 12}}\n"
    ))
    .join(" ");
    assert!(
        ok.contains("--warmup-arrival-pattern poisson --warmup-request-rate 20"),
        "{ok}"
    );
    // A user-centric warmup is a phase of its own too.
    let f = translate_str(&format!(
        "{MIN}  phases:\n    - {{name: w1, kind: warmup, type: user_centric, users: 2, rate: 1, requests: 4}}\n    - {{name: profiling, type: concurrency, requests: 3}}\n"
    ));
    let names: Vec<&str> = f
        .file_only
        .phases_before
        .iter()
        .map(|p| p.name.as_str())
        .collect();
    assert_eq!(names, ["w1"]);
    // Two warmups: both phases of their own, in order.
    let f = translate_str(&format!(
        "{MIN}  phases:\n    - {{name: w1, kind: warmup, type: concurrency, requests: 4}}\n    - {{name: w2, kind: warmup, type: concurrency, requests: 2}}\n    - {{name: profiling, type: concurrency, requests: 3}}\n"
    ));
    let before: Vec<(&str, Option<u64>)> = (f.file_only.phases_before.iter())
        .map(|p| (p.name.as_str(), p.requests))
        .collect();
    assert_eq!(before, [("w1", Some(4)), ("w2", Some(2))]);
}

#[test]
fn phase_lists_are_checked_as_aiperf_checks_them() {
    for (phases, message) in [
        (
            "    - {name: steady, kind: profiling, type: concurrency, requests: 2}\n    - {name: Steady, kind: profiling, type: concurrency, requests: 2}\n",
            "duplicate phase name 'Steady' conflicts with 'steady'",
        ),
        (
            "    - {name: profiling, type: poisson, rate: 2}\n",
            "Phase 'profiling': at least one of 'requests', 'duration', or 'sessions' must be specified",
        ),
        (
            "    - {name: profiling, type: poisson, requests: 2}\n",
            "rate-controlled phases require rate or rate_series",
        ),
        (
            "    - {name: profiling, type: burst, requests: 2}\n",
            "Input tag 'burst' found using 'type' does not match any of the expected tags",
        ),
        (
            "    - {name: warmup, kind: profiling, type: concurrency, requests: 2}\n",
            "Phase name 'warmup' is reserved for kind 'warmup'; got kind 'profiling'.",
        ),
        (
            "    - {name: w, kind: warmup, type: concurrency, requests: 2}\n",
            "a 'profiling' phase is required; got phases: [('w', 'warmup')]",
        ),
    ] {
        let e = refused(&format!("{MIN}  phases:\n{phases}"));
        assert!(e.to_string().contains(message), "{phases}: {e}");
    }
}

/// Expected lines from `aiperf config expand` (0.13.0) on the same sweep: parameters sorted by
/// full path, the last varying fastest.
#[test]
fn sweep_variations_follow_aiperfs_expand() {
    let sweep = |text: &str| load(text).unwrap()["sweep"].as_object().unwrap().clone();
    let grid = argv::variations(&sweep(
        "sweep:\n  type: grid\n  parameters:\n    requests: [4, 6]\n    concurrency: [1, 2]\n    datasets.default.prompts.isl: [32, 64]\n",
    ))
    .unwrap();
    assert_eq!(grid.len(), 8);
    assert_eq!(grid[0].dir, "isl_32__concurrency_1__requests_4");
    assert_eq!(
        grid[1].label,
        "datasets.default.prompts.isl=32, phases.profiling.concurrency=1, phases.profiling.requests=6"
    );
    assert_eq!(grid[7].dir, "isl_64__concurrency_2__requests_6");
    let zip = argv::variations(&sweep(
        "sweep:\n  type: zip\n  parameters:\n    concurrency: [1, 2]\n    isl: [32, 64]\n",
    ))
    .unwrap();
    let dirs: Vec<&str> = zip.iter().map(|v| v.dir.as_str()).collect();
    assert_eq!(dirs, ["isl_32__concurrency_1", "isl_64__concurrency_2"]);
    assert!(
        argv::variations(&sweep(
            "sweep:\n  type: zip\n  parameters:\n    concurrency: [1, 2]\n    isl: [32]\n"
        ))
        .is_err()
    );
}

#[test]
fn models_strategy_and_session_header_become_their_flags() {
    let w = words(
        "benchmark:\n  models: {strategy: random, items: [a, b]}\n  endpoint: {url: 'http://h:1', \
         session_header: X-Session-ID}\n  dataset: {type: synthetic}\n",
    );
    let line = w.join(" ");
    for part in [
        "--model a,b",
        "--model-selection-strategy random",
        "--session-header X-Session-ID",
    ] {
        assert!(line.contains(part), "{part} in {line}");
    }
}

/// AIPerf's `AdaptiveSearchSweep` keys, each to the flag its own `--search-*` converter reads
/// it from (its `_build_adaptive_search`), written out by hand.
#[test]
fn an_adaptive_search_sweep_is_the_search_flags() {
    let text = format!(
        "{MIN}sweep:\n  type: adaptive_search\n  planner: optuna\n  optunaSampler: tpe\n  \
         searchSpace:\n    - {{path: phases.profiling.concurrency, lo: 1, hi: 64, kind: int}}\n    \
         - {{path: datasets.main.prompts.isl, lo: 100, hi: 200.5}}\n  \
         objectives: [{{metric: output_token_throughput, stat: p50, direction: MAXIMIZE}}]\n  \
         maxIterations: 12\n  nInitialPoints: 3\n  randomSeed: 9\n  cooldownSeconds: 1.5\n  \
         slaFilters:\n    - {{metric_tag: time_to_first_token, op: lt, threshold: 200}}\n    \
         - {{metric_tag: inter_token_latency, stat: p99, op: le, threshold: 12.5}}\n  \
         plateauWindow: 8\n  optunaAcquisition: null\n"
    );
    let w = |pairs: &[(&str, &str)]| -> Vec<(String, Vec<String>)> {
        pairs
            .iter()
            .map(|(f, v)| (f.to_string(), s(&[v])))
            .collect()
    };
    assert_eq!(
        file_args(&text).sweep,
        w(&[
            ("--search-planner", "optuna"),
            ("--optuna-sampler", "tpe"),
            ("--search-space", "phases.profiling.concurrency:1,64:int"),
            ("--search-space", "datasets.main.prompts.isl:100,200.5:real"),
            ("--search-metric", "output_token_throughput"),
            ("--search-stat", "p50"),
            ("--search-direction", "maximize"),
            ("--search-max-iterations", "12"),
            ("--search-initial-points", "3"),
            ("--search-random-seed", "9"),
            ("--parameter-sweep-cooldown-seconds", "1.5"),
            // `stat` defaults to p95, as AIPerf's SLAFilter.
            ("--search-sla", "time_to_first_token:p95:lt:200"),
            ("--search-sla", "inter_token_latency:p99:le:12.5"),
        ])
    );
}

#[test]
fn an_adaptive_search_sweep_refuses_what_no_flag_expresses() {
    let ad = |rest: &str| {
        format!(
            "{MIN}sweep:\n  type: adaptive_search\n  searchSpace: [{{path: phases.profiling.concurrency, lo: 1, hi: 8, kind: int}}]\n  \
             objectives: [{{metric: output_token_throughput, direction: maximize}}]\n  maxIterations: 4\n{rest}"
        )
    };
    for (rest, says) in [
        (
            "  slaPrecision: tight\n",
            "not supported by ringperf: sweep.sla_precision",
        ),
        (
            "  bogus: 1\n",
            "sweep.bogus: Extra inputs are not permitted",
        ),
        (
            "  outcomeConstraints: [{metric: x, op: '<=', bound: 1}]\n",
            "sweep.outcome_constraints",
        ),
    ] {
        let e = refused(&ad(rest)).to_string();
        assert!(e.contains(says), "{rest}: {e}");
    }
    // A log-uniform prior goes to the typed plan (no flag has one).
    let f = translate_str(&format!(
        "{MIN}sweep:\n  type: adaptive_search\n  searchSpace: [{{path: phases.profiling.concurrency, lo: 1, hi: 8, prior: log-uniform}}]\n  \
         objectives: [{{metric: m, direction: maximize}}]\n  maxIterations: 4\n"
    ));
    assert_eq!(
        f.file_only.search_log_priors,
        ["phases.profiling.concurrency"]
    );
    let e = refused(&format!(
        "{MIN}sweep:\n  type: adaptive_search\n  searchSpace: [{{path: p, lo: 1, hi: 8}}]\n  \
         objectives: [{{metric: a, direction: maximize}}, {{metric: b, direction: minimize}}]\n  maxIterations: 4\n"
    ))
    .to_string();
    assert!(e.contains("2 objectives"), "{e}");
    let e = refused(&format!(
        "{MIN}sweep:\n  type: adaptive_search\n  objectives: [{{metric: a, direction: maximize}}]\n  maxIterations: 4\n"
    ))
    .to_string();
    assert!(e.contains("sweep.search_space: Field required"), "{e}");
    // AIPerf's discriminator is `adaptive_search`; `adaptive` gets its union-tag message.
    let e = refused(&format!("{MIN}sweep:\n  type: adaptive\n")).to_string();
    assert!(
        e.contains(
            "Input tag 'adaptive' found using 'type' does not match any of the expected tags: \
             'grid', 'zip', 'scenarios', 'adaptive_search', 'sobol', 'latin_hypercube'"
        ),
        "{e}"
    );
}

/// `sla_tiers` of an adaptive search is one `--search-sla-tier` per tier, and the search the
/// flags make has those tiers (its planner then the multi-tier one).
#[test]
fn sla_tiers_are_the_tier_flags_and_make_a_tiered_search() {
    let text = format!(
        "{MIN}sweep:\n  type: adaptive_search\n  \
         searchSpace: [{{path: phases.profiling.concurrency, lo: 1, hi: 8, kind: int}}]\n  \
         objectives: [{{metric: output_token_throughput, direction: maximize}}]\n  \
         maxIterations: 10\n  slaTiers:\n    \
         - {{label: tight, filters: [{{metric_tag: time_to_first_token, stat: p95, op: lt, threshold: 45}}]}}\n    \
         - {{label: loose, filters: [{{metric_tag: time_to_first_token, stat: p95, op: lt, threshold: 135}}, \
         {{metric_tag: request_latency, stat: avg, op: le, threshold: 900}}]}}\n"
    );
    let sweep = file_args(&text).sweep;
    let tiers: Vec<String> = sweep
        .iter()
        .filter(|(f, _)| f == "--search-sla-tier")
        .map(|(_, v)| v.join(" "))
        .collect();
    assert_eq!(
        tiers,
        [
            "tight:time_to_first_token:p95:lt:45",
            "loose:time_to_first_token:p95:lt:135,request_latency:avg:le:900"
        ]
    );
    let mut argv = s(&["ringperf", "profile", "-m", "m", "--streaming"]);
    for (f, v) in &sweep {
        argv.push(f.clone());
        argv.extend(v.iter().cloned());
    }
    let cli = <crate::cli::Cli as clap::Parser>::try_parse_from(&argv).expect("the flags parse");
    let crate::cli::Command::Profile(p) = cli.command else {
        panic!("not profile")
    };
    let search = crate::search::config::from_args(&p.search, true, None)
        .expect("a tiered search is accepted")
        .expect("a search");
    let crate::search::recipe::Expansion::Adaptive(a) = search.expansion else {
        panic!("not adaptive")
    };
    let labels: Vec<&str> = a.tiers.iter().map(|t| t.label.as_str()).collect();
    assert_eq!(labels, ["tight", "loose"]);
    assert_eq!(a.tiers[1].filters[1].threshold, 900.0);
}

#[test]
fn tokenizer_block_maps_onto_the_tokenizer_flags() {
    let line = words(&format!(
        "{MIN}  tokenizer: {{name: acme/chat, revision: v1, trust_remote_code: true, \
         apply_chat_template: true}}\n"
    ))
    .join(" ");
    for part in [
        "--tokenizer acme/chat",
        "--tokenizer-revision v1",
        "--tokenizer-trust-remote-code",
        "--apply-chat-template",
    ] {
        assert!(line.contains(part), "{part}: {line}");
    }
    // `false` is the default: no flag.
    let line = words(&format!(
        "{MIN}  tokenizer: {{apply_chat_template: false}}\n"
    ))
    .join(" ");
    assert!(!line.contains("--apply-chat-template"), "{line}");
    // `resolved_names`: the first model's entry is the run's tokenizer, over `name`.
    let line = words(&format!(
        "{MIN}  tokenizer: {{name: gpt2, resolved_names: {{m: builtin, other: gpt2}}}}\n"
    ))
    .join(" ");
    assert!(line.contains("--tokenizer builtin"), "{line}");
    let line = words(&format!(
        "{MIN}  tokenizer: {{name: gpt2, resolved_names: {{other: builtin}}}}\n"
    ))
    .join(" ");
    assert!(line.contains("--tokenizer gpt2"), "{line}");
}

/// Every text key of the flag table (`cli::flags`, `text_at`) under `benchmark.endpoint`: routed
/// to its flag with the value as written while the flag is implemented, refused by its path
/// while it is rejected. Nothing here names a flag: a row that changes changes this test's
/// expectation with it.
#[test]
fn the_flag_tables_text_keys_route_to_their_flags_or_are_refused_by_name() {
    use clap::CommandFactory;
    let cmd = crate::cli::Cli::command();
    let profile = cmd.find_subcommand("profile").expect("profile");
    let mut seen = 0;
    for f in crate::cli::flags::FLAGS {
        let Some(path) = f.text_at else { continue };
        let Some(key) = path.strip_prefix("endpoint.") else {
            continue;
        };
        seen += 1;
        // A value the flag takes: its first choice, in upper case (YAML values are matched as
        // the flag's parser matches them), else a word.
        let value = f
            .ids()
            .first()
            .and_then(|(id, _)| profile.get_arguments().find(|a| a.get_id() == *id))
            .and_then(|a| {
                a.get_possible_values()
                    .first()
                    .map(|p| p.get_name().to_uppercase())
            })
            .unwrap_or_else(|| "word".to_owned());
        let text = format!(
            "benchmark:\n  model: m\n  endpoint: {{url: 'http://h:1', {key}: {value}}}\n  dataset: {{type: synthetic}}\n"
        );
        if f.ids().is_empty() {
            match refused(&text) {
                YamlError::Unsupported(p) => assert_eq!(p, format!("benchmark.{path}")),
                other => panic!("{path}: {other:?}"),
            }
        } else {
            let w = words(&text);
            let at = w
                .iter()
                .position(|x| x == f.names[0])
                .unwrap_or_else(|| panic!("{path}: {w:?}"));
            assert_eq!(w[at + 1], value, "{path}");
        }
    }
    assert!(seen > 0, "the table has text keys under endpoint");
}

/// A value its setting cannot hold is refused naming the flag: a choice that is none of the
/// flag's, a word where a whole number goes.
#[test]
fn a_file_value_its_setting_cannot_hold_is_refused_by_flag() {
    let bare = crate::plan::Plan::parse(&s(&["ringperf", "profile"])).unwrap();
    let apply = |flag: &str, v: Value| {
        let written = v.to_string();
        let file = vec![(flag.to_owned(), vec![(v, written)])];
        crate::cli::parse::under_file(&bare.settings, &bare.given, &file)
    };
    let e = apply("--endpoint-type", json!("chatty")).unwrap_err();
    assert!(
        e.starts_with("--endpoint-type: 'chatty' is not one of chat, "),
        "{e}"
    );
    let e = apply("--concurrency", json!("lots")).unwrap_err();
    assert_eq!(e, "--concurrency: 'lots' is not a whole number");
    let e = apply("--concurrency", json!(2.5)).unwrap_err();
    assert_eq!(e, "--concurrency: 2.5 is not a whole number");
    let (settings, given) = apply("--endpoint-type", json!("COMPLETIONS")).unwrap();
    assert_eq!(
        settings.endpoint_type,
        crate::cli::EndpointTypeArg::Completions
    );
    assert_eq!(given["endpoint_type"], ["\"COMPLETIONS\""]);
    assert!(apply("--no-such-flag", json!(1)).is_err());
}

/// AIPerf's `artifacts` export lists: `summary: [json]` is what ringperf always writes,
/// `records: [jsonl]` / `false` and `raw` pick the export level; a format AIPerf does not
/// have, `true` or an empty list is refused.
#[test]
fn artifact_export_lists_pick_the_export_level() {
    let level = |artifacts: &str| {
        words(&format!("{MIN}  artifacts: {artifacts}\n"))
            .windows(2)
            .find(|w| w[0] == "--export-level")
            .map(|w| w[1].clone())
    };
    assert_eq!(
        level("{summary: [json], records: [jsonl]}").as_deref(),
        Some("records")
    );
    assert_eq!(level("{records: false}").as_deref(), Some("summary"));
    assert_eq!(
        level("{records: [jsonl], raw: true}").as_deref(),
        Some("raw")
    );
    assert_eq!(level("{summary: [json]}"), None);
    // `summary: false` leaves the JSON out (echoed as given; no export level of its own);
    // `true` and an empty list are AIPerf's schema errors.
    assert_eq!(level("{summary: false}"), None);
    assert!(matches!(
        refused(&format!("{MIN}  artifacts: {{summary: true}}\n")),
        YamlError::Schema(m) if m.contains("benchmark.artifacts.summary: Input should be False")
    ));
    for k in ["summary", "records"] {
        assert!(matches!(
            refused(&format!("{MIN}  artifacts: {{{k}: []}}\n")),
            YamlError::Schema(m) if m == format!(
                "benchmark.artifacts: Value error, {k} format list cannot be empty; use false \
                 to disable"
            )
        ));
    }
    assert!(matches!(
        refused(&format!("{MIN}  artifacts: {{records: [csv]}}\n")),
        YamlError::Schema(m) if m.contains("Input should be 'jsonl'")
    ));
}

#[test]
fn a_sequence_distribution_list_is_the_flags_semicolon_form() {
    let base = MIN.replace("  dataset: {type: synthetic}\n", "");
    let w = words(&format!(
        "{base}  datasets:\n    - name: default\n      type: synthetic\n      prompts:\n        sequenceDistribution:\n          - {{isl: 2048, osl: 256, probability: 30}}\n          - {{isl: {{mean: 8192, stddev: 100}}, osl: 512, osl_stddev: 8, probability: 35}}\n          - {{isl: 32000, osl: 512, probability: 35}}\n"
    ))
    .join(" ");
    assert!(
        w.contains("--seq-dist 2048,256:30;8192|100,512|8:35;32000,512:35"),
        "{w}"
    );
    // Weights summing to ~100 are normalized, as AIPerf does; far from 100 is refused.
    let w = words(&format!(
        "{base}  datasets:\n    - name: default\n      type: synthetic\n      prompts:\n        sequenceDistribution: [{{isl: 1, osl: 2, probability: 49.75}}, {{isl: 3, osl: 4, probability: 49.75}}]\n"
    ))
    .join(" ");
    assert!(w.contains("--seq-dist 1,2:50;3,4:50"), "{w}");
    let e = refused(&format!(
        "{base}  datasets:\n    - name: default\n      type: synthetic\n      prompts:\n        sequenceDistribution: [{{isl: 1, osl: 2, probability: 40}}]\n"
    ));
    assert!(e.to_string().contains("must sum to ~100, got 40"), "{e}");
    // Any distribution is its expected value, truncated (AIPerf's `int`), with a normal one's
    // spread; a log-normal one has none, bounds are read and unused.
    let w = words(&format!(
        "{base}  datasets:\n    - name: default\n      type: synthetic\n      prompts:\n        sequenceDistribution: [{{isl: {{mean: 5.9, median: 4}}, osl: {{peaks: [{{value: 2}}, {{value: 5}}], min: 1}}, probability: 100}}]\n"
    ))
    .join(" ");
    assert!(w.contains("--seq-dist 5,3:100"), "{w}");
}

#[test]
fn gpu_telemetry_collector_and_mode_are_the_flags_values() {
    let w = words(&format!(
        "{MIN}  gpuTelemetry: {{collector: dcgm, mode: realtime_dashboard, urls: ['http://n:9400/metrics']}}\n"
    ))
    .join(" ");
    assert!(
        w.contains("--gpu-telemetry dashboard http://n:9400/metrics"),
        "{w}"
    );
    let w = words(&format!("{MIN}  gpuTelemetry: {{collector: pynvml}}\n")).join(" ");
    assert!(w.contains("--gpu-telemetry pynvml"), "{w}");
    let e = refused(&format!("{MIN}  gpuTelemetry: {{mode: live}}\n"));
    assert!(
        e.to_string().contains("'summary' or 'realtime_dashboard'"),
        "{e}"
    );
}

#[test]
fn an_unknown_key_names_the_key_it_is_a_typo_of() {
    let e = refused(&format!(
        "{MIN}  phases:\n    - {{name: profiling, type: concurrency, concurency: 4, requests: 2}}\n"
    ));
    assert_eq!(
        e.to_string(),
        "Configuration validation failed: benchmark.phases.0.concurrency.concurency: Extra \
         inputs are not permitted (did you mean 'concurrency'?)"
    );
    // Nothing near: AIPerf's message alone.
    let e = refused(&format!(
        "{MIN}  phases:\n    - {{name: profiling, type: concurrency, zzzzzzzz: 4, requests: 2}}\n"
    ));
    assert_eq!(
        e.to_string(),
        "Configuration validation failed: benchmark.phases.0.concurrency.zzzzzzzz: Extra inputs \
         are not permitted"
    );
    // A top-level key: the envelope's and the benchmark's keys are the candidates.
    let e = refused(&format!("{MIN}multiRuns: {{numRuns: 2}}\n"));
    assert!(
        e.to_string()
            .contains("multi_runs: Extra inputs are not permitted (did you mean 'multi_run'?)"),
        "{e}"
    );
}

/// `config init -m/-u` land on the key the template declares, as AIPerf's `build_overrides`
/// puts them, and leave the rest of the text, comments included, as it was.
#[test]
fn init_overrides_land_where_aiperf_puts_them() {
    use super::templates::customize;
    let raw = |t: &str| load_str(t, &|_| None).unwrap();
    // Body `model`, endpoint `urls` (a block list, replaced by a one-item list).
    let t = "# top\nbenchmark:\n  model: a  # the model\n  endpoint:\n    urls:\n      - http://x:1\n\n      # two\n      - http://y:2\n    type: chat\n  dataset: {entries: 3}\n";
    let out = customize(t, Some("m/n"), Some("http://h:9"));
    assert!(out.starts_with("# top\n"), "{out}");
    let v = raw(&out);
    assert_eq!(v["benchmark"]["models"], "m/n");
    assert_eq!(v["benchmark"]["endpoint"]["urls"], json!(["http://h:9"]));
    assert_eq!(v["benchmark"]["endpoint"]["type"], "chat");
    // Top-level `models` wins over the body's; a list gets a one-item list.
    let out = customize(
        "models: [a, b]\nbenchmark:\n  model: c\n  endpoint:\n    url: u\n",
        Some("true"),
        Some("http://h:9"),
    );
    let docs = yaml_rust2::YamlLoader::load_from_str(&out).unwrap();
    assert_eq!(docs[0]["models"][0].as_str(), Some("true"), "{out}");
    assert_eq!(docs[0]["models"][1], yaml_rust2::Yaml::BadValue);
    assert_eq!(docs[0]["benchmark"]["model"].as_str(), Some("c"));
    assert_eq!(
        docs[0]["benchmark"]["endpoint"]["url"].as_str(),
        Some("http://h:9")
    );
    // No model anywhere: a top-level `models`; no endpoint: `benchmark.endpoint.urls`.
    let out = customize(
        "benchmark:\n  dataset: {entries: 3}\n",
        Some("m"),
        Some("u"),
    );
    let docs = yaml_rust2::YamlLoader::load_from_str(&out).unwrap();
    assert_eq!(docs[0]["models"][0].as_str(), Some("m"), "{out}");
    assert_eq!(
        docs[0]["benchmark"]["endpoint"]["urls"][0].as_str(),
        Some("u"),
        "{out}"
    );
    // A flat file (no `benchmark:`) keeps its top-level endpoint.
    let out = customize("model: a\nendpoint:\n  url: b\n", None, Some("u"));
    assert_eq!(out, "model: a\nendpoint:\n  url: u\n");
    // Nothing asked: the text unchanged.
    for t in super::templates::TEMPLATES {
        assert_eq!(customize(t.text, None, None), t.text, "{}", t.name);
    }
}

/// Every template reads as YAML, declares its model and URL where `customize` finds them, and
/// has a category `--list` prints.
#[test]
fn every_template_is_listed_and_customizable() {
    use super::templates::{CATEGORIES, TEMPLATES, customize, list};
    assert_eq!(list(None).len(), TEMPLATES.len());
    for t in TEMPLATES {
        assert!(CATEGORIES.contains(&t.category), "{}", t.name);
        let out = customize(t.text, Some("zz-model"), Some("http://zz:1"));
        let docs = yaml_rust2::YamlLoader::load_from_str(&out).unwrap();
        let b = &docs[0]["benchmark"];
        assert_eq!(b["model"].as_str(), Some("zz-model"), "{}", t.name);
        let ep = &b["endpoint"];
        let url = ep["url"].as_str().or(ep["urls"][0].as_str());
        assert_eq!(url, Some("http://zz:1"), "{}", t.name);
        // Only a list of URLs shrinks (to one line).
        assert!(out.lines().count() <= t.text.lines().count(), "{}", t.name);
        assert_eq!(
            out.lines().count() == t.text.lines().count(),
            ep["url"].as_str().is_some(),
            "{}",
            t.name
        );
    }
}

/// `artifacts.user_files` and a file dataset's inline `records` are checked with AIPerf's
/// messages (from AIPerf 0.13's `config validate` on the same entries) and typed in the plan.
#[test]
fn user_files_and_inline_records_are_checked_as_aiperf_checks_them() {
    let head = "benchmark:\n  model: m\n  endpoint: {url: 'http://h:1'}\n";
    let with_files = |files: &str| {
        format!("{head}  dataset: {{type: synthetic}}\n  artifacts:\n    user_files: {files}\n")
    };
    for (files, message) in [
        (
            "[{path: /abs, content: {a: 1}}]",
            "benchmark.artifacts.user_files.0: Value error, user_files absolute path rejected: '/abs'",
        ),
        (
            "[{path: a/../b, content: {a: 1}}]",
            "benchmark.artifacts.user_files.0: Value error, user_files path '..' rejected: 'a/../b'",
        ),
        (
            "[{path: '', content: {a: 1}}]",
            "benchmark.artifacts.user_files.0: Value error, user_files entry has empty path",
        ),
        (
            "[{path: a.json, format: json, content: 'str'}]",
            "benchmark.artifacts.user_files.0: Value error, user_files path='a.json': format='json' requires structured content (dict/list/scalar); got str. Wrap in a dict or set format: text.",
        ),
        (
            "[{path: a.txt, format: text, content: {a: 1}}]",
            "benchmark.artifacts.user_files.0: Value error, user_files path='a.txt': format='text' requires string content; got dict.",
        ),
        (
            "[{path: a.txt}]",
            "benchmark.artifacts.user_files.0.content: Field required",
        ),
        (
            "[{path: a.txt, format: toml, content: x}]",
            "benchmark.artifacts.user_files.0.format: Input should be 'json', 'yaml' or 'text'",
        ),
        (
            "{path: a.txt, content: x}",
            "benchmark.artifacts.user_files: Input should be a valid list",
        ),
    ] {
        assert_eq!(
            refused(&with_files(files)),
            YamlError::Schema(message.into()),
            "{files}"
        );
    }
    let a = translate_str(&with_files(
        "[{path: a.txt, content: 'x{{ n }}', extra: 1}, {path: b, content: [1]}]",
    ));
    let files = &a.file_only.user_files.files;
    assert_eq!(files[0].format, UserFileFormat::Text);
    assert_eq!(files[1].format, UserFileFormat::Json);
    assert_eq!(files[0].content, json!("x{{ n }}"));

    let with_dataset = |d: &str| format!("{head}  dataset: {d}\n");
    for (d, message) in [
        (
            "{type: file, path: a.jsonl, records: [{text: a}]}",
            "benchmark.datasets.0.file: Value error, FileDataset requires exactly one source: set either `path:` (load from disk) or `records:` (embed in YAML), not both. Got path=PosixPath('a.jsonl'), records=<set>.",
        ),
        (
            "{type: file}",
            "benchmark.datasets.0.file: Value error, FileDataset requires exactly one source: set either `path:` (load from disk) or `records:` (embed in YAML), not both. Got path=None, records=None.",
        ),
        (
            "{type: file, records: []}",
            "benchmark.datasets.0.file: Value error, `records:` must contain at least one record.",
        ),
        (
            "{type: file, records: {q: [{text: a}]}}",
            "benchmark.datasets.0.file: Value error, `records:` as a dict-of-lists (multi-pool) is only valid for format: random_pool, got format: single_turn.",
        ),
    ] {
        assert_eq!(
            refused(&with_dataset(d)),
            YamlError::Schema(message.into()),
            "{d}"
        );
    }
    // Formats whose AIPerf loader opens the dataset's path (and fails without one at run time).
    for format in [
        "raw_payload",
        "inputs_json",
        "burst_gpt_trace",
        "dag_jsonl",
        "baseten_trace",
    ] {
        let e = refused(&with_dataset(&format!(
            "{{type: file, format: {format}, records: [{{a: 1}}]}}"
        )));
        assert!(
            matches!(&e, YamlError::Unsupported(m) if m.contains(&format!("benchmark.datasets.default.records: inline records of format {format} (AIPerf 0.13 reads {format} from a file only"))),
            "{e:?}"
        );
    }
    // `random_pool`'s dict of pools, in the dict's order.
    let a = translate_str(&with_dataset(
        "{type: file, format: random_pool, records: {z: [{text: a}], b: [{text: c}, {text: d}]}}",
    ));
    let r = a.file_only.inline_records.expect("typed");
    assert!(r.records.is_empty());
    assert_eq!(
        r.pools_jsonl(),
        [
            ("z".to_owned(), "{\"text\":\"a\"}\n".to_owned()),
            (
                "b".to_owned(),
                "{\"text\":\"c\"}\n{\"text\":\"d\"}\n".to_owned()
            )
        ]
    );
    let e = refused(&with_dataset(
        "{type: file, format: random_pool, records: {z: [{text: a}], b: [3]}}",
    ));
    assert_eq!(
        e,
        YamlError::Schema(
            "benchmark.datasets.default.records.b.0: Input should be a valid dictionary".into()
        )
    );
    let a = translate_str(&with_dataset(
        "{type: file, format: multi_turn, records: [{session_id: s, turns: [{text: a}]}]}",
    ));
    let r = a.file_only.inline_records.expect("typed");
    assert_eq!(r.at, "benchmark.datasets.default.records");
    assert_eq!(
        r.jsonl(),
        "{\"session_id\":\"s\",\"turns\":[{\"text\":\"a\"}]}\n"
    );
}

/// Log-normal, multimodal and empirical lengths are their expected value, as AIPerf 0.13's
/// synthetic composer reads them (`int(expected_value)`, no spread); their rules are checked.
#[test]
fn lengths_of_other_distributions_are_their_expected_value() {
    let isl = |d: &str| {
        let a = translate_str(&format!(
            "benchmark:\n  model: m\n  endpoint: {{url: 'http://h:1'}}\n  dataset: {{type: synthetic, prompts: {{isl: {d}}}}}\n"
        ));
        a.words().join(" ")
    };
    for (d, mean) in [
        (
            "{peaks: [{mean: 256, median: 214, weight: 70}, {mean: 2048, median: 1891, weight: 30}]}",
            "793",
        ),
        ("{mean: 300, median: 200}", "300"),
        ("{points: [{value: 100, weight: 3}, {value: 200}]}", "125"),
        (
            "{peaks: [{mean: 100, stddev: 5}, {distribution: {value: 301}, weight: 1}]}",
            "200",
        ),
    ] {
        let line = isl(d);
        assert!(
            line.contains(&format!("--prompt-input-tokens-mean {mean}")),
            "{d}: {line}"
        );
        assert!(!line.contains("stddev"), "{d}: {line}");
    }
    let refused_isl = |d: &str| {
        refused(&format!(
            "benchmark:\n  model: m\n  endpoint: {{url: 'http://h:1'}}\n  dataset: {{type: synthetic, prompts: {{isl: {d}}}}}\n"
        ))
        .to_string()
    };
    for (d, why) in [
        (
            "{mean: 100, median: 200}",
            "Log-normal median (200.0) must be <= mean (100.0).",
        ),
        ("{peaks: [{mean: 100}]}", "at least 2 items"),
        ("{points: []}", "requires at least 1 point"),
        // A peak's bounds are checked as AIPerf checks them (then unused).
        (
            "{peaks: [{mean: 1, min: 3, max: 2}, {mean: 2}]}",
            "Distribution bounds invalid: min=3.0 > max=2.0",
        ),
    ] {
        let e = refused_isl(d);
        assert!(e.contains(why), "{d}: {e}");
    }
}

/// The flags' warmup takes its concurrency, prefill limit and ramps from the profiling phase
/// when it has none; a file's warmup does not (AIPerf's warmup of a file is what the file
/// says), so one lacking a key the profiling phase has is a phase of its own.
#[test]
fn a_warmup_that_would_inherit_the_profiling_phases_keys_is_a_phase_of_its_own() {
    for (warmup, profiling) in [
        (
            "{type: concurrency, requests: 4}",
            "{type: concurrency, concurrency: 64, requests: 8}",
        ),
        (
            "{type: concurrency, concurrency: 4, requests: 4}",
            "{type: concurrency, concurrency: 8, concurrencyRamp: 60, requests: 8}",
        ),
    ] {
        let f = translate_str(&format!(
            "{MIN}  warmup: {warmup}\n  profiling: {profiling}\n"
        ));
        assert_eq!(
            f.file_only.phases_before.len(),
            1,
            "{warmup} before {profiling}"
        );
        assert!(
            !f.flags.iter().any(|(k, _)| k.starts_with("--warmup-")),
            "{:?}",
            f.flags
        );
    }
    // Given every key the profiling phase has: the flags pace it.
    let f = translate_str(&format!(
        "{MIN}  warmup: {{type: concurrency, concurrency: 4, requests: 4}}\n  profiling: {{type: concurrency, concurrency: 8, requests: 8}}\n"
    ));
    assert!(f.file_only.phases_before.is_empty());
}

#[test]
fn network_latency_is_the_network_latency_flags() {
    let w = |block: &str| words(&format!("{MIN}  networkLatency: {block}\n")).join(" ");
    assert!(w("{enabled: true, mean_ms: 5}").contains("--network-latency-mean 5"));
    let auto = w("{enabled: true, ping_interval: 0.5}");
    assert!(
        auto.contains("--network-latency-automatic --network-latency-ping-interval 0.5"),
        "{auto}"
    );
    assert!(w("{enabled: true}").ends_with("--network-latency-automatic"));
    // Disabled (what AIPerf writes into every configuration): no flag.
    assert!(!w("{enabled: false}").contains("network-latency"));
    assert!(!w("{enabled: false, mean_ms: 5}").contains("network-latency"));
    let e = refused(&format!(
        "{MIN}  networkLatency: {{enabled: true, rtt: 5}}\n"
    ));
    assert!(e.to_string().contains("network_latency.rtt"), "{e}");
}

/// AIPerf 0.13's schema holds exactly one dataset: its messages for none and for two.
#[test]
fn a_dataset_list_holds_one_dataset_as_aiperfs_schema_says() {
    let body = "benchmark:\n  model: m\n  endpoint: {url: u}\n";
    let e = refused(&format!("{body}  datasets: []\n")).to_string();
    assert!(
        e.contains("benchmark.datasets: List should have at least 1 item after validation, not 0"),
        "{e}"
    );
    let two = "  datasets:\n    - {name: a, type: synthetic}\n    - {name: b, type: synthetic}\n";
    let e = refused(&format!("{body}{two}")).to_string();
    assert!(
        e.contains("benchmark.datasets: List should have at most 1 item after validation, not 2"),
        "{e}"
    );
}

/// A distribution's explicit `type:` (AIPerf's discriminator) is checked against AIPerf's names
/// and the type's own keys, then dropped: the meaning is the untagged form's.
#[test]
fn a_distributions_explicit_type_is_read_as_aiperf_reads_it() {
    let prompts = |isl: &str| {
        format!(
            "benchmark:\n  model: m\n  endpoint: {{url: u}}\n  dataset:\n    type: synthetic\n    \
             prompts: {{isl: {isl}, osl: 4}}\n  phases: {{type: concurrency, concurrency: 1, requests: 1}}\n"
        )
    };
    let typed = words(&prompts("{type: normal, mean: 300, stddev: 20}"));
    assert_eq!(typed, words(&prompts("{mean: 300, stddev: 20}")));
    assert!(typed.contains(&"300".to_owned()), "{typed:?}");
    let typed = translate_str(&prompts("{type: lognormal, mean: 300, median: 200}"));
    let plain = translate_str(&prompts("{mean: 300, median: 200}"));
    assert_eq!(typed.words(), plain.words());
    assert_eq!(typed.file_only.drawn, plain.file_only.drawn);
    let e = refused(&prompts("{type: gaussian, mean: 300}"));
    assert!(
        matches!(&e, YamlError::Schema(m) if m.contains("Unknown distribution type 'gaussian'")),
        "{e:?}"
    );
    let e = refused(&prompts("{type: fixed, mean: 300}"));
    assert!(
        matches!(&e, YamlError::Schema(m) if m.contains("isl.mean: Extra inputs are not permitted")),
        "{e:?}"
    );
}

/// Keys of AIPerf 0.13's schema that change nothing ringperf runs: read, checked as AIPerf
/// checks them, echoed; the ones that would run AIPerf-only machinery refused by name.
#[test]
fn keys_read_and_unused_are_checked_and_echoed() {
    let base = "benchmark:\n  model: m\n  dataset: {type: synthetic}\n";
    let f = file_args(&format!(
        "{base}  runtime: {{record_processors: 4, workers_min: 2, communication: {{type: ipc}}}}\n  metrics: {{}}\n  accuracy: {{tasks: [a]}}\n  endpoint: {{url: 'http://h:1', reset_kv_cache: {{max_retry_seconds: 12.5}}}}\n"
    ));
    let echoed: Vec<&str> = f
        .file_only
        .echoed
        .iter()
        .map(|(at, _)| at.as_str())
        .collect();
    assert_eq!(
        echoed,
        [
            "runtime.record_processors",
            "runtime.workers_min",
            "runtime.communication",
            "metrics",
            "accuracy"
        ]
    );
    assert_eq!(f.file_only.reset_retry_seconds, Some(12.5));
    assert!(f.words().iter().any(|w| w == "--reset-kv-cache"));
    for (body, why) in [
        (
            "  accuracy: {benchmark: mmlu}\n",
            "benchmark.accuracy.benchmark",
        ),
        (
            "  metrics: {x: 1}\n",
            "benchmark.metrics.x: Extra inputs are not permitted",
        ),
        (
            "  server_metrics: {discovery: {mode: swarm}}\n",
            "Input should be 'auto', 'kubernetes' or 'disabled'",
        ),
        (
            "  endpoint: {url: 'http://h:1', reset_kv_cache: {max_retry_seconds: -1}}\n",
            "max_retry_seconds: Input should be greater than or equal to 0",
        ),
    ] {
        let body = if body.contains("endpoint") {
            format!("{base}{body}")
        } else {
            format!("{MIN}{body}")
        };
        let e = refused(&body);
        assert!(e.to_string().contains(why), "{body}: {e}");
    }
    // AIPerf's shorthands: a URL alone, `url` for `urls`.
    let line = words(&format!(
        "{MIN}  gpu_telemetry: 'http://g:9400/metrics'\n  server_metrics: {{url: 'http://s:1/metrics'}}\n"
    ))
    .join(" ");
    assert!(
        line.contains("--gpu-telemetry http://g:9400/metrics"),
        "{line}"
    );
    assert!(
        line.contains("--server-metrics http://s:1/metrics"),
        "{line}"
    );
}

/// A `timing_mode` that would run a phase by another type's strategy is refused by name; an
/// unknown one is AIPerf's schema error.
#[test]
fn a_timing_mode_changing_the_strategy_is_refused() {
    let phases = |p: &str| {
        format!(
            "benchmark:\n  model: m\n  endpoint: {{url: u}}\n  dataset: {{type: synthetic}}\n  phases:\n    - {p}\n"
        )
    };
    // A gamma phase's replay is not run (its smoothness would be echoed and unused).
    let e = refused(&phases(
        "{name: profiling, type: gamma, rate: 5, smoothness: 2, requests: 2, timing_mode: fixed_schedule}",
    ));
    assert!(
        matches!(&e, YamlError::Unsupported(m) if m.contains("fixed_schedule on a gamma phase (its type gives request_rate")),
        "{e:?}"
    );
    // A poisson one replays the trace, its rate kept for the echo only.
    let f = file_args(&phases(
        "{name: profiling, type: poisson, rate: 5, requests: 2, timing_mode: fixed_schedule}",
    ));
    assert_eq!(
        f.file_only.profiling_replayed_type.as_deref(),
        Some("poisson")
    );
    assert_eq!(f.file_only.profiling_replayed_rate, Some(5.0));
    assert!(
        !f.words()
            .iter()
            .any(|w| w == "--request-rate" || w == "--arrival-pattern")
    );
    let e = refused(&phases(
        "{name: profiling, type: poisson, rate: 5, requests: 2, timing_mode: bursty}",
    ));
    assert!(
        e.to_string().contains("Input should be 'request_rate'"),
        "{e}"
    );
    let f = file_args(&phases(
        "{name: profiling, type: user_centric, rate: 5, users: 2, requests: 2, timing_mode: user_centric_rate}",
    ));
    assert_eq!(
        f.file_only.profiling_timing_mode.as_deref(),
        Some("user_centric_rate")
    );
}

/// The flags' warmup's `failed_request_threshold`: checked, echoed, unused (AIPerf keeps it for
/// profiling phases only).
#[test]
fn a_flag_warmups_error_budget_is_echoed_not_applied() {
    let f = file_args(
        "benchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {type: synthetic}\n  phases:\n    - {name: warmup, kind: warmup, type: concurrency, concurrency: 1, requests: 2, failed_request_threshold: 0.3}\n    - {name: profiling, type: concurrency, concurrency: 1, requests: 2}\n",
    );
    assert!(f.file_only.phases_before.is_empty(), "the flags' warmup");
    assert_eq!(
        f.file_only.echoed,
        [(
            "phases.0.failed_request_threshold".to_owned(),
            serde_json::json!(0.3)
        )]
    );
    assert!(!f.words().iter().any(|w| w == "--failed-request-threshold"));
    let e = refused(
        "benchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {type: synthetic}\n  phases:\n    - {name: warmup, kind: warmup, type: concurrency, concurrency: 1, requests: 2, failed_request_threshold: 1.5}\n    - {name: profiling, type: concurrency, concurrency: 1, requests: 2}\n",
    );
    assert!(e.to_string().contains("less than or equal to 1"), "{e}");
}

/// `rate_ramp` on a later user-centric phase is read (AIPerf warns and fixes the rate at its
/// target; so does the run), not refused.
#[test]
fn a_later_user_centric_phases_rate_ramp_is_read() {
    let f = file_args(
        "benchmark:\n  model: m\n  endpoint: {url: u}\n  dataset: {type: synthetic}\n  phases:\n    - {name: profiling, type: concurrency, concurrency: 1, requests: 2}\n    - {name: p2, kind: profiling, type: user_centric, rate: 20, users: 4, duration: 2, rate_ramp: 3}\n",
    );
    assert_eq!(f.file_only.phases_after[0].rate_ramp, Some(3.0));
}

/// A grid's `sla_filters` are its `--search-sla` words; `recipe_name` and `post_process` go to
/// the typed plan; each is checked with AIPerf's messages (its `config validate` on the same
/// files, tests/data/aiperf-yaml/sweep-extras/).
#[test]
fn a_grids_filters_recipe_and_post_process_are_read_as_aiperf_checks_them() {
    let sweep = |extra: &str| {
        format!("sweep:\n  type: grid\n  parameters: {{concurrency: [1, 2]}}\n{extra}{MIN}")
    };
    let f = translate_str(&sweep(
        "  sla_filters: [{metric_tag: request_latency, op: le, threshold: 5}]\n  recipe_name: \
         concurrency-ramp\n  post_process: {handler: ttft_curve_fit, params: {stat: avg}, \
         output_filename: fit.json}\n",
    ));
    let sla: Vec<&(String, Vec<String>)> = f
        .sweep
        .iter()
        .filter(|(k, _)| k == "--search-sla")
        .collect();
    assert_eq!(sla.len(), 1);
    assert_eq!(sla[0].1, ["request_latency:p95:le:5"]);
    assert_eq!(
        f.file_only.sweep_recipe.as_deref(),
        Some("concurrency-ramp")
    );
    let pp = f.file_only.sweep_post_process.as_ref().unwrap();
    assert_eq!(
        (pp.handler.as_str(), pp.output_filename.as_str()),
        ("ttft_curve_fit", "fit.json")
    );
    assert_eq!(pp.params["stat"], "avg");
    let cases = [
        (
            "  post_process: {handler: h, output_filename: ../k.json}\n",
            "sweep.post_process: Value error, PostProcessSpec.output_filename must be \
             filename-only (no path separators), got '../k.json'.",
        ),
        (
            "  post_process: {handler: h, output_filename: k.txt}\n",
            "sweep.post_process: Value error, PostProcessSpec.output_filename must end in \
             '.json' (handlers emit JSON artifacts), got 'k.txt'.",
        ),
        (
            "  post_process: {handler: h, output_filename: ..json}\n",
            "must have a non-dot stem before '.json' (got '..json')",
        ),
        (
            "  post_process: {handler: ' ', output_filename: k.json}\n",
            "PostProcessSpec.handler must be a non-empty, non-whitespace registered handler name.",
        ),
        (
            "  recipe_name: 5\n",
            "sweep.recipe_name: Input should be a valid string",
        ),
        (
            "  sla_filters: [{metric_tag: x, op: '<', threshold: 1}]\n",
            "sweep.sla_filters.0.op: Input should be 'lt', 'le', 'gt' or 'ge'",
        ),
    ];
    for (extra, want) in cases {
        let e = refused(&sweep(extra)).to_string();
        assert!(e.contains(want), "{extra}: {e}");
    }
}
