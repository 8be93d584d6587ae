//! `ringperf validate --target mooncake-trace`: checks every row of a JSONL file as a mooncake
//! trace row and lists the first ten faults, each with its line and field, as AIPerf 0.13's
//! validator does (docs/commands.md, "validate"). The rules are those `profile` applies to a row
//! (ringperf_workload::workload::loader), so a file that passes loads row by row.

use std::io::BufRead;
use std::path::Path;

use super::TraceToolError;
use ringperf_workload::workload::loader::check_mooncake_row;

/// The faults listed at most, as AIPerf.
pub const MAX_ERRORS: usize = 10;

/// What was found: the rows read (blank lines skipped) and each fault, `Line N: what`.
#[derive(Debug, Clone, PartialEq)]
pub struct Validation {
    pub rows: u64,
    pub errors: Vec<String>,
}

/// Checks each row of `path`, stopping at the [`MAX_ERRORS`]th fault.
///
/// # Errors
/// The file cannot be read.
pub fn check(path: &Path) -> Result<Validation, TraceToolError> {
    let file = std::fs::File::open(path).map_err(|e| TraceToolError::io(path, e))?;
    let mut found = Validation {
        rows: 0,
        errors: Vec::new(),
    };
    for (i, line) in std::io::BufReader::new(file).split(b'\n').enumerate() {
        let bytes = line.map_err(|e| TraceToolError::io(path, e))?;
        let number = i as u64 + 1;
        let text = String::from_utf8_lossy(&bytes);
        if text.trim().is_empty() {
            continue;
        }
        found.rows += 1;
        let fault = match std::str::from_utf8(&bytes) {
            Err(e) => Some(format!("not UTF-8 text: {e}")),
            Ok(t) => check_mooncake_row(path, number, t.trim()).err().map(|e| {
                let full = e.to_string();
                let prefix = format!("{}:{number}: ", path.display());
                full.strip_prefix(&prefix).unwrap_or(&full).to_string()
            }),
        };
        if let Some(why) = fault {
            found.errors.push(format!("Line {number}: {why}"));
            if found.errors.len() >= MAX_ERRORS {
                break;
            }
        }
    }
    Ok(found)
}

/// `ringperf validate`: prints the verdict; the exit code is 0 when every row passed, else 1.
pub fn run(input: &Path) -> u8 {
    if !input.is_file() {
        println!("Validation failed: {} is not a file.", input.display());
        return 1;
    }
    match check(input) {
        Err(e) => {
            println!("Validation failed: {e}");
            1
        }
        Ok(v) if v.errors.is_empty() => {
            println!(
                "Validation passed: {} rows are Mooncake-compatible.",
                v.rows
            );
            0
        }
        Ok(v) => {
            println!("Validation failed with {} error(s):", v.errors.len());
            for e in &v.errors {
                println!("  {e}");
            }
            1
        }
    }
}
