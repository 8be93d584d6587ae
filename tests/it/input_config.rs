//! `input_config` parity: for every command line AIPerf 0.13 ran in
//! `tests/data/aiperf-input-config/` (its own `run_info.cli_command`), ringperf's `input_config`
//! for the same command line equals the one AIPerf wrote: same key paths, same values, same key
//! order.
//!
//! One difference is legitimate and checked as such: with no `--server-metrics-formats`,
//! ringperf's default also writes Parquet (`["json", "csv", "parquet"]`, docs/flags.md), AIPerf
//! 0.13's CLI default is `["json", "csv"]`.

use std::path::Path;

use ringperf::config::Config;
use ringperf::plan::Plan;
use serde_json::Value;

const DIR: &str = "tests/data/aiperf-input-config";

fn ringperf_input_config(argv: &[String]) -> Value {
    let mut argv = argv.to_vec();
    argv[0] = "ringperf".into();
    let plan = Plan::parse(&argv).unwrap_or_else(|e| panic!("{argv:?}: {e}"));
    // The fixtures were written with stdout not a terminal.
    Config::from_plan(&plan, false)
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"))
        .input_config()
}

/// Every difference between `a` (AIPerf) and `r` (ringperf) as `path: aiperf != ringperf`,
/// including key order.
fn diff(path: &str, a: &Value, r: &Value, out: &mut Vec<String>) {
    match (a, r) {
        (Value::Object(am), Value::Object(rm)) => {
            for (k, av) in am {
                match rm.get(k) {
                    Some(rv) => diff(&format!("{path}.{k}"), av, rv, out),
                    None => out.push(format!("{path}.{k}: {av} missing in ringperf")),
                }
            }
            for k in rm.keys().filter(|k| !am.contains_key(*k)) {
                out.push(format!("{path}.{k}: {} only in ringperf", rm[k]));
            }
            let ak: Vec<&String> = am.keys().collect();
            let rk: Vec<&String> = rm.keys().filter(|k| am.contains_key(*k)).collect();
            if out.is_empty() && ak != rk {
                out.push(format!("{path}: key order {ak:?} != {rk:?}"));
            }
        }
        (Value::Array(av), Value::Array(rv)) if av.len() == rv.len() => {
            for (i, (x, y)) in av.iter().zip(rv).enumerate() {
                diff(&format!("{path}[{i}]"), x, y, out);
            }
        }
        // serde_json keeps 8 and 8.0 apart, as AIPerf writes its float fields as floats.
        _ if a != r => {
            out.push(format!("{path}: {a} != {r}"));
        }
        _ => {}
    }
}

#[test]
fn input_config_matches_aiperf_for_the_same_command_lines() {
    let mut fixtures: Vec<_> = std::fs::read_dir(DIR)
        .expect("fixture dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    fixtures.sort();
    assert!(fixtures.len() >= 10, "fixtures: {fixtures:?}");
    let mut failures = Vec::new();
    for f in &fixtures {
        let doc: Value = serde_json::from_str(&std::fs::read_to_string(f).unwrap()).unwrap();
        let argv: Vec<String> = doc["argv"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s.as_str().unwrap().to_string())
            .collect();
        let aiperf = doc["input_config"].clone();
        let ours = ringperf_input_config(&argv);
        let mut out = Vec::new();
        diff("input_config", &aiperf, &ours, &mut out);
        if !out.is_empty() {
            let name = Path::new(f)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned();
            failures.push(format!(
                "{name} ({}):\n  {}",
                argv.join(" "),
                out.join("\n  ")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ringperf_only_flags_go_under_a_ringperf_key() {
    let argv: Vec<String> =
        "ringperf profile -m m -u 127.0.0.1:1 --io-driver legacy --ui-type none"
            .split_whitespace()
            .map(str::to_string)
            .collect();
    let v = ringperf_input_config(&argv);
    assert_eq!(v["ringperf"], serde_json::json!({"io_driver": "legacy"}));
    for k in ["random_seed", "cli_command", "workers"] {
        assert!(v.get(k).is_none(), "{k} at the top level");
    }
    assert!(v["artifacts"].get("cli_command").is_none());
    assert!(v["runtime"].get("workers").is_none());
}
