//! Indexes: what a caller asks for ([`IndexRequest`]), what a table
//! reports ([`IndexInfo`]), and the IVF index itself ([`ivf`]: partitions
//! from [`kmeans`], optional product quantisation from [`pq`]), stored as
//! Arrow IPC files by [`store`]; and the BTREE scalar index ([`btree`]). A version's indexes are recorded in its
//! manifest ([`crate::manifest::IndexMeta`]) with the fragments they cover;
//! rows of other fragments are "unindexed" and searched exactly.

pub mod btree;
pub mod fts;
pub mod hierarchy;
pub mod hnsw;
pub mod ivf;
pub mod kmeans;
pub mod pq;
pub mod rq;
pub mod store;

use std::fmt;
use std::str::FromStr;

use crate::error::{Error, Result};
use crate::query::DistanceType;

/// Index types memwal builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IndexType {
    /// IVF partitions holding the vectors.
    IvfFlat,
    /// IVF partitions holding product-quantiser codes.
    IvfPq,
    /// IVF partitions holding RaBitQ codes ([`rq`]).
    IvfRq,
    /// IVF partitions, each an HNSW graph over scalar-quantised vectors.
    IvfHnswSq,
    /// A scalar column's values, sorted ([`btree`]).
    BTree,
    /// Lance's index for low-cardinality columns: built as memwal's sorted values and row ids (the
    /// BTREE's structure, exact for `=`, `IN` and ranges), not as Lance's per-value bitmaps.
    Bitmap,
    /// Full-text search: an inverted index over a string column ([`fts`], `memwal-fts`).
    Fts,
}

/// Index types of the protocol memwal does not build yet.
const NOT_YET: &[&str] = &["IVF_SQ", "IVF_HNSW_PQ", "IVF_HNSW_FLAT", "LABEL_LIST", "FM"];

impl IndexType {
    /// The wire name (`IVF_FLAT`, `IVF_PQ`).
    pub fn as_str(self) -> &'static str {
        match self {
            IndexType::IvfFlat => "IVF_FLAT",
            IndexType::IvfPq => "IVF_PQ",
            IndexType::IvfRq => "IVF_RQ",
            IndexType::IvfHnswSq => "IVF_HNSW_SQ",
            IndexType::BTree => "BTREE",
            IndexType::Bitmap => "BITMAP",
            IndexType::Fts => "FTS",
        }
    }

    /// Whether it indexes vectors.
    pub fn is_vector(self) -> bool {
        !matches!(self, IndexType::BTree | IndexType::Bitmap | IndexType::Fts)
    }

    /// Whether an index of the wire type `name` is a scalar one read as a [`btree::BTreeIndex`].
    pub fn is_sorted_scalar(name: &str) -> bool {
        name == IndexType::BTree.as_str() || name == IndexType::Bitmap.as_str()
    }
}

impl fmt::Display for IndexType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for IndexType {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self> {
        let up = s.to_ascii_uppercase();
        match up.as_str() {
            "IVF_FLAT" => Ok(IndexType::IvfFlat),
            "IVF_PQ" => Ok(IndexType::IvfPq),
            "IVF_RQ" => Ok(IndexType::IvfRq),
            "IVF_HNSW_SQ" => Ok(IndexType::IvfHnswSq),
            "BTREE" => Ok(IndexType::BTree),
            "BITMAP" => Ok(IndexType::Bitmap),
            "FTS" | "INVERTED" => Ok(IndexType::Fts),
            other if NOT_YET.contains(&other) => Err(Error::not_supported(format!(
                "index type {other} is not supported by memwal yet (IVF_FLAT, IVF_PQ, IVF_RQ, IVF_HNSW_SQ, BTREE, BITMAP and FTS are)"
            ))),
            other => Err(Error::invalid(format!(
                "unknown index type \"{other}\" (memwal builds IVF_FLAT, IVF_PQ, IVF_RQ, IVF_HNSW_SQ, BTREE, BITMAP and FTS)"
            ))),
        }
    }
}

/// A request to build an index (the official clients' `create_index`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct IndexRequest {
    /// The column.
    pub column: String,
    /// The index name (`{column}_idx` when `None`).
    pub name: Option<String>,
    /// Replace an index of the same name or column (else it is an error).
    pub replace: bool,
    /// The type (`IVF_PQ` for a vector column when `None`).
    pub index_type: Option<IndexType>,
    /// Distance (`l2` when `None`).
    pub distance_type: Option<DistanceType>,
    /// IVF partitions (about `sqrt(rows)` when `None`).
    pub num_partitions: Option<u32>,
    /// Rows per partition wanted (when `num_partitions` is `None`).
    pub target_partition_size: Option<u32>,
    /// PQ sub-vectors (dimension / 16, or / 8, when `None`).
    pub num_sub_vectors: Option<u32>,
    /// PQ bits per code, 4 or 8 (8 when `None`); IVF_RQ bits per dimension, 1 to 9 (1 when `None`).
    pub num_bits: Option<u32>,
    /// Training rows per centroid (256 when `None`).
    pub sample_rate: Option<u32>,
    /// k-means iterations (50 when `None`).
    pub max_iterations: Option<u32>,
    /// HNSW links per node (20 when `None`).
    pub m: Option<u32>,
    /// HNSW build width (300 when `None`).
    pub ef_construction: Option<u32>,
    /// FTS: the inverted index's parameters (Lance's defaults when `None`).
    pub fts: Option<memwal_fts::FtsParams>,
}

impl IndexRequest {
    /// A request for the default index on `column`.
    pub fn new(column: impl Into<String>) -> Self {
        Self {
            column: column.into(),
            replace: true,
            ..Self::default()
        }
    }

    /// The name the index gets.
    pub fn index_name(&self) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("{}_idx", self.column))
    }

    /// Checks a request for a scalar index: none of the vector
    /// parameters may be given (they would be ignored).
    pub fn check_scalar(&self) -> Result<()> {
        let given = [
            ("distance_type", self.distance_type.is_some()),
            ("sample_rate", self.sample_rate.is_some()),
            ("max_iterations", self.max_iterations.is_some()),
            ("num_partitions", self.num_partitions.is_some()),
            (
                "target_partition_size",
                self.target_partition_size.is_some(),
            ),
            ("num_sub_vectors", self.num_sub_vectors.is_some()),
            ("num_bits", self.num_bits.is_some()),
            ("m", self.m.is_some()),
            ("ef_construction", self.ef_construction.is_some()),
        ];
        match given.iter().find(|(_, g)| *g) {
            Some((name, _)) => Err(Error::invalid(format!(
                "{name} applies to vector indexes, not to the {} index on '{}'",
                self.index_type.unwrap_or(IndexType::BTree),
                self.column
            ))),
            None => Ok(()),
        }
    }

    /// The IVF build parameters for a vector column of `dim`.
    pub fn ivf_params(&self, dim: usize) -> Result<ivf::IvfParams> {
        let t = self.index_type.unwrap_or(IndexType::IvfPq);
        let num_partitions = match (t, positive("num_partitions", self.num_partitions)?) {
            // One graph over every row unless asked (as @lancedb/lancedb's hnswSq).
            (IndexType::IvfHnswSq, None) if self.target_partition_size.is_none() => Some(1),
            (_, n) => n,
        };
        Ok(ivf::IvfParams {
            distance: self.distance_type.unwrap_or_default(),
            num_partitions,
            target_partition_size: positive("target_partition_size", self.target_partition_size)?,
            sample_rate: positive("sample_rate", self.sample_rate)?
                .unwrap_or(ivf::DEFAULT_SAMPLE_RATE),
            max_iterations: at_most(
                "max_iterations",
                positive("max_iterations", self.max_iterations)?,
                ivf::MAX_ITERATIONS_LIMIT,
            )?
            .unwrap_or(ivf::DEFAULT_MAX_ITERATIONS),
            pq: self.pq_params(t, dim)?,
            hnsw: self.hnsw_params(t)?,
            rq: self.rq_bits(t)?,
        })
    }

    /// RaBitQ bits per dimension for IVF_RQ (Lance's default 1); `None` for other types.
    fn rq_bits(&self, t: IndexType) -> Result<Option<u8>> {
        if t != IndexType::IvfRq {
            return Ok(None);
        }
        let bits = self.num_bits.unwrap_or(1);
        u8::try_from(bits)
            .ok()
            .filter(|b| (1..=rq::MAX_BITS).contains(b))
            .map(Some)
            .ok_or_else(|| {
                Error::invalid(format!(
                    "num_bits for IVF_RQ must be 1 to {}, got {bits}",
                    rq::MAX_BITS
                ))
            })
    }

    /// `(num_sub_vectors, num_bits)` for IVF_PQ; refuses them elsewhere.
    fn pq_params(&self, t: IndexType, dim: usize) -> Result<Option<(usize, u8)>> {
        if t != IndexType::IvfPq {
            if self.num_sub_vectors.is_some() {
                return Err(Error::invalid(format!(
                    "num_sub_vectors applies to IVF_PQ, not {t}"
                )));
            }
            if self.num_bits.is_some() && t != IndexType::IvfRq {
                return Err(Error::invalid(format!(
                    "num_bits applies to IVF_PQ and IVF_RQ, not {t}"
                )));
            }
            return Ok(None);
        }
        let m = match positive("num_sub_vectors", self.num_sub_vectors)? {
            Some(m) => m,
            None if dim.is_multiple_of(16) => dim / 16,
            None if dim.is_multiple_of(8) => dim / 8,
            None => 1,
        };
        let bits = self.num_bits.unwrap_or(8);
        let bits = u8::try_from(bits)
            .ok()
            .filter(|b| *b == 4 || *b == 8)
            .ok_or_else(|| Error::invalid(format!("num_bits must be 4 or 8, got {bits}")))?;
        if !dim.is_multiple_of(m) {
            return Err(Error::invalid(format!(
                "num_sub_vectors ({m}) must divide the dimension of column '{}' ({dim})",
                self.column
            )));
        }
        Ok(Some((m, bits)))
    }

    /// `m` and `ef_construction` for IVF_HNSW_SQ; refuses them elsewhere.
    fn hnsw_params(&self, t: IndexType) -> Result<Option<hnsw::HnswParams>> {
        if t != IndexType::IvfHnswSq {
            if self.m.is_some() || self.ef_construction.is_some() {
                return Err(Error::invalid(format!(
                    "m and ef_construction apply to IVF_HNSW_SQ, not {t}"
                )));
            }
            return Ok(None);
        }
        Ok(Some(hnsw::HnswParams {
            m: at_most("m", positive("m", self.m)?, 512)?.unwrap_or(20),
            ef_construction: at_most(
                "ef_construction",
                positive("ef_construction", self.ef_construction)?,
                10_000,
            )?
            .unwrap_or(300),
        }))
    }
}

/// `v`, refusing 0.
fn positive(name: &str, v: Option<u32>) -> Result<Option<usize>> {
    match v {
        Some(0) => Err(Error::invalid(format!("{name} must be at least 1"))),
        other => Ok(other.map(|x| x as usize)),
    }
}

/// `v`, refusing more than `max`.
fn at_most(name: &str, v: Option<usize>, max: usize) -> Result<Option<usize>> {
    match v {
        Some(n) if n > max => Err(Error::invalid(format!(
            "{name} must be at most {max}, got {n}"
        ))),
        other => Ok(other),
    }
}

/// An index as `listIndices` / `indexStats` report it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexInfo {
    /// Its name.
    pub name: String,
    /// The wire type name (`IVF_PQ`, ...).
    pub index_type: String,
    /// The indexed columns.
    pub columns: Vec<String>,
    /// The distance (vector indexes).
    pub distance_type: Option<String>,
    /// Live rows the index holds.
    pub num_indexed_rows: u64,
    /// Live rows it does not hold yet (searched exactly; `optimize` adds them).
    pub num_unindexed_rows: u64,
    /// Lance's index uuid: the id its first segment's files were written under (a rebuild changes it).
    pub uuid: Option<String>,
    /// Separately written parts (an FTS index gains one per fold; other kinds have one).
    pub num_segments: u64,
    /// Bytes of its files, when known.
    pub size_bytes: Option<u64>,
    /// When it was built, in ms since the Unix epoch, when recorded.
    pub created_at_ms: Option<u64>,
    /// Its parameters as built, as JSON text (Lance's `index_details`).
    pub details: Option<String>,
    /// Lance's format version of this kind of index, where memwal's answers Lance's (FTS: 2, or 3
    /// with 256-document posting blocks; vector indexes 1); `None` otherwise.
    pub index_version: Option<u32>,
}
