//! The index routes' bodies: `create_index/` read into an
//! [`IndexRequest`] by the server and written from one by the remote
//! client; the answers of `index/list/` and `index/{name}/stats/`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

use crate::error::Result;
use crate::index::{IndexInfo, IndexRequest, IndexType};

/// The body of `create_index/` (an unknown field is an error naming it).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreateIndexBody {
    /// The column.
    pub column: String,
    /// `IVF_PQ`, `IVF_FLAT`, ... (absent: the column's default).
    pub index_type: Option<String>,
    /// The distance (`l2`, `cosine`, `dot`).
    pub metric_type: Option<String>,
    /// The index name.
    pub name: Option<String>,
    /// Replace an existing index (default true).
    pub replace: Option<bool>,
    /// IVF partitions.
    pub num_partitions: Option<u32>,
    /// IVF rows per partition wanted.
    pub target_partition_size: Option<u32>,
    /// Training rows per centroid.
    pub sample_rate: Option<u32>,
    /// k-means iterations.
    pub max_iterations: Option<u32>,
    /// PQ sub-vectors.
    pub num_sub_vectors: Option<u32>,
    /// PQ bits per code.
    pub num_bits: Option<u32>,
    /// HNSW neighbours per node.
    pub m: Option<u32>,
    /// HNSW build width.
    pub ef_construction: Option<u32>,
}

impl CreateIndexBody {
    /// The request, every field checked.
    pub fn to_request(&self) -> Result<IndexRequest> {
        let index_type = self
            .index_type
            .as_deref()
            .map(str::parse::<IndexType>)
            .transpose()?;
        Ok(IndexRequest {
            column: self.column.clone(),
            name: self.name.clone(),
            replace: self.replace.unwrap_or(true),
            index_type,
            distance_type: self.metric_type.as_deref().map(str::parse).transpose()?,
            num_partitions: self.num_partitions,
            target_partition_size: self.target_partition_size,
            num_sub_vectors: self.num_sub_vectors,
            num_bits: self.num_bits,
            sample_rate: self.sample_rate,
            max_iterations: self.max_iterations,
            m: self.m,
            ef_construction: self.ef_construction,
            fts: None,
        })
    }
}

/// Reads a `create_index/` body: an FTS index (`index_type` `FTS` or `INVERTED`) takes Lance's
/// inverted-index parameters flattened in, read leniently as Lance reads them (unknown fields
/// ignored, unsupported tokenizers refused by name); every other type goes through
/// [`CreateIndexBody`], where an unknown field is an error naming it.
pub fn create_index_request(body: &Value) -> Result<IndexRequest> {
    let t = body
        .get("index_type")
        .and_then(Value::as_str)
        .map(str::to_ascii_uppercase);
    if !matches!(t.as_deref(), Some("FTS" | "INVERTED")) {
        let b: CreateIndexBody = serde_json::from_value(body.clone())
            .map_err(|e| crate::error::Error::invalid(format!("malformed JSON body: {e}")))?;
        return b.to_request();
    }
    let column = body
        .get("column")
        .and_then(Value::as_str)
        .ok_or_else(|| crate::error::Error::invalid("create_index needs a `column`"))?;
    Ok(IndexRequest {
        name: body.get("name").and_then(Value::as_str).map(str::to_string),
        replace: body.get("replace").and_then(Value::as_bool).unwrap_or(true),
        index_type: Some(IndexType::Fts),
        fts: Some(memwal_fts::FtsParams::from_json(body)?),
        ..IndexRequest::new(column)
    })
}

/// The `create_index/` body for `req`, as the official clients write it.
pub fn create_index_body(req: &IndexRequest) -> Value {
    let mut m = Map::new();
    m.insert("column".into(), json!(req.column));
    let t = req.index_type.unwrap_or(IndexType::IvfPq);
    m.insert("index_type".into(), json!(t.as_str()));
    if t == IndexType::Fts {
        // The inverted index's parameters, flattened in, defaults included (as the clients send).
        if let Ok(Value::Object(p)) = serde_json::to_value(req.fts.clone().unwrap_or_default()) {
            m.extend(p);
        }
    }
    if !t.is_vector() {
        // A scalar index: the official clients send no parameters.
        name_and_replace(&mut m, req);
        return Value::Object(m);
    }
    m.insert(
        "metric_type".into(),
        json!(req.distance_type.unwrap_or_default().as_str()),
    );
    let mut opt = |k: &str, v: Option<u32>| {
        if let Some(v) = v {
            m.insert(k.into(), json!(v));
        }
    };
    opt("num_partitions", req.num_partitions);
    opt("target_partition_size", req.target_partition_size);
    opt("num_sub_vectors", req.num_sub_vectors);
    opt("m", req.m);
    opt("ef_construction", req.ef_construction);
    opt("num_bits", req.num_bits);
    // The official clients always send these two, defaults included.
    opt(
        "sample_rate",
        Some(
            req.sample_rate
                .unwrap_or(crate::index::ivf::DEFAULT_SAMPLE_RATE as u32),
        ),
    );
    opt(
        "max_iterations",
        Some(
            req.max_iterations
                .unwrap_or(crate::index::ivf::DEFAULT_MAX_ITERATIONS as u32),
        ),
    );
    name_and_replace(&mut m, req);
    Value::Object(m)
}

/// `name` when given, `replace` when false (as the official clients).
fn name_and_replace(m: &mut Map<String, Value>, req: &IndexRequest) {
    if let Some(n) = &req.name {
        m.insert("name".into(), json!(n));
    }
    if !req.replace {
        m.insert("replace".into(), json!(false));
    }
}

/// One entry of `index/list/`'s answer.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexEntry {
    /// Its name.
    pub index_name: String,
    /// The indexed columns.
    pub columns: Vec<String>,
    /// `IVF_PQ`, ...
    #[serde(default)]
    pub index_type: Option<String>,
    /// Live rows held.
    #[serde(default)]
    pub num_indexed_rows: Option<u64>,
    /// Live rows not held yet.
    #[serde(default)]
    pub num_unindexed_rows: Option<u64>,
    /// `l2`, `cosine`, `dot`.
    #[serde(default)]
    pub distance_type: Option<String>,
    /// The uuid of its first segment (LanceDB's enriched answer, as are the fields below).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_uuid: Option<String>,
    /// Separately written parts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub num_segments: Option<u64>,
    /// Bytes of its files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// When it was built: ms since the Unix epoch (memwal sends these), or RFC 3339 text (LanceDB Cloud may).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<CreatedAt>,
    /// Its parameters as built, as JSON text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_details: Option<String>,
    /// Lance's format version of the index.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index_version: Option<u32>,
}

/// An index's `created_at` on the wire, in either form the official clients read.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(untagged)]
pub enum CreatedAt {
    /// ms since the Unix epoch.
    Millis(u64),
    /// RFC 3339 (not read into ms yet: reported as unknown).
    Text(String),
}

impl IndexEntry {
    /// The entry as an [`IndexInfo`], when it carries the type and counts.
    pub fn to_info(&self) -> Option<IndexInfo> {
        Some(IndexInfo {
            name: self.index_name.clone(),
            index_type: self.index_type.clone()?,
            columns: self.columns.clone(),
            distance_type: self.distance_type.clone(),
            num_indexed_rows: self.num_indexed_rows?,
            num_unindexed_rows: self.num_unindexed_rows?,
            uuid: self.index_uuid.clone(),
            num_segments: self.num_segments.unwrap_or(1),
            size_bytes: self.size_bytes,
            created_at_ms: match self.created_at {
                Some(CreatedAt::Millis(ms)) => Some(ms),
                _ => None,
            },
            details: self.index_details.clone(),
            index_version: self.index_version,
        })
    }
}

/// The answer of `index/list/`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexListResponse {
    /// The indexes.
    pub indexes: Vec<IndexEntry>,
}

/// The answer of `index/{name}/stats/`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct IndexStatsResponse {
    /// Live rows held.
    pub num_indexed_rows: u64,
    /// Live rows not held yet.
    pub num_unindexed_rows: u64,
    /// `IVF_PQ`, ...
    pub index_type: String,
    /// `l2`, `cosine`, `dot`.
    #[serde(default)]
    pub distance_type: Option<String>,
    /// Index segments.
    #[serde(default)]
    pub num_indices: Option<u64>,
}

impl From<&IndexInfo> for IndexEntry {
    fn from(i: &IndexInfo) -> Self {
        Self {
            index_name: i.name.clone(),
            columns: i.columns.clone(),
            index_type: Some(i.index_type.clone()),
            num_indexed_rows: Some(i.num_indexed_rows),
            num_unindexed_rows: Some(i.num_unindexed_rows),
            distance_type: i.distance_type.clone(),
            index_uuid: i.uuid.clone(),
            num_segments: Some(i.num_segments),
            size_bytes: i.size_bytes,
            created_at: i.created_at_ms.map(CreatedAt::Millis),
            index_details: i.details.clone(),
            index_version: i.index_version,
        }
    }
}

impl From<&IndexInfo> for IndexStatsResponse {
    fn from(i: &IndexInfo) -> Self {
        Self {
            num_indexed_rows: i.num_indexed_rows,
            num_unindexed_rows: i.num_unindexed_rows,
            index_type: i.index_type.clone(),
            distance_type: i.distance_type.clone(),
            num_indices: Some(i.num_segments),
        }
    }
}

impl IndexStatsResponse {
    /// The stats as an [`IndexInfo`] of index `name`.
    pub fn into_info(self, name: &str, columns: Vec<String>) -> IndexInfo {
        IndexInfo {
            name: name.to_string(),
            index_type: self.index_type,
            columns,
            distance_type: self.distance_type,
            num_indexed_rows: self.num_indexed_rows,
            num_unindexed_rows: self.num_unindexed_rows,
            uuid: None,
            num_segments: self.num_indices.unwrap_or(1),
            size_bytes: None,
            created_at_ms: None,
            details: None,
            index_version: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fts_bodies_are_read_leniently() {
        let body = json!({"column": "t", "index_type": "FTS", "with_position": true, "ascii_folding": false,
            "block_size": 128, "lance_tokenizer": "text"});
        let req = create_index_request(&body).expect("fts");
        let p = req.fts.clone().expect("params");
        assert!(p.with_position && !p.ascii_folding);
        assert_eq!(
            create_index_request(&create_index_body(&req)).expect("again"),
            req
        );
        let bad =
            json!({"column": "t", "index_type": "INVERTED", "base_tokenizer": "jieba/default"});
        assert!(create_index_request(&bad)
            .expect_err("jieba")
            .to_string()
            .contains("base_tokenizer"));
        let strict = json!({"column": "v", "index_type": "IVF_PQ", "ascii_folding": true});
        assert!(create_index_request(&strict)
            .expect_err("unknown")
            .to_string()
            .contains("ascii_folding"));
    }

    #[test]
    fn create_index_body_round_trips_and_refuses() {
        let req = IndexRequest {
            num_partitions: Some(64),
            num_sub_vectors: Some(8),
            name: Some("vi".into()),
            replace: false,
            ..IndexRequest::new("v")
        };
        let body: CreateIndexBody = serde_json::from_value(create_index_body(&req)).expect("body");
        let back = body.to_request().expect("request");
        assert_eq!(
            back,
            IndexRequest {
                index_type: Some(IndexType::IvfPq),
                distance_type: Some(Default::default()),
                sample_rate: Some(256),
                max_iterations: Some(50),
                ..req
            }
        );
        let bad = |v: Value| {
            serde_json::from_value::<CreateIndexBody>(v)
                .map_err(|e| e.to_string())
                .and_then(|b| b.to_request().map_err(|e| e.to_string()))
                .expect_err("refused")
        };
        assert!(bad(json!({"column": "v", "bogus": 1})).contains("bogus"));
        assert!(bad(json!({"column": "v", "index_type": "IVF_HNSW_PQ"})).contains("not supported"));
        assert!(bad(json!({"column": "v", "index_type": "WHAT"})).contains("unknown index type"));
        assert!(bad(json!({"column": "v", "metric_type": "manhattan"})).contains("manhattan"));
    }

    #[test]
    fn enriched_list_entries_are_read_in_both_created_at_forms() {
        // LanceDB Cloud's shape (its client's own test): RFC 3339 time, details as JSON text.
        let cloud: IndexListResponse = serde_json::from_value(json!({"indexes": [{
            "index_name": "vector_idx", "index_uuid": "3fa85f64-5717-4562-b3fc-2c963f66afa6",
            "columns": ["vector"], "index_type": "IVF_PQ", "index_status": "done",
            "num_indexed_rows": 1000, "num_unindexed_rows": 50, "size_bytes": 204800, "num_segments": 2,
            "index_version": 1, "index_details": "{\"num_partitions\":16}",
            "created_at": "2026-06-18T21:37:36.637Z", "type_url": "type.googleapis.com/lance.index.vector.IvfPq"}]}))
        .expect("cloud answer");
        let info = cloud.indexes[0].to_info().expect("enriched");
        assert_eq!(
            (info.num_segments, info.size_bytes, info.created_at_ms),
            (2, Some(204800), None)
        );
        assert_eq!(info.details.as_deref(), Some("{\"num_partitions\":16}"));
        // memwal's own: ms since the epoch, round-tripped.
        let ours = IndexEntry::from(&IndexInfo {
            created_at_ms: Some(1_796_587_510_379),
            ..info
        });
        let text = serde_json::to_string(&ours).expect("json");
        assert!(text.contains("\"created_at\":1796587510379"), "{text}");
        let back: IndexEntry = serde_json::from_str(&text).expect("back");
        assert_eq!(
            back.to_info().and_then(|i| i.created_at_ms),
            Some(1_796_587_510_379)
        );
    }
}
