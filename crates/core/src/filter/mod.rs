//! SQL filter and value expressions (`target.age > 0`, `id IN (1, 2)`,
//! `name LIKE 'a%'`, `price * 2`), parsed with sqlparser, bound to a schema
//! (unknown columns are errors naming them) and evaluated with arrow kernels.
//!
//! [`Predicate`] is the only entry point: `parse` binds, `mask` evaluates a
//! row filter (SQL NULL counts as false), `values` evaluates an expression
//! to one value per row (used by `update`), `sarg` what it implies about
//! one column for a scalar index.

mod bind;
mod eval;
mod sarg;

use arrow::array::{Array, ArrayRef, BooleanArray, RecordBatch};
use arrow_schema::{DataType, Schema};

use crate::error::{Error, Result};
use bind::PhysExpr;
pub use bind::Resolve;
pub use sarg::Sarg;

/// A parsed, bound expression.
#[derive(Debug, Clone)]
pub struct Predicate {
    sql: String,
    expr: PhysExpr,
}

impl Predicate {
    /// Parses `sql` and binds its column names against `schema` using `resolve`.
    /// The expression is also type-checked on an empty batch so a type error
    /// surfaces here, before any data is touched.
    pub fn parse(sql: &str, schema: &Schema, resolve: Resolve) -> Result<Self> {
        check_size(sql)?;
        let dialect = sqlparser::dialect::GenericDialect {};
        let ast = sqlparser::parser::Parser::new(&dialect)
            .try_with_sql(sql)
            .and_then(|mut p| {
                let e = p.parse_expr()?;
                p.expect_token(&sqlparser::tokenizer::Token::EOF)?;
                Ok(e)
            })
            .map_err(|e| Error::invalid(format!("cannot parse filter \"{sql}\": {e}")))?;
        let expr = bind::bind(&ast, schema, resolve, sql)?;
        let p = Predicate {
            sql: sql.to_string(),
            expr,
        };
        let empty = RecordBatch::new_empty(std::sync::Arc::new(schema.clone()));
        p.values(&empty)
            .map_err(|e| Error::invalid(format!("invalid filter \"{sql}\": {e}")))?;
        Ok(p)
    }

    /// What the filter being true implies about column `col` (of type
    /// `dt`) that a scalar index can answer; `None` when nothing.
    pub fn sarg(&self, col: usize, dt: &DataType) -> Option<Sarg> {
        sarg::extract(&self.expr, col, dt)
    }

    /// Whether the expression may be null on some row of `schema` (the
    /// schema it was parsed against): a column computed from it is
    /// nullable only then, as in Lance.
    pub fn maybe_null(&self, schema: &Schema) -> bool {
        self.expr.maybe_null(schema)
    }

    /// The SQL text.
    pub fn sql(&self) -> &str {
        &self.sql
    }

    /// Evaluates the expression to one value per row of `batch`.
    pub fn values(&self, batch: &RecordBatch) -> Result<ArrayRef> {
        eval::evaluate(&self.expr, batch)
            .and_then(|v| v.into_array(batch.num_rows()))
            .map_err(|e| Error::invalid(format!("cannot evaluate \"{}\": {e}", self.sql)))
    }

    /// Evaluates as a row filter: true where the row passes (NULL -> false).
    pub fn mask(&self, batch: &RecordBatch) -> Result<BooleanArray> {
        let v = self.values(batch)?;
        let b = match v.data_type() {
            DataType::Boolean => v,
            DataType::Null => arrow::array::new_null_array(&DataType::Boolean, v.len()),
            other => {
                return Err(Error::invalid(format!(
                    "filter \"{}\" is not a condition (it gives {other}, not a boolean)",
                    self.sql
                )))
            }
        };
        let b = b
            .as_any()
            .downcast_ref::<BooleanArray>()
            .ok_or_else(|| Error::internal("boolean array expected"))?;
        Ok(if b.null_count() == 0 {
            b.clone()
        } else {
            arrow::compute::prep_null_mask_filter(b)
        })
    }
}

/// Most operators (and opening parentheses) one expression may hold.
/// Parsing, binding, evaluating and dropping an expression recurse once per
/// level, and a chain of N operators is N levels deep: past this, a
/// hostile filter could overflow the stack of the server or of the user's
/// Node process (which no `try` catches).
pub const MAX_OPERATORS: usize = 1000;

/// Refuses an expression deeper than [`MAX_OPERATORS`] before any tree is
/// built: the tokenizer is iterative, the parser is not.
fn check_size(sql: &str) -> Result<()> {
    use sqlparser::keywords::Keyword;
    use sqlparser::tokenizer::{Token, Tokenizer};
    let dialect = sqlparser::dialect::GenericDialect {};
    let tokens = Tokenizer::new(&dialect, sql)
        .tokenize()
        .map_err(|e| Error::invalid(format!("cannot parse filter \"{}\": {e}", preview(sql))))?;
    let operators = tokens
        .iter()
        .filter(|t| match t {
            Token::Word(w) => matches!(
                w.keyword,
                Keyword::AND
                    | Keyword::OR
                    | Keyword::NOT
                    | Keyword::IS
                    | Keyword::IN
                    | Keyword::LIKE
                    | Keyword::ILIKE
                    | Keyword::BETWEEN
                    | Keyword::CASE
                    | Keyword::CAST
            ),
            Token::Whitespace(_) | Token::Comma | Token::RParen | Token::EOF => false,
            Token::Number(..) | Token::SingleQuotedString(_) | Token::DoubleQuotedString(_) => {
                false
            }
            _ => true,
        })
        .count();
    if operators > MAX_OPERATORS {
        return Err(Error::invalid(format!(
            "filter \"{}\" is too deep: {operators} operators and parentheses, more than the {MAX_OPERATORS} allowed; for many values of one column use `col IN (v1, v2, ...)`",
            preview(sql)
        )));
    }
    Ok(())
}

/// The first 80 characters of a long SQL text, for messages.
fn preview(sql: &str) -> String {
    match sql.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &sql[..i]),
        None => sql.to_string(),
    }
}

#[cfg(test)]
mod tests;
