//! A config file that AIPerf 0.13 itself wrote for one flag reads into the plan that flag makes on
//! the command line: for every AIPerf flag ringperf runs, `tests/data/aiperf-flag-configs/`
//! holds the configuration AIPerf's own converter makes of `--model m --url … FLAG VALUE`
//! (`gen.py`, run once against `pip install aiperf==0.13.0`); the value is one of the flag's kind,
//! chosen here (`RINGPERF_WRITE_SAMPLES=1 cargo test -p ringperf --lib flag_samples` rewrites
//! the list).

use clap::CommandFactory;
use serde_json::Value;

use super::read;
use crate::cli::Cli;
use crate::cli::flags::{Acts, FLAGS};

const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/aiperf-flag-configs"
);

/// The flags every sample line has (AIPerf needs a model; the URL is a port nothing listens on).
const BASE: &[&str] = &["--model", "m", "--url", "http://127.0.0.1:9"];

/// Each AIPerf flag ringperf runs, with a value of its kind: a switch alone, a whole number 3, a
/// real 0.5, a choice other than its default, or text.
fn samples() -> Vec<Vec<String>> {
    let cmd = Cli::command();
    let profile = cmd.find_subcommand("profile").expect("profile");
    let mut out = Vec::new();
    for f in FLAGS {
        let Acts::Aiperf(ids) = f.acts else { continue };
        let name = f.names[0];
        let Some(arg) = ids
            .first()
            .filter(|(id, _)| !["model_names", "url"].contains(id))
            .and_then(|(id, _)| profile.get_arguments().find(|a| a.get_id() == *id))
        else {
            continue;
        };
        if !arg.get_action().takes_values() {
            out.push(vec![name.to_owned()]);
            continue;
        }
        let ty = arg.get_value_parser().type_id();
        let whole = [
            std::any::TypeId::of::<u64>(),
            std::any::TypeId::of::<u32>(),
            std::any::TypeId::of::<usize>(),
            std::any::TypeId::of::<u16>(),
        ]
        .iter()
        .any(|t| ty == *t);
        let defaults: Vec<String> = arg
            .get_default_values()
            .iter()
            .map(|d| d.to_string_lossy().into_owned())
            .collect();
        let value = if whole {
            "3".to_owned()
        } else if ty == std::any::TypeId::of::<f64>() {
            "0.5".to_owned()
        } else if let Some(c) = arg
            .get_possible_values()
            .iter()
            .filter(|c| !c.is_hide_set())
            .find(|c| !defaults.iter().any(|d| c.matches(d, true)))
        {
            c.get_name().to_owned()
        } else {
            "x".to_owned()
        };
        out.push(vec![name.to_owned(), value]);
    }
    out
}

#[test]
fn flag_samples_are_the_fixtures() {
    let path = format!("{DIR}/samples.json");
    let text = serde_json::to_string_pretty(&samples()).expect("json") + "\n";
    if std::env::var_os("RINGPERF_WRITE_SAMPLES").is_some() {
        std::fs::write(&path, &text).expect("writes");
    }
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        on_disk, text,
        "{path} is stale: RINGPERF_WRITE_SAMPLES=1 cargo test -p ringperf --lib flag_samples, \
         then gen.py"
    );
}

/// The plan of `ringperf profile` with `tail` after [`BASE`], or why clap refuses it.
fn cli_plan(tail: &[String]) -> Result<crate::plan::Plan, String> {
    let mut argv: Vec<String> = ["ringperf", "profile"]
        .iter()
        .chain(BASE)
        .map(|w| (*w).to_owned())
        .collect();
    argv.extend(tail.iter().cloned());
    crate::plan::Plan::parse(&argv).map_err(|e| e.to_string())
}

/// The plan of `ringperf profile -f FILE` for AIPerf's configuration `config`.
fn file_plan(config: &Value) -> Result<crate::plan::Plan, String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let file = dir.path().join("aiperf.yaml");
    std::fs::write(&file, config.to_string()).map_err(|e| e.to_string())?;
    let argv: Vec<String> = ["ringperf", "profile", "-f", &file.display().to_string()]
        .iter()
        .map(|w| (*w).to_owned())
        .collect();
    let read = read(&argv, &|_| None).map_err(|e| match e {
        super::InvocationError::File(f) => f.error.to_string(),
        other => format!("{other:?}"),
    })?;
    read.plan(&argv)
        .map(|(p, _)| p)
        .ok_or_else(|| "not profile".to_owned())
}

/// Flags whose setting AIPerf's file carries in another form, and why the settings differ.
const KNOWN: &[(&str, &str)] = &[
    (
        "--api-key",
        "AIPerf writes the key `<redacted>` into the configuration it dumps",
    ),
    (
        "--otel-url",
        "AIPerf writes the URL normalised (`http://x/v1/metrics`); so does ringperf's echo",
    ),
    (
        "--verbose",
        "AIPerf writes it as `logging.level: DEBUG` and `runtime.ui: simple`",
    ),
    (
        "--extra-verbose",
        "AIPerf writes it as `logging.level: TRACE` and `runtime.ui: simple`",
    ),
    (
        "--ui-type",
        "AIPerf writes `simple` for `dashboard` when stdout is not a terminal",
    ),
];

#[test]
fn every_flag_aiperf_writes_into_a_config_file_reads_back_into_its_setting() {
    let configs: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{DIR}/configs.json")).expect("configs.json"),
    )
    .expect("json");
    let mut report = Vec::new();
    let mut agreed = 0;
    for entry in configs["flags"].as_array().expect("a list") {
        let tail: Vec<String> = serde_json::from_value(entry["argv"].clone()).expect("argv");
        let Some(config) = entry.get("config") else {
            continue; // AIPerf refuses the flag alone (gen.py's `error`).
        };
        if *config == configs["base"] || KNOWN.iter().any(|(f, _)| *f == tail[0]) {
            // AIPerf's file does not carry the flag alone (its converter drops it without the
            // flags it goes with), or carries it in another form (below).
            continue;
        }
        let cli = match cli_plan(&tail) {
            Ok(p) => p,
            Err(_) => continue, // ringperf refuses it alone too (a companion flag needed)
        };
        let file = match file_plan(config) {
            Ok(p) => p,
            Err(why) => {
                report.push(format!("{tail:?}: the file is refused: {why}"));
                continue;
            }
        };
        let (a, b) = (
            serde_json::to_value(&cli.settings).expect("json"),
            serde_json::to_value(&file.settings).expect("json"),
        );
        for id in cli.given.keys() {
            if a.get(id) != b.get(id) {
                report.push(format!(
                    "{tail:?}: {id} is {} from the flag, {} from AIPerf's file",
                    a[id], b[id]
                ));
            }
        }
        agreed += 1;
    }
    assert!(
        report.is_empty(),
        "{} differences:\n{}",
        report.len(),
        report.join("\n")
    );
    // 95 of the 145 lines AIPerf converts carry their flag (AIPerf 0.13, ringperf at this test's
    // writing): fewer means lines are skipped that should not be.
    assert!(agreed >= 95, "only {agreed} flags compared");
}

/// The media blocks of `input_config` (`images`, `audio`, `video`) are what AIPerf's converter
/// writes for each media flag it accepts alone (configs.json): the settings given, in its
/// models' order, `batch_size: 1` where a shape is given without one.
#[test]
fn media_flags_are_echoed_as_aiperf_writes_them() {
    let configs: Value = serde_json::from_str(
        &std::fs::read_to_string(format!("{DIR}/configs.json")).expect("configs.json"),
    )
    .expect("json");
    let mut compared = 0;
    for entry in configs["flags"].as_array().expect("a list") {
        let tail: Vec<String> = serde_json::from_value(entry["argv"].clone()).expect("argv");
        let media = ["--image-", "--audio-", "--video-"];
        let (Some(config), true) = (
            entry.get("config"),
            media.iter().any(|m| tail[0].starts_with(m)),
        ) else {
            continue;
        };
        let plan = cli_plan(&tail).expect("parses");
        let Ok(cfg) = crate::config::Config::from_plan(&plan, false) else {
            continue; // ringperf refuses it alone (`--video-width` needs `--video-height`)
        };
        let ours = &cfg.input_config()["datasets"][0];
        let theirs = &config["benchmark"]["datasets"][0];
        for block in ["images", "audio", "video"] {
            assert_eq!(ours.get(block), theirs.get(block), "{tail:?}: {block}");
        }
        compared += 1;
    }
    assert!(compared >= 16, "only {compared} media flags compared");
}
