//! The full-text query types, as serde structs shaped like the wire JSON the official clients send
//! (Lance's `FtsQuery`, externally tagged, snake_case): `{"match": {...}}`, `{"phrase": {...}}`,
//! `{"boost": {...}}`, `{"multi_match": {...}}`, `{"boolean": {...}}`; plus the legacy body
//! `{"columns": [...], "query": "text"}` where a string in double quotes is a phrase. Also the
//! checks a query passes before it runs (fuzziness, sizes, boosts) and the filling of missing
//! columns from the indexed ones. Talks to nothing but the error type.

use serde::{Deserialize, Deserializer, Serialize};

use crate::error::{FtsError, Result};

/// Most query nodes (leaves and compounds) in one query.
pub const MAX_QUERY_NODES: usize = 1024;
/// Deepest nesting of compound queries.
pub const MAX_QUERY_DEPTH: usize = 32;
/// Largest `max_expansions`.
pub const MAX_EXPANSIONS: usize = 10_000;
/// Largest phrase `slop`.
pub const MAX_SLOP: u32 = 10_000;

/// How the terms of a match combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub enum Operator {
    /// Every term must match.
    And,
    /// At least one term must match (the default).
    #[default]
    Or,
}

impl<'de> Deserialize<'de> for Operator {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        match s.to_ascii_uppercase().as_str() {
            "AND" => Ok(Operator::And),
            "OR" => Ok(Operator::Or),
            _ => Err(serde::de::Error::custom(format!("Invalid operator: {s}"))),
        }
    }
}

/// A full-text query.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FtsQuery {
    /// Terms, any or all of them.
    Match(MatchQuery),
    /// Terms in order.
    Phrase(PhraseQuery),
    /// A positive query demoted where a negative one matches.
    Boost(BoostQuery),
    /// The same terms over several columns, the best column's score.
    MultiMatch(MultiMatchQuery),
    /// must / should / must_not.
    Boolean(BooleanQuery),
}

fn one() -> f32 {
    1.0
}
fn fifty() -> usize {
    50
}
fn half() -> f32 {
    0.5
}

/// `{"match": {column, terms, boost, fuzziness, max_expansions, operator, prefix_length}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MatchQuery {
    /// The column; `null` means every FTS-indexed column.
    #[serde(default)]
    pub column: Option<String>,
    /// The text, analyzed like the documents.
    pub terms: String,
    /// Score multiplier, finite and >= 0. Default 1.
    #[serde(default = "one")]
    pub boost: f32,
    /// Edit distance for fuzzy matching; `null` = automatic (0 for terms of <= 2 bytes, 1 for
    /// 3..=5, else 2), 0 = exact.
    #[serde(default)]
    pub fuzziness: Option<u32>,
    /// Most dictionary terms a fuzzy match expands to, over all its terms. Default 50.
    #[serde(default = "fifty")]
    pub max_expansions: usize,
    /// And / Or. Default Or.
    #[serde(default)]
    pub operator: Operator,
    /// Leading characters a fuzzy expansion must share with the term. Default 0.
    #[serde(default)]
    pub prefix_length: u32,
}

impl MatchQuery {
    /// An exact Or match of `terms` on `column`.
    pub fn new(column: Option<String>, terms: impl Into<String>) -> MatchQuery {
        MatchQuery {
            column,
            terms: terms.into(),
            boost: 1.0,
            fuzziness: Some(0),
            max_expansions: 50,
            operator: Operator::Or,
            prefix_length: 0,
        }
    }

    /// The edit distance for `token` (Lance's automatic rule counts bytes).
    pub fn fuzziness_for(&self, token: &str) -> u32 {
        self.fuzziness.unwrap_or(match token.len() {
            0..=2 => 0,
            3..=5 => 1,
            _ => 2,
        })
    }
}

/// `{"phrase": {column, terms, slop}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PhraseQuery {
    /// The column; `null` means the only FTS-indexed column.
    #[serde(default)]
    pub column: Option<String>,
    /// The phrase, analyzed like the documents.
    pub terms: String,
    /// Extra positions allowed between consecutive phrase terms. Default 0.
    #[serde(default)]
    pub slop: u32,
}

/// `{"boost": {positive, negative, negative_boost}}`: rows of `positive`, scored
/// `positive - negative_boost * negative`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BoostQuery {
    /// The rows and their base score.
    pub positive: Box<FtsQuery>,
    /// The demotion.
    pub negative: Box<FtsQuery>,
    /// Weight of the demotion, finite and >= 0. Default 0.5.
    #[serde(default = "half")]
    pub negative_boost: f32,
}

/// `{"multi_match": {query, columns, boost}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MultiMatchQuery {
    /// The text.
    pub query: String,
    /// The columns (at least one).
    pub columns: Vec<String>,
    /// One boost per column; default 1 each.
    #[serde(default)]
    pub boost: Option<Vec<f32>>,
    /// And / Or (the clients do not send it). Default Or.
    #[serde(default)]
    pub operator: Operator,
}

/// `{"boolean": {should, must, must_not}}`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct BooleanQuery {
    /// At least one must match when there is no `must`; each adds its score.
    #[serde(default)]
    pub should: Vec<FtsQuery>,
    /// Every one must match; scores add.
    #[serde(default)]
    pub must: Vec<FtsQuery>,
    /// None may match; no score.
    #[serde(default)]
    pub must_not: Vec<FtsQuery>,
}

/// Reads a `full_text_query` body in either shape: structured `{"query": {<type>: ...}}` or
/// legacy `{"columns": [...], "query": "text"}` (a whole string in double quotes is a phrase).
/// A `columns` list fills the columns the query leaves out.
pub fn parse_full_text_query(body: &serde_json::Value) -> Result<FtsQuery> {
    let obj = body
        .as_object()
        .ok_or_else(|| FtsError::query("full_text_query must be a JSON object"))?;
    let columns: Vec<String> = match obj.get("columns") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(v) => serde_json::from_value(v.clone()).map_err(|_| {
            FtsError::query("full_text_query.columns must be a list of column names")
        })?,
    };
    let query = match obj.get("query") {
        Some(serde_json::Value::String(text)) => legacy(text),
        Some(v @ serde_json::Value::Object(_)) => serde_path_to_error::deserialize(v.clone())
            .map_err(|e| FtsError::query(e.to_string()))?,
        _ => {
            return Err(FtsError::query(
                "full_text_query.query must be a string or a query object",
            ))
        }
    };
    query.validate()?;
    if columns.is_empty() {
        Ok(query)
    } else {
        query.fill_columns(&columns, false)
    }
}

fn legacy(text: &str) -> FtsQuery {
    let t = text.trim();
    match t.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
        Some(inner) if t.len() >= 2 => FtsQuery::Phrase(PhraseQuery {
            column: None,
            terms: inner.to_string(),
            slop: 0,
        }),
        _ => FtsQuery::Match(MatchQuery::new(None, text)),
    }
}

impl FtsQuery {
    /// Checks sizes, depth, fuzziness, expansions, slop and boosts.
    pub fn validate(&self) -> Result<()> {
        let mut nodes = 0;
        self.check(0, &mut nodes)
    }

    fn check(&self, depth: usize, nodes: &mut usize) -> Result<()> {
        *nodes += 1;
        if *nodes > MAX_QUERY_NODES {
            return Err(FtsError::query(format!(
                "more than {MAX_QUERY_NODES} query nodes"
            )));
        }
        if depth > MAX_QUERY_DEPTH {
            return Err(FtsError::query(format!(
                "queries nest at most {MAX_QUERY_DEPTH} deep"
            )));
        }
        match self {
            FtsQuery::Match(m) => check_match(m),
            FtsQuery::Phrase(p) if p.slop > MAX_SLOP => Err(FtsError::query(format!(
                "slop {} exceeds {MAX_SLOP}",
                p.slop
            ))),
            FtsQuery::Phrase(_) => Ok(()),
            FtsQuery::Boost(b) => {
                check_weight("negative_boost", b.negative_boost)?;
                b.positive.check(depth + 1, nodes)?;
                b.negative.check(depth + 1, nodes)
            }
            FtsQuery::MultiMatch(m) => check_multi(m),
            FtsQuery::Boolean(b) => {
                for q in b.should.iter().chain(&b.must).chain(&b.must_not) {
                    q.check(depth + 1, nodes)?;
                }
                Ok(())
            }
        }
    }

    /// Gives every leaf without a column one: a match on several columns becomes a multi_match; a
    /// phrase needs exactly one. `replace` overrides columns the query names.
    pub fn fill_columns(&self, columns: &[String], replace: bool) -> Result<FtsQuery> {
        Ok(match self {
            FtsQuery::Match(m) if m.column.is_none() || replace => fill_match(m, columns)?,
            FtsQuery::Phrase(p) if p.column.is_none() || replace => match columns {
                [] => return Err(no_index()),
                [c] => FtsQuery::Phrase(PhraseQuery {
                    column: Some(c.clone()),
                    ..p.clone()
                }),
                _ => {
                    return Err(FtsError::Column(
                        "the column must be specified in the query".into(),
                    ))
                }
            },
            FtsQuery::Boost(b) => FtsQuery::Boost(BoostQuery {
                positive: Box::new(b.positive.fill_columns(columns, replace)?),
                negative: Box::new(b.negative.fill_columns(columns, replace)?),
                negative_boost: b.negative_boost,
            }),
            FtsQuery::Boolean(b) => {
                let fill = |qs: &[FtsQuery]| {
                    qs.iter()
                        .map(|q| q.fill_columns(columns, replace))
                        .collect::<Result<Vec<_>>>()
                };
                FtsQuery::Boolean(BooleanQuery {
                    should: fill(&b.should)?,
                    must: fill(&b.must)?,
                    must_not: fill(&b.must_not)?,
                })
            }
            other => other.clone(),
        })
    }
}

fn fill_match(m: &MatchQuery, columns: &[String]) -> Result<FtsQuery> {
    match columns {
        [] => Err(no_index()),
        [c] => Ok(FtsQuery::Match(MatchQuery {
            column: Some(c.clone()),
            ..m.clone()
        })),
        _ => Ok(FtsQuery::MultiMatch(MultiMatchQuery {
            query: m.terms.clone(),
            columns: columns.to_vec(),
            boost: Some(vec![m.boost; columns.len()]),
            operator: m.operator,
        })),
    }
}

fn no_index() -> FtsError {
    FtsError::Column(
        "Cannot perform full text search unless an INVERTED index has been created on at least one column".into(),
    )
}

fn check_match(m: &MatchQuery) -> Result<()> {
    check_weight("boost", m.boost)?;
    // Any edit distance: Lance's automaton takes any it can build (it refuses one past its state limit, which
    // the banded check here does not have: its cost per term does not grow with the distance).
    if m.max_expansions > MAX_EXPANSIONS {
        return Err(FtsError::query(format!(
            "max_expansions {} exceeds {MAX_EXPANSIONS}",
            m.max_expansions
        )));
    }
    Ok(())
}

fn check_multi(m: &MultiMatchQuery) -> Result<()> {
    if m.columns.is_empty() {
        return Err(FtsError::query(
            "Cannot create MultiMatchQuery with no columns",
        ));
    }
    if let Some(boosts) = &m.boost {
        if boosts.len() != m.columns.len() {
            return Err(FtsError::query(
                "The number of boosts must match the number of queries",
            ));
        }
        for &b in boosts {
            check_weight("boost", b)?;
        }
    }
    Ok(())
}

fn check_weight(name: &str, w: f32) -> Result<()> {
    if w.is_finite() && w >= 0.0 {
        Ok(())
    } else {
        Err(FtsError::query(format!(
            "{name} must be a finite number >= 0, got {w}"
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn structured_match_with_defaults() {
        let q = parse_full_text_query(
            &json!({"query": {"match": {"column": "text", "terms": "hello world"}}}),
        )
        .expect("parse");
        let FtsQuery::Match(m) = q else {
            panic!("match expected")
        };
        assert_eq!(
            (
                m.boost,
                m.fuzziness,
                m.max_expansions,
                m.operator,
                m.prefix_length
            ),
            (1.0, None, 50, Operator::Or, 0)
        );
        assert_eq!(m.fuzziness_for("ab"), 0);
        assert_eq!(m.fuzziness_for("abcde"), 1);
        assert_eq!(m.fuzziness_for("abcdef"), 2);
    }

    #[test]
    fn every_wire_shape_parses() {
        let body = json!({"query": {"boolean": {
            "must": [{"phrase": {"column": "t", "terms": "a b", "slop": 1}}],
            "should": [{"multi_match": {"query": "x", "columns": ["t", "u"], "boost": [1.0, 2.0]}}],
            "must_not": [{"boost": {"positive": {"match": {"column": "t", "terms": "p", "operator": "AND", "fuzziness": 1}},
                                    "negative": {"match": {"column": "t", "terms": "n"}}}}]}}});
        let q = parse_full_text_query(&body).expect("parse");
        let FtsQuery::Boolean(b) = q else {
            panic!("boolean")
        };
        assert!(matches!(&b.must_not[0], FtsQuery::Boost(bq) if bq.negative_boost == 0.5));
    }

    #[test]
    fn legacy_form_and_quoted_phrase() {
        let q =
            parse_full_text_query(&json!({"columns": ["t"], "query": "\"a b\""})).expect("parse");
        assert!(
            matches!(q, FtsQuery::Phrase(ref p) if p.terms == "a b" && p.column.as_deref() == Some("t"))
        );
        let q =
            parse_full_text_query(&json!({"columns": ["t", "u"], "query": "a b"})).expect("parse");
        assert!(matches!(q, FtsQuery::MultiMatch(ref m) if m.columns.len() == 2));
        let q = parse_full_text_query(&json!({"query": "\""})).expect("parse");
        assert!(matches!(q, FtsQuery::Match(_)));
    }

    #[test]
    fn hostile_queries_get_clear_errors() {
        for (body, needle) in [
            (
                json!({"query": {"match": {"column": "t", "terms": "a", "boost": -1.0}}}),
                "boost",
            ),
            (
                json!({"query": {"match": {"column": "t", "terms": "a", "max_expansions": 1_000_000}}}),
                "max_expansions",
            ),
            (
                json!({"query": {"multi_match": {"query": "a", "columns": []}}}),
                "no columns",
            ),
            (
                json!({"query": {"multi_match": {"query": "a", "columns": ["t"], "boost": [1.0, 2.0]}}}),
                "boosts",
            ),
            (json!({"query": {"fuzzy": {}}}), "unknown variant"),
            (json!({"query": 3}), "string or a query object"),
            (json!([]), "JSON object"),
        ] {
            let err = parse_full_text_query(&body)
                .expect_err("refused")
                .to_string();
            assert!(err.contains(needle), "{err} should contain {needle}");
        }
        // A large edit distance is no attack (the check's cost per term does not grow with it): accepted, as Lance does.
        let far = json!({"query": {"match": {"column": "t", "terms": "a", "fuzziness": 100}}});
        assert!(parse_full_text_query(&far).is_ok());
        let mut deep = json!({"match": {"column": "t", "terms": "a"}});
        for _ in 0..40 {
            deep = json!({"boolean": {"must": [deep]}});
        }
        let err = parse_full_text_query(&json!({"query": deep}))
            .expect_err("too deep")
            .to_string();
        assert!(err.contains("nest"), "{err}");
    }

    #[test]
    fn phrase_column_filling_follows_lance() {
        let p = FtsQuery::Phrase(PhraseQuery {
            column: None,
            terms: "a b".into(),
            slop: 0,
        });
        assert!(p
            .fill_columns(&[], false)
            .expect_err("none")
            .to_string()
            .contains("INVERTED index"));
        let two = ["a".to_string(), "b".to_string()];
        assert!(p
            .fill_columns(&two, false)
            .expect_err("two")
            .to_string()
            .contains("must be specified"));
    }
}
