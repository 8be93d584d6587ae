#!/usr/bin/env python3
"""Fails when a crate's modules import each other in a circle.

Each crate of the workspace (the binary's `src/` and every `crates/*/src/`) is checked on its own;
between crates the compiler already refuses a circle. Two graphs are built from the `use` paths
and `crate::…` / `super::…` references of every file of the crate (test modules and test files
excluded: a test may look at anything):

- the file graph: an edge from a file to each file it names;
- the folder graph: the same edges lifted to top-level modules (`crates/mock/src/mock/conn.rs` → `mock`).

A strongly connected component of more than one node is a circle. The rules (docs/architecture.md):
no circle among top-level modules, so no import circle between files of different folders; and
none among files inside one folder.

Usage: `.ci/import_cycles.py [REPO_ROOT]`. Exit 0 when there is no circle, 1 (listing each
circle) otherwise.
"""

import os
import re
import sys

TEST_FILE = re.compile(r"(^|/)(tests|[a-z_]+_tests)\.rs$")
PATH_REF = re.compile(r"\b(crate|super(?:::super)*)((?:::[A-Za-z_][A-Za-z0-9_]*)+)")
USE_GROUP = re.compile(r"\buse\s+(crate|super(?:::super)*)((?:::[a-z_][a-z0-9_]*)*)::\{([^;]*)\}\s*;", re.S)


def strip_tests(text):
    """The file without its `#[cfg(test)] mod tests { … }` block and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    m = re.search(r"#\[cfg\(test\)\]\s*mod\s+\w+\s*\{", text)
    if not m:
        return text
    depth, i = 0, m.end() - 1
    while i < len(text):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[: m.start()] + strip_tests(text[i + 1 :])
        i += 1
    return text[: m.start()]


def module_of(rel):
    """`src/a/b.rs` → ["a", "b"]; `src/a/mod.rs` → ["a"]; `src/lib.rs` → []."""
    parts = rel[rel.index("src/") + len("src/") : -len(".rs")].split("/")
    if parts[-1] in ("mod", "lib", "main"):
        parts = parts[:-1]
    return parts


def resolve(files_by_mod, base, segments):
    """The longest module prefix of `base + segments` that is a file of the crate."""
    full = base + segments
    for n in range(len(full), 0, -1):
        if tuple(full[:n]) in files_by_mod:
            return files_by_mod[tuple(full[:n])]
    return None


def references(text, here):
    """(root module path, segments) of every crate-relative path in `text`."""
    out = []
    for m in USE_GROUP.finditer(text):
        prefix = [s for s in m.group(2).split("::") if s]
        for item in re.split(r"[,\s]+", m.group(3)):
            item = item.strip("{} ")
            if item and re.match(r"[a-z_][a-z0-9_]*$", item) and item != "self":
                out.append((m.group(1), prefix + [item]))
            elif item == "self":
                out.append((m.group(1), prefix))
    for m in PATH_REF.finditer(text):
        out.append((m.group(1), [s for s in m.group(2).split("::") if s]))
    resolved = []
    for root, segs in out:
        if root == "crate":
            base = []
        else:
            ups = root.count("super")
            base = here[: max(len(here) - ups, 0)]
        resolved.append((base, segs))
    return resolved


def sccs(nodes, edges):
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for v in nodes:
        if v not in index:
            visit(v)
    return out


def main():
    default = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    repo = os.path.realpath(sys.argv[1] if len(sys.argv) > 1 else default)
    roots = [repo] + sorted(
        os.path.join(repo, "crates", c)
        for c in os.listdir(os.path.join(repo, "crates"))
        if os.path.isdir(os.path.join(repo, "crates", c, "src"))
    ) if os.path.isdir(os.path.join(repo, "crates")) else [repo]
    failed = 0
    for root in roots:
        failed |= check_crate(root, os.path.relpath(root, repo))
    return failed


def check_crate(root, name):
    files = []
    for d, _, names in os.walk(os.path.join(root, "src")):
        for n in names:
            if n.endswith(".rs"):
                rel = os.path.relpath(os.path.join(d, n), root)
                if not TEST_FILE.search(rel) and "/testdata/" not in rel:
                    files.append(rel)
    files_by_mod = {tuple(module_of(f)): f for f in files}
    # A `mod.rs`'s children are named relative to its folder; a file's `super` is its folder.
    file_edges = {f: set() for f in files}
    for f in files:
        here = module_of(f)
        # For `a/b.rs`, `super` is `a`; for `a/mod.rs`, `super` is the crate root's view of `a`'s
        # parent. module_of already maps mod.rs to its folder, so `here` is the module itself.
        text = strip_tests(open(os.path.join(root, f), encoding="utf-8").read())
        for base, segs in references(text, here):
            target = resolve(files_by_mod, base, segs)
            if target and target != f:
                file_edges[f].add(target)

    def folder(f):
        m = module_of(f)
        return m[0] if m else "<root>"

    folder_edges = {}
    for f, ts in file_edges.items():
        for t in ts:
            a, b = folder(f), folder(t)
            # A folder's own `mod.rs` re-exports its children: that is not a dependency.
            if a != b and a != "<root>" and b != "<root>":
                folder_edges.setdefault(a, set()).add(b)
    problems = []
    for comp in sccs(sorted(folder_edges), folder_edges):
        problems.append("modules import each other: " + " ⇄ ".join(comp))
    by_folder = {}
    for f in files:
        by_folder.setdefault(os.path.dirname(f), []).append(f)
    for d, fs in sorted(by_folder.items()):
        local = {f: {t for t in file_edges[f] if t in fs} for f in fs}
        # A folder's mod.rs declares and re-exports its files; edges from it are structure.
        for f in fs:
            if f.endswith("/mod.rs"):
                local[f] = set()
        for comp in sccs(sorted(local), local):
            problems.append(f"files of {d}/ import each other: " + " ⇄ ".join(comp))
    for p in problems:
        print(f"{name}: {p}")
    if problems:
        print(f"{name}: {len(problems)} import circle(s)", file=sys.stderr)
        return 1
    print(f"{name}: no import circle ({len(files)} files, {len(folder_edges)} modules with imports)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
