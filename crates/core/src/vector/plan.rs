//! A vector query checked against a table's schema: the vector column
//! found (by name, or as the only vector column of the query's dimension),
//! the query vectors checked (same dimension, finite), the filter bound,
//! the projection resolved. Every refusal names what is wrong.

use std::sync::Arc;

use arrow_schema::{DataType, Field, Schema, SchemaRef};

use super::{DEFAULT_K, DISTANCE_COLUMN, QUERY_INDEX_COLUMN, ROW_ID_COLUMN};
use crate::error::{Error, Result};
use crate::filter::{Predicate, Resolve};
use crate::query::QueryRequest;
use crate::query::{DistanceType, IndexTuning, VectorQuery};
use crate::schema::projection;

/// Element type of a vector column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Element {
    /// float16.
    F16,
    /// float32.
    F32,
    /// float64.
    F64,
    /// uint8: a binary vector, 8 bits a byte, searched by hamming distance as its bits (0 / 1
    /// values, 8 a byte: [`unpack_bits`]), so a plan's `dim` is 8 x the column's.
    U8,
}

/// The bits of `bytes` as 0 / 1 values, 8 a byte (least significant first): the squared L2
/// distance of two such expansions is the hamming distance of the bytes.
pub fn unpack_bits(bytes: impl IntoIterator<Item = u8>, out: &mut Vec<f32>) {
    for b in bytes {
        out.extend((0..8).map(|i| f32::from((b >> i) & 1)));
    }
}

/// What a plan's rows hold per value of the column: 8 bits a byte for binary vectors.
pub fn width(element: Element, dim: usize) -> usize {
    match element {
        Element::U8 => dim * 8,
        _ => dim,
    }
}

/// A validated vector query.
#[derive(Debug, Clone)]
pub struct VectorPlan {
    /// Index of the vector column.
    pub column: usize,
    /// The width of a row as searched: the column's dimension, or 8 x it for binary vectors
    /// ([`Element::U8`], searched as bits).
    pub dim: usize,
    /// Its element type.
    pub element: Element,
    /// The query vectors, each `dim` long and finite (a binary vector's as bits).
    pub vectors: Vec<Vec<f32>>,
    /// The distance.
    pub distance: DistanceType,
    /// Results per query vector.
    pub k: usize,
    /// Results skipped first, per query vector.
    pub offset: usize,
    /// The filter.
    pub filter: Option<Predicate>,
    /// Whether the filter applies before ranking.
    pub prefilter: bool,
    /// `lower <= d < upper`.
    pub lower: Option<f32>,
    /// See `lower`.
    pub upper: Option<f32>,
    /// Columns returned (indices into the table schema), before `_distance`.
    pub projection: Vec<usize>,
    /// Whether `_rowid` is returned.
    pub with_row_id: bool,
    /// The answer's schema.
    pub output: SchemaRef,
    /// Index tuning (`nprobes`, `refine_factor`, `fast_search`, ...).
    pub tuning: IndexTuning,
    /// Whether the query named its distance (else an index's is used).
    pub distance_given: bool,
}

/// The element type and dimension of a vector column, if `dt` is one.
pub fn vector_type(dt: &DataType) -> Option<(Element, usize)> {
    let DataType::FixedSizeList(item, n) = dt else {
        return None;
    };
    let el = match item.data_type() {
        DataType::Float16 => Element::F16,
        DataType::Float32 => Element::F32,
        DataType::Float64 => Element::F64,
        DataType::UInt8 => Element::U8,
        _ => return None,
    };
    usize::try_from(*n).ok().filter(|n| *n > 0).map(|n| (el, n))
}

fn describe_vector_columns(schema: &Schema) -> String {
    let v: Vec<String> = schema
        .fields()
        .iter()
        .filter_map(|f| {
            vector_type(f.data_type()).map(|(_, d)| format!("'{}' (dimension {d})", f.name()))
        })
        .collect();
    if v.is_empty() {
        "the table has no vector column (a fixed-size list of float16, float32 or float64, or of uint8 for binary vectors)".into()
    } else {
        format!("vector columns: {}", v.join(", "))
    }
}

/// Finds the column to search: the named one, or the only vector column of
/// dimension `dim`.
fn find_column(schema: &Schema, name: Option<&str>, dim: usize) -> Result<(usize, Element, usize)> {
    if let Some(name) = name {
        let i = schema.index_of(name).map_err(|_| {
            Error::invalid(format!(
                "no column '{name}' to search ({})",
                describe_vector_columns(schema)
            ))
        })?;
        let dt = schema.field(i).data_type();
        let (el, d) = vector_type(dt).ok_or_else(|| {
            Error::invalid(format!(
                "column '{name}' is {dt}, not a vector column (a fixed-size list of float16, float32 or float64, or of uint8 for binary vectors)"
            ))
        })?;
        return Ok((i, el, d));
    }
    let mut found: Vec<(usize, Element, usize)> = schema
        .fields()
        .iter()
        .enumerate()
        .filter_map(|(i, f)| vector_type(f.data_type()).map(|(el, d)| (i, el, d)))
        .filter(|(_, _, d)| *d == dim)
        .collect();
    // Float vectors first: a binary (uint8) column of the same length is the one searched only when
    // no float column is (so a table that gains a binary column keeps its searches as they were).
    if found.iter().any(|(_, el, _)| *el != Element::U8) {
        found.retain(|(_, el, _)| *el != Element::U8);
    }
    match found.as_slice() {
        [one] => Ok(*one),
        [] => Err(Error::invalid(format!(
            "no vector column of dimension {dim} to search ({})",
            describe_vector_columns(schema)
        ))),
        many => Err(Error::invalid(format!(
            "several vector columns have dimension {dim} ({}): name one with column()",
            many.iter()
                .map(|(i, _, _)| format!("'{}'", schema.field(*i).name()))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

/// Most rows a query of several vectors may answer (vectors x (k +
/// offset)): an answer is built in memory, so a small request must not ask
/// for one of tens of gigabytes.
pub const MAX_ANSWER_ROWS: usize = 1_000_000;

fn check_vectors(q: &VectorQuery) -> Result<usize> {
    let first = q
        .vectors
        .first()
        .ok_or_else(|| Error::invalid("a vector query needs at least one query vector"))?;
    let dim = first.len();
    if dim == 0 {
        return Err(Error::invalid("the query vector is empty"));
    }
    for (n, v) in q.vectors.iter().enumerate() {
        if v.len() != dim {
            return Err(Error::invalid(format!(
                "query vectors differ in dimension: vector 0 has {dim}, vector {n} has {}",
                v.len()
            )));
        }
        if let Some(p) = v.iter().position(|x| !x.is_finite()) {
            return Err(Error::invalid(format!(
                "query vector {n} has {} at position {p}: query vectors must be finite",
                v[p]
            )));
        }
    }
    Ok(dim)
}

fn check_bound(name: &str, b: Option<f32>) -> Result<Option<f32>> {
    match b {
        Some(x) if x.is_nan() => Err(Error::invalid(format!("distance range {name} is NaN"))),
        other => Ok(other),
    }
}

impl VectorPlan {
    /// Checks `req` (whose `nearest` must be set) against `schema`.
    pub fn new(schema: &Schema, req: &QueryRequest) -> Result<Self> {
        let q = req
            .nearest
            .as_ref()
            .ok_or_else(|| Error::internal("VectorPlan::new without a query vector"))?;
        let qdim = check_vectors(q)?;
        let (column, element, dim) = find_column(schema, q.column.as_deref(), qdim)?;
        if qdim != dim {
            return Err(Error::invalid(format!(
                "query vector has dimension {qdim} but column '{}' has dimension {dim}",
                schema.field(column).name()
            )));
        }
        let k = req.limit.unwrap_or(DEFAULT_K);
        if k == 0 {
            return Err(Error::invalid(
                "k (limit) must be at least 1 for a vector query",
            ));
        }
        let answer = q
            .vectors
            .len()
            .saturating_mul(k.saturating_add(req.offset.unwrap_or(0)));
        let t = &q.tuning;
        if let (Some(lo), Some(hi)) = (t.minimum_nprobes, t.maximum_nprobes) {
            if hi != 0 && lo > hi {
                return Err(Error::invalid(format!(
                    "minimum_nprobes ({lo}) is above maximum_nprobes ({hi})"
                )));
            }
        }
        // One vector answers at most the table's rows; several multiply it.
        if q.vectors.len() > 1 && answer > MAX_ANSWER_ROWS {
            return Err(Error::invalid(format!(
                "a vector query may answer at most {MAX_ANSWER_ROWS} rows (query vectors x (k + offset)); \
                 {} vectors x {} asks for {answer}: search in smaller batches",
                q.vectors.len(),
                k.saturating_add(req.offset.unwrap_or(0))
            )));
        }
        let (distance, vectors) = binary_or_float(schema, column, element, q)?;
        let filter = req
            .filter
            .as_deref()
            .filter(|f| !f.trim().is_empty())
            .map(|f| Predicate::parse(f, schema, Resolve::Plain))
            .transpose()?;
        let projection = projection(schema, req.columns.as_deref())?
            .unwrap_or_else(|| (0..schema.fields().len()).collect());
        let output = output_schema(schema, &projection, req.with_row_id, q.vectors.len() > 1);
        Ok(Self {
            column,
            dim: width(element, dim),
            element,
            vectors,
            distance,
            k,
            offset: req.offset.unwrap_or(0),
            filter,
            prefilter: q.prefilter,
            lower: check_bound("lower bound", q.lower_bound)?,
            upper: check_bound("upper bound", q.upper_bound)?,
            projection,
            with_row_id: req.with_row_id,
            output,
            tuning: q.tuning.clone(),
            distance_given: q.distance_type.is_some(),
        })
    }

    /// Whether `d` is inside the distance range.
    pub fn in_range(&self, d: f64) -> bool {
        self.lower.is_none_or(|l| d >= f64::from(l)) && self.upper.is_none_or(|u| d < f64::from(u))
    }
}

/// The distance and query vectors of a search of `column`: a binary vector column (uint8) is
/// searched by hamming distance (the default; another is refused) with byte-valued query vectors,
/// unpacked to bits; hamming on any other column is refused.
fn binary_or_float(
    schema: &Schema,
    column: usize,
    element: Element,
    q: &VectorQuery,
) -> Result<(DistanceType, Vec<Vec<f32>>)> {
    let name = schema.field(column).name();
    if element != Element::U8 {
        if q.distance_type == Some(DistanceType::Hamming) {
            return Err(Error::invalid(format!(
                "hamming distance is only for binary vectors (a fixed-size list of uint8); column '{name}' is {}",
                schema.field(column).data_type()
            )));
        }
        return Ok((q.distance_type.unwrap_or_default(), q.vectors.clone()));
    }
    if let Some(d) = q.distance_type.filter(|d| *d != DistanceType::Hamming) {
        return Err(Error::invalid(format!(
            "column '{name}' holds binary vectors (uint8): search it with distance type hamming, not {d}"
        )));
    }
    let mut out = Vec::with_capacity(q.vectors.len());
    for (n, v) in q.vectors.iter().enumerate() {
        let mut bits = Vec::with_capacity(v.len() * 8);
        let mut bytes = Vec::with_capacity(v.len());
        for (p, x) in v.iter().enumerate() {
            if x.fract() != 0.0 || !(0.0..=255.0).contains(x) {
                return Err(Error::invalid(format!(
                    "query vector {n} has {x} at position {p}: a query of binary vector column '{name}' holds bytes (integers 0 to 255)"
                )));
            }
            bytes.push(*x as u8);
        }
        unpack_bits(bytes, &mut bits);
        out.push(bits);
    }
    Ok((DistanceType::Hamming, out))
}

/// The answer's schema, in Lance's order: `query_index` first for several
/// query vectors, the projection, `_distance`, then `_rowid` when asked.
fn output_schema(schema: &Schema, projection: &[usize], row_id: bool, multi: bool) -> SchemaRef {
    let mut fields: Vec<Field> = Vec::new();
    if multi {
        fields.push(Field::new(QUERY_INDEX_COLUMN, DataType::Int32, false));
    }
    fields.extend(projection.iter().map(|i| schema.field(*i).clone()));
    fields.push(Field::new(DISTANCE_COLUMN, DataType::Float32, true));
    if row_id {
        fields.push(Field::new(ROW_ID_COLUMN, DataType::UInt64, true));
    }
    Arc::new(Schema::new(fields))
}
