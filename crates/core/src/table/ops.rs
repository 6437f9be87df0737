//! Write operations other than merge insert: add, delete, update, optimize.

use std::collections::HashMap;
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::SchemaRef;
use roaring::RoaringBitmap;

use super::commit::{Change, Committed, MAX_ROWS_PER_FRAGMENT};
use super::scan::{apply, row_mask, RowFilter};
use super::{NativeTable, Snapshot};
use crate::api::{AddMode, DeleteResult, OptimizeStats, UpdateResult};
use crate::data::Data;
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::filter::{Predicate, Resolve};
use crate::keys::{KeyEncoder, KeyIndex};
use crate::schema::{align_new_rows, column_list, strict_cast, validate_new_schema};

impl NativeTable {
    /// Adds rows; returns the new version.
    pub fn add_sync(&self, data: Data, mode: AddMode) -> Result<u64> {
        self.add_with_metadata_sync(data, mode, &Default::default())
    }

    /// [`NativeTable::add_sync`], recording `metadata` in the new version's
    /// manifest (the server records its WAL position this way).
    pub fn add_with_metadata_sync(
        &self,
        data: Data,
        mode: AddMode,
        metadata: &std::collections::BTreeMap<String, String>,
    ) -> Result<u64> {
        let (version, _, _) = self.write_with_retry(
            Deadline::new(None),
            |snap| {
                let change = match mode {
                    AddMode::Append => Change {
                        new_rows: Some(align_new_rows(&data.batches, &snap.schema())?),
                        operation: "append",
                        metadata: metadata.clone(),
                        ..Default::default()
                    },
                    AddMode::Overwrite => {
                        let schema = validate_new_schema(&data.schema)?;
                        Change {
                            new_rows: Some(align_new_rows(&data.batches, &schema)?),
                            replace_all: true,
                            schema: Some(schema),
                            // New rows and perhaps a new schema: no index applies.
                            indices: Some(Vec::new()),
                            operation: "overwrite",
                            metadata: metadata.clone(),
                            ..Default::default()
                        }
                    }
                };
                Ok((Some(change), ()))
            },
            |slot, c, _| {
                if mode == AddMode::Append {
                    learn_appended(slot, c);
                }
            },
        )?;
        version.ok_or_else(|| Error::internal("add committed nothing"))
    }

    /// Deletes rows matching `predicate`.
    pub fn delete_sync(&self, predicate_sql: &str) -> Result<DeleteResult> {
        let (version, n, _) = self.write_with_retry(
            Deadline::new(None),
            |snap| {
                let filter = RowFilter::new(snap, Some(predicate_sql))?.ok_or_else(|| {
                    Error::invalid("delete needs a predicate (use \"true\" to delete every row)")
                })?;
                let mut deletions = HashMap::new();
                let mut n = 0u64;
                for f in &snap.fragments {
                    let Some(mask) = row_mask(f, Some(&filter))? else {
                        continue;
                    };
                    let bm = selected(Some(&mask), f.batch.num_rows());
                    if !bm.is_empty() {
                        n += bm.len();
                        deletions.insert(f.id, bm);
                    }
                }
                let change = (n > 0).then(|| Change {
                    deletions,
                    operation: "delete",
                    ..Default::default()
                });
                Ok((change, n))
            },
            |_, _, _| {},
        )?;
        Ok(DeleteResult {
            version: self.committed_or_current(version)?,
            num_deleted_rows: n,
        })
    }

    /// Sets `column = expression` on rows matching `predicate`.
    pub fn update_sync(
        &self,
        predicate_sql: Option<&str>,
        values: &[(String, String)],
    ) -> Result<UpdateResult> {
        if values.is_empty() {
            return Err(Error::invalid("update needs at least one column to set"));
        }
        let (version, n, _) = self.write_with_retry(
            Deadline::new(None),
            |snap| plan_update(snap, predicate_sql, values),
            |_, _, _| {},
        )?;
        Ok(UpdateResult {
            version: self.committed_or_current(version)?,
            rows_updated: n,
        })
    }

    /// The version a write committed, or the current one when it changed
    /// nothing.
    pub(super) fn committed_or_current(&self, committed: Option<u64>) -> Result<u64> {
        match committed {
            Some(v) => Ok(v),
            None => self.version_sync(),
        }
    }

    /// Rewrites all live rows into as few fragments as possible (at most
    /// [`MAX_ROWS_PER_FRAGMENT`] rows each), dropping deleted rows. Row
    /// content and order are unchanged. Older versions stay readable.
    pub fn optimize_sync(&self) -> Result<OptimizeStats> {
        let (version, stats, _) = self.write_with_retry(
            Deadline::new(None),
            |snap| {
                let purged: u64 = snap.manifest.fragments.iter().map(|f| f.num_deleted).sum();
                let n = snap.fragments.len() as u64;
                let live: u64 = snap.manifest.num_rows();
                let wanted = live.div_ceil(MAX_ROWS_PER_FRAGMENT as u64);
                if purged == 0 && n <= wanted.max(1) {
                    return Ok((None, OptimizeStats::default()));
                }
                let schema = snap.schema();
                let mut parts = Vec::new();
                for f in &snap.fragments {
                    parts.push(apply(&f.batch, f.live_mask().as_ref())?);
                }
                let rows = arrow::compute::concat_batches(&schema, &parts)?;
                let stats = OptimizeStats {
                    version: 0,
                    fragments_removed: n,
                    fragments_added: wanted,
                    deleted_rows_purged: purged,
                };
                let change = Change {
                    new_rows: Some(rows),
                    replace_all: true,
                    schema: Some(Arc::clone(&schema)),
                    operation: "optimize",
                    ..Default::default()
                };
                Ok((Some(change), stats))
            },
            |_, _, _| {},
        )?;
        Ok(OptimizeStats {
            version: self.committed_or_current(version)?,
            ..stats
        })
    }
}

/// An update's change on `snap`: each fragment's matching rows rewritten
/// with the assignments applied, the originals deleted. `None` when no row
/// matches.
fn plan_update(
    snap: &Snapshot,
    predicate_sql: Option<&str>,
    values: &[(String, String)],
) -> Result<(Option<Change>, u64)> {
    let schema = snap.schema();
    let filter = RowFilter::new(snap, predicate_sql)?;
    let exprs = parse_assignments(&schema, values)?;
    let mut deletions = HashMap::new();
    let mut parts = Vec::new();
    for f in &snap.fragments {
        let mask = row_mask(f, filter.as_ref())?;
        let rows = apply(&f.batch, mask.as_ref())?;
        if rows.num_rows() == 0 {
            continue;
        }
        parts.push(assign(&rows, &schema, &exprs)?);
        deletions.insert(f.id, selected(mask.as_ref(), f.batch.num_rows()));
    }
    let n: u64 = parts.iter().map(|p| p.num_rows() as u64).sum();
    if n == 0 {
        return Ok((None, 0));
    }
    let change = Change {
        new_rows: Some(arrow::compute::concat_batches(&schema, &parts)?),
        deletions,
        operation: "update",
        ..Default::default()
    };
    Ok((Some(change), n))
}

/// `column = sql` pairs bound to `schema`: the column's index and its
/// expression.
fn parse_assignments(
    schema: &SchemaRef,
    values: &[(String, String)],
) -> Result<Vec<(usize, Predicate)>> {
    values
        .iter()
        .map(|(col, sql)| {
            let i = schema.index_of(col).map_err(|_| {
                Error::invalid(format!(
                    "unknown column '{col}' in update (available: {})",
                    column_list(schema)
                ))
            })?;
            Ok((i, Predicate::parse(sql, schema, Resolve::Plain)?))
        })
        .collect()
}

/// `rows` with each assigned column replaced by its expression's values,
/// cast strictly to the column's type; a null into a non-nullable column is
/// refused.
fn assign(
    rows: &RecordBatch,
    schema: &SchemaRef,
    exprs: &[(usize, Predicate)],
) -> Result<RecordBatch> {
    let mut cols: Vec<ArrayRef> = rows.columns().to_vec();
    for (i, e) in exprs {
        let field = schema.field(*i);
        let v = strict_cast(&e.values(rows)?, field.data_type()).map_err(|err| {
            Error::invalid(format!(
                "cannot set column '{}' to \"{}\": {err}",
                field.name(),
                e.sql()
            ))
        })?;
        if !field.is_nullable() && v.null_count() > 0 {
            return Err(Error::invalid(format!(
                "column '{}' is not nullable but \"{}\" gives null",
                field.name(),
                e.sql()
            )));
        }
        cols[*i] = v;
    }
    Ok(RecordBatch::try_new(schema.clone(), cols)?)
}

/// The rows a mask selects (every row of `num_rows` without one).
fn selected(mask: Option<&BooleanArray>, num_rows: usize) -> RoaringBitmap {
    let mut bm = RoaringBitmap::new();
    match mask {
        Some(m) => bm.extend(
            m.iter()
                .enumerate()
                .filter(|(_, v)| *v == Some(true))
                .map(|(i, _)| i as u32),
        ),
        None => {
            bm.insert_range(0..num_rows as u32);
        }
    }
    bm
}

/// An append teaches the key index its new rows (as a merge does), so the
/// next merge does not rebuild it over the whole table. A key index of
/// another version, or rows whose keys cannot be read, leave it to be
/// dropped and rebuilt on demand.
fn learn_appended(slot: &mut Option<KeyIndex>, c: &Committed) {
    let Some(idx) = slot.as_mut() else { return };
    if idx.version + 1 != c.manifest.version {
        return;
    }
    let on = idx.on().to_vec();
    let Ok(enc) = KeyEncoder::new(&c.manifest.schema, &on) else {
        return;
    };
    let none = RoaringBitmap::new();
    for (frag, batch) in &c.new_fragments {
        if idx.add_batch(&enc, *frag, batch, &none).is_err() {
            *slot = None;
            return;
        }
    }
    idx.version = c.manifest.version;
}
