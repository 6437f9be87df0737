//! Search arguments: what a bound filter says about one column that a
//! scalar index can answer by binary search (`=`, `IN`, `<`, `<=`, `>`,
//! `>=`, `BETWEEN`, and `AND` / `OR` of them), with each value already in
//! the column's type.
//!
//! The guarantee is one-sided: every row the filter passes satisfies the
//! [`Sarg`]. So an index returns a superset of the matching rows, and the
//! caller still evaluates the filter on them. A value is used only when
//! comparing in the column's type gives the answer the evaluator's
//! coercion gives (see [`literal_as`]); otherwise the part is dropped
//! (`None`), which never loses a row.

use std::sync::Arc;

use arrow::array::{Array, ArrayRef, RecordBatch, RecordBatchOptions};
use arrow::compute::cast;
use arrow::compute::kernels::cmp;
use arrow_schema::{DataType, Schema};

use super::bind::{BinOp, PhysExpr};
use super::eval;

/// A condition on one column, its values in the column's type (one row
/// each, never null).
#[derive(Debug, Clone)]
pub enum Sarg {
    /// The column equals one of these.
    Points(Vec<ArrayRef>),
    /// The column lies between the bounds (`true`: inclusive).
    Range {
        lo: Option<(ArrayRef, bool)>,
        hi: Option<(ArrayRef, bool)>,
    },
    /// Every part holds.
    And(Vec<Sarg>),
    /// One part holds.
    Or(Vec<Sarg>),
}

/// What `e` being true implies about column `col` (of type `dt`).
pub(super) fn extract(e: &PhysExpr, col: usize, dt: &DataType) -> Option<Sarg> {
    let on_col = |x: &PhysExpr| matches!(x, PhysExpr::Column(c) if *c == col);
    match e {
        PhysExpr::Binary(a, BinOp::And, b) => match (extract(a, col, dt), extract(b, col, dt)) {
            (Some(x), Some(y)) => Some(Sarg::And(vec![x, y])),
            (x, None) | (None, x) => x,
        },
        PhysExpr::Binary(a, BinOp::Or, b) => {
            Some(Sarg::Or(vec![extract(a, col, dt)?, extract(b, col, dt)?]))
        }
        PhysExpr::Binary(a, op, b) if on_col(a) => comparison(*op, value(b, dt)?),
        PhysExpr::Binary(a, op, b) if on_col(b) => comparison(flip(*op)?, value(a, dt)?),
        PhysExpr::InList(x, list, false) if on_col(x) => Some(Sarg::Points(
            list.iter()
                .map(|v| value(v, dt))
                .collect::<Option<Vec<_>>>()?,
        )),
        PhysExpr::Between(x, lo, hi, false) if on_col(x) => Some(Sarg::Range {
            lo: Some((value(lo, dt)?, true)),
            hi: Some((value(hi, dt)?, true)),
        }),
        _ => None,
    }
}

/// `col op v` as a [`Sarg`].
fn comparison(op: BinOp, v: ArrayRef) -> Option<Sarg> {
    let range = |lo, hi| Some(Sarg::Range { lo, hi });
    match op {
        BinOp::Eq => Some(Sarg::Points(vec![v])),
        BinOp::Lt => range(None, Some((v, false))),
        BinOp::LtEq => range(None, Some((v, true))),
        BinOp::Gt => range(Some((v, false)), None),
        BinOp::GtEq => range(Some((v, true)), None),
        _ => None,
    }
}

/// `a op b` written as `b op' a`.
fn flip(op: BinOp) -> Option<BinOp> {
    Some(match op {
        BinOp::Eq => BinOp::Eq,
        BinOp::Lt => BinOp::Gt,
        BinOp::LtEq => BinOp::GtEq,
        BinOp::Gt => BinOp::Lt,
        BinOp::GtEq => BinOp::LtEq,
        _ => return None,
    })
}

/// The value of a constant sub-expression, in the column's type.
fn value(e: &PhysExpr, dt: &DataType) -> Option<ArrayRef> {
    if !constant(e) {
        return None;
    }
    let one = RecordBatch::try_new_with_options(
        Arc::new(Schema::empty()),
        vec![],
        &RecordBatchOptions::new().with_row_count(Some(1)),
    )
    .ok()?;
    let v = eval::evaluate(e, &one).ok()?.into_array(1).ok()?;
    literal_as(&v, dt)
}

/// Whether `e` reads no column.
fn constant(e: &PhysExpr) -> bool {
    match e {
        PhysExpr::Column(_) => false,
        PhysExpr::Literal(_) => true,
        PhysExpr::Binary(a, _, b) => constant(a) && constant(b),
        PhysExpr::Not(x) | PhysExpr::Neg(x) | PhysExpr::Cast(x, _) => constant(x),
        _ => false,
    }
}

/// `lit` in the column type `col`, when comparing the column with it in
/// that type answers as the evaluator does: it compares both in their
/// common type, so either that type is the column's, or the column's
/// values embed into it in order (narrower integers, float32, string
/// kinds) and `lit` survives the trip back unchanged.
pub(crate) fn literal_as(lit: &ArrayRef, col: &DataType) -> Option<ArrayRef> {
    if lit.len() != 1 || lit.is_null(0) {
        return None;
    }
    let t = eval::common_type(col, lit.data_type()).ok()?;
    let in_t = if lit.data_type() == &t {
        lit.clone()
    } else {
        cast(lit, &t).ok()?
    };
    if in_t.is_null(0) {
        return None;
    }
    if &t == col {
        return Some(in_t);
    }
    if !embeds(col, &t) {
        return None;
    }
    let back = cast(&in_t, col).ok()?;
    if back.is_null(0) {
        return None;
    }
    let again = cast(&back, &t).ok()?;
    let same = cmp::eq(&again, &in_t).ok()?;
    (same.is_valid(0) && same.value(0)).then_some(back)
}

/// Whether casting `col` to `t` keeps every value it does not turn to
/// NULL distinct and in order.
fn embeds(col: &DataType, t: &DataType) -> bool {
    use DataType::*;
    match t {
        Int64 | UInt64 => col.is_integer(),
        Float64 => matches!(col, Float16 | Float32),
        Utf8 => matches!(col, LargeUtf8 | Utf8View),
        _ => false,
    }
}
