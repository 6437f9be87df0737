//! The last steps of a query once its rows are found: ordering
//! (`order_by`, before offset and limit) and SQL projections
//! (`select({alias: "sql"})`). [`run`] wraps any executor (a native table's
//! scan, a served table's overlay), so every kind of table answers alike.
//!
//! When either is asked, the executor is run for every column (and, with
//! an ordering, every matching row); the answer is then sorted, paged and
//! projected here. Columns `select` lists are placed as listed, the special ones
//! (`_distance`, `_score`, `_rowid`) too; the special columns not listed stay where
//! Lance puts them: `query_index` first, `_distance` and `_rowid` last.

use std::sync::Arc;

use arrow::array::{ArrayRef, RecordBatch};
use arrow::compute::{lexsort_to_indices, take_record_batch, SortColumn, SortOptions};
use arrow_schema::{Field, Schema, SchemaRef};

use super::text_search::SCORE_COLUMN;
use crate::error::{Error, Result};
use crate::filter::{Predicate, Resolve};
use crate::query::QueryRequest;
use crate::schema::column_list;
use crate::vector::{DISTANCE_COLUMN, QUERY_INDEX_COLUMN, ROW_ID_COLUMN};

/// The position of a row among the live rows of a scan (what
/// @lancedb/lancedb's `takeOffsets` filters on).
pub const ROW_OFFSET_COLUMN: &str = "_rowoffset";

/// Whether `req` needs this module (otherwise executors answer it whole).
pub fn needed(req: &QueryRequest) -> bool {
    !req.order_by.is_empty()
        || req.projections.is_some()
        || virtual_filter(req)
        || lists(req, ROW_OFFSET_COLUMN)
        || lists(req, ROW_ID_COLUMN)
        || lists(req, SCORE_COLUMN)
        || lists(req, DISTANCE_COLUMN)
}

/// Whether the filter may read `_rowid` / `_rowoffset` (then it is
/// evaluated here, over rows that carry them; a false positive only moves
/// the work here).
pub(crate) fn virtual_filter(req: &QueryRequest) -> bool {
    req.filter
        .as_deref()
        .is_some_and(|f| f.contains(ROW_ID_COLUMN) || f.contains(ROW_OFFSET_COLUMN))
}

/// Whether `req` sorts by `col`.
fn orders_by(req: &QueryRequest, col: &str) -> bool {
    req.order_by.iter().any(|o| o.column == col)
}

/// Whether the answer needs `_rowoffset` numbering (a filter, a select or
/// an ordering reads it).
fn numbered(req: &QueryRequest) -> bool {
    virtual_filter(req) || lists(req, ROW_OFFSET_COLUMN) || orders_by(req, ROW_OFFSET_COLUMN)
}

/// Whether `req.columns` names `col`.
fn lists(req: &QueryRequest, col: &str) -> bool {
    req.columns
        .as_ref()
        .is_some_and(|c| c.iter().any(|n| n == col))
}

/// Runs `req` through `exec`, doing here what the executor does not:
/// ordering, then offset and limit, then SQL projections.
pub fn run(
    req: &QueryRequest,
    exec: impl FnOnce(&QueryRequest) -> Result<Vec<RecordBatch>>,
    answer_schema: impl FnOnce(&QueryRequest) -> Result<SchemaRef>,
) -> Result<Vec<RecordBatch>> {
    if !needed(req) {
        return exec(req);
    }
    check(req)?;
    let inner = inner_request(req);
    let batches = exec(&inner)?;
    let all = match batches.first() {
        Some(b) => arrow::compute::concat_batches(&b.schema(), &batches)?,
        None => RecordBatch::new_empty(answer_schema(&inner)?),
    };
    let found = take(&all, req)?;
    let ordered = order(&found, req, inner.limit.is_none())?;
    Ok(vec![project(&ordered, req)?])
}

/// What the executor is asked: every column; every row (with its row id)
/// when the filter reads `_rowid` / `_rowoffset` or `_rowoffset` is asked
/// for; every matching row when there is an ordering.
fn inner_request(req: &QueryRequest) -> QueryRequest {
    let mut inner = req.clone();
    inner.columns = None;
    inner.projections = None;
    inner.order_by = Vec::new();
    if lists(req, ROW_ID_COLUMN) || orders_by(req, ROW_ID_COLUMN) {
        // select(["_rowid"]) answers the row ids, as with_row_id does.
        inner.with_row_id = true;
    }
    let offsets = numbered(req);
    if offsets {
        inner.filter = None;
        inner.with_row_id = true;
    }
    if offsets || !req.order_by.is_empty() {
        inner.limit = None;
        inner.offset = None;
    }
    if req.full_text.is_some() && !req.order_by.is_empty() && !offsets {
        // LanceDB's order for a text search: the best `offset + limit` rows
        // by score (10 without a limit), then sorted, then paged.
        let limit = req.limit.unwrap_or(crate::vector::DEFAULT_K);
        inner.limit = Some(req.offset.unwrap_or(0).saturating_add(limit));
    }
    inner
}

/// With `_rowoffset` wanted: the rows numbered in scan order, then, with a
/// filter reading `_rowid` / `_rowoffset`, only those passing it.
fn take(b: &RecordBatch, req: &QueryRequest) -> Result<RecordBatch> {
    if !numbered(req) {
        return Ok(b.clone());
    }
    let mut fields: Vec<Field> = b
        .schema()
        .fields()
        .iter()
        .map(|f| f.as_ref().clone())
        .collect();
    fields.push(Field::new(
        ROW_OFFSET_COLUMN,
        arrow_schema::DataType::UInt64,
        false,
    ));
    let mut cols = b.columns().to_vec();
    cols.push(Arc::new(arrow::array::UInt64Array::from_iter_values(
        0..b.num_rows() as u64,
    )));
    let opts = arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
    let numbered = RecordBatch::try_new_with_options(Arc::new(Schema::new(fields)), cols, &opts)?;
    match req.filter.as_deref().filter(|_| virtual_filter(req)) {
        Some(f) => {
            let p = Predicate::parse(f, &numbered.schema(), Resolve::Plain)?;
            Ok(arrow::compute::filter_record_batch(
                &numbered,
                &p.mask(&numbered)?,
            )?)
        }
        None => Ok(numbered),
    }
}

/// The schema of the answer to `req` (for an answer with no rows), given
/// the executor's answer schema of the request it is run with.
pub fn answer_schema(
    req: &QueryRequest,
    inner_schema: impl FnOnce(&QueryRequest) -> Result<SchemaRef>,
) -> Result<SchemaRef> {
    let inner = inner_request(req);
    let empty = RecordBatch::new_empty(inner_schema(&inner)?);
    Ok(project(&take(&empty, req)?, req)?.schema())
}

/// Refuses what cannot be asked together.
pub(crate) fn check(req: &QueryRequest) -> Result<()> {
    if !req.order_by.is_empty() && req.nearest.is_some() {
        return Err(Error::not_supported(
            "ordering a vector search (order_by with a query vector) is not supported by memwal yet: \
             a vector search is ordered by distance",
        ));
    }
    if req.nearest.is_some() && (virtual_filter(req) || lists(req, ROW_OFFSET_COLUMN)) {
        return Err(Error::not_supported(
            "a vector search filtered on _rowid / _rowoffset (or returning _rowoffset) is not supported by memwal yet",
        ));
    }
    if req.columns.is_some() && req.projections.is_some() {
        return Err(Error::invalid(
            "a query takes either a list of columns or SQL projections, not both",
        ));
    }
    Ok(())
}

/// `b` sorted by `req.order_by` (stable: equal keys keep scan order), then
/// paged by `req.offset` / `req.limit` (unless the executor paged it).
fn order(b: &RecordBatch, req: &QueryRequest, unpaged: bool) -> Result<RecordBatch> {
    if req.order_by.is_empty() {
        if !unpaged {
            return Ok(b.clone());
        }
        let start = req.offset.unwrap_or(0).min(b.num_rows());
        let len = req.limit.unwrap_or(usize::MAX).min(b.num_rows() - start);
        return Ok(b.slice(start, len));
    }
    let mut keys: Vec<SortColumn> = Vec::with_capacity(req.order_by.len() + 1);
    for o in &req.order_by {
        let values = b.column_by_name(&o.column).ok_or_else(|| {
            Error::invalid(format!(
                "order_by: no column '{}' (columns: {})",
                o.column,
                column_list(&b.schema())
            ))
        })?;
        keys.push(SortColumn {
            values: values.clone(),
            options: Some(SortOptions {
                descending: !o.ascending,
                nulls_first: o.nulls_first,
            }),
        });
    }
    // The scan position last: lexsort is not stable.
    let position: ArrayRef = Arc::new(arrow::array::UInt64Array::from_iter_values(
        0..b.num_rows() as u64,
    ));
    keys.push(SortColumn {
        values: position,
        options: None,
    });
    let idx = lexsort_to_indices(&keys, None)?;
    let start = req.offset.unwrap_or(0).min(idx.len());
    let len = req.limit.unwrap_or(usize::MAX).min(idx.len() - start);
    Ok(take_record_batch(b, &idx.slice(start, len))?)
}

/// The error for a column `select` names that the answer lacks.
fn unknown(n: &str, schema: &Schema) -> Error {
    let why = match n {
        SCORE_COLUMN => ": only a full-text search answers _score".to_string(),
        DISTANCE_COLUMN => ": only a vector search answers _distance".to_string(),
        _ => String::new(),
    };
    Error::invalid(format!(
        "unknown column '{n}' in select{why} (columns: {})",
        column_list(schema)
    ))
}

/// The columns `req` asks for, the executor's special columns around them.
fn project(b: &RecordBatch, req: &QueryRequest) -> Result<RecordBatch> {
    let schema = b.schema();
    let special = |n: &str| {
        matches!(
            n,
            QUERY_INDEX_COLUMN | DISTANCE_COLUMN | SCORE_COLUMN | ROW_ID_COLUMN | ROW_OFFSET_COLUMN
        )
    };
    let mut fields: Vec<Field> = Vec::new();
    let mut cols: Vec<ArrayRef> = Vec::new();
    let keep = |name: &str, fields: &mut Vec<Field>, cols: &mut Vec<ArrayRef>| {
        if let Ok(i) = schema.index_of(name) {
            fields.push(schema.field(i).clone());
            cols.push(b.column(i).clone());
        }
    };
    keep(QUERY_INDEX_COLUMN, &mut fields, &mut cols);
    match (&req.projections, &req.columns) {
        (Some(exprs), _) => {
            for (alias, sql) in exprs {
                if alias.is_empty() {
                    return Err(Error::invalid(format!(
                        "projection \"{sql}\" has an empty alias: name the column"
                    )));
                }
                let p = Predicate::parse(sql, &schema, Resolve::Plain).map_err(|e| {
                    Error::invalid(format!("projection {alias:?} = \"{sql}\": {e}"))
                })?;
                let v = p.values(b)?;
                fields.push(Field::new(alias, v.data_type().clone(), true));
                cols.push(v);
            }
        }
        (None, Some(names)) => {
            // Listed columns where they are listed, the special ones too (as LanceDB places them).
            for n in names.iter().filter(|n| *n != QUERY_INDEX_COLUMN) {
                let i = schema.index_of(n).map_err(|_| unknown(n, &schema))?;
                fields.push(schema.field(i).clone());
                cols.push(b.column(i).clone());
            }
        }
        (None, None) => {
            for (f, c) in schema.fields().iter().zip(b.columns()) {
                if !special(f.name()) {
                    fields.push(f.as_ref().clone());
                    cols.push(c.clone());
                }
            }
        }
    }
    // The special columns not listed follow: the distance or score, then the row id.
    if !lists(req, DISTANCE_COLUMN) {
        keep(DISTANCE_COLUMN, &mut fields, &mut cols);
    }
    if !lists(req, SCORE_COLUMN) {
        keep(SCORE_COLUMN, &mut fields, &mut cols);
    }
    if req.with_row_id && !lists(req, ROW_ID_COLUMN) {
        keep(ROW_ID_COLUMN, &mut fields, &mut cols);
    }
    let mut names = std::collections::HashSet::new();
    if let Some(dup) = fields.iter().find(|f| !names.insert(f.name().clone())) {
        return Err(Error::invalid(format!(
            "the answer would have two columns named '{}'",
            dup.name()
        )));
    }
    let opts = arrow::array::RecordBatchOptions::new().with_row_count(Some(b.num_rows()));
    Ok(RecordBatch::try_new_with_options(
        Arc::new(Schema::new(fields)),
        cols,
        &opts,
    )?)
}
