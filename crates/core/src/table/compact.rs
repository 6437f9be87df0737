//! Compaction by size, as Lance compacts: the small fragments (fewer rows
//! than a target) and those with many deleted rows are rewritten together
//! into new fragments of their live rows; every other fragment stays as it
//! is. The cost is the rows compacted, not the table: a streamed table (one
//! fragment per flush) stays at a bounded number of fragments when this
//! runs now and then.
//!
//! One commit deletes every row of the compacted fragments (which drops
//! them) and adds their live rows as new fragments, so readers see the same
//! rows before and after. Row ids of the moved rows change, and the same
//! commit keeps every index covering them valid, nothing re-encoded: a
//! vector index gets one more delta file, the moved rows' entries under
//! their new ids (their old entries stay, dead, until the index is next
//! written whole: a fraction of the index per compaction, where a rewrite
//! costs all of it each time and the retention keeps every rewrite); past
//! `MAX_INDEX_DELTAS` deltas, and for IVF_HNSW_SQ (a graph of dead nodes
//! would be walked whole), BTREE and FTS indexes, it is rewritten with the
//! ids remapped, as Lance does (an HNSW graph relinked when rows leave it
//! or a delta's rows wait unlinked). Only fragments of one
//! index coverage are compacted together (an index covers all of them or
//! none). The cached key index is updated with the rows' new addresses.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::RecordBatch;
use roaring::RoaringBitmap;

use super::commit::{Change, Committed};
use super::indices::{cache_key, BuiltIndexes, IndexData, LoadedIndex};
use super::scan::apply;
use super::{NativeTable, Snapshot};
use crate::api::OptimizeStats;
use crate::deadline::Deadline;
use crate::error::Result;
use crate::fragment::LoadedFragment;
use crate::index::ivf::IvfIndex;
use crate::index::store;
use crate::keys::{KeyEncoder, KeyIndex, RowAddr};
use crate::manifest::IndexMeta;

pub use crate::api::CompactOptions;

/// The fragments one compaction takes: (id, its rows, its deletions).
type Taken = Vec<(u64, RecordBatch, Arc<RoaringBitmap>)>;

/// What a compaction plan hands on: its statistics, the rows it moved (for
/// the key index), the indexes it rewrote (to cache once it lands).
type Planned = (OptimizeStats, Taken, BuiltIndexes);

/// The fragments a compaction of `snap` takes: the small ones and those
/// with many deleted rows, of one index coverage (every index covers all of
/// them or none, so an index can follow its rows; fragments of another
/// coverage wait for the next run), as one bin of at most
/// `target_rows_per_fragment` live rows and `max_bytes_per_run` bytes of
/// them (the smallest first when enough fit, else the deletion-heavy ones
/// first: one run's work is bounded, and a fragment near the target is not
/// rewritten with every new small one), in table order; or none when too
/// few qualify.
fn pick<'a>(snap: &'a Snapshot, o: &CompactOptions) -> Vec<&'a LoadedFragment> {
    let coverage = |f: &LoadedFragment| -> Vec<usize> {
        let covers = |i: &usize| snap.indices[*i].fragments.contains(&f.id);
        (0..snap.indices.len()).filter(covers).collect()
    };
    let mut groups: BTreeMap<Vec<usize>, Vec<&LoadedFragment>> = BTreeMap::new();
    for f in &snap.fragments {
        if (f.batch.num_rows() as u64) < o.target_rows_per_fragment || heavy(f, o) {
            groups.entry(coverage(f)).or_default().push(f);
        }
    }
    // The smallest first, when enough of them fit (or a full bin of two or
    // more: fragments too big for `min_fragments` of them to fit one run
    // still get merged), so the fragment count stays bounded; otherwise the
    // deletion-heavy ones first, when there is one.
    let choose = |g: Vec<&'a LoadedFragment>| {
        let (small, full) = bin(snap, &g, false, o);
        if small.len() >= o.min_fragments.max(1) || (full && small.len() >= 2) {
            return small;
        }
        let (h, _) = bin(snap, &g, true, o);
        if h.iter().any(|f| heavy(f, o)) {
            h
        } else {
            Vec::new()
        }
    };
    groups
        .into_values()
        .map(choose)
        .max_by_key(Vec::len)
        .unwrap_or_default()
}

/// Whether `f`'s deleted share is past the threshold.
fn heavy(f: &LoadedFragment, o: &CompactOptions) -> bool {
    let n = f.batch.num_rows().max(1) as f64;
    f.deleted.len() as f64 / n > o.materialize_deletions_threshold
}

/// `f`'s rows not deleted.
fn live(f: &LoadedFragment) -> u64 {
    f.batch.num_rows() as u64 - f.deleted.len().min(f.batch.num_rows() as u64)
}

/// The bytes of `f`'s live rows (of the rows' slices: a fragment read from
/// a file slices its columns out of one block, whose size would otherwise
/// be counted once per buffer).
fn bytes(f: &LoadedFragment) -> u64 {
    let n = f.batch.num_rows().max(1) as u64;
    let size: usize = f
        .batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or_else(|_| c.get_array_memory_size())
        })
        .sum();
    (size as u64).saturating_mul(live(f)) / n
}

/// One bin of `g` within the row target and the byte budget, in table
/// order, and whether something was left out for lack of room. The
/// heavy-first bin always takes its first fragment (its deleted rows must
/// go, however big it is); the smallest-first one skips a fragment too big
/// for what is left of the budget (one big fragment must not keep every
/// small one from merging) and stops at the row target (the rest are
/// bigger).
fn bin<'a>(
    snap: &Snapshot,
    g: &[&'a LoadedFragment],
    heavy_first: bool,
    o: &CompactOptions,
) -> (Vec<&'a LoadedFragment>, bool) {
    let mut g = g.to_vec();
    g.sort_by_key(|f| (heavy_first && !heavy(f, o), live(f), f.id));
    let (mut total, mut size) = (0u64, 0u64);
    let (mut out, mut full): (Vec<&LoadedFragment>, bool) = (Vec::new(), false);
    for f in g {
        let (n, b) = (live(f), bytes(f));
        let rows_over = total + n > o.target_rows_per_fragment;
        let bytes_over = size.saturating_add(b) > o.max_bytes_per_run;
        let must_take = heavy_first && out.is_empty();
        if (rows_over || bytes_over) && !must_take {
            full = true;
            if rows_over || heavy_first {
                break;
            }
            continue;
        }
        total += n;
        size = size.saturating_add(b);
        out.push(f);
    }
    let order: HashMap<u64, usize> = snap
        .fragments
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    out.sort_by_key(|f| order.get(&f.id).copied().unwrap_or(usize::MAX));
    (out, full)
}

/// Where each row of the picked fragments goes: `fragment id -> new row id
/// per row` (`None`: deleted, dropped), the new fragments numbered from the
/// base's next id, `MAX_ROWS_PER_FRAGMENT` rows each, as the commit writes them.
fn moves(snap: &Snapshot, picked: &[&LoadedFragment]) -> HashMap<u64, Vec<Option<u64>>> {
    let first = snap.manifest.next_fragment_id;
    let per = super::commit::MAX_ROWS_PER_FRAGMENT as u64;
    let mut k = 0u64;
    let mut out = HashMap::new();
    for f in picked {
        let rows = (0..f.batch.num_rows() as u32).map(|r| {
            (!f.deleted.contains(r)).then(|| {
                let id = ((first + k / per) << 32) | (k % per);
                k += 1;
                id
            })
        });
        out.insert(f.id, rows.collect());
    }
    out
}

impl NativeTable {
    /// The compaction of `snap`, or `None` when nothing qualifies.
    fn plan_compaction(
        &self,
        snap: &Snapshot,
        o: &CompactOptions,
    ) -> Result<(Option<Change>, Planned)> {
        let picked = pick(snap, o);
        if picked.is_empty() {
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
        let new_ids: Vec<u64> = (0..added)
            .map(|i| snap.manifest.next_fragment_id + i)
            .collect();
        let (indices, built) = match self.remap_indices(snap, &picked, &new_ids)? {
            Some((list, built)) => (Some(list), built),
            None => (None, Vec::new()),
        };
        let change = Change {
            new_rows: Some(rows),
            deletions,
            indices,
            operation: "compact",
            ..Default::default()
        };
        Ok((Some(change), (stats, taken, built)))
    }

    /// The index list after moving `picked`'s rows into `new_ids`: each
    /// index covering them (all of them: see [`pick`]) rewritten with its
    /// row ids remapped, nothing re-encoded, with the vector and BTREE ones
    /// in memory; `None` when no index covers them.
    fn remap_indices(
        &self,
        snap: &Snapshot,
        picked: &[&LoadedFragment],
        new_ids: &[u64],
    ) -> Result<Option<(Vec<IndexMeta>, BuiltIndexes)>> {
        let covered = |ix: &LoadedIndex| ix.fragments.contains(&picked[0].id);
        if !snap.indices.iter().any(covered) {
            return Ok(None);
        }
        let moved = moves(snap, picked);
        // Where a moved row goes (`None`: it stays, or it was deleted).
        let to = |id: u64| {
            let rows = moved.get(&(id >> 32))?;
            rows.get((id & 0xffff_ffff) as usize).copied().flatten()
        };
        // A whole rewrite: moved rows remapped, entries of fragments no
        // longer in the table (dead ones a compaction delta left) dropped.
        let map = |id: u64| match moved.get(&(id >> 32)) {
            Some(rows) => rows.get((id & 0xffff_ffff) as usize).copied().flatten(),
            None => snap.fragment(id >> 32).is_some().then_some(id),
        };
        let storage = self.inner.storage.as_ref();
        let mut list = Vec::with_capacity(snap.indices.len());
        let mut built = Vec::new();
        for ix in &snap.indices {
            let mut meta = ix.meta.as_ref().clone();
            if covered(ix) {
                let (files, data) = match &ix.data {
                    IndexData::Vector(v)
                        if v.scans_partitions() && super::indices::takes_delta(ix, false) =>
                    {
                        relocate(storage, self.dir(), ix, v, &to)?
                    }
                    IndexData::Vector(v) => {
                        let r = v.remapped(&map)?;
                        let files = store::write(storage, self.dir(), &r)?;
                        (files, Some(IndexData::Vector(Arc::new(r))))
                    }
                    IndexData::Scalar(b) => {
                        let r = b.remapped(&map)?;
                        let files = store::write_btree(storage, self.dir(), &r)?;
                        (files, Some(IndexData::Scalar(Arc::new(r))))
                    }
                    IndexData::Text(t) => {
                        (super::fts::remap_fts(storage, self.dir(), t, &map)?, None)
                    }
                };
                meta.files = files;
                meta.fragment_ids.retain(|f| !moved.contains_key(f));
                meta.fragment_ids.extend_from_slice(new_ids);
                meta.fragment_ids.sort_unstable();
                built.extend(data.map(|d| (cache_key(&meta), d)));
            }
            list.push(meta);
        }
        Ok(Some((list, built)))
    }
}

/// A vector index after a compaction, as one more delta file: the moved
/// rows' entries under their new ids (see [`IvfIndex::relocated`]; a
/// fraction of the index, where a whole rewrite costs all of it, and the
/// retention keeps each rewrite), merged in memory. With no row to move,
/// the index stays as it is.
fn relocate(
    storage: &dyn crate::storage::Storage,
    dir: &str,
    ix: &LoadedIndex,
    v: &IvfIndex,
    to: &dyn Fn(u64) -> Option<u64>,
) -> Result<(Vec<crate::manifest::IndexFile>, Option<IndexData>)> {
    let d = v.relocated(to);
    if d.row_ids.is_empty() {
        return Ok((ix.meta.files.clone(), None));
    }
    let (files, _, merged) = super::indices::add_vector_delta(storage, dir, ix, v, &d)?;
    Ok((files, Some(merged)))
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
    /// Compacts until nothing qualifies (run after run, each one bin; see
    /// [`pick`]), as Lance's `compact_files` does in one call: what
    /// `optimize` does. The stats add up the runs; the version is the last.
    pub fn compact_all_sync(&self, o: &CompactOptions) -> Result<OptimizeStats> {
        let mut total = OptimizeStats {
            version: self.version_sync()?,
            ..Default::default()
        };
        // Each run removes at least one fragment or a fragment's deletions,
        // so this ends; the bound is a guard, never reached in practice.
        for _ in 0..100_000 {
            let s = self.compact_sync(o)?;
            if s.fragments_removed == 0 {
                break;
            }
            total.version = s.version;
            total.fragments_removed += s.fragments_removed;
            total.fragments_added += s.fragments_added;
            total.deleted_rows_purged += s.deleted_rows_purged;
        }
        Ok(total)
    }

    /// Compacts one bin of the small fragments and those with many deleted
    /// rows (see the module doc); the version is unchanged when nothing
    /// qualifies.
    pub fn compact_sync(&self, o: &CompactOptions) -> Result<OptimizeStats> {
        // Index files it writes are not yet named by a version: cleanup keeps them.
        let _building = super::Building::start(&self.inner);
        let (version, (stats, _, built), _) = self.write_with_retry(
            Deadline::new(None),
            |snap| self.plan_compaction(snap, o),
            |slot, c, out| learn(slot, c, &out.1),
        )?;
        if version.is_some() {
            self.remember_indices(built);
        }
        Ok(OptimizeStats {
            version: self.committed_or_current(version)?,
            ..stats
        })
    }
}
