//! Binding: sqlparser AST -> [`PhysExpr`] with columns resolved to indices.

use std::sync::Arc;

use arrow::array::{ArrayRef, BooleanArray, Float64Array, Int64Array, NullArray, StringArray};
use arrow_schema::{DataType, Schema};
use sqlparser::ast::{self as sql, BinaryOperator, Expr, InTarget, UnaryOperator, Value};

use crate::error::{Error, Result};
use crate::schema::column_list;

/// How bare and qualified column names map onto the batch's fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resolve {
    /// Field names as they are (`id`, or a quoted `"a.b"`).
    Plain,
    /// A merge's joined batch with fields `source.x` and `target.x`:
    /// qualified names as written, a bare name means the target column
    /// (or the source one if the target has none).
    Merge,
}

/// Binary operators we evaluate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
    And,
    Or,
    Add,
    Sub,
    Mul,
    Div,
    Mod,
}

/// A bound expression.
#[derive(Debug, Clone)]
pub enum PhysExpr {
    Column(usize),
    /// Child `1` of the struct `0` (`st.a`); null where the struct is.
    Field(Box<PhysExpr>, usize),
    Literal(ArrayRef),
    Binary(Box<PhysExpr>, BinOp, Box<PhysExpr>),
    Not(Box<PhysExpr>),
    Neg(Box<PhysExpr>),
    IsNull(Box<PhysExpr>, bool),
    IsBool(Box<PhysExpr>, bool, bool),
    InList(Box<PhysExpr>, Vec<PhysExpr>, bool),
    Between(Box<PhysExpr>, Box<PhysExpr>, Box<PhysExpr>, bool),
    Like(Box<PhysExpr>, Box<PhysExpr>, bool, bool),
    Cast(Box<PhysExpr>, DataType),
    Func(Func, Vec<PhysExpr>),
}

impl PhysExpr {
    /// Whether the expression may be null on some row of `schema`, as
    /// DataFusion types it (a non-null literal, a non-nullable column and
    /// arithmetic over them are never null; `/` and `%` may be).
    pub fn maybe_null(&self, schema: &Schema) -> bool {
        let any = |xs: &[&PhysExpr]| xs.iter().any(|x| x.maybe_null(schema));
        match self {
            PhysExpr::Column(i) => schema.fields().get(*i).is_none_or(|f| f.is_nullable()),
            PhysExpr::Field(..) => true,
            PhysExpr::Literal(a) => a.logical_null_count() > 0 || a.is_empty(),
            PhysExpr::Binary(_, BinOp::Div | BinOp::Mod, _) => true,
            PhysExpr::Binary(a, _, b) | PhysExpr::Like(a, b, ..) => any(&[a, b]),
            PhysExpr::Not(x) | PhysExpr::Neg(x) | PhysExpr::Cast(x, _) => x.maybe_null(schema),
            PhysExpr::IsNull(..) | PhysExpr::IsBool(..) => false,
            PhysExpr::InList(x, list, _) => {
                x.maybe_null(schema) || list.iter().any(|e| e.maybe_null(schema))
            }
            PhysExpr::Between(a, b, c, _) => any(&[a, b, c]),
            PhysExpr::Func(Func::Coalesce, args) => args.iter().all(|e| e.maybe_null(schema)),
            PhysExpr::Func(_, args) => args.iter().any(|e| e.maybe_null(schema)),
        }
    }
}

/// Scalar functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Func {
    Lower,
    Upper,
    Length,
    Abs,
    Coalesce,
}

struct Binder<'a> {
    schema: &'a Schema,
    resolve: Resolve,
    sql: &'a str,
}

/// Binds `e` against `schema`.
pub fn bind(e: &Expr, schema: &Schema, resolve: Resolve, sql: &str) -> Result<PhysExpr> {
    Binder {
        schema,
        resolve,
        sql,
    }
    .expr(e)
}

impl Binder<'_> {
    fn unsupported(&self, what: impl std::fmt::Display) -> Error {
        Error::invalid(format!(
            "unsupported expression in filter \"{}\": {what}",
            self.sql
        ))
    }

    fn column(&self, parts: &[sql::Ident]) -> Result<PhysExpr> {
        let name: Vec<&str> = parts.iter().map(|p| p.value.as_str()).collect();
        let joined = name.join(".");
        let mut candidates = vec![joined.clone()];
        if self.resolve == Resolve::Merge && name.len() == 1 {
            candidates.push(format!("target.{joined}"));
            candidates.push(format!("source.{joined}"));
        }
        for c in &candidates {
            if let Some((i, _)) = self.schema.column_with_name(c) {
                return Ok(PhysExpr::Column(i));
            }
        }
        // Unquoted SQL identifiers are case-insensitive: accept a unique match.
        for c in &candidates {
            let hits: Vec<usize> = self
                .schema
                .fields()
                .iter()
                .enumerate()
                .filter(|(_, f)| f.name().eq_ignore_ascii_case(c))
                .map(|(i, _)| i)
                .collect();
            if let [i] = hits.as_slice() {
                return Ok(PhysExpr::Column(*i));
            }
        }
        if let Some(e) = self.struct_path(&name) {
            return Ok(e);
        }
        if matches!(joined.as_str(), "_rowid" | "_rowoffset") {
            // Queries read them (table::finish); counts, deletes and updates not yet.
            return Err(Error::not_supported(format!(
                "{joined} is readable by queries only (takeRowIds / takeOffsets, where); filtering a count, delete or update on it is not supported by memwal yet, in filter \"{}\"",
                self.sql
            )));
        }
        Err(Error::invalid(format!(
            "unknown column '{joined}' in filter \"{}\" (available: {})",
            self.sql,
            column_list(self.schema)
        )))
    }

    /// `st.a.b`: the longest leading part naming a struct column, then its
    /// fields by name (exact, or one case-insensitive match).
    fn struct_path(&self, parts: &[&str]) -> Option<PhysExpr> {
        for split in (1..parts.len()).rev() {
            let head = parts[..split].join(".");
            let Some((i, f)) = self.schema.column_with_name(&head) else {
                continue;
            };
            let mut e = PhysExpr::Column(i);
            let mut dt = f.data_type().clone();
            for p in &parts[split..] {
                let arrow_schema::DataType::Struct(children) = &dt else {
                    return None;
                };
                let j = children.iter().position(|c| c.name() == p).or_else(|| {
                    let hits: Vec<usize> = children
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| c.name().eq_ignore_ascii_case(p))
                        .map(|(j, _)| j)
                        .collect();
                    (hits.len() == 1).then(|| hits[0])
                })?;
                dt = children[j].data_type().clone();
                e = PhysExpr::Field(Box::new(e), j);
            }
            return Some(e);
        }
        None
    }

    fn literal(&self, v: &Value) -> Result<PhysExpr> {
        let a: ArrayRef = match v {
            Value::Number(n, _) => {
                if let Ok(i) = n.parse::<i64>() {
                    Arc::new(Int64Array::from(vec![i]))
                } else if let Ok(u) = n.parse::<u64>() {
                    // Past i64 (row ids of buffered MemWAL rows): exact, not a float.
                    Arc::new(arrow::array::UInt64Array::from(vec![u]))
                } else if let Ok(f) = n.parse::<f64>() {
                    Arc::new(Float64Array::from(vec![f]))
                } else {
                    return Err(self.unsupported(format!("number {n}")));
                }
            }
            Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) => {
                Arc::new(StringArray::from(vec![s.as_str()]))
            }
            Value::Boolean(b) => Arc::new(BooleanArray::from(vec![*b])),
            Value::Null => Arc::new(NullArray::new(1)),
            other => return Err(self.unsupported(format!("literal {other}"))),
        };
        Ok(PhysExpr::Literal(a))
    }

    fn boxed(&self, e: &Expr) -> Result<Box<PhysExpr>> {
        Ok(Box::new(self.expr(e)?))
    }

    fn expr(&self, e: &Expr) -> Result<PhysExpr> {
        Ok(match e {
            Expr::Identifier(id) => self.column(std::slice::from_ref(id))?,
            Expr::CompoundIdentifier(ids) => self.column(ids)?,
            Expr::Value(v) => self.literal(&v.value)?,
            Expr::Nested(inner) => self.expr(inner)?,
            Expr::BinaryOp { left, op, right } => {
                let op = match op {
                    BinaryOperator::Eq => BinOp::Eq,
                    BinaryOperator::NotEq => BinOp::NotEq,
                    BinaryOperator::Lt => BinOp::Lt,
                    BinaryOperator::LtEq => BinOp::LtEq,
                    BinaryOperator::Gt => BinOp::Gt,
                    BinaryOperator::GtEq => BinOp::GtEq,
                    BinaryOperator::And => BinOp::And,
                    BinaryOperator::Or => BinOp::Or,
                    BinaryOperator::Plus => BinOp::Add,
                    BinaryOperator::Minus => BinOp::Sub,
                    BinaryOperator::Multiply => BinOp::Mul,
                    BinaryOperator::Divide => BinOp::Div,
                    BinaryOperator::Modulo => BinOp::Mod,
                    other => return Err(self.unsupported(format!("operator {other}"))),
                };
                PhysExpr::Binary(self.boxed(left)?, op, self.boxed(right)?)
            }
            Expr::UnaryOp { op, expr } => match op {
                UnaryOperator::Not => PhysExpr::Not(self.boxed(expr)?),
                UnaryOperator::Minus => PhysExpr::Neg(self.boxed(expr)?),
                UnaryOperator::Plus => self.expr(expr)?,
                other => return Err(self.unsupported(format!("operator {other}"))),
            },
            Expr::IsNull(x) => PhysExpr::IsNull(self.boxed(x)?, false),
            Expr::IsNotNull(x) => PhysExpr::IsNull(self.boxed(x)?, true),
            Expr::IsTrue(x) => PhysExpr::IsBool(self.boxed(x)?, true, false),
            Expr::IsNotTrue(x) => PhysExpr::IsBool(self.boxed(x)?, true, true),
            Expr::IsFalse(x) => PhysExpr::IsBool(self.boxed(x)?, false, false),
            Expr::IsNotFalse(x) => PhysExpr::IsBool(self.boxed(x)?, false, true),
            Expr::In {
                expr,
                target: InTarget::List(list),
                negated,
                ..
            } => PhysExpr::InList(
                self.boxed(expr)?,
                list.iter().map(|x| self.expr(x)).collect::<Result<_>>()?,
                *negated,
            ),
            Expr::Between {
                expr,
                negated,
                low,
                high,
            } => PhysExpr::Between(
                self.boxed(expr)?,
                self.boxed(low)?,
                self.boxed(high)?,
                *negated,
            ),
            Expr::Like {
                negated,
                expr,
                pattern,
                escape_char: None,
                any: false,
            } => PhysExpr::Like(self.boxed(expr)?, self.boxed(pattern)?, *negated, false),
            Expr::ILike {
                negated,
                expr,
                pattern,
                escape_char: None,
                any: false,
            } => PhysExpr::Like(self.boxed(expr)?, self.boxed(pattern)?, *negated, true),
            Expr::Cast {
                expr, data_type, ..
            } => PhysExpr::Cast(self.boxed(expr)?, self.sql_type(data_type)?),
            Expr::Function(f) => self.function(f)?,
            other => return Err(self.unsupported(other)),
        })
    }

    fn function(&self, f: &sql::Function) -> Result<PhysExpr> {
        let name = f.name.to_string().to_ascii_lowercase();
        let func = match name.as_str() {
            "lower" => Func::Lower,
            "upper" => Func::Upper,
            "length" | "char_length" | "character_length" => Func::Length,
            "abs" => Func::Abs,
            "coalesce" => Func::Coalesce,
            _ => return Err(self.unsupported(format!("function {name}()"))),
        };
        let sql::FunctionArguments::List(list) = &f.args else {
            return Err(self.unsupported(format!("arguments of {name}()")));
        };
        let mut args = Vec::new();
        for a in &list.args {
            match a {
                sql::FunctionArg::Unnamed(sql::FunctionArgExpr::Expr(e)) => {
                    args.push(self.expr(e)?)
                }
                other => return Err(self.unsupported(format!("argument {other}"))),
            }
        }
        let arity_ok = match func {
            Func::Coalesce => !args.is_empty(),
            _ => args.len() == 1,
        };
        if !arity_ok {
            return Err(self.unsupported(format!("{name}() with {} arguments", args.len())));
        }
        Ok(PhysExpr::Func(func, args))
    }

    /// A CAST's type, read as Lance's planner reads it (so `FLOAT` is Float32 and
    /// `REAL`, `VARCHAR` or `TEXT` are refused as @lancedb/lancedb refuses them).
    fn sql_type(&self, t: &sql::DataType) -> Result<DataType> {
        use arrow_schema::TimeUnit;
        use sql::DataType as T;
        let unit = |r: &Option<u64>| match r {
            None | Some(6) => Ok(TimeUnit::Microsecond),
            Some(0) => Ok(TimeUnit::Second),
            Some(3) => Ok(TimeUnit::Millisecond),
            Some(9) => Ok(TimeUnit::Nanosecond),
            Some(p) => Err(self.unsupported(format!("datetime resolution {p} (0, 3, 6 or 9)"))),
        };
        Ok(match t {
            T::String(_) => DataType::Utf8,
            T::Binary(_) => DataType::Binary,
            T::Float(_) => DataType::Float32,
            T::Double(_) => DataType::Float64,
            T::Boolean => DataType::Boolean,
            T::TinyInt(_) => DataType::Int8,
            T::SmallInt(_) => DataType::Int16,
            T::Int(_) | T::Integer(_) => DataType::Int32,
            T::BigInt(_) => DataType::Int64,
            T::TinyIntUnsigned(_) => DataType::UInt8,
            T::SmallIntUnsigned(_) => DataType::UInt16,
            T::IntUnsigned(_) | T::IntegerUnsigned(_) => DataType::UInt32,
            T::BigIntUnsigned(_) => DataType::UInt64,
            T::Date => DataType::Date32,
            T::Timestamp(r, sql::TimezoneInfo::None) => DataType::Timestamp(unit(r)?, None),
            T::Datetime(r) => DataType::Timestamp(unit(r)?, None),
            T::Decimal(sql::ExactNumberInfo::PrecisionAndScale(p, s)) => {
                let p = u8::try_from(*p).ok().filter(|p| (1..=38).contains(p));
                let s = i8::try_from(*s).ok();
                match (p, s) {
                    (Some(p), Some(s)) if i16::from(s) <= i16::from(p) => DataType::Decimal128(p, s),
                    _ => return Err(self.unsupported(format!("type {t} (precision 1 to 38, scale at most the precision)"))),
                }
            }
            other => {
                return Err(self.unsupported(format!(
                    "type {other} (supported: int [unsigned], tinyint [unsigned], smallint [unsigned], \
                     bigint [unsigned], float, double, string, binary, date, timestamp(precision), \
                     datetime(precision), decimal(precision,scale), boolean)"
                )))
            }
        })
    }
}
