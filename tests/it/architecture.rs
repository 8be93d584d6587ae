//! docs/architecture.md's crate map against the workspace as cargo sees it: every crate is a
//! row, and each row's `builds on` column names exactly the ringperf crates of its
//! `[dependencies]`. A crate added, removed or given a new arrow without the map changing fails
//! here.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

type Arrows = BTreeMap<String, BTreeSet<String>>;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The crate map between its markers: crate name → the ringperf crates it builds on.
fn documented() -> Arrows {
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let begin = doc.find("<!-- crate-map: begin -->").expect("begin marker");
    let end = doc.find("<!-- crate-map: end -->").expect("end marker");
    let mut map = Arrows::new();
    for row in doc[begin..end].lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let name = cells[1].trim_matches('`').to_owned();
        let on = cells[3]
            .split(',')
            .map(str::trim)
            .filter(|c| *c != "—" && !c.is_empty())
            .map(|c| format!("ringperf-{c}"))
            .collect();
        assert!(map.insert(name.clone(), on).is_none(), "{name} twice");
    }
    map
}

/// `cargo metadata`'s view: each workspace member → its normal dependencies that are members.
fn from_cargo() -> Arrows {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(repo())
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let packages = meta["packages"].as_array().unwrap();
    let members: BTreeSet<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_owned())
        .collect();
    packages
        .iter()
        .map(|p| {
            let on = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|d| d["kind"].is_null())
                .map(|d| d["name"].as_str().unwrap().to_owned())
                .filter(|d| members.contains(d) && d != p["name"].as_str().unwrap())
                .collect();
            (p["name"].as_str().unwrap().to_owned(), on)
        })
        .collect()
}

#[test]
fn the_crate_map_is_the_workspace() {
    let (doc, cargo) = (documented(), from_cargo());
    assert!(
        doc.len() >= 6,
        "the map lost its rows: {:?}",
        doc.keys().collect::<Vec<_>>()
    );
    assert_eq!(
        doc, cargo,
        "docs/architecture.md (left) against cargo metadata (right)"
    );
}

/// The map's order is the build order: a crate builds only on crates in rows above it.
#[test]
fn every_arrow_points_up_the_map() {
    let doc = std::fs::read_to_string(repo().join("docs/architecture.md")).unwrap();
    let order: Vec<String> = documented().into_keys().collect();
    let row = |name: &str| {
        doc.find(&format!("| `{name}` |"))
            .unwrap_or_else(|| panic!("{name} has no row"))
    };
    for (name, on) in documented() {
        for dep in on {
            assert!(
                order.contains(&dep) && row(&dep) < row(&name),
                "{name} builds on {dep}, which is not a row above it"
            );
        }
    }
}
