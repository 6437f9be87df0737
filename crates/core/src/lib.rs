//! memwal-core: the local table engine.
//!
//! Layers, bottom up: [`storage`] (files, create-new publish, fault
//! injection) -> [`manifest`] and [`fragment`] (the on-disk format) ->
//! [`table`] (versions, snapshots, commits with retry, reads and writes;
//! `table::merge` runs a merge insert) using [`merge`] (the checked
//! parameters and the planning steps, over [`keys`] and [`filter`]) ->
//! [`db`] (a folder of tables). [`api`] defines the `Table` and `Database`
//! traits remote and served tables implement too, with [`data`],
//! [`query`] and [`deadline`] for what crosses them; [`ipc`] converts
//! Arrow IPC bytes at the edges; [`vector`] ranks rows of any set of tiers
//! by distance (exact search, SIMD kernels) and [`index`] builds and reads
//! the indexes.

pub mod api;
pub mod data;
pub mod db;
pub mod deadline;
pub mod error;
pub mod filter;
pub mod fragment;
pub mod index;
pub mod ipc;
pub mod json_schema;
pub mod keys;
pub mod lsm;
pub mod manifest;
pub mod merge;
pub mod name;
pub mod namespace;
pub mod protocol;
pub mod query;
pub mod schema;
pub mod stats;
pub mod storage;
pub mod table;
pub mod vector;

pub use api::{
    AddMode, ColumnAlteration, CompactOptions, CreateMode, CreateOptions, Database, DeleteResult,
    NewColumns, OptimizeStats, PruneStats, Table, TagInfo, UpdateResult, VersionInfo,
};
pub use data::Data;
pub use db::{NativeDatabase, NativeDb};
pub use error::{Error, ErrorCode, Result};
pub use index::{IndexInfo, IndexRequest, IndexType};
pub use lsm::{LsmWriteSpec, Sharding};
pub use merge::{MergeInsert, MergeInsertParams, MergeResult};
pub use query::{DistanceType, IndexTuning, OrderBy, QueryRequest, TextSearch, VectorQuery};
pub use stats::{LsmStats, TableStats};
pub use table::{NativeTable, ReadConsistency, Snapshot};
