//! Evaluation of a bound expression over a batch, with arrow kernels and
//! SQL-style type coercion (numbers widen, NULL adopts the other side's type,
//! strings compare with temporal columns by casting the string).

use std::sync::Arc;

use arrow::array::{
    new_null_array, Array, ArrayRef, AsArray, BooleanArray, Datum, RecordBatch, Scalar, UInt32Array,
};
use arrow::compute::kernels::{boolean, cmp, numeric};
use arrow::compute::{cast, is_not_null, is_null};
use arrow_schema::{ArrowError, DataType};

use super::bind::{BinOp, Func, PhysExpr};

type R<T> = std::result::Result<T, ArrowError>;

/// Result of evaluating a sub-expression: a column, or one value for all rows.
pub enum Value {
    Array(ArrayRef),
    Scalar(ArrayRef),
}

impl Value {
    fn array(&self) -> &ArrayRef {
        match self {
            Value::Array(a) | Value::Scalar(a) => a,
        }
    }
    fn is_scalar(&self) -> bool {
        matches!(self, Value::Scalar(_))
    }
    fn map(self, f: impl FnOnce(&ArrayRef) -> R<ArrayRef>) -> R<Value> {
        Ok(match self {
            Value::Array(a) => Value::Array(f(&a)?),
            Value::Scalar(a) => Value::Scalar(f(&a)?),
        })
    }
    /// Expands to `n` rows.
    pub fn into_array(self, n: usize) -> R<ArrayRef> {
        match self {
            Value::Array(a) => Ok(a),
            Value::Scalar(a) => {
                if n == 0 {
                    return Ok(a.slice(0, 0));
                }
                let idx = UInt32Array::from(vec![0u32; n]);
                arrow::compute::take(a.as_ref(), &idx, None)
            }
        }
    }
}

fn datum(v: &Value) -> Box<dyn Datum + '_> {
    match v {
        Value::Array(a) => Box::new(a.clone()),
        Value::Scalar(a) => Box::new(Scalar::new(a.clone())),
    }
}

fn wrap(scalar: bool, a: ArrayRef) -> Value {
    if scalar {
        Value::Scalar(a)
    } else {
        Value::Array(a)
    }
}

fn is_string(t: &DataType) -> bool {
    matches!(t, DataType::Utf8 | DataType::LargeUtf8 | DataType::Utf8View)
}

/// The common type two operands are cast to before a kernel runs.
pub(super) fn common_type(l: &DataType, r: &DataType) -> R<DataType> {
    use DataType::*;
    if l == r {
        return Ok(l.clone());
    }
    Ok(match (l, r) {
        (Null, t) | (t, Null) => t.clone(),
        (a, b) if a.is_numeric() && b.is_numeric() => {
            if a.is_floating() || b.is_floating() {
                Float64
            } else if a.is_unsigned_integer() && b.is_unsigned_integer() {
                UInt64
            } else {
                Int64
            }
        }
        (a, b) if is_string(a) && is_string(b) => Utf8,
        (s, t) | (t, s) if is_string(s) && arrow::compute::can_cast_types(s, t) => t.clone(),
        (a, b) => {
            return Err(ArrowError::InvalidArgumentError(format!(
                "cannot compare or combine {a} with {b}"
            )))
        }
    })
}

fn coerce(l: Value, r: Value) -> R<(Value, Value)> {
    let t = common_type(l.array().data_type(), r.array().data_type())?;
    let c = |v: Value| -> R<Value> {
        if v.array().data_type() == &t {
            Ok(v)
        } else if matches!(v, Value::Scalar(_))
            && is_string(v.array().data_type())
            && !is_string(&t)
        {
            // A string literal that is no value of the other side's type is
            // an error (as DataFusion's cast), never a silent NULL that
            // matches nothing (`_rowid IN ('x')`).
            v.map(|a| {
                let opts = arrow::compute::CastOptions {
                    safe: false,
                    ..Default::default()
                };
                arrow::compute::cast_with_options(a, &t, &opts).map_err(|e| {
                    ArrowError::InvalidArgumentError(format!(
                        "the literal cannot be read as {t}: {e}"
                    ))
                })
            })
        } else {
            v.map(|a| cast(a, &t))
        }
    };
    Ok((c(l)?, c(r)?))
}

fn to_bool(v: Value) -> R<Value> {
    match v.array().data_type() {
        DataType::Boolean => Ok(v),
        DataType::Null => v.map(|a| Ok(new_null_array(&DataType::Boolean, a.len()))),
        other => Err(ArrowError::InvalidArgumentError(format!(
            "expected a boolean condition, found {other}"
        ))),
    }
}

fn compare(l: Value, op: BinOp, r: Value) -> R<Value> {
    let scalar = l.is_scalar() && r.is_scalar();
    let (l, r) = coerce(l, r)?;
    let (ld, rd) = (datum(&l), datum(&r));
    let (ld, rd) = (ld.as_ref(), rd.as_ref());
    let out: BooleanArray = match op {
        BinOp::Eq => cmp::eq(ld, rd)?,
        BinOp::NotEq => cmp::neq(ld, rd)?,
        BinOp::Lt => cmp::lt(ld, rd)?,
        BinOp::LtEq => cmp::lt_eq(ld, rd)?,
        BinOp::Gt => cmp::gt(ld, rd)?,
        BinOp::GtEq => cmp::gt_eq(ld, rd)?,
        _ => return Err(ArrowError::InvalidArgumentError("not a comparison".into())),
    };
    Ok(wrap(scalar, Arc::new(out)))
}

fn arith(l: Value, op: BinOp, r: Value) -> R<Value> {
    let scalar = l.is_scalar() && r.is_scalar();
    for v in [&l, &r] {
        let t = v.array().data_type();
        if !(t.is_numeric() || t == &DataType::Null) {
            return Err(ArrowError::InvalidArgumentError(format!(
                "arithmetic on {t} is not supported"
            )));
        }
    }
    let (l, r) = coerce(l, r)?;
    if !l.array().data_type().is_numeric() && l.array().data_type() != &DataType::Null {
        return Err(ArrowError::InvalidArgumentError(format!(
            "arithmetic on {} is not supported",
            l.array().data_type()
        )));
    }
    let (ld, rd) = (datum(&l), datum(&r));
    let (ld, rd) = (ld.as_ref(), rd.as_ref());
    let out = match op {
        BinOp::Add => numeric::add(ld, rd)?,
        BinOp::Sub => numeric::sub(ld, rd)?,
        BinOp::Mul => numeric::mul(ld, rd)?,
        BinOp::Div => numeric::div(ld, rd)?,
        BinOp::Mod => numeric::rem(ld, rd)?,
        _ => return Err(ArrowError::InvalidArgumentError("not arithmetic".into())),
    };
    Ok(wrap(scalar, out))
}

fn logical(l: Value, op: BinOp, r: Value, n: usize) -> R<Value> {
    let scalar = l.is_scalar() && r.is_scalar();
    let len = if scalar { 1 } else { n };
    let l = to_bool(l)?.into_array(len)?;
    let r = to_bool(r)?.into_array(len)?;
    let (l, r) = (l.as_boolean(), r.as_boolean());
    let out = match op {
        BinOp::And => boolean::and_kleene(l, r)?,
        _ => boolean::or_kleene(l, r)?,
    };
    Ok(wrap(scalar, Arc::new(out)))
}

/// Child `j` of a struct array, null where the struct is null.
fn struct_field(a: &ArrayRef, j: usize) -> R<ArrayRef> {
    let st = a.as_struct_opt().ok_or_else(|| {
        ArrowError::InvalidArgumentError(format!("{} is not a struct", a.data_type()))
    })?;
    let child = st.column(j).clone();
    let nulls = arrow::buffer::NullBuffer::union(st.nulls(), child.nulls());
    let data = child.to_data().into_builder().nulls(nulls).build()?;
    Ok(arrow::array::make_array(data))
}

/// Evaluates `e` over `batch`.
pub fn evaluate(e: &PhysExpr, batch: &RecordBatch) -> R<Value> {
    let n = batch.num_rows();
    Ok(match e {
        PhysExpr::Column(i) => Value::Array(batch.column(*i).clone()),
        PhysExpr::Field(x, j) => evaluate(x, batch)?.map(|a| struct_field(a, *j))?,
        PhysExpr::Literal(a) => Value::Scalar(a.clone()),
        PhysExpr::Binary(l, op, r) => {
            let (l, r) = (evaluate(l, batch)?, evaluate(r, batch)?);
            match op {
                BinOp::And | BinOp::Or => logical(l, *op, r, n)?,
                BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div | BinOp::Mod => arith(l, *op, r)?,
                _ => compare(l, *op, r)?,
            }
        }
        PhysExpr::Not(x) => to_bool(evaluate(x, batch)?)?
            .map(|a| Ok(Arc::new(boolean::not(a.as_boolean())?) as ArrayRef))?,
        PhysExpr::Neg(x) => evaluate(x, batch)?.map(|a| numeric::neg(a.as_ref()))?,
        PhysExpr::IsNull(x, negated) => evaluate(x, batch)?.map(|a| {
            let r = if *negated {
                is_not_null(a.as_ref())?
            } else {
                is_null(a.as_ref())?
            };
            Ok(Arc::new(r) as ArrayRef)
        })?,
        PhysExpr::IsBool(x, want, negated) => to_bool(evaluate(x, batch)?)?.map(|a| {
            let b = a.as_boolean();
            let out: BooleanArray = b
                .iter()
                .map(|v| Some((v == Some(*want)) != *negated))
                .collect();
            Ok(Arc::new(out) as ArrayRef)
        })?,
        PhysExpr::InList(x, list, negated) => {
            let mut acc: Option<Value> = None;
            for item in list {
                let eq = compare(evaluate(x, batch)?, BinOp::Eq, evaluate(item, batch)?)?;
                acc = Some(match acc {
                    None => eq,
                    Some(a) => logical(a, BinOp::Or, eq, n)?,
                });
            }
            let v = acc.unwrap_or_else(|| Value::Scalar(Arc::new(BooleanArray::from(vec![false]))));
            if *negated {
                v.map(|a| Ok(Arc::new(boolean::not(a.as_boolean())?) as ArrayRef))?
            } else {
                v
            }
        }
        PhysExpr::Between(x, lo, hi, negated) => {
            let ge = compare(evaluate(x, batch)?, BinOp::GtEq, evaluate(lo, batch)?)?;
            let le = compare(evaluate(x, batch)?, BinOp::LtEq, evaluate(hi, batch)?)?;
            let v = logical(ge, BinOp::And, le, n)?;
            if *negated {
                v.map(|a| Ok(Arc::new(boolean::not(a.as_boolean())?) as ArrayRef))?
            } else {
                v
            }
        }
        PhysExpr::Like(x, pat, negated, ci) => {
            let (l, r) = (evaluate(x, batch)?, evaluate(pat, batch)?);
            let scalar = l.is_scalar() && r.is_scalar();
            let to_str = |v: Value| v.map(|a| cast(a, &DataType::Utf8));
            let (l, r) = (to_str(l)?, to_str(r)?);
            let (ld, rd) = (datum(&l), datum(&r));
            let (ld, rd) = (ld.as_ref(), rd.as_ref());
            use arrow::compute::kernels::comparison as k;
            let out = match (*negated, *ci) {
                (false, false) => k::like(ld, rd)?,
                (true, false) => k::nlike(ld, rd)?,
                (false, true) => k::ilike(ld, rd)?,
                (true, true) => k::nilike(ld, rd)?,
            };
            wrap(scalar, Arc::new(out))
        }
        PhysExpr::Cast(x, t) => evaluate(x, batch)?.map(|a| cast(a, t))?,
        PhysExpr::Func(f, args) => function(*f, args, batch)?,
    })
}

fn function(f: Func, args: &[PhysExpr], batch: &RecordBatch) -> R<Value> {
    let n = batch.num_rows();
    let first = || -> R<Value> {
        args.first()
            .map(|a| evaluate(a, batch))
            .unwrap_or_else(|| Err(ArrowError::InvalidArgumentError("missing argument".into())))
    };
    Ok(match f {
        Func::Lower | Func::Upper => first()?.map(|a| {
            let s = cast(a, &DataType::Utf8)?;
            let s = s.as_string::<i32>();
            let out: arrow::array::StringArray = s
                .iter()
                .map(|v| {
                    v.map(|v| {
                        if f == Func::Lower {
                            v.to_lowercase()
                        } else {
                            v.to_uppercase()
                        }
                    })
                })
                .collect();
            Ok(Arc::new(out) as ArrayRef)
        })?,
        Func::Length => first()?.map(|a| arrow::compute::kernels::length::length(a.as_ref()))?,
        Func::Abs => first()?.map(|a| {
            let t = a.data_type().clone();
            let zero = cast(
                &(Arc::new(arrow::array::Int64Array::from(vec![0])) as ArrayRef),
                &t,
            )?;
            let neg = cmp::lt(a, &Scalar::new(zero))?;
            let negated = numeric::neg(a.as_ref())?;
            arrow::compute::kernels::zip::zip(&neg, &negated, a)
        })?,
        Func::Coalesce => {
            let mut vals = args
                .iter()
                .map(|a| evaluate(a, batch))
                .collect::<R<Vec<_>>>()?;
            let scalar = vals.iter().all(Value::is_scalar);
            let len = if scalar { 1 } else { n };
            let mut acc = vals.remove(0).into_array(len)?;
            for v in vals {
                let (a, b) = coerce(Value::Array(acc), Value::Array(v.into_array(len)?))?;
                let (a, b) = (a.array().clone(), b.array().clone());
                let nn = is_not_null(a.as_ref())?;
                acc = arrow::compute::kernels::zip::zip(&nn, &a, &b)?;
            }
            wrap(scalar, acc)
        }
    })
}
