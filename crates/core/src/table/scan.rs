//! Reads: counting and scanning live rows with a filter, projection and paging.

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::{and, filter_record_batch};

use super::{NativeTable, Snapshot};
use crate::error::{Error, Result};
use crate::filter::{Predicate, Resolve};
use crate::fragment::LoadedFragment;
use crate::keys::column_list;
use crate::traits::QueryRequest;

/// The live rows of `f` that pass `pred`, as a mask (`None`: all rows).
pub(crate) fn row_mask(
    f: &LoadedFragment,
    pred: Option<&Predicate>,
) -> Result<Option<BooleanArray>> {
    let live = f.live_mask();
    let Some(pred) = pred else { return Ok(live) };
    let m = pred.mask(&f.batch)?;
    Ok(Some(match live {
        Some(l) => and(&l, &m)?,
        None => m,
    }))
}

/// Applies an optional mask.
pub(crate) fn apply(batch: &RecordBatch, mask: Option<&BooleanArray>) -> Result<RecordBatch> {
    Ok(match mask {
        Some(m) => filter_record_batch(batch, m)?,
        None => batch.clone(),
    })
}

/// Binds a filter against the snapshot's schema.
pub(crate) fn predicate(snap: &Snapshot, filter: Option<&str>) -> Result<Option<Predicate>> {
    filter
        .filter(|f| !f.trim().is_empty())
        .map(|f| Predicate::parse(f, &snap.manifest.schema, Resolve::Plain))
        .transpose()
}

/// Counts and scans rows of a snapshot (shared by the table and the
/// server's MemWAL overlay).
pub fn scan_snapshot(snap: &Snapshot, req: &QueryRequest) -> Result<Vec<RecordBatch>> {
    let pred = predicate(snap, req.filter.as_deref())?;
    let schema = snap.schema();
    let projection = match &req.columns {
        None => None,
        Some(cols) => Some(
            cols.iter()
                .map(|c| {
                    schema.index_of(c).map_err(|_| {
                        Error::invalid(format!(
                            "unknown column '{c}' in select (available: {})",
                            column_list(&schema)
                        ))
                    })
                })
                .collect::<Result<Vec<usize>>>()?,
        ),
    };
    let mut skip = req.offset.unwrap_or(0);
    let mut remaining = req.limit.unwrap_or(usize::MAX);
    let mut out = Vec::new();
    for f in &snap.fragments {
        if remaining == 0 {
            break;
        }
        let mask = row_mask(f, pred.as_ref())?;
        let mut b = apply(&f.batch, mask.as_ref())?;
        if skip > 0 {
            let s = skip.min(b.num_rows());
            b = b.slice(s, b.num_rows() - s);
            skip -= s;
        }
        if b.num_rows() > remaining {
            b = b.slice(0, remaining);
        }
        remaining -= b.num_rows();
        if let Some(p) = &projection {
            b = b.project(p)?;
        }
        if b.num_rows() > 0 {
            out.push(b);
        }
    }
    Ok(out)
}

impl NativeTable {
    /// Rows, optionally only those matching `filter`.
    pub fn count_rows_sync(&self, filter: Option<&str>) -> Result<u64> {
        if filter.is_none_or(|f| f.trim().is_empty()) {
            let m = self.manifest()?;
            return Ok(m.num_rows());
        }
        let snap = self.snapshot()?;
        let pred = predicate(&snap, filter)?;
        let mut n = 0u64;
        for f in &snap.fragments {
            n += match row_mask(f, pred.as_ref())? {
                Some(m) => m.true_count() as u64,
                None => f.batch.num_rows() as u64,
            };
        }
        Ok(n)
    }

    /// Scans rows.
    pub fn query_sync(&self, req: &QueryRequest) -> Result<Vec<RecordBatch>> {
        scan_snapshot(&self.snapshot()?, req)
    }
}
