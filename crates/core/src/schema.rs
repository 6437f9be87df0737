//! Fitting incoming data to a table's schema: the source may omit nullable
//! columns and may use a lossless wider-compatible type (Int32 for Int64,
//! Float32 for Float64, LargeUtf8 for Utf8, ...); an extra column, a
//! missing non-nullable column, an incompatible type or a null in a
//! non-nullable column is an error naming the column.

use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Schema, SchemaRef};

use crate::error::{Error, Result};

/// Whether a source column of type `from` may be stored in a `to` column.
pub fn compatible(from: &DataType, to: &DataType) -> bool {
    use DataType::*;
    if from == to {
        return true;
    }
    match (from, to) {
        (Null, _) => true,
        // Dictionary-encoded data is taken wherever its values are (and
        // the other way round): apache-arrow makes string columns dictionaries.
        (Dictionary(_, v), _) => compatible(v, to),
        (_, Dictionary(_, v)) => compatible(from, v),
        (Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32, Int64) => true,
        (Int8 | Int16 | UInt8 | UInt16, Int32) => true,
        (Int8 | UInt8, Int16) => true,
        (UInt8 | UInt16 | UInt32 | UInt64, UInt64) => true,
        (Int8 | Int16 | Int32 | UInt8 | UInt16 | UInt32 | Float16 | Float32, Float64) => true,
        (Int8 | Int16 | UInt8 | UInt16 | Float16, Float32) => true,
        (Utf8 | LargeUtf8 | Utf8View, Utf8 | LargeUtf8 | Utf8View) => true,
        (Binary | LargeBinary | BinaryView, Binary | LargeBinary | BinaryView) => true,
        (Timestamp(_, _), Timestamp(_, _)) => true,
        (Date32 | Date64, Date32 | Date64) => true,
        (FixedSizeList(a, n), FixedSizeList(b, m)) => {
            n == m && compatible(a.data_type(), b.data_type())
        }
        (List(a) | LargeList(a), List(b) | LargeList(b)) => {
            compatible(a.data_type(), b.data_type())
        }
        (List(a) | LargeList(a), FixedSizeList(b, _)) => compatible(a.data_type(), b.data_type()),
        (Struct(a), Struct(b)) => a.iter().all(|fa| {
            b.iter()
                .find(|fb| fb.name() == fa.name())
                .is_some_and(|fb| compatible(fa.data_type(), fb.data_type()))
        }),
        _ => false,
    }
}

/// Checks a source schema against the table's; returns for each table
/// column whether the source provides it.
pub fn check_source_schema(source: &Schema, target: &Schema) -> Result<Vec<bool>> {
    for f in source.fields() {
        let Ok(t) = target.field_with_name(f.name()) else {
            return Err(Error::invalid(format!(
                "column '{}' of the data is not in the table schema (table columns: {})",
                f.name(),
                column_list(target)
            )));
        };
        if !compatible(f.data_type(), t.data_type()) {
            return Err(Error::invalid(format!(
                "column '{}' has type {} in the data but {} in the table",
                f.name(),
                f.data_type(),
                t.data_type()
            )));
        }
    }
    let mut present = Vec::with_capacity(target.fields().len());
    for t in target.fields() {
        let has = source.field_with_name(t.name()).is_ok();
        if !has && !t.is_nullable() {
            return Err(Error::invalid(format!(
                "column '{}' is missing from the data and is not nullable in the table",
                t.name()
            )));
        }
        present.push(has);
    }
    Ok(present)
}

/// Casts a column being written: a value the target type cannot hold (a
/// string that is no number, an integer out of range) is an error, never a
/// silent null or a wrapped value.
pub fn strict_cast(
    a: &ArrayRef,
    to: &DataType,
) -> std::result::Result<ArrayRef, arrow_schema::ArrowError> {
    let opts = arrow::compute::CastOptions {
        safe: false,
        ..Default::default()
    };
    arrow::compute::cast_with_options(a, to, &opts)
}

/// Rewrites `batch` into the table's schema: columns in table order, cast
/// where compatible, missing (nullable) columns filled with nulls.
pub fn align_batch(batch: &RecordBatch, target: &SchemaRef) -> Result<RecordBatch> {
    check_source_schema(&batch.schema(), target)?;
    let n = batch.num_rows();
    let mut cols: Vec<ArrayRef> = Vec::with_capacity(target.fields().len());
    for t in target.fields() {
        let col = match batch.column_by_name(t.name()) {
            Some(c) if c.data_type() == t.data_type() => c.clone(),
            Some(c) => strict_cast(c, t.data_type()).map_err(|e| {
                Error::invalid(format!(
                    "column '{}' cannot be converted to {}: {e}",
                    t.name(),
                    t.data_type()
                ))
            })?,
            None => new_null_array(t.data_type(), n),
        };
        if !t.is_nullable() && col.null_count() > 0 {
            return Err(Error::invalid(format!(
                "column '{}' is not nullable but the data has {} null value(s) in it",
                t.name(),
                col.null_count()
            )));
        }
        cols.push(col);
    }
    let opts = RecordBatchOptions::new().with_row_count(Some(n));
    RecordBatch::try_new_with_options(target.clone(), cols, &opts)
        .map_err(|e| Error::invalid(format!("data does not fit the table schema: {e}")))
}

/// Refuses NaN and infinite components in float vector columns (fixed-size
/// lists of floats) of rows being written: no distance to such a vector
/// means anything, and one of them among a table's rows used to wreck the
/// training of its vector indexes. Null vectors are fine.
pub fn check_finite_vectors(batch: &RecordBatch) -> Result<()> {
    use arrow::array::AsArray;
    use arrow::datatypes::{Float16Type, Float32Type, Float64Type};
    for (f, col) in batch.schema().fields().iter().zip(batch.columns()) {
        let DataType::FixedSizeList(item, dim) = f.data_type() else {
            continue;
        };
        let list = col.as_fixed_size_list();
        let values = list.values();
        let bad: Vec<usize> = match item.data_type() {
            DataType::Float16 => non_finite(values.as_primitive::<Float16Type>().values(), |x| {
                x.is_finite()
            }),
            DataType::Float32 => non_finite(values.as_primitive::<Float32Type>().values(), |x| {
                x.is_finite()
            }),
            DataType::Float64 => non_finite(values.as_primitive::<Float64Type>().values(), |x| {
                x.is_finite()
            }),
            _ => continue,
        };
        let dim = usize::try_from(*dim).unwrap_or(1).max(1);
        let offset = list.offset() * dim;
        if let Some(at) = bad
            .iter()
            .map(|i| i.saturating_sub(offset))
            .find(|i| *i / dim < list.len() && list.is_valid(*i / dim))
        {
            return Err(Error::invalid(format!(
                "column '{}' row {} has a non-finite value (NaN or infinity) at position {}: \
                 vector components must be finite",
                f.name(),
                at / dim,
                at % dim
            )));
        }
    }
    Ok(())
}

/// Positions of the values `finite` refuses.
fn non_finite<T: Copy>(v: &[T], finite: impl Fn(T) -> bool) -> Vec<usize> {
    v.iter()
        .enumerate()
        .filter(|(_, x)| !finite(**x))
        .map(|(i, _)| i)
        .collect()
}

/// Rows being written: aligned and concatenated (see [`align_all`]), their
/// vectors checked finite (see [`check_finite_vectors`]).
pub fn align_new_rows(batches: &[RecordBatch], target: &SchemaRef) -> Result<RecordBatch> {
    let b = align_all(batches, target)?;
    check_finite_vectors(&b)?;
    Ok(b)
}

/// Aligns and concatenates batches into one.
pub fn align_all(batches: &[RecordBatch], target: &SchemaRef) -> Result<RecordBatch> {
    let aligned = batches
        .iter()
        .map(|b| align_batch(b, target))
        .collect::<Result<Vec<_>>>()?;
    Ok(arrow::compute::concat_batches(target, &aligned)?)
}

/// Names the engine gives columns of its answers (row ids and offsets,
/// distances, scores, the query vector's index): a table column so named
/// would be shadowed by them, so none may be.
pub const RESERVED_COLUMNS: &[&str] = &[
    "_rowid",
    "_rowoffset",
    "_distance",
    "_score",
    "_relevance_score",
    "query_index",
];

/// A schema as the table stores it: the data's own (its metadata included,
/// e.g. the embedding functions a client records), with a check that the
/// column names are unique and non-empty.
pub fn validate_new_schema(schema: &Schema) -> Result<SchemaRef> {
    if schema.fields().is_empty() {
        return Err(Error::invalid("a table needs at least one column"));
    }
    let mut seen = std::collections::HashSet::new();
    for f in schema.fields() {
        if f.name().is_empty() {
            return Err(Error::invalid("column names may not be empty"));
        }
        if RESERVED_COLUMNS.contains(&f.name().as_str()) {
            return Err(Error::invalid(format!(
                "column name '{}' is reserved (answers and take queries use {}); rename the column",
                f.name(),
                RESERVED_COLUMNS.join(", ")
            )));
        }
        if !seen.insert(f.name().as_str()) {
            return Err(Error::invalid(format!(
                "column '{}' appears twice",
                f.name()
            )));
        }
    }
    Ok(Arc::new(Schema::new_with_metadata(
        schema.fields().clone(),
        schema.metadata().clone(),
    )))
}

/// Column indices of a `select` list (an unknown name is an error naming it).
pub fn projection(schema: &Schema, columns: Option<&[String]>) -> Result<Option<Vec<usize>>> {
    columns
        .map(|cols| {
            let mut seen = std::collections::HashSet::new();
            cols.iter()
                .map(|c| {
                    if !seen.insert(c.as_str()) {
                        return Err(Error::invalid(format!(
                            "select names column '{c}' twice: an answer's columns have distinct names"
                        )));
                    }
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

/// `a, b, c`: the column names of a schema, for error messages.
pub fn column_list(schema: &Schema) -> String {
    schema
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect::<Vec<_>>()
        .join(", ")
}
