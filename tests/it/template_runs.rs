//! AIPerf 0.13's own runs of its bundled config templates (tests/data/aiperf-template-runs/,
//! README there), replayed with ringperf: the same command line (the template beside the same
//! scale-down flags, the same environment, the same data files in the working directory) against
//! the in-process mock, which then must exit 0 and write AIPerf's artifact layout, file for file,
//! with AIPerf's phase manifests where AIPerf wrote them and none where it wrote none.
//!
//! The layouts differ by design in four names only: ringperf adds `plan.json` to each run's
//! directory (its typed settings, which `ringperf merge` reads) and a sweep's
//! `sweep_aggregate/sweep_table.txt`; AIPerf adds `logs/aiperf.log` and, in a run of several,
//! each run's `run_config.json` (the handoff file of its subprocess runner).

use crate::common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

use ringperf_mock::mock::{MockConfig, MockServer};
use serde_json::Value;

const RUNS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/aiperf-template-runs"
);

/// The address AIPerf's runs were made against (the templates were generated for it).
const AIPERFS_MOCK: &str = "127.0.0.1:8765";

/// One of AIPerf's runs, as its `command.txt` gives it.
pub(crate) struct AiperfRun {
    dir: PathBuf,
    /// `aiperf profile`'s arguments.
    pub(crate) args: Vec<String>,
    /// The variables set for the run that the templates read (`${NAME}`).
    pub(crate) env: Vec<(String, String)>,
    exit: i32,
}

/// Files ringperf adds (docs/output-formats.md, docs/sweeps.md): each run's typed settings, a
/// sweep's console table.
const RINGPERFS_OWN: &[&str] = &["plan.json", "sweep_table.txt"];

/// Single runs made shorter than AIPerf's, by flags that change no file of the layout compared
/// here (their `input_config` is compared against AIPerf's, without these flags, in
/// tests/it/yaml_config.rs): synthetic media slow to make in a debug build cut to 16 entries, a
/// 30 s warmup cut to 1 s.
const SHORTER: &[(&str, &[&str])] = &[
    ("audio_multimodal", &["--num-dataset-entries", "16"]),
    ("multimodal_vision", &["--num-dataset-entries", "16"]),
    ("kv_cache_test", &["--warmup-duration", "1"]),
];

/// Variables the run set for AIPerf itself (offline tokenizer and hub, its dataset cache), not
/// for the template.
const AIPERFS_OWN_ENV: &[&str] = &[
    "AIPERF_DATASET_MMAP_BASE_PATH",
    "TIKTOKEN_CACHE_DIR",
    "HF_HUB_OFFLINE",
    "TRANSFORMERS_OFFLINE",
];

pub(crate) fn aiperf_run(name: &str) -> AiperfRun {
    let dir = Path::new(RUNS).join(name);
    let text = std::fs::read_to_string(dir.join("command.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("aiperf profile --config"))
        .expect("the command line");
    let line = lines[at];
    let args = line[line.find("aiperf profile").unwrap() + "aiperf profile".len()..]
        .split_whitespace()
        .map(String::from)
        .collect();
    // `NAME=value` words before the command, on its line or the line it continues.
    let mut env = Vec::new();
    let before = if at > 0 && lines[at - 1].trim_end().ends_with('\\') {
        lines[at - 1]
    } else {
        ""
    };
    for word in before
        .split_whitespace()
        .chain(line[..line.find("aiperf profile").unwrap()].split_whitespace())
    {
        if let Some((k, v)) = word.split_once('=')
            && !k.is_empty()
            && k.chars().all(|c| c.is_ascii_uppercase() || c == '_')
            && !AIPERFS_OWN_ENV.contains(&k)
        {
            env.push((k.to_string(), v.to_string()));
        }
    }
    let exit = text
        .lines()
        .find_map(|l| l.strip_prefix("# exit status: "))
        .and_then(|s| s.trim().parse().ok())
        .expect("an exit status");
    AiperfRun {
        dir,
        args,
        env,
        exit,
    }
}

/// Every file under `dir`, relative, `/`-separated, sorted; `logs/` folders left out (as
/// `files.txt` leaves out the top one).
pub(crate) fn files_under(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, d: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(d).unwrap().filter_map(Result::ok) {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.insert(p.strip_prefix(base).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out.into_iter().filter(|f| !is_log(f)).collect()
}

fn is_log(f: &str) -> bool {
    f.starts_with("logs/") || f.contains("/logs/")
}

fn file_name(f: &str) -> &str {
    f.rsplit('/').next().unwrap()
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap().filter_map(Result::ok) {
        let p = e.path();
        if p.is_dir() {
            copy_tree(&p, &to.join(e.file_name()));
        } else {
            std::fs::copy(&p, to.join(e.file_name())).unwrap();
        }
    }
}

/// A phase manifest's shape: each phase's place, name and kind, its keys and the files it names
/// (the counts and times are the run's own).
fn manifest_shape(path: &Path) -> Vec<(Value, BTreeSet<String>)> {
    let m = common::read_json(path);
    assert_eq!(m["schema_version"], 1, "{path:?}");
    m["phases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            let keys = p.as_object().unwrap().keys().cloned().collect();
            let place = serde_json::json!([
                p["phase_index"],
                p["profiling_index"],
                p["phase_name"],
                p["phase_kind"],
                p["metrics_json"],
                p["metrics_csv"],
                p["server_metrics_json"],
            ]);
            (place, keys)
        })
        .collect()
}

fn start_mock() -> MockServer {
    ringperf_mock::mock::start(MockConfig {
        ttft: std::time::Duration::from_millis(5),
        itl: std::time::Duration::from_millis(1),
        ..MockConfig::default()
    })
    .expect("mock starts")
}

/// Runs AIPerf's command line with ringperf and compares what each wrote.
fn replay(name: &str) {
    let run = aiperf_run(name);
    assert_eq!(
        run.exit, 0,
        "{name}: AIPerf's run failed; nothing to compare"
    );
    let server = start_mock();
    let addr = server.addr.to_string();
    let tmp = tempfile::tempdir().unwrap();
    // AIPerf ran from a scratch directory holding the run's data files.
    for sub in ["data", ".cache", "datasets"] {
        if run.dir.join(sub).is_dir() {
            copy_tree(&run.dir.join(sub), &tmp.path().join(sub));
        }
    }
    let art = tmp.path().join("art");
    let manifest_dir = env!("CARGO_MANIFEST_DIR");
    let args: Vec<String> = run
        .args
        .iter()
        .map(|a| match a.as_str() {
            "/tmp/tr/art" => art.display().to_string(),
            a if a.starts_with("tests/data/") => format!("{manifest_dir}/{a}"),
            a => a.replace(AIPERFS_MOCK, &addr),
        })
        .chain(["-u".to_string(), format!("http://{addr}")])
        .chain(
            (SHORTER.iter())
                .filter(|(n, _)| *n == name)
                .flat_map(|(_, extra)| extra.iter().map(|w| w.to_string())),
        )
        .collect();
    let out = Command::new(env!("CARGO_BIN_EXE_ringperf"))
        .arg("profile")
        .args(&args)
        .envs(
            run.env
                .iter()
                .map(|(k, v)| (k, v.replace(AIPERFS_MOCK, &addr))),
        )
        .current_dir(tmp.path())
        .output()
        .expect("the binary runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );

    // The layout: AIPerf's files, but for the names each tool keeps for itself.
    let theirs: BTreeSet<String> = std::fs::read_to_string(run.dir.join("files.txt"))
        .unwrap()
        .lines()
        .filter(|f| !is_log(f) && file_name(f) != "run_config.json")
        .map(String::from)
        .collect();
    let ours: BTreeSet<String> = files_under(&art)
        .into_iter()
        .filter(|f| !RINGPERFS_OWN.contains(&file_name(f)))
        .collect();
    let only_ours: Vec<&String> = ours.difference(&theirs).collect();
    let only_theirs: Vec<&String> = theirs.difference(&ours).collect();
    assert!(
        only_ours.is_empty() && only_theirs.is_empty(),
        "{name}: written by ringperf only {only_ours:?}, by AIPerf only {only_theirs:?}"
    );
    // Every directory that holds a run's summary holds ringperf's plan beside it.
    for f in ours
        .iter()
        .filter(|f| file_name(f) == "profile_export_aiperf.json")
    {
        if !f.contains("phases/") {
            let plan = art.join(f).with_file_name("plan.json");
            assert!(plan.is_file(), "{name}: no {plan:?}");
        }
    }

    // The phase manifests AIPerf wrote (one per run; `phase_manifest.TAG.json` for a run of
    // several or a sweep's, TAG its directory, `profile_runs/` left out), against ringperf's.
    let mut compared = 0;
    for f in theirs
        .iter()
        .filter(|f| file_name(f) == "phase_manifest.json")
    {
        // The run's directory: `profile_runs/run_0001` → `run_0001`, `concurrency_8`.
        let tag = f
            .strip_suffix("/phase_manifest.json")
            .map(|d| d.trim_start_matches("profile_runs/").replace('/', "."));
        let fixture = match &tag {
            Some(t) => run.dir.join(format!("phase_manifest.{t}.json")),
            None => run.dir.join("phase_manifest.json"),
        };
        if !fixture.is_file() {
            continue;
        }
        assert_eq!(
            manifest_shape(&art.join(f)),
            manifest_shape(&fixture),
            "{name}: {f}"
        );
        compared += 1;
    }
    // Each run of a repeated profile or a sweep echoes its whole configuration as AIPerf's
    // did (`input_config.TAG.json`), but for the mock's address and the run's own directory.
    for f in std::fs::read_dir(&run.dir).unwrap().filter_map(Result::ok) {
        let file = f.file_name().to_string_lossy().into_owned();
        let Some(tag) = file
            .strip_prefix("input_config.")
            .and_then(|t| t.strip_suffix(".json"))
        else {
            continue;
        };
        let rel = tag.replace('.', "/");
        let doc = [format!("profile_runs/{rel}"), rel.clone()]
            .iter()
            .map(|d| art.join(d).join("profile_export_aiperf.json"))
            .find(|p| p.is_file())
            .unwrap_or_else(|| panic!("{name}: no run {rel}"));
        let ours = &common::read_json(&doc)["input_config"];
        let theirs = common::read_json(&f.path());
        let (mut a, mut r) = (Vec::new(), Vec::new());
        common::leaves("", &theirs, &mut a);
        common::leaves("", ours, &mut r);
        let own = |p: &str| {
            p == ".artifacts.dir"
                || p.starts_with(".endpoint.urls[")
                || p.starts_with(".server_metrics.urls[")
        };
        for (p, v) in &a {
            let w = r.iter().find(|(q, _)| q == p).map(|(_, w)| w);
            assert!(
                own(p) || w == Some(v),
                "{name} {tag}{p}: AIPerf {v}, ringperf {w:?}"
            );
        }
        for (p, w) in &r {
            assert!(
                own(p) || a.iter().any(|(q, _)| q == p),
                "{name} {tag}{p}: ringperf {w}, AIPerf nothing"
            );
        }
    }

    // A manifest fixture for each manifest listed (runs of one phase have none in either).
    let listed = theirs
        .iter()
        .filter(|f| file_name(f) == "phase_manifest.json")
        .count();
    assert_eq!(compared, listed, "{name}: manifests compared");
}

macro_rules! replays {
    ($($name:ident),* $(,)?) => {
        $(
            #[test]
            fn $name() {
                replay(stringify!($name));
            }
        )*

        /// Every run AIPerf made successfully is replayed above, but those ringperf cannot run
        /// yet (docs/config-files.md lists them).
        #[test]
        fn every_successful_aiperf_run_is_replayed() {
            let replayed: BTreeSet<&str> = [$(stringify!($name)),*].into_iter().collect();
            let not_yet: [&str; 0] = [];
            let mut ok = BTreeSet::new();
            for e in std::fs::read_dir(RUNS).unwrap().filter_map(Result::ok) {
                let name = e.file_name().to_string_lossy().into_owned();
                if e.path().join("command.txt").is_file() && aiperf_run(&name).exit == 0 {
                    ok.insert(name);
                }
            }
            let want: BTreeSet<&str> = ok
                .iter()
                .map(String::as_str)
                .filter(|n| !not_yet.contains(n))
                .collect();
            assert_eq!(replayed, want);
        }
    };
}

replays!(
    audio_multimodal,
    embeddings,
    env_var_production,
    fixed_schedule,
    goodput_slo,
    gpu_telemetry,
    http_trace_metrics,
    inline_dataset,
    jinja2_variables,
    kv_cache_test,
    latency_test,
    minimal,
    multi_turn_conversation,
    multi_url_load_balancing,
    multimodal_vision,
    public_dataset,
    ramping,
    request_cancellation,
    scenario_workload_profiles,
    speed_bench_sweep,
    sweep_with_plot,
    time_based_soak,
    trace_replay,
    user_files,
    warmup_profiling,
);
