//! The outside programs some integration tests drive (docs/testing.md, "No silent skip"): each
//! one missing from `PATH` when the tests are built sets `missing_tool_<name>`, and the tests
//! that need it are then marked ignored with the reason, so the run's summary counts them as
//! skipped, not as passed. Under `CI=true` nothing is set: such a test runs and fails without its
//! program.

/// `(cfg suffix, the names any one of which provides it)`.
const TOOLS: [(&str, &[&str]); 6] = [
    ("chromium", &["chromium", "chromium-browser"]),
    ("tmux", &["tmux"]),
    ("prlimit", &["prlimit"]),
    ("openssl", &["openssl"]),
    ("taskset", &["taskset"]),
    ("ffmpeg", &["ffmpeg"]),
];

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-env-changed=PATH");
    println!("cargo:rerun-if-env-changed=CI");
    let ci = std::env::var("CI").as_deref() == Ok("true");
    let path = std::env::var_os("PATH").unwrap_or_default();
    for (tool, names) in TOOLS {
        println!("cargo:rustc-check-cfg=cfg(missing_tool_{tool})");
        let found = names
            .iter()
            .any(|name| std::env::split_paths(&path).any(|dir| dir.join(name).is_file()));
        if !found && !ci {
            println!("cargo:rustc-cfg=missing_tool_{tool}");
        }
    }
}
