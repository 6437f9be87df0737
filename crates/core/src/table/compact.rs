//! Compaction by size, as Lance compacts: the small fragments (fewer rows
//! than a target) and those with many deleted rows are rewritten together
//! into new fragments of their live rows; every other fragment stays as it
//! is. The cost is the rows compacted, not the table: a streamed table (one
//! fragment per flush) stays at a bounded number of fragments when this
//! runs now and then.
//!
//! One commit deletes every row of the compacted fragments (which drops
//! them) and adds their live rows as new fragments, so readers see the same
//! rows before and after. Row ids of the moved rows change (as in Lance
//! without a row-id map): vector and scalar indexes hold the new fragments
//! as unindexed rows (searched exactly) until they are folded in; the
//! cached key index is updated with the rows' new addresses.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use roaring::RoaringBitmap;

use super::commit::{Change, Committed};
use super::scan::apply;
use super::{NativeTable, Snapshot};
use crate::api::OptimizeStats;
use crate::deadline::Deadline;
use crate::error::Result;
use crate::keys::{KeyEncoder, KeyIndex, RowAddr};

pub use crate::api::CompactOptions;

/// The fragments one compaction takes: (id, its rows, its deletions).
type Taken = Vec<(u64, RecordBatch, Arc<RoaringBitmap>)>;

/// The compaction of `snap`, or `None` when nothing qualifies.
fn plan(snap: &Snapshot, o: &CompactOptions) -> Result<(Option<Change>, (OptimizeStats, Taken))> {
    let heavy = |f: &crate::fragment::LoadedFragment| {
        let n = f.batch.num_rows().max(1) as f64;
        f.deleted.len() as f64 / n > o.materialize_deletions_threshold
    };
    let picked: Vec<&crate::fragment::LoadedFragment> = snap
        .fragments
        .iter()
        .filter(|f| (f.batch.num_rows() as u64) < o.target_rows_per_fragment || heavy(f))
        .collect();
    if picked.len() < o.min_fragments.max(1) && !picked.iter().any(|f| heavy(f)) {
        return Ok((None, Default::default()));
    }
    let schema = snap.schema();
    let mut parts = Vec::with_capacity(picked.len());
    let mut deletions = HashMap::new();
    let (mut purged, mut taken) = (0u64, Vec::new());
    for f in &picked {
        parts.push(apply(&f.batch, f.live_mask().as_ref())?);
        let mut all = RoaringBitmap::new();
        all.insert_range(0..f.batch.num_rows() as u32);
        deletions.insert(f.id, all);
        purged += f.deleted.len();
        taken.push((f.id, f.batch.clone(), f.deleted.clone()));
    }
    let rows = arrow::compute::concat_batches(&schema, &parts)?;
    let added = (rows.num_rows() as u64).div_ceil(super::commit::MAX_ROWS_PER_FRAGMENT as u64);
    let stats = OptimizeStats {
        version: 0,
        fragments_removed: picked.len() as u64,
        fragments_added: added,
        deleted_rows_purged: purged,
    };
    let change = Change {
        new_rows: Some(rows),
        deletions,
        operation: "compact",
        ..Default::default()
    };
    Ok((Some(change), (stats, taken)))
}

/// Teaches the cached key index the moved rows' new addresses (or drops it
/// when it describes another version).
fn learn(slot: &mut Option<KeyIndex>, c: &Committed, taken: &Taken) {
    let Some(idx) = slot.as_mut() else { return };
    if idx.version + 1 != c.manifest.version {
        *slot = None;
        return;
    }
    let Ok(enc) = KeyEncoder::new(&c.manifest.schema, idx.on()) else {
        *slot = None;
        return;
    };
    let moved = |idx: &mut KeyIndex| -> Result<()> {
        for (frag, batch, deleted) in taken {
            for (row, k) in enc.encode(batch)?.into_iter().enumerate() {
                if let (Some(k), false) = (k, deleted.contains(row as u32)) {
                    idx.remove_addr(
                        &k,
                        RowAddr {
                            frag: *frag,
                            row: row as u32,
                        },
                    );
                }
            }
        }
        for (frag, batch) in &c.new_fragments {
            for (row, k) in enc.encode(batch)?.into_iter().enumerate() {
                if let Some(k) = k {
                    idx.insert(
                        k,
                        RowAddr {
                            frag: *frag,
                            row: row as u32,
                        },
                    );
                }
            }
        }
        Ok(())
    };
    match moved(idx) {
        Ok(()) => idx.version = c.manifest.version,
        Err(_) => *slot = None,
    }
}

impl NativeTable {
    /// Compacts the small fragments and those with many deleted rows (see
    /// the module doc); the version is unchanged when nothing qualifies.
    pub fn compact_sync(&self, o: &CompactOptions) -> Result<OptimizeStats> {
        let (version, (stats, _), _) = self.write_with_retry(
            Deadline::new(None),
            |snap| plan(snap, o),
            |slot, c, out| learn(slot, c, &out.1),
        )?;
        Ok(OptimizeStats {
            version: self.committed_or_current(version)?,
            ..stats
        })
    }
}
