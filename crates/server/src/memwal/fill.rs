//! Columns an upsert omits keep their values, as a native merge keeps them:
//! a memWal batch may carry a subset of the table's nullable columns (an
//! older client after `add_columns`, or a caller updating a few fields).
//! Aligning such a batch to the table fills the omitted columns with nulls;
//! before the rows reach the memtable, each row whose key already has a row
//! (the newest one: the active memtable, then the frozen ones, then the
//! base) takes that row's values in those columns. A new key keeps nulls.
//!
//! The lookup runs when a WAL record is applied, in sequence order, both by
//! the writer and by replay, so both see the same earlier rows and fill
//! alike: every write that could change the base under a record (a direct
//! write, a schema change, a restore) drains the memtables first.

use std::collections::VecDeque;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch};
use arrow::compute::interleave;
use memwal_core::keys::Key;
use memwal_core::NativeTable;

use super::memtable::Memtable;
use crate::error::Result;

/// Positions of the columns of `table` the upsert's source did not carry.
pub(crate) fn omitted(table: &arrow_schema::Schema, supplied: &[String]) -> Vec<usize> {
    table
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| !supplied.iter().any(|s| s == f.name()))
        .map(|(i, _)| i)
        .collect()
}

/// Whether an upsert that omits columns matches a key no memtable holds and
/// the base holds on several rows (a table written by `add` may): each of
/// those rows keeps its own omitted values, which one memtable row cannot
/// represent, so the writer merges such an upsert natively instead.
pub(crate) fn hits_base_duplicates(
    base: &NativeTable,
    on: &[String],
    memtables: &[&Memtable],
    batch: &RecordBatch,
    keys: &[Option<Key>],
) -> Result<bool> {
    let held = |k: &Key| memtables.iter().any(|m| m.on == on && m.contains(k));
    let ask: Vec<u32> = keys
        .iter()
        .enumerate()
        .filter(|(_, k)| k.as_ref().is_some_and(|k| !held(k)))
        .map(|(i, _)| i as u32)
        .collect();
    if ask.is_empty() {
        return Ok(false);
    }
    let sub = arrow::compute::take_record_batch(batch, &arrow::array::UInt32Array::from(ask))?;
    Ok(base.key_counts(on, &sub)?.iter().any(|n| *n > 1))
}

/// `batch` (aligned to the table, omitted columns null) with each omitted
/// column taken from the key's newest earlier row where there is one.
pub(crate) fn fill_omitted(
    base: &NativeTable,
    active: &Memtable,
    frozen: &VecDeque<Arc<Memtable>>,
    batch: RecordBatch,
    keys: &[Option<Key>],
    omitted: &[usize],
) -> Result<RecordBatch> {
    if omitted.is_empty() || batch.num_rows() == 0 {
        return Ok(batch);
    }
    // Source 0 is the batch itself (its nulls); memtable batches follow,
    // and the base's rows last.
    let mut sources: Vec<&RecordBatch> = vec![&batch];
    // Per row: the newest earlier row of its key, as (source, row).
    let mut prior: Vec<Option<(usize, usize)>> = vec![None; keys.len()];
    let mut ask_base = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let Some(k) = k else { continue };
        let found = active
            .row_of(k)
            .or_else(|| frozen.iter().rev().find_map(|m| m.row_of(k)));
        match found {
            Some((b, row)) => {
                let at = match sources.iter().position(|s| std::ptr::eq(*s, b)) {
                    Some(p) => p,
                    None => {
                        sources.push(b);
                        sources.len() - 1
                    }
                };
                prior[i] = Some((at, row));
            }
            None => ask_base.push(i),
        }
    }
    let base_rows = base_rows(base, active, keys, &ask_base)?;
    if let Some((rows, at)) = &base_rows {
        sources.push(rows);
        let src = sources.len() - 1;
        for (j, i) in ask_base.iter().enumerate() {
            if let Some(r) = at[j] {
                prior[*i] = Some((src, r));
            }
        }
    }
    let idx: Vec<(usize, usize)> = prior
        .iter()
        .enumerate()
        .map(|(i, p)| p.unwrap_or((0, i)))
        .collect();
    let mut columns = batch.columns().to_vec();
    for c in omitted {
        let arrays: Vec<&dyn Array> = sources.iter().map(|s| s.column(*c).as_ref()).collect();
        columns[*c] = interleave(&arrays, &idx)? as ArrayRef;
    }
    Ok(RecordBatch::try_new(batch.schema(), columns)?)
}

/// The base's first live row of each key at `ask` (a batch with the table's
/// schema) and, per asked key, its row in that batch.
fn base_rows(
    base: &NativeTable,
    active: &Memtable,
    keys: &[Option<Key>],
    ask: &[usize],
) -> Result<Option<(RecordBatch, Vec<Option<usize>>)>> {
    if ask.is_empty() {
        return Ok(None);
    }
    let snap = base.snapshot()?;
    if snap.manifest.schema.fields() != active.schema.fields() {
        // Only between a schema change and the next memtable, which a
        // reshape drains first; a mismatch would misplace columns.
        return Err(memwal_core::Error::internal(
            "the base schema differs from the memtable's while filling omitted columns",
        )
        .into());
    }
    let wanted: Vec<&Key> = ask.iter().filter_map(|i| keys[*i].as_ref()).collect();
    let addrs = base.rows_with_keys(&snap, &active.on, &wanted)?;
    let mut take = Vec::new();
    let mut at = Vec::with_capacity(addrs.len());
    for a in &addrs {
        let pos = a.first().and_then(|a| {
            snap.fragments
                .iter()
                .position(|f| f.id == a.frag)
                .map(|p| (p, a.row as usize))
        });
        match pos {
            Some(p) => {
                at.push(Some(take.len()));
                take.push(p);
            }
            None => at.push(None),
        }
    }
    if take.is_empty() {
        return Ok(None);
    }
    let refs: Vec<&RecordBatch> = snap.fragments.iter().map(|f| &f.batch).collect();
    let rows = arrow::compute::interleave_record_batch(&refs, &take)?;
    Ok(Some((rows, at)))
}
