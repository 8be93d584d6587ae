//! `profile --config FILE` (the settings it gives) and `ringperf config validate|expand|init`.

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::emit::yaml_block;
use super::{FileArgs, Loaded, YamlError, argv};

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
/// `None` when there is none (or no `profile` subcommand).
///
/// # Errors
/// None today (the signature keeps room for a refusal of the command line).
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

/// How `config expand` prints (`--format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExpandFormat {
    #[default]
    Text,
    Yaml,
    Json,
}

/// What `config expand` is asked for.
#[derive(Debug, Clone, Default)]
pub struct ExpandOptions {
    /// `--full`: each variation's resolved configuration too.
    pub full: bool,
    /// `--index N`: that variation only (implies `full`).
    pub index: Option<i64>,
    pub format: ExpandFormat,
    /// `--as-flags`: the equivalent `ringperf profile` command line and the normalised file
    /// instead.
    pub as_flags: bool,
    /// With `full`: each variation's `input_config` for a file of `n` variations (the caller's:
    /// resolving a file's runs takes the whole invocation, `crate::invocation::variation_configs`).
    pub resolve: Option<ResolveVariations>,
}

/// Resolves each variation of the file at a path with `n` variations into its `input_config`.
pub type ResolveVariations = fn(&Path, usize) -> Result<Vec<Value>, String>;

/// `config expand FILE`: the variations the file runs, as AIPerf 0.13 prints them
/// (`Sweep type: GridSweep (9 variations)`, a blank line, then `[i] dir=…  label=…`); a file
/// without a sweep is one variation, `base`. With `full`, each variation's configuration as
/// ringperf resolves it: the `input_config` its run would echo. Exit 0; 1 for a refused file
/// or an index out of range; 2 for an adaptive search (its variations are chosen as it runs).
pub fn expand(path: &Path, opts: &ExpandOptions) -> u8 {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("Error: {e}\nFile: {}", path.display());
        1
    };
    if opts.as_flags {
        return expand_as_flags(path);
    }
    let (loaded, _) = match resolve(path) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let sweep = loaded.root.get("sweep").and_then(Value::as_object);
    let sweep_type = match sweep.and_then(|s| s.get("type")).and_then(Value::as_str) {
        None if sweep.is_none() => "none",
        None | Some("grid") => "GridSweep",
        Some("zip") => "ZipSweep",
        Some("scenarios") => "ScenarioSweep",
        Some("adaptive_search") => {
            eprintln!(
                "An adaptive_search sweep picks its variations while it runs, so there are none \
                 to list before it starts. Expand a grid or zip sweep instead."
            );
            return 2;
        }
        Some(other) => return fail(&format!("not supported by ringperf: sweep.type: {other}")),
    };
    let scenarios = (sweep_type == "ScenarioSweep").then(|| super::scenarios::runs(&loaded.root));
    let variations = match (sweep, scenarios) {
        (_, Some(Ok(runs))) => runs
            .into_iter()
            .map(|r| argv::Variation {
                dir: r.dir,
                label: r.label,
                values: r.values,
            })
            .collect(),
        (_, Some(Err(e))) => return fail(&e),
        (Some(s), None) => match argv::variations(s) {
            Ok(v) => v,
            Err(e) => return fail(&e),
        },
        (None, None) => vec![argv::Variation {
            dir: "base".into(),
            label: "base".into(),
            values: Vec::new(),
        }],
    };
    let total = variations.len();
    let mut picked: Vec<usize> = (0..total).collect();
    let mut full = opts.full;
    if let Some(i) = opts.index {
        match usize::try_from(i).ok().filter(|&i| i < total) {
            Some(i) => picked = vec![i],
            None => {
                eprintln!("Error: --index {i} out of range; sweep has {total} variation(s).");
                return 1;
            }
        }
        full = true;
    }
    let bodies = match (full, opts.resolve) {
        (false, _) => None,
        (true, None) => return fail(&"each variation's configuration cannot be resolved here"),
        (true, Some(resolve)) => match resolve(path, total) {
            Ok(b) => Some(b),
            Err(e) => return fail(&e),
        },
    };
    let listing = Listing {
        sweep_type,
        variations: &variations,
        picked: &picked,
        bodies: bodies.as_deref(),
    };
    let out = match opts.format {
        ExpandFormat::Text => listing.text(),
        ExpandFormat::Json => {
            let mut s = serde_json::to_string_pretty(&listing.doc()).unwrap_or_default();
            s.push('\n');
            s
        }
        ExpandFormat::Yaml => {
            let mut s = String::new();
            yaml_block(&listing.doc(), 0, &mut s);
            s
        }
    };
    print!("{out}");
    0
}

/// What `config expand` prints: the variations picked (all, or `--index`'s) and, with
/// `--full`, every variation's configuration.
struct Listing<'a> {
    sweep_type: &'a str,
    variations: &'a [argv::Variation],
    picked: &'a [usize],
    bodies: Option<&'a [Value]>,
}

impl Listing<'_> {
    /// AIPerf's text: the sweep line, a blank line, a line per variation (its body under it,
    /// indented by four, then a blank line).
    fn text(&self) -> String {
        let total = self.variations.len();
        let mut out = if self.picked.len() == total {
            let s = if total == 1 { "" } else { "s" };
            format!("Sweep type: {} ({total} variation{s})\n\n", self.sweep_type)
        } else {
            format!(
                "Sweep type: {} (showing {} of {total})\n\n",
                self.sweep_type,
                self.picked.len()
            )
        };
        for &i in self.picked {
            let v = &self.variations[i];
            out.push_str(&format!("[{i}] dir={}  label={}\n", v.dir, v.label));
            if let Some(b) = self.bodies.map(|b| &b[i]) {
                let mut y = String::new();
                yaml_block(b, 0, &mut y);
                for l in y.lines() {
                    out.push_str(&format!("    {l}\n"));
                }
                out.push('\n');
            }
        }
        out
    }

    /// AIPerf's document for `--format json|yaml`.
    fn doc(&self) -> Value {
        let list: Vec<Value> = self
            .picked
            .iter()
            .map(|&i| {
                let v = &self.variations[i];
                let mut m = serde_json::Map::new();
                m.insert("index".into(), i.into());
                m.insert("dir_name".into(), v.dir.clone().into());
                m.insert("label".into(), v.label.clone().into());
                let values = v.values.iter().cloned().collect();
                m.insert("values".into(), Value::Object(values));
                if let Some(b) = self.bodies.map(|b| &b[i]) {
                    m.insert("benchmark".into(), b.clone());
                }
                Value::Object(m)
            })
            .collect();
        serde_json::json!({"sweep_type": self.sweep_type, "variations": list})
    }
}

/// `config expand --as-flags FILE`: the equivalent `ringperf profile` command line (a sweep's
/// lists as the sweep flags), then the normalised file as JSON.
fn expand_as_flags(path: &Path) -> u8 {
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

/// What `config init` is asked for (AIPerf 0.13's options).
#[derive(Debug, Clone, Default)]
pub struct InitOptions {
    pub template: Option<String>,
    pub list: bool,
    pub search: Option<String>,
    pub category: Option<String>,
    pub verbose: bool,
    pub model: Option<String>,
    pub url: Option<String>,
    pub output: Option<PathBuf>,
}

/// `config init`, as AIPerf's: `--list` (filtered by `--category`) or `--search` print the
/// templates (exit 0, also when none match); `--template NAME` prints it with `--model` and
/// `--url` put in, or writes it to `--output` (parents made, an existing file replaced). No
/// template: exit 2; an unknown one: exit 1 and the names.
pub fn init(o: &InitOptions) -> u8 {
    use super::templates;
    const CMD: &str = "ringperf config init";
    if o.list {
        let found = templates::list(o.category.as_deref());
        if found.is_empty() {
            println!(
                "No templates in category '{}'.",
                o.category.as_deref().unwrap_or_default()
            );
            return 0;
        }
        print!("{}", templates::table(&found, o.verbose));
        println!("Use '{CMD} --template <name>' to generate a template.");
        return 0;
    }
    if let Some(q) = &o.search {
        let found = templates::search(q);
        if found.is_empty() {
            println!("No templates match '{q}'.\nRun '{CMD} --list' to see all templates.");
        } else {
            print!("{}", templates::table(&found, o.verbose));
        }
        return 0;
    }
    let Some(name) = &o.template else {
        eprintln!(
            "Specify a template with --template, or run '{CMD} --list' to see what is available."
        );
        return 2;
    };
    let Some(t) = templates::find(name) else {
        let mut names: Vec<&str> = templates::TEMPLATES.iter().map(|t| t.name).collect();
        names.sort_unstable();
        eprintln!(
            "Error: \"Unknown template '{name}'. Available templates: {}\"",
            names.join(", ")
        );
        return 1;
    };
    let text = templates::customize(t.text, o.model.as_deref(), o.url.as_deref());
    let Some(out) = &o.output else {
        print!("{text}");
        return 0;
    };
    let written = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .map_or(Ok(()), std::fs::create_dir_all)
        .and_then(|()| std::fs::write(out, &text));
    if let Err(e) = written {
        eprintln!("Error: cannot write {}: {e}", out.display());
        return 1;
    }
    println!("Wrote {name} template to {}", out.display());
    0
}
