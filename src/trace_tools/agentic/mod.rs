//! `ringperf synthesize agentic-code`: AIPerf 0.13's generator of agentic-coding sessions
//! (docs/commands.md). A distribution config (built-in defaults, a config JSON, a bundled name
//! or a previous run's `manifest.json`) drives [`synth::Synthesizer`]; the run directory
//! `{output}/{config}_{N}s_seed{seed}_{YYYYmmdd-HHMMSS}/` gets `dataset.jsonl`, `manifest.json`
//! and `quality.json` ([`write`]). NumPy's random stream is reproduced ([`npy`]), so a seed gives
//! the rows AIPerf gives.

pub mod config;
pub mod npy;
pub mod synth;
pub mod write;

use std::path::{Path, PathBuf};

use super::TraceToolError;

/// What one `synthesize agentic-code` makes.
#[derive(Debug, Clone)]
pub struct Request<'a> {
    pub num_sessions: u64,
    pub output: &'a Path,
    pub config: Option<&'a str>,
    pub seed: u64,
    pub max_isl: Option<u64>,
    pub max_osl: Option<u64>,
}

/// The files one run wrote.
#[derive(Debug, Clone)]
pub struct Written {
    pub run_dir: PathBuf,
    pub turns: usize,
}

/// The config and its run name for `--config` (none: the built-in defaults, named `default`)
/// with `--max-isl` / `--max-osl` applied.
///
/// # Errors
/// As [`config::load`] and [`config::Config::with_overrides`].
pub fn resolve_config(req: &Request<'_>) -> Result<(String, config::Config), TraceToolError> {
    let (name, cfg) = match req.config {
        Some(c) => config::load(c).map_err(TraceToolError::Usage)?,
        None => ("default".to_string(), config::Config::default()),
    };
    let cfg = cfg
        .with_overrides(req.max_isl, req.max_osl)
        .map_err(TraceToolError::Usage)?;
    Ok((name, cfg))
}

/// Synthesizes into `run_dir` (made if missing).
///
/// # Errors
/// The generator refuses the config, or a file cannot be written.
pub fn write_run(
    cfg: &config::Config,
    name: &str,
    req: &Request<'_>,
    run_dir: &Path,
) -> Result<Written, TraceToolError> {
    let n = usize::try_from(req.num_sessions)
        .map_err(|_| TraceToolError::Usage("--num-sessions is too large".into()))?;
    let mut s = synth::Synthesizer::new(cfg.clone(), req.seed).map_err(TraceToolError::Usage)?;
    let sessions = s.sessions(n).map_err(TraceToolError::Usage)?;
    std::fs::create_dir_all(run_dir).map_err(|e| TraceToolError::io(run_dir, e))?;
    let jsonl = run_dir.join("dataset.jsonl");
    std::fs::write(&jsonl, write::dataset_jsonl(&sessions, cfg.block_size))
        .map_err(|e| TraceToolError::io(&jsonl, e))?;
    write_compact_pretty(
        &run_dir.join("manifest.json"),
        &write::manifest(cfg, req.seed, sessions.len(), name),
    )?;
    write_compact_pretty(
        &run_dir.join("quality.json"),
        &write::quality(&sessions, cfg),
    )?;
    Ok(Written {
        run_dir: run_dir.to_path_buf(),
        turns: sessions.iter().map(|s| s.turns.len()).sum(),
    })
}

/// JSON indented by two spaces, no newline at the end (as AIPerf writes its JSON files).
fn write_compact_pretty(path: &Path, v: &serde_json::Value) -> Result<(), TraceToolError> {
    let text = serde_json::to_string_pretty(v).map_err(|e| TraceToolError::Io {
        path: path.to_path_buf(),
        err: std::io::Error::other(e),
    })?;
    std::fs::write(path, text).map_err(|e| TraceToolError::io(path, e))
}

/// `ringperf synthesize agentic-code`: resolves the config, synthesizes into a new run
/// directory under `output`, and says what it wrote.
///
/// # Errors
/// A bad `--num-sessions`, config or override; the generator refuses; a file cannot be written.
pub fn run(req: &Request<'_>) -> Result<(), TraceToolError> {
    if req.num_sessions < 1 {
        return Err(TraceToolError::Usage(
            "--num-sessions: Input should be greater than or equal to 1".into(),
        ));
    }
    let (name, cfg) = resolve_config(req)?;
    let stamp = jiff::Timestamp::now().strftime("%Y%m%d-%H%M%S").to_string();
    let run_dir = req.output.join(format!(
        "{name}_{}s_seed{}_{stamp}",
        req.num_sessions, req.seed
    ));
    println!(
        "Generating {} sessions (seed={})...",
        req.num_sessions, req.seed
    );
    let w = write_run(&cfg, &name, req, &run_dir)?;
    let d = w.run_dir.display();
    println!("Run directory: {d}");
    println!("  JSONL:           {d}/dataset.jsonl ({} turns)", w.turns);
    println!("  Manifest:        {d}/manifest.json");
    println!("  Quality:         {d}/quality.json");
    Ok(())
}

#[cfg(test)]
#[path = "tests.rs"]
mod tests;
