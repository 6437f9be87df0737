//! Reads: counting and scanning live rows with a filter, projection and paging.

use arrow::array::{BooleanArray, RecordBatch};
use arrow::compute::{and, filter_record_batch};
use arrow_schema::Schema;

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

/// Column indices of a `select` list (an unknown name is an error naming it).
pub fn projection(schema: &Schema, columns: Option<&[String]>) -> Result<Option<Vec<usize>>> {
    columns
        .map(|cols| {
            cols.iter()
                .map(|c| {
                    schema.index_of(c).map_err(|_| {
                        Error::invalid(format!(
                            "unknown column '{c}' in select (available: {})",
                            column_list(schema)
                        ))
                    })
                })
                .collect::<Result<Vec<usize>>>()
        })
        .transpose()
}

/// Applies offset, limit and projection to matching rows as they stream by.
pub struct Pager {
    skip: usize,
    remaining: usize,
    projection: Option<Vec<usize>>,
    out: Vec<RecordBatch>,
}

impl Pager {
    /// A pager for `req` over `schema`.
    pub fn new(schema: &Schema, req: &QueryRequest) -> Result<Self> {
        Ok(Self {
            skip: req.offset.unwrap_or(0),
            remaining: req.limit.unwrap_or(usize::MAX),
            projection: projection(schema, req.columns.as_deref())?,
            out: Vec::new(),
        })
    }

    /// Whether the limit is reached.
    pub fn full(&self) -> bool {
        self.remaining == 0
    }

    /// Takes what is wanted of `b` (rows that matched).
    pub fn push(&mut self, mut b: RecordBatch) -> Result<()> {
        if self.skip > 0 {
            let s = self.skip.min(b.num_rows());
            b = b.slice(s, b.num_rows() - s);
            self.skip -= s;
        }
        if b.num_rows() > self.remaining {
            b = b.slice(0, self.remaining);
        }
        self.remaining -= b.num_rows();
        if let Some(p) = &self.projection {
            b = b.project(p)?;
        }
        if b.num_rows() > 0 {
            self.out.push(b);
        }
        Ok(())
    }

    /// The batches taken.
    pub fn finish(self) -> Vec<RecordBatch> {
        self.out
    }
}

/// Scans rows of a snapshot.
pub fn scan_snapshot(snap: &Snapshot, req: &QueryRequest) -> Result<Vec<RecordBatch>> {
    let pred = predicate(snap, req.filter.as_deref())?;
    let mut pager = Pager::new(&snap.manifest.schema, req)?;
    for f in &snap.fragments {
        if pager.full() {
            break;
        }
        let mask = row_mask(f, pred.as_ref())?;
        pager.push(apply(&f.batch, mask.as_ref())?)?;
    }
    Ok(pager.finish())
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
