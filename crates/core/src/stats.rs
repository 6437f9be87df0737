//! What `stats()` reports of a table, in the shape of LanceDB's
//! `TableStatistics` (the wire JSON of `POST /v1/table/{id}/stats/` is this
//! struct's serde form, snake_case), and what `getLsmStats()` reports of a
//! served table's MemWAL, in the shape of LanceDB's `LsmStats`
//! (`get_lsm_stats/` answers `{"lsm_stats": ...}` in this serde form).

use serde::{Deserialize, Serialize};

/// A table's size and fragment layout.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableStats {
    /// Bytes of the version's data and deletion files.
    pub total_bytes: u64,
    /// Live rows (a served table's buffered MemWAL rows included).
    pub num_rows: u64,
    /// Indexes of the version.
    pub num_indices: u64,
    /// The fragments.
    pub fragment_stats: FragmentStats,
}

/// Fragment counts and the spread of their live rows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FragmentStats {
    /// Fragments.
    pub num_fragments: u64,
    /// Fragments with fewer than [`SMALL_FRAGMENT_ROWS`] live rows (what
    /// `optimize` would compact).
    pub num_small_fragments: u64,
    /// Live rows per fragment.
    pub lengths: Lengths,
}

/// Min, max, mean and nearest-rank percentiles of live rows per fragment
/// (all 0 for a table without fragments).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lengths {
    pub min: u64,
    pub max: u64,
    pub mean: u64,
    pub p25: u64,
    pub p50: u64,
    pub p75: u64,
    pub p99: u64,
}

/// A fragment with fewer live rows than this counts as small.
pub const SMALL_FRAGMENT_ROWS: u64 = 100_000;

impl FragmentStats {
    /// The statistics of fragments holding `rows` live rows each.
    pub fn of(rows: &[u64]) -> Self {
        let mut s = rows.to_vec();
        s.sort_unstable();
        let at = |q: f64| -> u64 {
            if s.is_empty() {
                return 0;
            }
            // Lance's rule: the value at index floor(q * n) of the sorted lengths.
            let at = (q * s.len() as f64).floor() as usize;
            s[at.min(s.len() - 1)]
        };
        let n = s.len() as u64;
        FragmentStats {
            num_fragments: n,
            num_small_fragments: s.iter().filter(|r| **r < SMALL_FRAGMENT_ROWS).count() as u64,
            lengths: Lengths {
                min: s.first().copied().unwrap_or(0),
                max: s.last().copied().unwrap_or(0),
                mean: s.iter().sum::<u64>().checked_div(n).unwrap_or(0),
                p25: at(0.25),
                p50: at(0.5),
                p75: at(0.75),
                p99: at(0.99),
            },
        }
    }
}

/// A table's MemWAL state: one bucket (memwal does not shard).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LsmStats {
    pub buckets: Vec<BucketStats>,
}

/// One bucket's MemWAL state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BucketStats {
    /// `"0"`: the one shard.
    pub shard_id: String,
    /// `"Active"`.
    pub status: String,
    /// 1: one writer per table and process.
    pub writer_epoch: u64,
    /// The base table's version.
    pub manifest_version: u64,
    /// The generation the active memtable becomes when sealed.
    pub current_generation: u64,
    /// The last WAL sequence number merged into the base (replay resumes
    /// after it).
    pub replay_after_wal_entry_position: u64,
    /// The last WAL sequence number acknowledged.
    pub wal_entry_position_last_seen: u64,
    /// Sealed generations on disk not merged into the base: always empty
    /// (a memwal flush merges a sealed memtable straight into the base).
    pub generations: Vec<GenerationStats>,
    /// Whether sealed memtables wait to be merged.
    pub compacting: bool,
    /// Memtables not merged yet: sealed ones oldest first, the active last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memtables: Option<Vec<MemtableStats>>,
}

/// A sealed generation on disk.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenerationStats {
    pub generation: u64,
    pub bytes: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows: Option<u64>,
}

/// One memtable.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct MemtableStats {
    pub generation: u64,
    /// Rows buffered (one per key).
    pub rows: u64,
    /// Request payload bytes appended.
    pub bytes: u64,
    /// Batches buffered.
    pub batches: u64,
    /// Indexes it carries: none (memtable rows are searched exactly).
    pub indexes: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_as_lance_reports_them() {
        let f = FragmentStats::of(&[10, 1, 200_000, 4]);
        assert_eq!((f.num_fragments, f.num_small_fragments), (4, 3));
        let l = f.lengths;
        assert_eq!((l.min, l.max, l.mean), (1, 200_000, 50_003));
        assert_eq!((l.p25, l.p50, l.p75, l.p99), (4, 10, 200_000, 200_000));
        assert_eq!(FragmentStats::of(&[]), FragmentStats::default());
        // @lancedb/lancedb 0.39's answers for these fragment lengths (min, max, mean, p25, p50, p75, p99).
        for (lengths, want) in [
            (vec![2, 1], [1, 2, 1, 1, 2, 2, 2]),
            (vec![1, 2, 3], [1, 3, 2, 1, 2, 3, 3]),
            (vec![1, 2, 3, 4, 5], [1, 5, 3, 2, 3, 4, 5]),
            (vec![5, 1, 4, 2, 3, 7, 9, 8, 6, 10], [1, 10, 5, 3, 6, 8, 10]),
        ] {
            let l = FragmentStats::of(&lengths).lengths;
            assert_eq!(
                [l.min, l.max, l.mean, l.p25, l.p50, l.p75, l.p99],
                want,
                "{lengths:?}"
            );
        }
    }
}
