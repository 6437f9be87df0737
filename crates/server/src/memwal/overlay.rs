//! Reads through a MemWAL: base rows overlaid by memtable rows, newest
//! first, latest write wins; scans and vector searches alike read the same
//! tiers (each base fragment masked, then the memtable rows). Memtables already merged into the base (their
//! last sequence number is at most the base's flushed one) are skipped. A
//! base row whose key a memtable holds is replaced by the memtable's row
//! (each such base row, as a native merge would update each), and a
//! memtable row whose key the base does not hold is added once. No lock is
//! held while the base is read.
//!
//! A read reuses the last view (and its tiers) while nothing changed: the
//! same memtables at the same sequence numbers over the same base version,
//! so a search of a table that is not being written copies no memtable
//! rows and looks up no keys.

use std::sync::{Arc, OnceLock};

use arrow::array::{BooleanArray, RecordBatch, UInt32Array, UInt64Array};
use arrow::compute::{concat_batches, filter_record_batch, take_record_batch};
use hashbrown::HashMap;
use memwal_core::keys::Key;
use memwal_core::table::scan::{with_row_ids, Pager, RowFilter};
use memwal_core::vector::{RowIds, Tier};
use memwal_core::{NativeTable, QueryRequest, Snapshot};

use super::{flushed_seq_in, lock, MemWalTable, Overlay};
use crate::error::Result;

/// What a view was built from: each memtable's (last sequence number,
/// rows, bytes), active first, and the base version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ViewKey {
    mems: Vec<(u64, usize, usize)>,
    version: u64,
}

fn mems_of(o: &Overlay) -> Vec<(u64, usize, usize)> {
    std::iter::once(&o.active)
        .chain(o.frozen.iter().map(Arc::as_ref))
        .map(|m| (m.max_seq, m.len(), m.bytes))
        .collect()
}

/// A view kept for the reads after it (see the module doc).
pub(crate) struct CachedView {
    key: ViewKey,
    view: View,
    tiers: OnceLock<Arc<Vec<Tier>>>,
    /// The memtable tier's FTS segments, made by the first full-text
    /// query of this view (its row ids and masks hold for it alone).
    text: memwal_core::table::text_search::TierSegments,
}

impl CachedView {
    /// The view's tiers, built by the first read that needs them.
    fn tiers(&self, base: &NativeTable) -> Result<Option<Arc<Vec<Tier>>>> {
        let Some(rows) = &self.view.rows else {
            return Ok(None);
        };
        if let Some(t) = self.tiers.get() {
            return Ok(Some(t.clone()));
        }
        let t = Arc::new(tiers(&self.view, rows, base)?);
        Ok(Some(self.tiers.get_or_init(|| t).clone()))
    }
}

/// A consistent view: memtable rows (one per key) and a base snapshot.
struct View {
    snap: Snapshot,
    rows: Option<RecordBatch>,
    /// Key -> its row in `rows`.
    keys: HashMap<Key, usize>,
    on: Vec<String>,
}

impl MemWalTable {
    /// The memtables' rows, then the base snapshot, taken in that order
    /// with no lock held across the snapshot's file I/O. Every memtable a
    /// read must see is in the list (it was applied before the lock) or in
    /// the snapshot (flushed since, and then skipped by its sequence number,
    /// since flushes go oldest first and record the last one merged).
    fn view(&self) -> Result<Arc<CachedView>> {
        let mems = mems_of(&self.shared.read());
        let version = self.shared.base.snapshot()?.manifest.version;
        let want = ViewKey { mems, version };
        if let Some(c) = lock(&self.shared.views).as_ref() {
            if c.key == want {
                return Ok(c.clone());
            }
        }
        let (view, key) = self.build_view()?;
        let c = Arc::new(CachedView {
            key,
            view,
            tiers: OnceLock::new(),
            text: Default::default(),
        });
        *lock(&self.shared.views) = Some(c.clone());
        Ok(c)
    }

    /// Builds a view (see [`Self::view`]) and says what it was built from.
    fn build_view(&self) -> Result<(View, ViewKey)> {
        let mut keys = HashMap::new();
        let (active, frozen, mems) = {
            let o = self.shared.read();
            let active = (!o.active.is_empty())
                .then(|| -> Result<_> {
                    let rows = o.active.rows_not_in(&mut keys, 0)?;
                    Ok((o.active.max_seq, o.active.on.clone(), rows))
                })
                .transpose()?;
            (active, o.frozen.clone(), mems_of(&o))
        };
        let snap = self.shared.base.snapshot()?;
        let flushed = flushed_seq_in(&snap.manifest);
        let mut parts = Vec::new();
        let mut on = Vec::new();
        let mut offset = 0;
        match active {
            Some((max_seq, a_on, rows)) if max_seq > flushed => {
                on = a_on;
                offset = rows.num_rows();
                parts.push(rows);
            }
            _ => keys.clear(),
        }
        for m in frozen.iter().rev() {
            if m.is_empty() || m.max_seq <= flushed {
                continue;
            }
            on = m.on.clone();
            let part = m.rows_not_in(&mut keys, offset)?;
            offset += part.num_rows();
            parts.push(part);
        }
        let rows = if parts.is_empty() {
            None
        } else {
            Some(concat_batches(&snap.schema(), &parts)?)
        };
        let key = ViewKey {
            mems,
            version: snap.manifest.version,
        };
        let view = View {
            snap,
            rows,
            keys,
            on,
        };
        Ok((view, key))
    }

    /// Rows a read sees in the memtables (not yet in the base).
    pub fn buffered_rows(&self) -> Result<u64> {
        Ok(self
            .view()?
            .view
            .rows
            .as_ref()
            .map_or(0, |r| r.num_rows() as u64))
    }

    /// Rows (matching `filter`), as every acknowledged write left them.
    pub fn count_rows(&self, filter: Option<&str>) -> Result<u64> {
        self.shared.check_readable()?;
        let filter = filter.filter(|f| !f.trim().is_empty());
        if filter.is_none() {
            // O(1): base rows + keys new since the base's flushed sequence
            // (memtables listed first, the manifest read after the lock).
            let mems: Vec<(u64, u64)> = {
                let o = self.shared.read();
                std::iter::once(&o.active)
                    .chain(o.frozen.iter().map(Arc::as_ref))
                    .filter(|m| !m.is_empty())
                    .map(|m| (m.max_seq, m.new_rows))
                    .collect()
            };
            let m = self.shared.base.manifest()?;
            let flushed = flushed_seq_in(&m);
            let extra: u64 = mems
                .iter()
                .filter(|(seq, _)| *seq > flushed)
                .map(|(_, n)| n)
                .sum();
            return Ok(m.num_rows() + extra);
        }
        let batches = self.query(&QueryRequest {
            filter: filter.map(str::to_string),
            ..Default::default()
        })?;
        Ok(batches.iter().map(|b| b.num_rows() as u64).sum())
    }

    /// A scan (or a vector search) through the overlay, ordered and
    /// projected as asked.
    pub fn query(&self, req: &QueryRequest) -> Result<Vec<RecordBatch>> {
        self.shared.check_readable()?;
        let c = self.view()?;
        let schema = c.view.snap.schema();
        Ok(memwal_core::table::finish::run(
            req,
            |r| self.query_view(&c, r).map_err(crate::Error::into_core),
            |r| memwal_core::table::scan::answer_schema(&schema, r),
        )?)
    }

    /// A scan (or a vector search) of one view.
    fn query_view(&self, c: &CachedView, req: &QueryRequest) -> Result<Vec<RecordBatch>> {
        let v = &c.view;
        let Some(tiers) = c.tiers(&self.shared.base)? else {
            return Ok(memwal_core::table::scan::scan_snapshot(&v.snap, req)?);
        };
        let schema = v.snap.schema();
        if req.full_text.is_some() {
            // Memtable rows are a tier no FTS index covers: tokenized by the view's first
            // full-text query, found at once.
            return Ok(vec![memwal_core::table::scan::text_search_tiers(
                &v.snap,
                req,
                &tiers,
                Some(&c.text),
            )?]);
        }
        if req.nearest.is_some() {
            return Ok(vec![memwal_core::table::scan::search_tiers(
                &v.snap, req, &tiers,
            )?]);
        }
        let filter = RowFilter::new(&v.snap, req.filter.as_deref())?;
        let mut pager = Pager::new(&schema, req)?;
        for t in tiers.iter() {
            if pager.full() {
                break;
            }
            let mask = match &filter {
                Some(f) => f.narrow_tier(t)?.mask,
                None => t.mask.clone(),
            };
            let mask = pager.cut_mask(mask.as_ref(), t.batch.num_rows());
            let mut b = match &mask {
                Some(m) => filter_record_batch(&t.batch, m)?,
                None => t.batch.clone(),
            };
            if req.with_row_id {
                let ids = t.row_ids.masked(t.batch.num_rows(), mask.as_ref())?;
                b = with_row_ids(&b, ids)?;
            }
            pager.push(b)?;
        }
        Ok(pager.finish())
    }
}

/// Row ids of memtable rows: `2^63 | position` in this read's view (rows
/// in memory belong to no version; their ids hold for one read).
pub const MEMTABLE_ROW_ID_BASE: u64 = 1 << 63;

/// The view as tiers: each base fragment with the rows that are live and
/// not superseded by a memtable row, then the memtable rows (a memtable row
/// standing in for two base rows of its key appears twice, as a native
/// merge would have updated both). The superseded base rows are found
/// through the base's key index, so this costs O(memtable rows), not
/// O(table).
fn tiers(v: &View, mem_rows: &RecordBatch, base: &NativeTable) -> Result<Vec<Tier>> {
    let mut out = Vec::with_capacity(v.snap.fragments.len() + 1);
    let entries: Vec<(&Key, usize)> = v.keys.iter().map(|(k, m)| (k, *m)).collect();
    let keys: Vec<&Key> = entries.iter().map(|(k, _)| *k).collect();
    let found = base.rows_with_keys(&v.snap, &v.on, &keys)?;
    // (fragment position, row, memtable row) of every superseded base row.
    let pos: std::collections::HashMap<u64, usize> = v
        .snap
        .fragments
        .iter()
        .enumerate()
        .map(|(i, f)| (f.id, i))
        .collect();
    let mut hits: Vec<(usize, u32, usize)> = Vec::new();
    for ((_, m), addrs) in entries.iter().zip(&found) {
        for a in addrs {
            if let Some(p) = pos.get(&a.frag) {
                hits.push((*p, a.row, *m));
            }
        }
    }
    hits.sort_unstable();
    let mut masks: Vec<Option<Vec<bool>>> = vec![None; v.snap.fragments.len()];
    let mut replaced: Vec<u32> = Vec::with_capacity(hits.len());
    let mut used = vec![false; mem_rows.num_rows()];
    for &(p, row, m) in &hits {
        let f = &v.snap.fragments[p];
        let mask = masks[p].get_or_insert_with(|| {
            (0..f.batch.num_rows())
                .map(|i| !f.deleted.contains(i as u32))
                .collect()
        });
        if let Some(slot) = mask.get_mut(row as usize) {
            *slot = false;
        }
        replaced.push(m as u32);
        used[m] = true;
    }
    for (f, mask) in v.snap.fragments.iter().zip(masks) {
        out.push(Tier {
            batch: f.batch.clone(),
            mask: match mask {
                Some(m) => Some(BooleanArray::from(m)),
                None => f.live_mask(),
            },
            row_ids: RowIds::Fragment(f.id),
        });
    }
    let mut idx = replaced;
    idx.extend((0..used.len()).filter(|i| !used[*i]).map(|i| i as u32));
    let ids =
        UInt64Array::from_iter_values(idx.iter().map(|i| MEMTABLE_ROW_ID_BASE | u64::from(*i)));
    out.push(Tier {
        batch: take_record_batch(mem_rows, &UInt32Array::from(idx))?,
        mask: None,
        row_ids: RowIds::Given(ids),
    });
    Ok(out)
}
