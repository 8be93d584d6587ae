//! `shard.json`: who a shard is, written into its artifact directory before it sends anything,
//! so `ringperf merge` can name a shard that never finished (its records kept) and refuse to mix
//! runs. See `docs/scale-out.md`.

use std::io;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The file's name in a shard's artifact directory.
pub const SHARD_FILE: &str = "shard.json";

/// One shard's identity and the command it ran.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShardManifest {
    /// The run every shard of it shares ([`run_id`]); also each shard's `benchmark_id`.
    pub run_id: String,
    /// This shard, from 0.
    pub index: u32,
    /// Shards in the run.
    pub count: u32,
    /// The shared start instant, wall-clock epoch ns (`--start-at`).
    pub start_at_ns: u64,
    /// [`workload_fingerprint`] of the shard's `input_config`: equal for shards of one workload.
    pub workload: String,
    /// Whether this shard scrapes the server's `/metrics` (shard 0 only).
    pub server_metrics: bool,
    /// The command line, secrets replaced by `<redacted>`, one argument per item: `merge`
    /// parses it again for the run's settings.
    pub argv: Vec<String>,
    /// The ringperf that ran the shard.
    pub ringperf_version: String,
}

/// FNV-1a, 64 bits.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// Groups of the `input_config` echo that say how a process runs, not what it sends: its UI
/// and workers, its log level, its I/O driver, and whether it scrapes the server (shard 0 alone
/// does). Of the `artifacts` group only the directory is left out: each shard writes its own,
/// but the file names, export level and timeslices must agree for the merge to read them.
const NOT_WORKLOAD: [&str; 4] = ["runtime", "logging", "ringperf", "server_metrics"];

/// A fingerprint of the workload: the `input_config` echo without the `NOT_WORKLOAD` groups
/// and `artifacts.dir`, 16 hex digits.
pub fn workload_fingerprint(input_config: &serde_json::Value) -> String {
    let mut v = input_config.clone();
    if let Some(m) = v.as_object_mut() {
        for k in NOT_WORKLOAD {
            m.remove(k);
        }
        if let Some(a) = m.get_mut("artifacts").and_then(|a| a.as_object_mut()) {
            a.remove("dir");
        }
    }
    format!("{:016x}", fnv1a(v.to_string().as_bytes()))
}

/// The run id every shard derives alike from what they share (the start instant, the shard
/// count and the workload), in AIPerf's `benchmark_id` form: 12 lowercase hex digits.
pub fn run_id(start_at_ns: u64, count: u32, workload: &str) -> String {
    let key = format!("{start_at_ns}/{count}/{workload}");
    let mut id = format!("{:016x}", fnv1a(key.as_bytes()));
    id.truncate(12);
    id
}

/// Writes `dir/shard.json`.
pub fn write(dir: &Path, m: &ShardManifest) -> io::Result<()> {
    let text = serde_json::to_string_pretty(m).map_err(io::Error::other)?;
    std::fs::write(dir.join(SHARD_FILE), text)
}

/// Reads `dir/shard.json`.
pub fn read(dir: &Path) -> io::Result<ShardManifest> {
    let path = dir.join(SHARD_FILE);
    let text = std::fs::read_to_string(&path)?;
    serde_json::from_str(&text).map_err(|e| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("{}: {e}", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_fingerprint_ignores_where_a_shard_writes() {
        let a = json!({"endpoint": {"model_names": ["m"]}, "artifacts": {"dir": "a"}});
        let b = json!({"endpoint": {"model_names": ["m"]}, "artifacts": {"dir": "b"}});
        let c = json!({"endpoint": {"model_names": ["n"]}, "artifacts": {"dir": "a"}});
        let d = json!({"endpoint": {"model_names": ["m"]}, "artifacts": {"dir": "c"}, "runtime": {"workers": 3}});
        assert_eq!(workload_fingerprint(&a), workload_fingerprint(&b));
        assert_ne!(workload_fingerprint(&a), workload_fingerprint(&c));
        assert_eq!(workload_fingerprint(&a), workload_fingerprint(&d));
        // Where a shard writes is its own; what it writes is the run's.
        let e =
            json!({"endpoint": {"model_names": ["m"]}, "artifacts": {"dir": "a", "prefix": "x"}});
        assert_ne!(workload_fingerprint(&a), workload_fingerprint(&e));
        assert_eq!(workload_fingerprint(&a).len(), 16);
    }

    #[test]
    fn the_run_id_is_shared_and_changes_with_the_start() {
        let id = run_id(1_000, 2, "00ff");
        assert_eq!(id, run_id(1_000, 2, "00ff"));
        assert_eq!(id.len(), 12);
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(id, run_id(1_001, 2, "00ff"));
        assert_ne!(id, run_id(1_000, 3, "00ff"));
        assert_ne!(id, run_id(1_000, 2, "00fe"));
    }

    #[test]
    fn the_manifest_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let m = ShardManifest {
            run_id: "0123456789ab".into(),
            index: 1,
            count: 2,
            start_at_ns: 7,
            workload: "00".into(),
            server_metrics: false,
            argv: vec!["ringperf".into(), "profile".into()],
            ringperf_version: "0.1.0".into(),
        };
        write(dir.path(), &m).unwrap();
        assert_eq!(read(dir.path()).unwrap(), m);
        std::fs::write(dir.path().join(SHARD_FILE), "{").unwrap();
        let e = read(dir.path()).unwrap_err();
        assert!(e.to_string().contains(SHARD_FILE), "{e}");
    }
}
