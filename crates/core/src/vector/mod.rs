//! Vector search: the query ([`VectorQuery`], carried by
//! [`crate::QueryRequest::nearest`]), its validation against a schema
//! ([`plan::VectorPlan`]), and an exact (flat) search over any set of row
//! tiers ([`search::search`]): a native table's fragments, or a served
//! table's memtables and base. Distances as Lance computes them: L2 is the
//! squared distance, cosine is `1 - cos`, dot is `1 - x.y`.

pub mod kernels;
pub mod plan;
pub mod search;
pub(crate) mod topk;

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};

pub use plan::VectorPlan;
pub use search::{search, Ann, AnnIndex, RowIds, Tier};

/// Name of the distance column of a vector query's answer.
pub const DISTANCE_COLUMN: &str = "_distance";
/// Name of the row-id column (`withRowId()`).
pub const ROW_ID_COLUMN: &str = "_rowid";
/// Name of the column telling which query vector a row answers (several
/// query vectors).
pub const QUERY_INDEX_COLUMN: &str = "query_index";
/// `k` when the query does not say.
pub const DEFAULT_K: usize = 10;

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
}

impl DistanceType {
    /// The wire name (`l2`, `cosine`, `dot`).
    pub fn as_str(self) -> &'static str {
        match self {
            DistanceType::L2 => "l2",
            DistanceType::Cosine => "cosine",
            DistanceType::Dot => "dot",
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
            "hamming" => Err(Error::not_supported(
                "distance type \"hamming\" is not supported by memwal yet (l2, cosine and dot are)",
            )),
            other => Err(Error::invalid(format!(
                "unknown distance type \"{other}\" (expected l2, cosine or dot)"
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
