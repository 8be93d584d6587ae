//! The system's FFmpeg, found on `PATH` at run time (as AIPerf finds it) for video and MP3.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

use super::MediaError;

/// The `ffmpeg` executable on `PATH` (`RINGPERF_FFMPEG` overrides), or `None`.
pub fn find() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("RINGPERF_FFMPEG") {
        return Some(PathBuf::from(path));
    }
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths)
        .map(|dir| dir.join("ffmpeg"))
        .find(|p| p.is_file())
}

/// The error when FFmpeg is needed by `flag` and missing.
pub fn missing(flag: &str) -> MediaError {
    MediaError::Ffmpeg(format!(
        "{flag} needs FFmpeg, and no `ffmpeg` was found on PATH; install it \
         (e.g. `sudo apt install ffmpeg`) or set RINGPERF_FFMPEG to its path"
    ))
}

/// Runs FFmpeg on `input` (any container it detects) fed through stdin, with `out_args` then
/// `pipe:1`, and returns what it wrote. `flag` names the flag that asked for it.
pub fn transcode(input: &[u8], out_args: &[&str], flag: &str) -> Result<Vec<u8>, MediaError> {
    let mut args = vec!["-hide_banner", "-loglevel", "error", "-i", "pipe:0"];
    args.extend_from_slice(out_args);
    args.push("pipe:1");
    run(&args, input, flag)
}

/// Runs FFmpeg with `args`, `stdin` written to it from another thread, and returns its stdout.
pub fn run(args: &[&str], stdin: &[u8], flag: &str) -> Result<Vec<u8>, MediaError> {
    let exe = find().ok_or_else(|| missing(flag))?;
    let mut child = Command::new(&exe)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| MediaError::Ffmpeg(format!("{flag}: starting {}: {e}", exe.display())))?;
    let mut input = child.stdin.take();
    let output = std::thread::scope(|s| {
        s.spawn(move || {
            if let Some(pipe) = input.as_mut() {
                // A write error means FFmpeg stopped reading; its exit status says why.
                let _ = pipe.write_all(stdin);
            }
            drop(input);
        });
        child.wait_with_output()
    })
    .map_err(|e| MediaError::Ffmpeg(format!("{flag}: running FFmpeg: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(MediaError::Ffmpeg(format!(
            "{flag}: FFmpeg failed ({}): {}",
            output.status,
            stderr.trim()
        )));
    }
    Ok(output.stdout)
}
