//! `--synthesis-*` in `profile`: the mooncake trace is reshaped before it is loaded, as AIPerf
//! 0.13's trace loader does it (docs/commands.md, "synthesize", and docs/datasets.md): rows
//! outside the fixed schedule's offsets (on their recorded timestamps) or longer than
//! `--synthesis-max-isl` are dropped, the rest synthesized, output lengths capped. The reshaped
//! rows go to a file of their own, read like any trace for the whole run (a streamed replay reads
//! it while it runs); its `hash_ids` blocks keep the recorded file's scope.

use std::path::PathBuf;

use super::error::{RunError, SetupKind};
use crate::config::Config;
use crate::config::timing::Mode;
use crate::trace_tools::synthesize;
use ringperf_workload::workload::loader::{DatasetKind, Source};

/// The reshaped trace's file, removed when the run is over.
pub(super) struct SynthesizedTrace(PathBuf);

impl Drop for SynthesizedTrace {
    fn drop(&mut self) {
        // Best effort: a file left in the temporary directory harms nothing.
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Reshapes `cfg`'s trace when `--synthesis-*` asks for it and points the load at the result;
/// the fixed schedule's window then keeps every reshaped row (they were filtered on load).
///
/// # Errors
/// The trace is not a `mooncake_trace`, cannot be read, has a bad row, or the reshaped copy
/// cannot be written.
pub(super) fn apply(cfg: &mut Config) -> Result<Option<SynthesizedTrace>, RunError> {
    let Some(params) = cfg.input.synthesis.clone() else {
        return Ok(None);
    };
    let Some(spec) = cfg.input.load.as_mut() else {
        return Ok(None);
    };
    let fail = |m: String| RunError::new(SetupKind::Workload, m);
    let found = match &spec.source {
        Source::File { kind: Some(k), .. } => *k,
        Source::File { path, kind: None } => ringperf_workload::workload::loader::detect(path)
            .map_err(|e| fail(format!("cannot load the dataset: {e}")))?,
        Source::WekaHub { .. } => DatasetKind::WekaTrace,
        _ => return Ok(None),
    };
    if matches!(found, DatasetKind::WekaTrace | DatasetKind::Tracelab) {
        // An agent trace's loader applies the length caps as it builds the turns: a root's
        // requests over `--synthesis-max-isl` tokens are left out, its outputs capped at
        // `--synthesis-max-osl` (docs/datasets.md, `weka_trace`).
        if params.reshapes() {
            return Err(fail(format!(
                "{} takes --synthesis-max-isl and --synthesis-max-osl only; the other \
                 --synthesis-* options reshape mooncake_trace files",
                found.as_str()
            )));
        }
        spec.weka.max_isl = params.max_isl;
        spec.weka.max_osl = params.max_osl.map(|n| n.min(u64::from(u32::MAX)) as u32);
        return Ok(None);
    }
    if found == DatasetKind::BasetenTrace {
        // Its prompts are sent verbatim: only the length caps apply (AIPerf's loader refuses
        // the reshaping options, which would desync the forwarded hash ids).
        if params.speedup_ratio != 1.0 {
            return Err(fail(format!(
                "synthesis speedup_ratio={} is not supported by the baseten_trace loader; use \
                 --replay-speedup for wall-clock compression.",
                ringperf_metrics::export::py_float_str(params.speedup_ratio)
            )));
        }
        if params.reshapes() {
            return Err(fail(
                "the --synthesis-*-multiplier options are not supported by the baseten_trace \
                 loader: it replays recorded prompts verbatim, so hash-reshaping synthesis \
                 cannot change the sent prompt and would desync the forwarded hash_ids KV hints"
                    .into(),
            ));
        }
        spec.baseten.max_isl = params.max_isl;
        spec.baseten.max_osl = params.max_osl;
        return Ok(None);
    }
    let Source::File { path, kind } = &mut spec.source else {
        return Ok(None);
    };
    if found != DatasetKind::MooncakeTrace {
        return Err(fail(format!(
            "Synthesis options (--synthesis-*) are only supported with trace datasets, but got \
             {}. Either remove synthesis options or use a trace dataset type.",
            found.as_str()
        )));
    }
    let window = |m: &Mode| match m {
        Mode::FixedSchedule(fs) => Some((fs.window.start_ms, fs.window.end_ms)),
        _ => None,
    };
    let bounds = window(&cfg.profiling.timing.mode)
        .or_else(|| cfg.warmup.as_ref().and_then(|w| window(&w.timing.mode)))
        .unwrap_or((None, None));
    let (text, outside, too_long) = synthesize::for_profile(path, &params, bounds)
        .map_err(|e| fail(format!("cannot synthesize the trace: {e}")))?;
    if outside > 0 {
        eprintln!(
            "Skipped {outside} traces because they were before the start offset of {} or \
             after the end offset of {}",
            bounds.0.map_or("None".into(), |v| v.to_string()),
            bounds.1.map_or("None".into(), |v| v.to_string()),
        );
    }
    if let Some(max) = params.max_isl.filter(|_| too_long > 0) {
        eprintln!("Skipped {too_long} traces because input_length exceeded max_isl of {max}");
    }
    let copy = std::env::temp_dir().join(format!(
        "ringperf-synthesized-{}-{}.jsonl",
        std::process::id(),
        ringperf_metrics::export::new_benchmark_id()
    ));
    std::fs::write(&copy, text).map_err(|e| {
        fail(format!(
            "cannot write the synthesized trace to {}: {e}",
            copy.display()
        ))
    })?;
    spec.hash_path = Some(std::mem::replace(path, copy.clone()));
    *kind = Some(DatasetKind::MooncakeTrace);
    for phase in std::iter::once(&mut cfg.profiling).chain(cfg.warmup.as_mut()) {
        if let Mode::FixedSchedule(fs) = &mut phase.timing.mode {
            fs.window.applied_at_load = true;
        }
    }
    Ok(Some(SynthesizedTrace(copy)))
}
