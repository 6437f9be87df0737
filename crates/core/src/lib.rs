//! memwal-core: the local table engine.
//!
//! Layers, bottom up: [`storage`] (files, create-new publish, fault
//! injection) -> [`manifest`] and [`fragment`] (the on-disk format) ->
//! [`table`] (versions, snapshots, commits with retry, reads and writes) and
//! [`merge`] (the builder, validation and the O(k) executor, using
//! [`keys`] and [`filter`]) -> [`db`] (a folder of tables). [`traits`]
//! defines what remote tables implement too; [`ipc`] converts Arrow IPC
//! bytes at the edges; [`vector`] ranks rows of any set of tiers by
//! distance (exact search, SIMD kernels).

pub mod db;
pub mod error;
pub mod filter;
pub mod fragment;
pub mod index;
pub mod ipc;
pub mod json_schema;
pub mod keys;
pub mod manifest;
pub mod merge;
pub mod name;
pub mod protocol;
pub mod schema;
pub mod stats;
pub mod storage;
pub mod table;
pub mod traits;
pub mod vector;

pub use db::{NativeDatabase, NativeDb};
pub use error::{Error, ErrorCode, Result};
pub use index::{IndexInfo, IndexRequest, IndexType};
pub use merge::{MergeInsertBuilder, MergeInsertParams, MergeResult};
pub use stats::{LsmStats, TableStats};
pub use table::{NativeTable, Snapshot};
pub use traits::*;
pub use vector::{DistanceType, VectorQuery};
