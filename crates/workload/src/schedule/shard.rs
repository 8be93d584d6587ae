//! One shard's share of a run split over N client processes (`--shard-index I --shard-count N`).
//!
//! A run is a handful of index sequences, each numbered from 0 the same way in every process:
//! open-loop arrivals (and fixed-schedule first turns, user-centric users), requests
//! (`session_num`), sessions (which pick their conversation by index) and closed-loop
//! concurrency slots. Index `k` of any of them belongs to shard `k mod N`. Every shard walks the
//! whole seeded sequence and keeps its own indices, so the union of the shards is exactly the
//! single-process run: the same intended times, the same prompts, the same request indices.
//!
//! A shard counts its own items locally (`0, 1, 2, …`); local item `j` is global index
//! `j·N + I`. The whole run is shard 0 of 1, where local and global are the same.

/// Why a shard was refused; the message names the flags.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ShardError {
    /// `--shard-count 0`.
    NoShards,
    /// `--shard-index` not below `--shard-count`.
    IndexOutOfRange { index: u32, count: u32 },
}

impl std::fmt::Display for ShardError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ShardError::NoShards => f.write_str("--shard-count must be at least 1"),
            ShardError::IndexOutOfRange { index, count } => write!(
                f,
                "--shard-index {index} is out of range for --shard-count {count} (0 to {})",
                count - 1
            ),
        }
    }
}

impl std::error::Error for ShardError {}

/// This process's shard of the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    index: u32,
    count: u32,
}

impl Default for Shard {
    fn default() -> Self {
        Self::WHOLE
    }
}

impl Shard {
    /// The whole run in one process.
    pub const WHOLE: Shard = Shard { index: 0, count: 1 };

    /// Shard `index` of `count` (`index < count`, `count ≥ 1`).
    ///
    /// # Errors
    /// No shards, or an index out of range.
    pub fn new(index: u32, count: u32) -> Result<Self, ShardError> {
        if count == 0 {
            return Err(ShardError::NoShards);
        }
        if index >= count {
            return Err(ShardError::IndexOutOfRange { index, count });
        }
        Ok(Self { index, count })
    }

    /// This shard's index, from 0.
    pub fn index(self) -> u32 {
        self.index
    }

    /// How many shards share the run.
    pub fn count(self) -> u32 {
        self.count
    }

    /// The run is not split.
    pub fn is_whole(self) -> bool {
        self.count == 1
    }

    /// Whether global index `k` is this shard's.
    pub fn owns(self, k: u64) -> bool {
        k % u64::from(self.count) == u64::from(self.index)
    }

    /// The global index of this shard's local item `j` (saturating at `u64::MAX`, which no
    /// limit reaches).
    pub fn global(self, j: u64) -> u64 {
        j.saturating_mul(u64::from(self.count))
            .saturating_add(u64::from(self.index))
    }

    /// The local number of global index `k` (meaningful when [`Shard::owns`] it).
    pub fn local(self, k: u64) -> u64 {
        k / u64::from(self.count)
    }

    /// How many of the global indices `0..total` are this shard's: its share of a request
    /// count, a session count or a concurrency. `u64::MAX` (no limit) stays `u64::MAX`.
    pub fn share(self, total: u64) -> u64 {
        if total == u64::MAX {
            return u64::MAX;
        }
        let (n, i) = (u64::from(self.count), u64::from(self.index));
        total / n + u64::from(i < total % n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_partition_every_sequence() {
        for count in 1..=5u32 {
            let shards: Vec<Shard> = (0..count).map(|i| Shard::new(i, count).unwrap()).collect();
            for total in [0u64, 1, 2, 3, 7, 10, 101] {
                // Each index has exactly one owner, and the owner's local numbering maps back.
                let mut seen = vec![0u32; total as usize];
                for s in &shards {
                    let mine: Vec<u64> = (0..s.share(total)).map(|j| s.global(j)).collect();
                    assert!(mine.iter().all(|&k| k < total && s.owns(k)));
                    assert!(
                        mine.iter()
                            .enumerate()
                            .all(|(j, &k)| s.local(k) == j as u64)
                    );
                    for k in mine {
                        seen[k as usize] += 1;
                    }
                }
                assert!(seen.iter().all(|&c| c == 1), "{count} shards of {total}");
                let shares: u64 = shards.iter().map(|s| s.share(total)).sum();
                assert_eq!(shares, total);
            }
        }
    }

    #[test]
    fn whole_run_is_the_identity() {
        let w = Shard::WHOLE;
        assert!(w.is_whole());
        assert!((0..10).all(|k| w.owns(k) && w.global(k) == k && w.local(k) == k));
        assert_eq!(w.share(42), 42);
        assert_eq!(w.share(u64::MAX), u64::MAX);
        assert_eq!(Shard::new(1, 3).unwrap().share(u64::MAX), u64::MAX);
    }

    #[test]
    fn bad_shards_are_refused() {
        assert_eq!(Shard::new(0, 0), Err(ShardError::NoShards));
        assert_eq!(
            Shard::new(0, 0).unwrap_err().to_string(),
            "--shard-count must be at least 1"
        );
        assert_eq!(
            Shard::new(3, 3).unwrap_err().to_string(),
            "--shard-index 3 is out of range for --shard-count 3 (0 to 2)"
        );
        assert_eq!(Shard::new(2, 3).unwrap().global(4), 14);
    }
}
