//! `profile --config FILE` (the settings it gives) and `ringperf config validate|expand|init`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::{FileArgs, Loaded, YamlError, argv};

/// ringperf's own templates for `config init` (name, one-line description, text).
pub const TEMPLATES: &[(&str, &str, &str)] = &[
    (
        "chat-concurrency",
        "closed-loop chat benchmark with a warmup",
        include_str!("../../../assets/config-templates/chat-concurrency.yaml"),
    ),
    (
        "request-rate",
        "open-loop Poisson arrivals for a fixed time",
        include_str!("../../../assets/config-templates/request-rate.yaml"),
    ),
    (
        "trace-replay",
        "replay a Mooncake trace at its timestamps",
        include_str!("../../../assets/config-templates/trace-replay.yaml"),
    ),
    (
        "concurrency-sweep",
        "one run per concurrency (grid sweep)",
        include_str!("../../../assets/config-templates/concurrency-sweep.yaml"),
    ),
    (
        "goodput-slo",
        "request-rate run counting requests within SLOs",
        include_str!("../../../assets/config-templates/goodput-slo.yaml"),
    ),
];

/// A refused file and its path (the commands print `Error: …` then `File: …`, as AIPerf).
#[derive(Debug)]
pub struct FileError {
    pub path: PathBuf,
    pub error: YamlError,
}

impl std::fmt::Display for FileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} (file: {})", self.error, self.path.display())
    }
}

impl std::error::Error for FileError {}

/// A file read and translated, the sweep gate passed.
pub fn resolve(path: &Path) -> Result<(Loaded, FileArgs), YamlError> {
    resolve_with_env(path, &|k| std::env::var(k).ok())
}

fn resolve_with_env(
    path: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(Loaded, FileArgs), YamlError> {
    let loaded = super::load_with_env(path, env)?;
    let args = argv::translate(&loaded)?;
    argv::sweep_gate(&loaded.root)?;
    Ok((loaded, args))
}

/// A `ringperf profile …` command line without its `--config FILE` / `-f FILE`, and the file;
/// `None` when there is none (or no `profile` subcommand). `--scenario` is refused (see
/// docs/config-files.md).
///
/// # Errors
/// `--scenario`.
pub fn split_config(full: &[String]) -> Result<(Vec<String>, Option<PathBuf>), FileError> {
    let Some(pos) = full.iter().position(|a| a == "profile") else {
        return Ok((full.to_vec(), None));
    };
    let mut file: Option<PathBuf> = None;
    let mut rest = full[..=pos].to_vec();
    let mut words = full[pos + 1..].iter();
    while let Some(w) = words.next() {
        match w.as_str() {
            "-f" | "--config" => file = words.next().map(PathBuf::from),
            s if s.starts_with("--config=") => file = Some(PathBuf::from(&s[9..])),
            "--scenario" => {
                let name = words.next().cloned().unwrap_or_default();
                return Err(FileError {
                    path: file.clone().unwrap_or_default(),
                    error: scenario(&name),
                });
            }
            _ => rest.push(w.clone()),
        }
    }
    Ok((rest, file))
}

/// The settings of the config file `path` (`${VAR}` references read from `env`), for a command
/// line whose `profile` words (after the subcommand) are `cli`: AIPerf's flags that cannot be
/// combined with `--config` are refused.
///
/// # Errors
/// The file cannot be read or translated, or `cli` has a flag AIPerf refuses beside a file.
pub fn file_settings(
    path: &Path,
    cli: &[String],
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<FileArgs, FileError> {
    let fail = |error| FileError {
        path: path.to_path_buf(),
        error,
    };
    let (loaded, args) = resolve_with_env(path, env).map_err(fail)?;
    let file_type = loaded.root["benchmark"]
        .get("datasets")
        .and_then(|d| d.get(0))
        .and_then(|d| d.get("type"))
        .and_then(Value::as_str)
        .or(Some("synthetic"));
    argv::refuse_unrouted(cli, file_type).map_err(fail)?;
    Ok(args)
}

/// AIPerf 0.13's named scenarios (its registry holds one) and why ringperf runs none.
const SCENARIOS: &[(&str, &str)] = &[(
    "inferencex-agentx-mvp",
    "it replays Weka agentic traces (AGENTIC_REPLAY timing, a weka loader), which ringperf does \
     not run",
)];

/// The refusal of `--scenario NAME`: AIPerf's message for an unknown name, else the reason.
fn scenario(name: &str) -> YamlError {
    match SCENARIOS.iter().find(|s| s.0 == name) {
        Some((n, why)) => YamlError::Unsupported(format!("--scenario {n}: {why}")),
        None => {
            let valid: Vec<&str> = SCENARIOS.iter().map(|s| s.0).collect();
            YamlError::Unsupported(format!(
                "Unknown scenario '{name}'. Valid scenarios: {}",
                valid.join(", ")
            ))
        }
    }
}

/// `config validate FILE`: 0 and `Configuration valid: FILE`, or 1 and the error.
pub fn validate(path: &Path) -> u8 {
    match resolve(path) {
        Ok(_) => {
            println!("Configuration valid: {}", path.display());
            0
        }
        Err(e) => {
            eprintln!("Error: {e}\nFile: {}", path.display());
            1
        }
    }
}

/// `config expand FILE`: the run the file resolves to, as the equivalent `ringperf profile`
/// command line and the normalised config (JSON); a sweep block's list values appear as the
/// sweep flags.
pub fn expand(path: &Path) -> u8 {
    let (loaded, args) = match super::load(path).and_then(|l| {
        let a = argv::translate(&l)?;
        Ok((l, a))
    }) {
        Ok(x) => x,
        Err(e) => {
            eprintln!("Error: {e}\nFile: {}", path.display());
            return 1;
        }
    };
    if let Some(Value::Object(sw)) = loaded.root.get("sweep")
        && matches!(
            sw.get("type").and_then(Value::as_str),
            None | Some("grid" | "zip")
        )
    {
        let vars = match argv::variations(sw) {
            Ok(v) => v,
            Err(e) => {
                eprintln!("Error: {e}\nFile: {}", path.display());
                return 1;
            }
        };
        let kind = if sw.get("type").and_then(Value::as_str) == Some("zip") {
            "ZipSweep"
        } else {
            "GridSweep"
        };
        println!("Sweep type: {kind} ({} variations)\n", vars.len());
        for (i, v) in vars.iter().enumerate() {
            println!("[{i}] dir={}  label={}", v.dir, v.label);
        }
        println!();
    }
    let words: Vec<String> = args.words().iter().map(|w| shell_word(w)).collect();
    println!("ringperf profile {}", words.join(" "));
    let pretty = serde_json::to_string_pretty(&Value::Object(loaded.root)).unwrap_or_default();
    println!("{pretty}");
    0
}

fn shell_word(w: &str) -> String {
    if !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:,=@+".contains(c))
    {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

/// Why `config init` wrote nothing.
#[derive(Debug)]
pub enum InitError {
    UnknownTemplate(String),
    Exists(PathBuf),
    Write(PathBuf, std::io::Error),
}

impl std::fmt::Display for InitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InitError::UnknownTemplate(n) => {
                let names: Vec<&str> = TEMPLATES.iter().map(|t| t.0).collect();
                write!(
                    f,
                    "unknown template '{n}' (templates: {})",
                    names.join(", ")
                )
            }
            InitError::Exists(p) => write!(f, "{} exists (pass --force to overwrite)", p.display()),
            InitError::Write(p, e) => write!(f, "cannot write {}: {e}", p.display()),
        }
    }
}

impl std::error::Error for InitError {}

/// `config init`: with no template, the list (filtered by `search`); with one, its text on
/// stdout or into `output`.
pub fn init(
    template: Option<&str>,
    search: Option<&str>,
    output: Option<&Path>,
    force: bool,
) -> Result<String, InitError> {
    let Some(name) = template else {
        let q = search.map(str::to_ascii_lowercase);
        let mut out = String::new();
        for (n, d, _) in TEMPLATES {
            if q.as_ref().is_none_or(|q| {
                n.contains(q.as_str()) || d.to_ascii_lowercase().contains(q.as_str())
            }) {
                out.push_str(&format!("{n:<20} {d}\n"));
            }
        }
        return Ok(out);
    };
    let Some((_, _, text)) = TEMPLATES.iter().find(|t| t.0 == name) else {
        return Err(InitError::UnknownTemplate(name.to_string()));
    };
    let Some(path) = output else {
        return Ok((*text).to_string());
    };
    if path.exists() && !force {
        return Err(InitError::Exists(path.to_path_buf()));
    }
    std::fs::write(path, text).map_err(|e| InitError::Write(path.to_path_buf(), e))?;
    Ok(format!("Wrote {}\n", path.display()))
}
