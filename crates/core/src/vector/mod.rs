//! Vector search: a query's ([`crate::query::VectorQuery`], carried by
//! [`crate::query::QueryRequest::nearest`]) validation against a schema
//! ([`plan::VectorPlan`]), and an exact (flat) search over any set of row
//! tiers ([`search::search`]): a native table's fragments, or a served
//! table's memtables and base. Distances as Lance computes them: L2 is the
//! squared distance, cosine is `1 - cos`, dot is `1 - x.y`.

pub mod kernels;
pub mod plan;
pub mod search;
pub(crate) mod topk;

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

/// Most worker threads one search or index build uses.
const MAX_THREADS: usize = 8;

/// Worker threads for `work` units: one below `serial_below` (threads
/// would cost more than they save), else one per core up to
/// [`MAX_THREADS`]. The one rule for searches and index builds.
pub(crate) fn worker_threads(work: usize, serial_below: usize) -> usize {
    if work < serial_below {
        1
    } else {
        std::thread::available_parallelism().map_or(1, |t| t.get().min(MAX_THREADS))
    }
}
