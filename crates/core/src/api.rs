//! The two traits every kind of database and table implements (native
//! folder tables in [`crate::table`] and [`crate::db`], remote
//! LanceDB-protocol tables in `memwal-remote`, the server's MemWAL tables
//! in `memwal-server`), and the option and outcome types of their methods.
//! The napi bindings and the tests are written once against these. What a
//! read asks for is [`crate::query`]; the rows a write hands over,
//! [`crate::data::Data`].

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow_schema::{DataType, Field, SchemaRef};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

use crate::data::Data;
use crate::error::{Error, Result};
use crate::index::{IndexInfo, IndexRequest};
use crate::merge::{MergeInsert, MergeResult};
use crate::query::QueryRequest;

/// What `create_table` does when the name is taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum CreateMode {
    /// Fail with `TableAlreadyExists` (or open it, with `exist_ok`).
    #[default]
    Create,
    /// Replace its contents and schema with the new data (a new version).
    Overwrite,
}

/// Options of `create_table`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CreateOptions {
    /// See [`CreateMode`].
    pub mode: CreateMode,
    /// With `Create`: open the existing table instead of failing.
    pub exist_ok: bool,
}

/// How `add` combines the new rows with the table.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum AddMode {
    /// Keep the rows, add the new ones.
    #[default]
    Append,
    /// Replace all rows (and the schema) with the new ones.
    Overwrite,
}

/// One entry of a table's history.
#[derive(Debug, Clone, PartialEq)]
pub struct VersionInfo {
    /// Version number.
    pub version: u64,
    /// Commit time, ms since the Unix epoch.
    pub timestamp_ms: u64,
    /// The operation that produced it.
    pub operation: String,
    /// Metadata committed with it.
    pub metadata: BTreeMap<String, String>,
}

/// Outcome of `delete`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeleteResult {
    /// Version after the delete (unchanged if nothing matched).
    pub version: u64,
    /// Rows deleted.
    pub num_deleted_rows: u64,
}

/// Outcome of `update`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UpdateResult {
    /// Version after the update (unchanged if nothing matched).
    pub version: u64,
    /// Rows rewritten.
    pub rows_updated: u64,
}

/// Outcome of `optimize`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct OptimizeStats {
    /// Version after compaction (unchanged if there was nothing to do).
    pub version: u64,
    /// Fragments replaced.
    pub fragments_removed: u64,
    /// Fragments written.
    pub fragments_added: u64,
    /// Deleted rows dropped from storage.
    pub deleted_rows_purged: u64,
}

/// What `optimize` and the background compaction compact (Lance's
/// `CompactionOptions`): fragments with fewer rows than the target, and
/// those whose deleted share is above the threshold.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CompactOptions {
    /// Fragments with fewer rows are small (Lance's `target_rows_per_fragment`).
    pub target_rows_per_fragment: u64,
    /// A fragment whose deleted share is above this is rewritten whatever
    /// its size (Lance's `materialize_deletions_threshold`, 0.1).
    pub materialize_deletions_threshold: f64,
    /// Compact only when at least this many fragments qualify (or one has
    /// too many deletions).
    pub min_fragments: usize,
    /// One run rewrites at most this many bytes of live rows (in memory;
    /// the first fragment of a bin always goes): the server's background
    /// runs are bounded in time so flushes never wait long behind one.
    /// Not Lance's; unbounded by default (`optimize` runs bins until
    /// nothing qualifies either way).
    pub max_bytes_per_run: u64,
}

impl CompactOptions {
    /// Refuses a target of 0 rows and a threshold outside 0..=1, naming them.
    pub fn validate(&self) -> Result<()> {
        if self.target_rows_per_fragment == 0 {
            return Err(Error::invalid(
                "targetRowsPerFragment must be a positive number of rows",
            ));
        }
        let t = self.materialize_deletions_threshold;
        if !(0.0..=1.0).contains(&t) {
            return Err(Error::invalid(format!(
                "materializeDeletionsThreshold must be a share between 0 and 1, got {t}"
            )));
        }
        Ok(())
    }
}

impl Default for CompactOptions {
    fn default() -> Self {
        Self {
            target_rows_per_fragment: 1 << 20,
            materialize_deletions_threshold: 0.1,
            min_fragments: 2,
            max_bytes_per_run: u64::MAX,
        }
    }
}

/// What a cleanup removed (the `prune` half of LanceDB's `OptimizeStats`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PruneStats {
    /// Bytes of the files removed (manifests included).
    pub bytes_removed: u64,
    /// Versions whose manifest was removed.
    pub old_versions_removed: u64,
}

/// Columns to add.
#[derive(Debug, Clone, PartialEq)]
pub enum NewColumns {
    /// `(name, SQL expression over the existing columns)`, each value
    /// computed from its row.
    Sql(Vec<(String, String)>),
    /// Nullable columns of these types, every value null.
    Nulls(Vec<Field>),
}

/// One change to an existing column (`alter_columns`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ColumnAlteration {
    /// The column (a top-level name).
    pub path: String,
    /// A new name.
    pub rename: Option<String>,
    /// A new nullability (a nullable column cannot become non-nullable).
    pub nullable: Option<bool>,
    /// A new type, within the column's kind (integers, floats, strings,
    /// binaries, float vectors), or between float vectors and lists of floats
    /// (never narrowing); a value that does not fit is an error naming its row.
    pub data_type: Option<DataType>,
}

/// What a tag records.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TagInfo {
    /// The version it names.
    pub version: u64,
    /// Size in bytes of that version's manifest (`manifestSize` on the
    /// wire of `tags/list/`).
    #[serde(default, alias = "manifestSize")]
    pub manifest_size: u64,
}

/// A table: native, remote, or a server's MemWAL overlay.
#[async_trait]
pub trait Table: Send + Sync + std::fmt::Debug {
    /// The table's name.
    fn name(&self) -> &str;
    /// The current schema.
    async fn schema(&self) -> Result<SchemaRef>;
    /// The current version.
    async fn version(&self) -> Result<u64>;
    /// Every version, oldest first.
    async fn list_versions(&self) -> Result<Vec<VersionInfo>>;
    /// A read-only view of `version`; `None` is the latest, writable table.
    async fn checkout(&self, version: Option<u64>) -> Result<Arc<dyn Table>>;
    /// Rows, optionally only those matching `filter`.
    async fn count_rows(&self, filter: Option<String>) -> Result<u64>;
    /// Adds rows; returns the new version.
    async fn add(&self, data: Data, mode: AddMode) -> Result<u64>;
    /// Deletes the rows matching `predicate`.
    async fn delete(&self, predicate: &str) -> Result<DeleteResult>;
    /// Sets `column = SQL expression` on the rows matching `predicate`
    /// (all rows when `None`).
    async fn update(
        &self,
        predicate: Option<String>,
        values: Vec<(String, String)>,
    ) -> Result<UpdateResult>;
    /// Scans rows.
    async fn query(&self, request: QueryRequest) -> Result<Vec<RecordBatch>>;
    /// How `request` would run, as readable text (`verbose`: more detail).
    async fn explain_plan(&self, request: QueryRequest, verbose: bool) -> Result<String>;
    /// Runs `request` and reports its plan with what it took (rows, time).
    async fn analyze_plan(&self, request: QueryRequest) -> Result<String> {
        let plan = self.explain_plan(request.clone(), true).await?;
        let started = std::time::Instant::now();
        let batches = self.query(request).await?;
        let rows: usize = batches.iter().map(RecordBatch::num_rows).sum();
        Ok(format!(
            "{plan}  ran: {rows} row(s) in {:.3} ms\n",
            started.elapsed().as_secs_f64() * 1000.0
        ))
    }
    /// Compacts the fragments `options` selects (small ones and those with
    /// many deleted rows) and folds unindexed rows into the indexes.
    async fn optimize(&self, options: CompactOptions) -> Result<OptimizeStats>;
    /// Removes versions committed more than `older_than` ago (never the
    /// latest or a tagged one) and the files only they named; files no
    /// version names go only when older than that too, or with
    /// `delete_unverified` (see `table::cleanup`).
    async fn cleanup_old_versions(
        &self,
        older_than: std::time::Duration,
        delete_unverified: bool,
    ) -> Result<PruneStats>;
    /// Runs a merge insert; its clause set was checked when the
    /// [`MergeInsert`] was made, so no table checks it again.
    async fn merge_insert(&self, m: MergeInsert, data: Data) -> Result<MergeResult>;
    /// Builds an index and commits a version that records it.
    async fn create_index(&self, request: IndexRequest) -> Result<()>;
    /// The indexes, with indexed and unindexed row counts.
    async fn list_indices(&self) -> Result<Vec<IndexInfo>>;
    /// One index (`IndexNotFound` if there is none of that name).
    async fn index_stats(&self, name: &str) -> Result<IndexInfo>;
    /// Drops an index.
    async fn drop_index(&self, name: &str) -> Result<()>;
    /// Commits a new latest version equal to `version` (`None`: the
    /// version this handle is checked out at); returns the new version.
    async fn restore(&self, version: Option<u64>) -> Result<u64>;
    /// Sizes and fragment layout.
    async fn stats(&self) -> Result<crate::stats::TableStats>;
    /// Adds columns (see [`crate::table::evolve`]); returns the new version.
    async fn add_columns(&self, columns: NewColumns) -> Result<u64>;
    /// Renames columns, changes their nullability or type; returns the
    /// new version.
    async fn alter_columns(&self, alterations: Vec<ColumnAlteration>) -> Result<u64>;
    /// Drops columns; returns the new version.
    async fn drop_columns(&self, columns: Vec<String>) -> Result<u64>;
    /// The MemWAL's state (`None`: this table has no MemWAL, as a local
    /// one). `include_generation_rows` counts rows of sealed generations.
    async fn lsm_stats(&self, include_generation_rows: bool) -> Result<Option<crate::LsmStats>>;
    /// Merges every buffered MemWAL row into the table; returns once it
    /// is (a no-op without a MemWAL).
    async fn flush_lsm(&self) -> Result<()>;
    /// Tags by name.
    async fn tags(&self) -> Result<std::collections::BTreeMap<String, TagInfo>>;
    /// Names `version` `tag` (`replace`: update an existing tag; else
    /// create a new one).
    async fn set_tag(&self, tag: &str, version: u64, replace: bool) -> Result<()>;
    /// Removes a tag.
    async fn delete_tag(&self, tag: &str) -> Result<()>;
    /// The version a tag names.
    async fn tag_version(&self, tag: &str) -> Result<u64>;
    /// Records `columns` (exactly one) as the table's unenforced primary
    /// key, as LanceDB 0.39's `set_unenforced_primary_key` (see
    /// [`crate::lsm`]).
    async fn set_unenforced_primary_key(&self, columns: Vec<String>) -> Result<()>;
    /// Records an LSM write spec (`None`: removes the recorded one), as
    /// LanceDB 0.39's `set_lsm_write_spec` / `unset_lsm_write_spec`.
    async fn set_lsm_write_spec(&self, spec: Option<crate::lsm::LsmWriteSpec>) -> Result<()>;
    /// The recorded LSM write spec, if any.
    async fn lsm_write_spec(&self) -> Result<Option<crate::lsm::LsmWriteSpec>>;
    /// Sets `upsert`'s entries of the table's config and removes the
    /// `delete` keys in one version, as Lance's `update_config` (see
    /// [`crate::table::config`]: `lance.auto_cleanup.*` ask for automatic
    /// cleanup).
    async fn update_config(
        &self,
        upsert: std::collections::BTreeMap<String, String>,
        delete: Vec<String>,
    ) -> Result<()>;
    /// The table's config, as Lance's `config()`.
    async fn config(&self) -> Result<std::collections::BTreeMap<String, String>>;
}

/// A database: a namespace of tables.
#[async_trait]
pub trait Database: Send + Sync + std::fmt::Debug {
    /// Table names, sorted.
    async fn table_names(&self) -> Result<Vec<String>>;
    /// One page of table names, sorted: those after `start_after`, at most
    /// `limit` (the official clients' `tableNames({ startAfter, limit })`).
    async fn table_names_page(
        &self,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<String>> {
        let mut names = self.table_names().await?;
        page(&mut names, start_after, limit);
        Ok(names)
    }
    /// Creates a table from `data`.
    async fn create_table(
        &self,
        name: &str,
        data: Data,
        options: CreateOptions,
    ) -> Result<Arc<dyn Table>>;
    /// Opens a table.
    async fn open_table(&self, name: &str) -> Result<Arc<dyn Table>>;
    /// Drops a table and its files.
    async fn drop_table(&self, name: &str) -> Result<()>;
    /// Renames a table (every version, index and tag goes with it); open
    /// handles do not follow it.
    async fn rename_table(&self, cur: &str, new: &str) -> Result<()>;

    /// Opens a table inside a namespace (`[]` is the root). The default,
    /// for a database without namespaces, refuses any other path.
    async fn open_table_in(&self, namespace: &[String], name: &str) -> Result<Arc<dyn Table>> {
        root_only(namespace)?;
        self.open_table(name).await
    }
    /// Creates a table inside a namespace (see [`Database::open_table_in`]).
    async fn create_table_in(
        &self,
        namespace: &[String],
        name: &str,
        data: Data,
        options: CreateOptions,
    ) -> Result<Arc<dyn Table>> {
        root_only(namespace)?;
        self.create_table(name, data, options).await
    }
    /// One page of table names inside a namespace (see
    /// [`Database::table_names_page`]).
    async fn table_names_in(
        &self,
        namespace: &[String],
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<String>> {
        root_only(namespace)?;
        self.table_names_page(start_after, limit).await
    }
    /// One page of the child namespaces of `parent` (sorted) and the next
    /// page's token.
    async fn list_namespaces(
        &self,
        parent: &[String],
        _page_token: Option<&str>,
        _limit: Option<usize>,
    ) -> Result<(Vec<String>, Option<String>)> {
        root_only(parent)?;
        Ok((Vec::new(), None))
    }
    /// Creates a namespace (`exist_ok`: an existing one is fine).
    async fn create_namespace(
        &self,
        path: &[String],
        _properties: BTreeMap<String, String>,
        _exist_ok: bool,
    ) -> Result<()> {
        root_only(path)?;
        Err(crate::Error::invalid("the root namespace always exists"))
    }
    /// A namespace's properties.
    async fn describe_namespace(&self, path: &[String]) -> Result<BTreeMap<String, String>> {
        root_only(path)?;
        Ok(BTreeMap::new())
    }
    /// Drops a namespace (`cascade`: with its tables and namespaces;
    /// `skip_missing`: a missing one is fine).
    async fn drop_namespace(
        &self,
        path: &[String],
        _cascade: bool,
        _skip_missing: bool,
    ) -> Result<()> {
        root_only(path)?;
        Err(crate::Error::invalid(
            "the root namespace cannot be dropped",
        ))
    }
    /// Renames table `cur` of `namespace` to `new`, in namespace `new_namespace`
    /// (`None`: the same one). The default, for a database without
    /// namespaces, takes the root only.
    async fn rename_table_in(
        &self,
        namespace: &[String],
        cur: &str,
        new_namespace: Option<&[String]>,
        new: &str,
    ) -> Result<()> {
        root_only(namespace)?;
        root_only(new_namespace.unwrap_or_default())?;
        self.rename_table(cur, new).await
    }
    /// Drops a table inside a namespace (see [`Database::open_table_in`]).
    async fn drop_table_in(&self, namespace: &[String], name: &str) -> Result<()> {
        root_only(namespace)?;
        self.drop_table(name).await
    }
}

/// Keeps the names after `start_after`, at most `limit` of them (sorted
/// input); whether names were cut off by the limit.
pub(crate) fn page(
    names: &mut Vec<String>,
    start_after: Option<&str>,
    limit: Option<usize>,
) -> bool {
    if let Some(a) = start_after {
        names.retain(|n| n.as_str() > a);
    }
    let limit = limit.unwrap_or(usize::MAX);
    let more = names.len() > limit;
    names.truncate(limit);
    more
}

fn root_only(namespace: &[String]) -> Result<()> {
    if namespace.is_empty() {
        Ok(())
    } else {
        Err(crate::Error::not_supported(format!(
            "namespace {namespace:?}: this database has no namespaces"
        )))
    }
}
