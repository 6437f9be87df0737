//! What a read asks for: [`QueryRequest`] (filter, columns or SQL
//! projections, order, paging) and, for a vector search, [`VectorQuery`]
//! with its [`DistanceType`] and [`IndexTuning`]. Plain data: the native
//! table ([`crate::table`], [`crate::vector`]) answers it, the remote client
//! and the server carry it over the wire ([`crate::protocol`]).

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

/// A scan (filter, projection, paging) or, with `nearest`, a vector search.
#[derive(Debug, Clone, Default)]
pub struct QueryRequest {
    /// SQL filter over the table's columns.
    pub filter: Option<String>,
    /// Columns to return (all when `None`).
    pub columns: Option<Vec<String>>,
    /// SQL projections `(alias, expression)` to return instead of
    /// `columns` (`select({alias: "sql"})`).
    pub projections: Option<Vec<(String, String)>>,
    /// Sort order of a plain query's rows, applied before offset and limit.
    pub order_by: Vec<OrderBy>,
    /// At most this many rows.
    pub limit: Option<usize>,
    /// Skip this many matching rows first.
    pub offset: Option<usize>,
    /// Add a `_rowid` column (UInt64; stable for a row within a version).
    pub with_row_id: bool,
    /// Rank rows by distance to query vectors (a vector query: `limit` is
    /// `k`, 10 when `None`).
    pub nearest: Option<VectorQuery>,
    /// Rank rows by BM25 over the FTS-indexed columns (a full-text query: `limit` is 10 when
    /// `None`; the answer has `_score`). Leaves without a column search every indexed column.
    pub full_text: Option<TextSearch>,
    /// Read the base table only, skipping the rows a served table's MemWAL
    /// buffers (LanceDB 0.39's `use_lsm(false)`; a local table's rows are
    /// all in its base, so it reads the same).
    pub base_only: bool,
}

/// The full-text part of a query: what to match, and how the filter and the rows no index covers
/// take part (LanceDB's `prefilter` and `fast_search`, which the wire sends beside the query).
#[derive(Debug, Clone, PartialEq)]
pub struct TextSearch {
    /// The query (match, phrase, boost, multi_match, boolean).
    pub query: memwal_fts::FtsQuery,
    /// Filter before ranking (true, the default), or after: the filter then keeps what passes of
    /// the top `offset + limit` rows, so fewer may come back (LanceDB's postfilter).
    pub prefilter: bool,
    /// Only rows an FTS index covers (LanceDB's `fast_search`): rows written since the build (a
    /// served table's memtable rows among them) are neither answered nor counted in statistics.
    pub fast_search: bool,
}

impl TextSearch {
    /// A prefiltered search of every row.
    pub fn new(query: memwal_fts::FtsQuery) -> Self {
        Self {
            query,
            prefilter: true,
            fast_search: false,
        }
    }
}

/// One sort key of `order_by`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderBy {
    /// The column.
    pub column: String,
    /// Smallest first.
    pub ascending: bool,
    /// Nulls before every value.
    pub nulls_first: bool,
}

/// How distance is measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum DistanceType {
    /// Squared Euclidean distance.
    #[default]
    L2,
    /// `1 - cos(angle)`.
    Cosine,
    /// `1 - x.y`.
    Dot,
    /// Bits that differ, for binary vectors (a fixed-size list of uint8, 8 bits a byte). Computed as
    /// the squared L2 distance of the vectors' bits as 0 / 1 values, which it equals exactly.
    Hamming,
}

impl DistanceType {
    /// The wire name (`l2`, `cosine`, `dot`).
    pub fn as_str(self) -> &'static str {
        match self {
            DistanceType::L2 => "l2",
            DistanceType::Cosine => "cosine",
            DistanceType::Dot => "dot",
            DistanceType::Hamming => "hamming",
        }
    }
}

impl fmt::Display for DistanceType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for DistanceType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        match s.to_ascii_lowercase().as_str() {
            "l2" | "euclidean" => Ok(DistanceType::L2),
            "cosine" => Ok(DistanceType::Cosine),
            "dot" => Ok(DistanceType::Dot),
            "hamming" => Ok(DistanceType::Hamming),
            other => Err(Error::invalid(format!(
                "unknown distance type \"{other}\" (expected l2, cosine, dot or hamming)"
            ))),
        }
    }
}

/// The vector part of a query: what to rank rows by.
#[derive(Debug, Clone, PartialEq)]
pub struct VectorQuery {
    /// One or more query vectors; several give a `query_index` column.
    pub vectors: Vec<Vec<f32>>,
    /// The vector column (found by dimension when `None`).
    pub column: Option<String>,
    /// Distance (L2 when `None`).
    pub distance_type: Option<DistanceType>,
    /// Filter before ranking (true) or after (false: may return fewer).
    pub prefilter: bool,
    /// Only rows with `lower <= _distance`.
    pub lower_bound: Option<f32>,
    /// Only rows with `_distance < upper`.
    pub upper_bound: Option<f32>,
    /// Index tuning, accepted and passed on (flat search ignores them).
    pub tuning: IndexTuning,
}

impl Default for VectorQuery {
    fn default() -> Self {
        Self {
            vectors: Vec::new(),
            column: None,
            distance_type: None,
            prefilter: true,
            lower_bound: None,
            upper_bound: None,
            tuning: IndexTuning::default(),
        }
    }
}

impl VectorQuery {
    /// A query for the rows nearest to `vector`.
    pub fn new(vector: Vec<f32>) -> Self {
        Self {
            vectors: vec![vector],
            ..Self::default()
        }
    }
}

/// Parameters of index searches. Exact search has no use for them; they are
/// kept so that remote tables send them and indexes can honour them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexTuning {
    /// IVF partitions to probe (sets both bounds).
    pub nprobes: Option<u32>,
    /// IVF: probe at least this many partitions.
    pub minimum_nprobes: Option<u32>,
    /// IVF: probe at most this many (0: no maximum).
    pub maximum_nprobes: Option<u32>,
    /// HNSW search width.
    pub ef: Option<u32>,
    /// Re-rank `k * refine_factor` candidates exactly.
    pub refine_factor: Option<u32>,
    /// Skip any index (exact search).
    pub bypass_vector_index: bool,
    /// Search indexed rows only.
    pub fast_search: bool,
}
