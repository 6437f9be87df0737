//! memwal-fts: the full-text-search engine of memwal, as LanceDB's FTS behaves.
//!
//! - `params.rs`: the FTS index parameters (Lance's `InvertedIndexParams`), read leniently.
//! - `analyzer.rs`: text to tokens with the `lance-tokenizer` crate LanceDB runs.
//! - `segment.rs`: an immutable inverted index over some rows; `codec.rs` its bytes; `concat.rs`
//!   joins segments built apart (a build's threads).
//! - `corpus.rs`: a column at query time: segments, unindexed rows, live rows, global statistics.
//! - `bm25.rs`: the score. `query.rs`: the query types and their wire JSON.
//! - `fuzzy.rs`, `phrase.rs`: term expansion and phrase positions. `search.rs`: runs a query;
//!   `walk.rs`: its match and phrase leaves over sorted postings (merge, leapfrog intersection);
//!   `wand.rs`: the top rows of an Or match by block-max WAND over `blocks.rs`'s block summaries.
//!
//! No storage, no Arrow: callers (memwal-core's tables) hand in texts and row ids and keep the
//! segment bytes wherever they keep index files.

pub mod analyzer;
mod blocks;
pub mod bm25;
pub mod codec;
mod concat;
pub mod corpus;
pub mod error;
mod fuzzy;
pub mod params;
mod phrase;
pub mod query;
pub mod remap;
pub mod search;
pub mod segment;
mod walk;
mod wand;

pub use analyzer::Analyzer;
pub use blocks::DEFAULT_BLOCK_SIZE;
pub use corpus::{ColumnInput, Corpus, LiveRows, UnindexedRow};
pub use error::{FtsError, Result};
pub use params::FtsParams;
pub use query::{parse_full_text_query, FtsQuery, MatchQuery, Operator};
pub use search::{search, ScoredRow};
pub use segment::{Segment, SegmentBuilder};
