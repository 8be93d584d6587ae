#!/usr/bin/env python3
"""Fails when a tracked source file refers to a path outside the repository.

A clone of the repository is all a user has: no `../shared`, no files of the machine the code was
written on. Checked, for every file `git ls-files` lists (seed corpora and test data aside):

- Rust: the paths of `include_bytes!` / `include_str!` and `#[path = "…"]` (relative to the
  file), of `concat!(env!("CARGO_MANIFEST_DIR"), "…")` (relative to the crate root), and every
  other string literal holding `../` (an error only when it leaves the repository both from the
  file and from the crate root, where tests run; a leading `/` is a joined suffix's separator);
- Cargo manifests: every `path = "…"` (relative to the manifest);
- every source (Rust, TOML, shell, Python, the CI scripts): no `shared/reference`, no `../shared`,
  and no absolute path into a home or work directory (`/work/`, `/root/`, `/home/`).

Usage: `.ci/self_contained.py [REPO_ROOT]` (default: the repository holding this script).
Exit 0 when clean; 1 with one line per finding otherwise.
"""

import os
import re
import subprocess
import sys

SOURCE_EXT = (".rs", ".toml", ".sh", ".py")
SKIP_PREFIXES = ("fuzz/seeds/", "tests/data/", "benches/data/", "assets/")

RUST_FILE_RELATIVE = re.compile(
    r'(?:include_bytes!|include_str!)\s*\(\s*"([^"]+)"|#\[path\s*=\s*"([^"]+)"\]'
)
RUST_ROOT_RELATIVE = re.compile(
    r'concat!\s*\(\s*env!\s*\(\s*"CARGO_MANIFEST_DIR"\s*\)\s*,\s*"([^"]+)"'
)
RUST_DOTDOT_LITERAL = re.compile(r'"([^"\n]*\.\./[^"\n]*)"')
TOML_PATH = re.compile(r'\bpath\s*=\s*"([^"]+)"')
FORBIDDEN = re.compile(r"shared/reference|\.\./shared\b|(?<![\w.])/(?:work|root|home)/")


def inside(root, path):
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


def tracked_sources(root):
    out = subprocess.run(
        ["git", "-C", root, "ls-files"], check=True, capture_output=True, text=True
    ).stdout.splitlines()
    for rel in out:
        # This script names the patterns it looks for.
        if rel.startswith(SKIP_PREFIXES) or rel == ".ci/self_contained.py":
            continue
        if rel.endswith(SOURCE_EXT) or rel.startswith(".ci/"):
            yield rel


def crate_root(root, rel):
    """The directory of the nearest Cargo.toml above `rel` (the repository root by default)."""
    d = os.path.dirname(os.path.join(root, rel))
    while inside(root, d):
        if os.path.exists(os.path.join(d, "Cargo.toml")):
            return d
        d = os.path.dirname(d)
    return root


def check_file(root, rel):
    path = os.path.join(root, rel)
    try:
        text = open(path, encoding="utf-8").read()
    except (UnicodeDecodeError, FileNotFoundError):
        return []
    here = os.path.dirname(path)
    findings = []
    lines_seen = set()

    def report(line_of, what):
        line = text.count("\n", 0, line_of) + 1
        if line not in lines_seen:
            lines_seen.add(line)
            findings.append(f"{rel}:{line}: {what}")

    for m in FORBIDDEN.finditer(text):
        report(m.start(), f"refers outside the repository: {m.group(0)!r}")
    if rel.endswith(".rs"):
        for m in RUST_FILE_RELATIVE.finditer(text):
            p = m.group(1) or m.group(2)
            if not inside(root, os.path.join(here, p)):
                report(m.start(), f"path leaves the repository: {p!r}")
        for m in RUST_ROOT_RELATIVE.finditer(text):
            p = m.group(1).lstrip("/")
            if not inside(root, os.path.join(crate_root(root, rel), p)):
                report(m.start(), f"path leaves the repository: {p!r}")
        for m in RUST_DOTDOT_LITERAL.finditer(text):
            # A leading `/` is the separator of a suffix joined to a directory
            # (`concat!(env!("CARGO_MANIFEST_DIR"), "/../..")`), not an absolute path.
            p = m.group(1).lstrip("/")
            from_file = os.path.join(here, p)
            from_crate = os.path.join(crate_root(root, rel), p)
            if not inside(root, from_file) and not inside(root, from_crate):
                report(m.start(), f"path leaves the repository: {p!r}")
    if rel.endswith(".toml"):
        for m in TOML_PATH.finditer(text):
            p = m.group(1)
            if not inside(root, os.path.join(here, p)):
                report(m.start(), f"path leaves the repository: {p!r}")
    return findings


def main():
    default = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    root = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else default)
    findings = []
    for rel in tracked_sources(root):
        findings.extend(check_file(root, rel))
    for f in findings:
        print(f)
    if findings:
        print(f"{len(findings)} reference(s) outside the repository", file=sys.stderr)
        return 1
    print("self-contained: no source refers outside the repository")
    return 0


if __name__ == "__main__":
    sys.exit(main())
