//! Schema evolution: `add_columns` (SQL over existing columns, or all-null
//! columns of given types), `alter_columns` (rename, nullability, type)
//! and `drop_columns`.
//!
//! Each is one commit that rewrites every fragment's file in the new schema
//! under the same fragment id and deletions (so row ids, and the indexes
//! over columns that keep their values, stay valid); older versions keep
//! their files and read as they were. This costs a rewrite of the table
//! (Lance's drop is metadata-only); the files are written before the
//! manifest, as every commit's.

use std::collections::HashSet;
use std::sync::Arc;

use arrow::array::{new_null_array, Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::commit::Change;
use super::{NativeTable, Snapshot};
use crate::api::{ColumnAlteration, NewColumns};
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::filter::{Predicate, Resolve};
use crate::fragment::LoadedFragment;
use crate::manifest::IndexMeta;
use crate::schema::column_list;

/// The new columns of one fragment's rows (deleted rows included).
type ColumnsFn = Box<dyn Fn(&LoadedFragment) -> Result<Vec<ArrayRef>>>;

/// A planned schema change: the new schema, the new columns of one
/// fragment's rows, and the indexes that survive it.
struct Reshape {
    schema: SchemaRef,
    columns: ColumnsFn,
    indices: Vec<IndexMeta>,
}

impl NativeTable {
    /// Adds columns; returns the new version.
    pub fn add_columns_sync(&self, cols: &NewColumns) -> Result<u64> {
        self.reshape("add_columns", |snap| {
            plan_add(&snap.schema(), &snap.manifest.indices, cols)
        })
    }

    /// Renames columns, changes their nullability or type; returns the new
    /// version. Indexes follow a renamed column; an index over a column
    /// whose type changes is dropped (its values changed).
    pub fn alter_columns_sync(&self, alterations: &[ColumnAlteration]) -> Result<u64> {
        self.reshape("alter_columns", |snap| {
            plan_alter(&snap.schema(), &snap.manifest.indices, alterations)
        })
    }

    /// Drops columns (and the indexes over them); returns the new version.
    pub fn drop_columns_sync(&self, names: &[String]) -> Result<u64> {
        self.reshape("drop_columns", |snap| {
            plan_drop(&snap.schema(), &snap.manifest.indices, names)
        })
    }

    /// Commits the schema change `plan` makes of the latest version.
    fn reshape(
        &self,
        operation: &'static str,
        plan: impl Fn(&Snapshot) -> Result<Reshape>,
    ) -> Result<u64> {
        let (committed, _, _) = self.write_with_retry(
            Deadline::new(None),
            |snap| {
                let r = plan(snap)?;
                let mut rewrite = Vec::with_capacity(snap.fragments.len());
                for f in &snap.fragments {
                    let cols = (r.columns)(f)?;
                    let opts = RecordBatchOptions::new().with_row_count(Some(f.batch.num_rows()));
                    let b = RecordBatch::try_new_with_options(r.schema.clone(), cols, &opts)?;
                    rewrite.push((f.id, b));
                }
                let change = Change {
                    schema: Some(r.schema.clone()),
                    indices: Some(r.indices.clone()),
                    operation,
                    rewrite,
                    ..Default::default()
                };
                Ok((Some(change), ()))
            },
            // The key index is rebuilt by the next merge (key columns may
            // have been renamed or retyped).
            |_, _, _| {},
        )?;
        committed.ok_or_else(|| Error::internal(format!("{operation} committed nothing")))
    }
}

/// `name` is free in `schema` and in `taken` (names added by the same call).
fn check_new_name(schema: &Schema, taken: &mut HashSet<String>, name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid("a column name cannot be empty"));
    }
    if schema.column_with_name(name).is_some() || !taken.insert(name.to_string()) {
        return Err(Error::invalid(format!(
            "column '{name}' already exists (columns: {})",
            column_list(schema)
        )));
    }
    Ok(())
}

/// The index of column `name`, or an error naming the columns there are.
fn column_index(schema: &Schema, name: &str, what: &str) -> Result<usize> {
    schema.index_of(name).map_err(|_| {
        let nested = name.contains('.') && schema.index_of(name.split('.').next().unwrap_or("")).is_ok();
        if nested {
            Error::not_supported(format!(
                "{what} of the nested field '{name}' is not supported by memwal yet (top-level columns only)"
            ))
        } else {
            Error::invalid(format!(
                "{what}: no column '{name}' (columns: {})",
                column_list(schema)
            ))
        }
    })
}

fn plan_add(schema: &SchemaRef, indices: &[IndexMeta], cols: &NewColumns) -> Result<Reshape> {
    let mut taken = HashSet::new();
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    // Each new column: the expression computing it (None: all null), its type.
    let mut added: Vec<(Option<Predicate>, DataType)> = Vec::new();
    match cols {
        NewColumns::Sql(list) => {
            for (name, sql) in list {
                check_new_name(schema, &mut taken, name)?;
                let p = Predicate::parse(sql, schema, Resolve::Plain)?;
                let dt = p
                    .values(&RecordBatch::new_empty(schema.clone()))?
                    .data_type()
                    .clone();
                if dt == DataType::Null {
                    return Err(Error::invalid(format!(
                        "column '{name}' = \"{sql}\" has no type (give it one: CAST(NULL AS BIGINT))"
                    )));
                }
                // Non-nullable when the expression cannot be null (a literal,
                // arithmetic on non-nullable columns), as Lance types it.
                fields.push(Field::new(name, dt.clone(), p.maybe_null(schema)));
                added.push((Some(p), dt));
            }
        }
        NewColumns::Nulls(list) => {
            for f in list {
                check_new_name(schema, &mut taken, f.name())?;
                fields.push(f.clone().with_nullable(true));
                added.push((None, f.data_type().clone()));
            }
        }
    }
    if added.is_empty() {
        return Err(Error::invalid("add_columns needs at least one column"));
    }
    Ok(Reshape {
        schema: with_metadata(fields, schema)?,
        indices: indices.to_vec(),
        columns: Box::new(move |frag| {
            let mut out: Vec<ArrayRef> = frag.batch.columns().to_vec();
            for (p, dt) in &added {
                out.push(match p {
                    Some(p) => p.values(&frag.batch)?,
                    None => new_null_array(dt, frag.batch.num_rows()),
                });
            }
            Ok(out)
        }),
    })
}

/// A checked schema of `fields` with the metadata of `old`.
fn with_metadata(fields: Vec<Field>, old: &Schema) -> Result<SchemaRef> {
    let s = Schema::new_with_metadata(fields, old.metadata().clone());
    crate::schema::validate_new_schema(&s)?;
    Ok(Arc::new(s))
}

fn plan_drop(schema: &SchemaRef, indices: &[IndexMeta], names: &[String]) -> Result<Reshape> {
    if names.is_empty() {
        return Err(Error::invalid("drop_columns needs at least one column"));
    }
    let mut gone = HashSet::new();
    for n in names {
        gone.insert(column_index(schema, n, "drop_columns")?);
    }
    if gone.len() == schema.fields().len() {
        return Err(Error::invalid(
            "drop_columns cannot drop every column (drop the table instead)",
        ));
    }
    let keep: Vec<usize> = (0..schema.fields().len())
        .filter(|i| !gone.contains(i))
        .collect();
    let new_schema = Arc::new(schema.project(&keep)?);
    crate::lsm::check_key_kept(schema, &new_schema)?;
    let indices = indices
        .iter()
        .filter(|i| {
            i.columns
                .iter()
                .all(|c| new_schema.column_with_name(c).is_some())
        })
        .cloned()
        .collect();
    Ok(Reshape {
        schema: new_schema,
        indices,
        columns: Box::new(move |frag| {
            Ok(keep.iter().map(|i| frag.batch.column(*i).clone()).collect())
        }),
    })
}

fn plan_alter(
    schema: &SchemaRef,
    indices: &[IndexMeta],
    alterations: &[ColumnAlteration],
) -> Result<Reshape> {
    if alterations.is_empty() {
        return Err(Error::invalid(
            "alter_columns needs at least one alteration",
        ));
    }
    let mut fields: Vec<Field> = schema.fields().iter().map(|f| f.as_ref().clone()).collect();
    let mut casts: Vec<Option<DataType>> = vec![None; fields.len()];
    let mut indices = indices.to_vec();
    let mut seen = HashSet::new();
    let mut renames = std::collections::HashMap::new();
    let mut retyped = HashSet::new();
    for a in alterations {
        let i = column_index(schema, &a.path, "alter_columns")?;
        if !seen.insert(i) {
            return Err(Error::invalid(format!(
                "alter_columns names column '{}' twice",
                a.path
            )));
        }
        if a.rename.is_none() && a.nullable.is_none() && a.data_type.is_none() {
            return Err(Error::invalid(format!(
                "alteration of '{}' changes nothing (give rename, nullable or dataType)",
                a.path
            )));
        }
        let f = fields[i].clone();
        if a.nullable == Some(false) && f.is_nullable() {
            return Err(Error::invalid(format!(
                "column '{}' is nullable and cannot be made non-nullable",
                a.path
            )));
        }
        let mut nf = f
            .clone()
            .with_nullable(a.nullable.unwrap_or(f.is_nullable()));
        if let Some(dt) = a.data_type.as_ref().filter(|dt| *dt != f.data_type()) {
            check_cast(&a.path, f.data_type(), dt)?;
            nf = nf.with_data_type(dt.clone());
            casts[i] = Some(dt.clone());
            retyped.insert(a.path.clone());
        }
        if let Some(n) = &a.rename {
            renames.insert(a.path.clone(), n.clone());
            nf = nf.with_name(n.clone());
        }
        fields[i] = nf;
    }
    follow_renames(&mut indices, &renames, &retyped);
    let new_schema = with_metadata(fields, schema)?;
    crate::lsm::check_key_kept(schema, &new_schema)?;
    let names: Vec<String> = schema.fields().iter().map(|f| f.name().clone()).collect();
    Ok(Reshape {
        schema: new_schema,
        indices,
        columns: Box::new(move |frag| {
            frag.batch
                .columns()
                .iter()
                .zip(&casts)
                .zip(&names)
                .map(|((c, to), name)| match to {
                    None => Ok(c.clone()),
                    Some(to) => cast_checked(c, to, name, frag),
                })
                .collect()
        }),
    })
}

/// Indexes follow their column, all renames at once, by the names before the
/// call (so `a -> b, b -> a` swaps them); an index on a retyped column goes.
fn follow_renames(
    indices: &mut Vec<IndexMeta>,
    renames: &std::collections::HashMap<String, String>,
    retyped: &HashSet<String>,
) {
    indices.retain(|ix| !ix.columns.iter().any(|c| retyped.contains(c)));
    for ix in indices {
        for c in &mut ix.columns {
            if let Some(n) = renames.get(c) {
                c.clone_from(n);
            }
        }
    }
}

/// The kind of a type, for `alter_columns` casts (only within a kind).
fn kind(dt: &DataType) -> Option<&'static str> {
    use DataType as D;
    Some(match dt {
        D::Int8 | D::Int16 | D::Int32 | D::Int64 | D::UInt8 | D::UInt16 | D::UInt32 | D::UInt64 => {
            "integer"
        }
        D::Float16 | D::Float32 | D::Float64 => "float",
        D::Utf8 | D::LargeUtf8 | D::Utf8View => "string",
        D::Binary | D::LargeBinary | D::BinaryView => "binary",
        D::FixedSizeList(f, _) if kind(f.data_type()) == Some("float") => "float vector",
        _ => return None,
    })
}

fn check_cast(col: &str, from: &DataType, to: &DataType) -> Result<()> {
    let same_len = match (from, to) {
        (DataType::FixedSizeList(_, a), DataType::FixedSizeList(_, b)) => a == b,
        _ => true,
    };
    if let (Some(a), Some(b)) = (kind(from), kind(to)) {
        if a == b && same_len {
            return Ok(());
        }
    }
    // A float vector to or from a list of floats (0.39 casts both ways). Never narrowing: the
    // per-value check covers vectors only; a list of another length than the vector's makes the
    // cast fail on its row.
    if let (Some((a, fixed_a)), Some((b, fixed_b))) = (float_items(from), float_items(to)) {
        if !(fixed_a && fixed_b) && float_bits(b) >= float_bits(a) {
            return Ok(());
        }
    }
    Err(Error::invalid(format!(
        "column '{col}' cannot change type from {from} to {to}: types change only within \
         integers, floats, strings, binaries or float vectors of one dimension, and between float \
         vectors and lists of floats of no narrower a type"
    )))
}

/// The item type of a vector or a list whose items are floats, and whether it is a vector.
fn float_items(dt: &DataType) -> Option<(&DataType, bool)> {
    let (item, fixed) = match dt {
        DataType::FixedSizeList(f, _) => (f.data_type(), true),
        DataType::List(f) | DataType::LargeList(f) => (f.data_type(), false),
        _ => return None,
    };
    (kind(item) == Some("float")).then_some((item, fixed))
}

/// The width of a float type in bits.
fn float_bits(dt: &DataType) -> u8 {
    match dt {
        DataType::Float16 => 16,
        DataType::Float32 => 32,
        _ => 64,
    }
}

/// Casts a column of `frag`; a live row's value the new type cannot hold
/// (out of range; a finite float that would become infinite) is an error
/// naming its row (`_rowid`) and value.
fn cast_checked(
    a: &ArrayRef,
    to: &DataType,
    name: &str,
    frag: &LoadedFragment,
) -> Result<ArrayRef> {
    let out = arrow::compute::cast(a, to)?;
    let live = |i: usize| a.is_valid(i) && !frag.deleted.contains(i as u32);
    let mut bad = None;
    if out.null_count() != a.null_count() {
        bad = (0..a.len()).find(|&i| live(i) && out.is_null(i));
    }
    if bad.is_none() {
        if let (Some((x, dim)), Some((y, _))) = (floats(a)?, floats(&out)?) {
            bad = (0..x.len())
                .find(|&j| x.value(j).is_finite() && !y.value(j).is_finite() && live(j / dim))
                .map(|j| j / dim);
        }
    }
    let Some(i) = bad else {
        return Ok(out);
    };
    let fmt = arrow::util::display::ArrayFormatter::try_new(a.as_ref(), &Default::default())?;
    Err(Error::invalid(format!(
        "column '{name}' cannot change type to {to}: the value {} of row {i} (_rowid {}) does not fit",
        fmt.value(i),
        (frag.id << 32) | i as u64
    )))
}

/// A float column's values (a float vector column's, flattened) as f64,
/// with the values per row.
fn floats(a: &ArrayRef) -> Result<Option<(arrow::array::Float64Array, usize)>> {
    use arrow::array::AsArray;
    let (values, dim) = match a.data_type() {
        DataType::Float16 | DataType::Float32 | DataType::Float64 => (a.clone(), 1),
        DataType::FixedSizeList(_, d) => (
            a.as_fixed_size_list().values().clone(),
            (*d).max(1) as usize,
        ),
        _ => return Ok(None),
    };
    let v = arrow::compute::cast(&values, &DataType::Float64)?;
    Ok(Some((
        v.as_primitive::<arrow::datatypes::Float64Type>().clone(),
        dim,
    )))
}
