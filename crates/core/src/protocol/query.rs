//! The `query/` route's body: every field the official clients send, read
//! into a [`QueryRequest`] (plain scan or vector search) by the server and
//! written from one by the remote client, so both ends agree by
//! construction.

use serde::Deserialize;
use serde_json::{json, Value};

use crate::error::{Error, Result};
use crate::query::OrderBy;
use crate::query::QueryRequest;
use crate::query::{DistanceType, IndexTuning, TextSearch, VectorQuery};

/// The `phalanx-version` this server speaks: 0.2.0 lets clients send
/// several query vectors in one request; 0.3.0 makes them send full-text
/// queries structured (`full_text_query: {"query": {"match": ...}}`, phrase,
/// boost, multi_match and boolean queries kept whole) instead of the legacy
/// `{"columns", "query": text}`. 0.4.0 and up (multipart writes, blobs) are
/// not implemented.
pub const PHALANX_VERSION: &str = "0.3.0";

/// The body of `query/`, every field the official clients send (an
/// unknown field is an error naming it, never a silence).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct QueryBody {
    /// `[]` for a plain query; one vector or a list of vectors.
    pub vector: Option<serde_json::Value>,
    /// Rows (or neighbours) to return; i64::MAX means no limit.
    pub k: Option<u64>,
    /// Older name of `k`.
    pub limit: Option<u64>,
    /// Rows to skip.
    pub offset: Option<u64>,
    /// SQL filter.
    pub filter: Option<String>,
    /// A list of names, or `{alias: sql}`.
    pub columns: Option<serde_json::Value>,
    /// Version to read (null: latest).
    pub version: Option<u64>,
    /// Filter before ranking (vector queries).
    pub prefilter: Option<bool>,
    /// Vector query: distance.
    pub distance_type: Option<String>,
    /// Vector query: the column.
    pub vector_column: Option<String>,
    /// Vector query: IVF probes.
    pub nprobes: Option<u64>,
    /// Vector query: IVF probes, lower bound.
    pub minimum_nprobes: Option<u64>,
    /// Vector query: IVF probes, upper bound.
    pub maximum_nprobes: Option<u64>,
    /// Vector query: lower distance bound.
    pub lower_bound: Option<f64>,
    /// Vector query: upper distance bound.
    pub upper_bound: Option<f64>,
    /// Vector query: HNSW search width.
    pub ef: Option<u64>,
    /// Vector query: re-rank factor.
    pub refine_factor: Option<u64>,
    /// Vector query: skip the index.
    pub bypass_vector_index: Option<bool>,
    /// Vector query: indexed rows only.
    pub fast_search: Option<bool>,
    /// Return `_rowid`.
    pub with_row_id: Option<bool>,
    /// Full-text search.
    pub full_text_query: Option<serde_json::Value>,
    /// Sort order.
    pub order_by: Option<serde_json::Value>,
    /// `false`: read the base table only, skipping the MemWAL's buffered
    /// rows (`true` or absent: read through them, as ours always may).
    pub use_lsm: Option<bool>,
    /// Approximate mode.
    pub approx_mode: Option<serde_json::Value>,
}

/// The body of `explain_plan/`: the query as `query/` takes it, and
/// whether to say more.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExplainBody {
    /// The query.
    pub query: Option<QueryBody>,
    /// More detail.
    pub verbose: Option<bool>,
}

impl QueryBody {
    /// Whether a query vector was sent.
    pub fn has_vector(&self) -> bool {
        self.vector
            .as_ref()
            .is_some_and(|v| !v.is_null() && v.as_array().is_none_or(|a| !a.is_empty()))
    }

    /// The request this body asks for; what memwal does not implement is
    /// refused naming the field.
    pub fn to_request(&self) -> Result<QueryRequest> {
        let full_text = match self.full_text_query.as_ref().filter(|v| !v.is_null()) {
            Some(v) => Some(TextSearch {
                query: memwal_fts::parse_full_text_query(v)
                    .map_err(|e| Error::invalid(format!("`full_text_query`: {e}")))?,
                prefilter: self.prefilter.unwrap_or(true),
                fast_search: self.fast_search == Some(true),
            }),
            None => None,
        };
        let nearest = if self.has_vector() {
            Some(self.vector_query()?)
        } else if self.lower_bound.is_some() || self.upper_bound.is_some() {
            return Err(Error::invalid(
                "`lower_bound` / `upper_bound` need a query vector",
            ));
        } else {
            None
        };
        let k = self
            .limit
            .or(self.k)
            .map(|k| usize::try_from(k).unwrap_or(usize::MAX));
        let (columns, projections) = self.projection()?;
        Ok(QueryRequest {
            filter: self.filter.clone().filter(|f| !f.trim().is_empty()),
            columns,
            projections,
            order_by: self.ordering()?,
            limit: k,
            offset: self
                .offset
                .map(|o| usize::try_from(o).unwrap_or(usize::MAX)),
            with_row_id: self.with_row_id == Some(true),
            nearest,
            full_text,
            base_only: self.use_lsm == Some(false),
        })
    }

    fn vector_query(&self) -> Result<VectorQuery> {
        let vectors = parse_vectors(self.vector.as_ref().unwrap_or(&Value::Null))?;
        let distance_type = self
            .distance_type
            .as_deref()
            .map(str::parse::<DistanceType>)
            .transpose()?;
        let u32_of = |name: &str, v: Option<u64>| -> Result<Option<u32>> {
            v.map(|x| {
                u32::try_from(x).map_err(|_| Error::invalid(format!("`{name}` = {x} is too large")))
            })
            .transpose()
        };
        Ok(VectorQuery {
            vectors,
            column: self.vector_column.clone(),
            distance_type,
            prefilter: self.prefilter.unwrap_or(true),
            lower_bound: self.lower_bound.map(|x| x as f32),
            upper_bound: self.upper_bound.map(|x| x as f32),
            tuning: IndexTuning {
                nprobes: u32_of("nprobes", self.nprobes)?,
                minimum_nprobes: u32_of("minimum_nprobes", self.minimum_nprobes)?,
                maximum_nprobes: u32_of("maximum_nprobes", self.maximum_nprobes)?,
                ef: u32_of("ef", self.ef)?,
                refine_factor: u32_of("refine_factor", self.refine_factor)?,
                bypass_vector_index: self.bypass_vector_index == Some(true),
                fast_search: self.fast_search == Some(true),
            },
        })
    }

    /// The columns to return: a list of names, or `{alias: sql}` (every
    /// alias its own column: a list of names; else SQL projections).
    #[allow(clippy::type_complexity)]
    pub fn projection(&self) -> Result<(Option<Vec<String>>, Option<Vec<(String, String)>>)> {
        match &self.columns {
            None | Some(Value::Null) => Ok((None, None)),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str().map(str::to_string).ok_or_else(|| {
                        Error::invalid(format!("`columns` must be strings, got {v}"))
                    })
                })
                .collect::<Result<Vec<_>>>()
                .map(|c| (Some(c), None)),
            Some(Value::Object(o)) => {
                let pairs = o
                    .iter()
                    .map(|(alias, e)| match e.as_str() {
                        Some(sql) => Ok((alias.clone(), sql.to_string())),
                        None => Err(Error::invalid(format!(
                            "`columns` {alias:?} must be a SQL string, got {e}"
                        ))),
                    })
                    .collect::<Result<Vec<_>>>()?;
                if pairs.iter().all(|(a, e)| a == e) {
                    Ok((Some(pairs.into_iter().map(|(a, _)| a).collect()), None))
                } else {
                    Ok((None, Some(pairs)))
                }
            }
            Some(other) => Err(Error::invalid(format!(
                "`columns` must be a list of names or {{alias: sql}}, got {other}"
            ))),
        }
    }

    /// `order_by`: `[{"column_name", "ascending", "nulls_first"}]`.
    fn ordering(&self) -> Result<Vec<OrderBy>> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Key {
            column_name: String,
            ascending: Option<bool>,
            nulls_first: Option<bool>,
        }
        match &self.order_by {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(v) => {
                let keys: Vec<Key> = serde_json::from_value(v.clone()).map_err(|e| {
                    Error::invalid(format!(
                        "`order_by` must be [{{\"column_name\", \"ascending\", \"nulls_first\"}}]: {e}"
                    ))
                })?;
                Ok(keys
                    .into_iter()
                    .map(|k| {
                        let ascending = k.ascending.unwrap_or(true);
                        OrderBy {
                            column: k.column_name,
                            ascending,
                            // DataFusion's default: nulls first when descending.
                            nulls_first: k.nulls_first.unwrap_or(!ascending),
                        }
                    })
                    .collect())
            }
        }
    }
}

/// `vector` as one list of numbers or a list of such lists.
fn parse_vectors(v: &Value) -> Result<Vec<Vec<f32>>> {
    let bad = || {
        Error::invalid(format!(
            "`vector` must be a list of numbers or a list of lists of numbers, got {}",
            preview(v)
        ))
    };
    let list = v.as_array().ok_or_else(bad)?;
    let one = |a: &Value| -> Result<Vec<f32>> {
        a.as_array()
            .ok_or_else(bad)?
            .iter()
            .map(|x| x.as_f64().map(|f| f as f32).ok_or_else(bad))
            .collect()
    };
    if list.iter().all(Value::is_number) {
        return one(v).map(|x| vec![x]);
    }
    list.iter().map(one).collect()
}

/// The start of a JSON value, for error messages.
fn preview(v: &Value) -> String {
    let s = v.to_string();
    match s.char_indices().nth(80) {
        Some((i, _)) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// Whether `req`'s search filters before ranking (true for a plain scan).
fn prefilter_of(req: &QueryRequest) -> bool {
    match (&req.nearest, &req.full_text) {
        (Some(q), _) => q.prefilter,
        (None, Some(t)) => t.prefilter,
        (None, None) => true,
    }
}

/// The body the official client sends for `req` at `version` (null:
/// latest): `k`, `prefilter`, `vector` and `version` always; the vector
/// fields with their nulls as the client sends them.
pub fn query_body(req: &QueryRequest, version: Option<u64>) -> Value {
    let mut body = json!({
        "prefilter": prefilter_of(req),
        "version": version,
    });
    if req.base_only {
        body["use_lsm"] = json!(false);
    }
    match &req.nearest {
        None if req.full_text.is_some() => {
            // As the official client sends a full-text search: the structured query, k 10 unless
            // a limit is set.
            body["k"] = json!(req.limit.unwrap_or(crate::vector::DEFAULT_K));
            body["vector"] = json!([]);
            if let Some(t) = &req.full_text {
                body["full_text_query"] = json!({ "query": t.query });
                if t.fast_search {
                    body["fast_search"] = json!(true);
                }
            }
        }
        None => {
            body["k"] = json!(req.limit.map_or(i64::MAX as u64, |k| k as u64));
            body["vector"] = json!([]);
        }
        Some(q) => {
            body["k"] = json!(req.limit.unwrap_or(crate::vector::DEFAULT_K));
            body["vector"] = match q.vectors.as_slice() {
                [one] => json!(one),
                many => json!(many),
            };
            let t = &q.tuning;
            let nprobes = t.nprobes.or(t.minimum_nprobes).unwrap_or(20);
            body["nprobes"] = json!(nprobes);
            body["minimum_nprobes"] = json!(t.minimum_nprobes.unwrap_or(nprobes));
            body["maximum_nprobes"] = json!(t.maximum_nprobes.unwrap_or(nprobes));
            body["lower_bound"] = json!(q.lower_bound);
            body["upper_bound"] = json!(q.upper_bound);
            body["ef"] = json!(t.ef);
            body["refine_factor"] = json!(t.refine_factor);
            if let Some(c) = &q.column {
                body["vector_column"] = json!(c);
            }
            if let Some(d) = q.distance_type {
                body["distance_type"] = json!(d.as_str());
            }
            if t.bypass_vector_index {
                body["bypass_vector_index"] = json!(true);
            }
            if t.fast_search {
                body["fast_search"] = json!(true);
            }
        }
    }
    if let Some(f) = &req.filter {
        body["filter"] = json!(f);
    }
    if let Some(c) = &req.columns {
        body["columns"] = json!(c);
    }
    if let Some(p) = &req.projections {
        let map: serde_json::Map<String, Value> =
            p.iter().map(|(a, e)| (a.clone(), json!(e))).collect();
        body["columns"] = Value::Object(map);
    }
    if !req.order_by.is_empty() {
        body["order_by"] = json!(req
            .order_by
            .iter()
            .map(|o| json!({"column_name": o.column, "ascending": o.ascending, "nulls_first": o.nulls_first}))
            .collect::<Vec<_>>());
    }
    if let Some(o) = req.offset {
        body["offset"] = json!(o);
    }
    if req.with_row_id {
        body["with_row_id"] = json!(true);
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(v: Value) -> Result<QueryRequest> {
        serde_json::from_value::<QueryBody>(v)
            .map_err(|e| Error::invalid(e.to_string()))?
            .to_request()
    }

    #[test]
    fn vector_requests_round_trip() {
        let mut q = VectorQuery::new(vec![0.5, -1.0, 2.0]);
        q.column = Some("v".into());
        q.distance_type = Some(DistanceType::Cosine);
        q.prefilter = false;
        q.lower_bound = Some(0.25);
        q.upper_bound = Some(4.0);
        q.tuning.ef = Some(64);
        q.tuning.refine_factor = Some(3);
        q.tuning.bypass_vector_index = true;
        let req = QueryRequest {
            filter: Some("id > 1".into()),
            columns: Some(vec!["id".into()]),
            limit: Some(7),
            offset: Some(2),
            with_row_id: true,
            nearest: Some(q),
            ..Default::default()
        };
        let mut want = req.clone();
        if let Some(n) = want.nearest.as_mut() {
            n.tuning.nprobes = Some(20);
            n.tuning.minimum_nprobes = Some(20);
            n.tuning.maximum_nprobes = Some(20);
        }
        let back = parse(query_body(&req, Some(3))).expect("parse");
        assert_eq!(back.nearest, want.nearest);
        assert_eq!(
            (back.limit, back.offset, back.with_row_id),
            (Some(7), Some(2), true)
        );
        let multi = parse(json!({"vector": [[1.0, 2.0], [3.0, 4.0]], "k": 1})).expect("multi");
        assert_eq!(multi.nearest.map(|n| n.vectors.len()), Some(2));
    }

    #[test]
    fn projections_and_ordering_round_trip_in_order() {
        let req = QueryRequest {
            projections: Some(vec![
                ("z".into(), "id + 1".into()),
                ("a".into(), "upper(s)".into()),
            ]),
            order_by: vec![
                OrderBy {
                    column: "s".into(),
                    ascending: false,
                    nulls_first: true,
                },
                OrderBy {
                    column: "id".into(),
                    ascending: true,
                    nulls_first: false,
                },
            ],
            ..Default::default()
        };
        let body = query_body(&req, None);
        let text = body.to_string();
        assert!(text.find("\"z\"") < text.find("\"a\""), "{text}");
        let back = parse(body).expect("parse");
        assert_eq!(
            (back.projections, back.order_by),
            (req.projections, req.order_by)
        );
        // Every alias its own column: a list of names.
        let plain = parse(json!({"vector": [], "columns": {"id": "id", "s": "s"}})).expect("plain");
        assert_eq!(
            (plain.columns, plain.projections),
            (Some(vec!["id".into(), "s".into()]), None)
        );
        // Missing directions: ascending, nulls last; descending: nulls first.
        let d = parse(json!({"order_by": [{"column_name": "v", "ascending": false}]})).expect("d");
        assert!(d.order_by[0].nulls_first);
    }

    #[test]
    fn full_text_bodies_round_trip() {
        let legacy = parse(
            json!({"vector": [], "k": 10, "full_text_query": {"columns": ["t"], "query": "a b"}}),
        )
        .expect("legacy");
        assert!(matches!(
            legacy.full_text,
            Some(TextSearch {
                query: memwal_fts::FtsQuery::Match(_),
                prefilter: true,
                fast_search: false
            })
        ));
        let q = json!({"match": {"column": "t", "terms": "a", "boost": 1.0, "fuzziness": 0,
            "max_expansions": 50, "operator": "And", "prefix_length": 0}});
        let req = parse(json!({"vector": [], "k": 5, "full_text_query": {"query": q}}))
            .expect("structured");
        assert_eq!(req.limit, Some(5));
        let body = query_body(&req, None);
        assert_eq!(body["full_text_query"]["query"], q);
        assert_eq!(parse(body).expect("again").full_text, req.full_text);
        // A postfilter and fast_search travel beside the query, as the official clients send them.
        let req = parse(
            json!({"vector": [], "k": 5, "prefilter": false, "fast_search": true,
            "full_text_query": {"query": q}}),
        )
        .expect("options");
        let t = req.full_text.as_ref().expect("text");
        assert_eq!((t.prefilter, t.fast_search), (false, true));
        let body = query_body(&req, None);
        assert_eq!(
            (&body["prefilter"], &body["fast_search"]),
            (&json!(false), &json!(true))
        );
        assert_eq!(parse(body).expect("again").full_text, req.full_text);
    }

    #[test]
    fn bad_bodies_name_the_field() {
        let e = parse(json!({"vector": [1.0, "x"]})).expect_err("string");
        assert!(e.to_string().contains("`vector`"), "{e}");
        let e = parse(json!({"vector": [1.0], "distance_type": "manhattan"})).expect_err("dt");
        assert!(e.to_string().contains("manhattan"), "{e}");
        // Hamming is a distance of binary vectors: read here, checked against the column by the plan.
        let q = parse(json!({"vector": [1.0], "distance_type": "hamming"})).expect("hamming");
        let d = q.nearest.as_ref().and_then(|n| n.distance_type);
        assert_eq!(d, Some(crate::query::DistanceType::Hamming));
        let e = parse(
            json!({"full_text_query": {"query": {"match": {"terms": "a", "fuzziness": -1}}}}),
        )
        .expect_err("fts");
        assert!(e.to_string().contains("full_text_query"), "{e}");
        let e = parse(json!({"lower_bound": 1.0})).expect_err("bound");
        assert!(e.to_string().contains("lower_bound"), "{e}");
    }
}
