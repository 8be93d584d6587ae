//! What a profile's configuration takes from the process besides its command line, gathered in
//! one place at the edge: the environment variables the rules consult, the cores, the files
//! that flags name, a trace file's first look and a seed drawn from entropy.
//!
//! [`Environment::from_process`] reads them all before any rule runs; [`super::Config::resolve`]
//! is then a function of the arguments and this value, and tests fill one directly
//! (`Environment { cores: 4, ..Environment::default() }`). Only `--url` name resolution stays
//! in [`super::BaseUrl::parse`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::cli::{EndpointTypeArg, ProfileArgs};
use ringperf_workload::workload::loader::DatasetKind;

/// The session-affinity variables: (variable, header it copies the correlation id into, on by
/// default), AIPerf's `AIPERF_HTTP_X_*_FROM_CORRELATION_ID`.
pub const AFFINITY_VARS: [(&str, &str, bool); 4] = [
    (
        "AIPERF_HTTP_X_SESSION_AFFINITY_FROM_CORRELATION_ID",
        "X-Session-Affinity",
        true,
    ),
    (
        "AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID",
        "X-Session-ID",
        false,
    ),
    (
        "AIPERF_HTTP_X_SMG_ROUTING_KEY_FROM_CORRELATION_ID",
        "X-SMG-Routing-Key",
        false,
    ),
    (
        "AIPERF_HTTP_X_DYNAMO_SESSION_ID_FROM_CORRELATION_ID",
        "X-Dynamo-Session-ID",
        false,
    ),
];

/// Every environment variable the configuration reads (clap reads the `RINGPERF_*` ones into
/// the arguments itself). The run reads a few more where they are used: the
/// `AIPERF_SERVER_METRICS_*` and `AIPERF_GPU_*` settings as its collectors start, and
/// `SSL_CERT_DIR` with the system's certificate store.
pub fn variables() -> impl Iterator<Item = &'static str> {
    [
        super::connections::VAR,
        super::video_poll::VAR,
        super::tls::VERIFY_VAR,
        super::tls::CA_FILE_VAR,
        super::shard::JOB_INDEX_VAR,
        super::network::INTERVAL_VAR,
        super::realtime::INTERVAL_VAR,
        super::realtime::ENABLED_VAR,
        super::dataset::SPLIT_FLATTENED_AGENTS_VAR,
    ]
    .into_iter()
    .chain(AFFINITY_VARS.iter().map(|(var, _, _)| *var))
}

/// Files as read, by path: each one's text, or why it could not be read.
pub type Files = BTreeMap<PathBuf, std::io::Result<String>>;

/// The process's side of a profile's configuration.
#[derive(Debug, Default)]
pub struct Environment {
    /// The [`variables`] that are set (to UTF-8 values), by name.
    pub vars: BTreeMap<String, String>,
    /// Cores available to the process: the default `--workers-max`.
    pub cores: usize,
    /// A seed drawn from entropy: the run's seed when none is given or derived.
    pub drawn_seed: u64,
    /// The files flags name (`--system-prompt-file`), as read.
    pub files: Files,
    /// `--extra-inputs payload_template:<v>` values (`--endpoint-type template`) that name a
    /// regular file reached through no symbolic link, with the file's text.
    pub template_files: BTreeMap<String, String>,
    /// The `--input-file` trace's first look: whether its first record is timestamped, and its
    /// record count ([`ringperf_workload::workload::loader::peek_trace`]); `None` for anything else.
    pub trace: Option<(bool, u64)>,
    /// `--scenario` with an `--input-file` of no named type: the type the file is detected as.
    pub detected_kind: Option<ringperf_workload::workload::loader::DatasetKind>,
    /// `--custom-dataset-type dag_jsonl`: the file's root conversations (AIPerf's default
    /// session count for it), when it can be read.
    pub dag_roots: Option<u64>,
    /// A `dag_jsonl` file (named so, or detected) with an orchestrator conversation.
    pub dag_orchestrators: bool,
}

impl Environment {
    /// Reads what `args` needs from the running process.
    pub fn from_process(args: &ProfileArgs) -> Self {
        let vars = variables()
            .filter_map(|k| Some((k.to_string(), std::env::var(k).ok()?)))
            .collect();
        let mut files = BTreeMap::new();
        if let Some(p) = &args.prompt.system_prompt_file {
            files.insert(p.clone(), std::fs::read_to_string(p));
        }
        let mut template_files = BTreeMap::new();
        if args.endpoint_type == EndpointTypeArg::Template {
            for given in template_values(&args.extra_inputs) {
                if let Some(text) = read_regular_file(&given) {
                    template_files.insert(given, text);
                }
            }
        }
        Self {
            vars,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get()),
            drawn_seed: rand::random(),
            files,
            template_files,
            trace: trace_of(args),
            dag_roots: dag_roots_of(args),
            dag_orchestrators: dag_orchestrators_of(args),
            detected_kind: match (&args.agentic.scenario, &args.input.input_file) {
                (Some(_), Some(path)) if args.input.custom_dataset_type.is_none() => {
                    ringperf_workload::workload::loader::detect(path).ok()
                }
                _ => None,
            },
        }
    }

    /// The value of variable `name`, if set.
    pub fn var(&self, name: &str) -> Option<String> {
        self.vars.get(name).cloned()
    }
}

/// The string values of `payload_template` among the `--extra-inputs` arguments that parse.
fn template_values(extra_inputs: &[String]) -> Vec<String> {
    extra_inputs
        .iter()
        .filter_map(|e| super::parse_pairs(e, "--extra-inputs").ok())
        .flatten()
        .filter_map(|(k, v)| match v {
            serde_json::Value::String(s) if k == "payload_template" => Some(s),
            _ => None,
        })
        .collect()
}

/// The first look at `--input-file` when it is read as a file (no `--public-dataset`) of a type
/// ringperf knows.
fn trace_of(args: &ProfileArgs) -> Option<(bool, u64)> {
    if args.input.public_dataset.is_some() {
        return None;
    }
    let path = args.input.input_file.as_ref()?;
    let kind = match args.input.custom_dataset_type.as_deref() {
        // An unknown type is refused before the trace is looked at.
        Some(name) => Some(DatasetKind::parse(name)?),
        None => None,
    };
    ringperf_workload::workload::loader::peek_trace(path, kind)
}

/// The root count of a file named a `dag_jsonl` by `--custom-dataset-type` (AIPerf counts only
/// then, not for a detected one).
fn dag_roots_of(args: &ProfileArgs) -> Option<u64> {
    let kind = DatasetKind::parse(args.input.custom_dataset_type.as_deref()?)?;
    if kind != DatasetKind::DagJsonl || args.input.public_dataset.is_some() {
        return None;
    }
    ringperf_workload::workload::loader::dag_jsonl::root_count(args.input.input_file.as_ref()?)
}

/// Whether the input file is a `dag_jsonl` file (named so, or detected as one) with an
/// orchestrator conversation.
fn dag_orchestrators_of(args: &ProfileArgs) -> bool {
    let Some(path) = args.input.input_file.as_ref() else {
        return false;
    };
    if args.input.public_dataset.is_some() {
        return false;
    }
    let dag = match args.input.custom_dataset_type.as_deref() {
        Some(name) => DatasetKind::parse(name) == Some(DatasetKind::DagJsonl),
        None => {
            ringperf_workload::workload::loader::detect(path).ok() == Some(DatasetKind::DagJsonl)
        }
    };
    dag && ringperf_workload::workload::loader::dag_jsonl::has_orchestrator(path)
}

/// The text of `path` when it names a regular UTF-8 file and neither it nor any parent is a
/// symbolic link (AIPerf's `safe_read_template_path`); `None` otherwise, and the value is then
/// taken as a name or the template itself.
fn read_regular_file(path: &str) -> Option<String> {
    let expanded = match path.strip_prefix("~/") {
        Some(rest) => Path::new(&std::env::var_os("HOME")?).join(rest),
        None => Path::new(path).to_path_buf(),
    };
    for candidate in expanded.ancestors() {
        if candidate.as_os_str().is_empty() {
            continue;
        }
        if std::fs::symlink_metadata(candidate).is_ok_and(|m| m.file_type().is_symlink()) {
            return None;
        }
    }
    let meta = std::fs::metadata(&expanded).ok()?;
    if !meta.is_file() {
        return None;
    }
    std::fs::read_to_string(&expanded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn template_values_are_the_payload_template_strings() {
        let given = [
            "payload_template:/t/a.jinja".to_string(),
            "temperature:0.5".to_string(),
            r#"{"payload_template": 3}"#.to_string(),
            "novalue".to_string(),
            r#"{"payload_template": "nv-embedqa"}"#.to_string(),
        ];
        assert_eq!(template_values(&given), ["/t/a.jinja", "nv-embedqa"]);
    }

    #[test]
    fn a_template_file_is_read_unless_a_link_leads_to_it() {
        let dir = std::env::temp_dir().join(format!("ringperf-env-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("t.jinja");
        std::fs::write(&file, "{{ text }}").unwrap();
        let link = dir.join("link.jinja");
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(
            read_regular_file(file.to_str().unwrap()).as_deref(),
            Some("{{ text }}")
        );
        assert_eq!(read_regular_file(link.to_str().unwrap()), None);
        assert_eq!(read_regular_file(dir.to_str().unwrap()), None);
        assert_eq!(read_regular_file("nv-embedqa"), None);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn every_variable_read_is_listed_once() {
        let all: Vec<&str> = variables().collect();
        let mut unique = all.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(all.len(), unique.len());
        for v in [
            "AIPERF_HTTP_CONNECTION_LIMIT",
            "AIPERF_HTTP_SSL_VERIFY",
            "SSL_CERT_FILE",
            "JOB_COMPLETION_INDEX",
            "AIPERF_HTTP_X_SESSION_ID_FROM_CORRELATION_ID",
        ] {
            assert!(all.contains(&v), "{v}");
        }
    }
}
