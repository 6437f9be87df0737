//! The served table: the one type the HTTP handlers (and tests) use for a
//! table of the server. It implements the core [`Table`] trait over a
//! [`MemWalTable`], and it is where the order of writes is decided: every
//! write goes through the table's writer queue (see [`crate::memwal::Turn`]),
//! so whatever comes after an acknowledgement sees it.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use memwal_core::{
    AddMode, Data, DeleteResult, IndexInfo, IndexRequest, MergeInsert, MergeResult, OptimizeStats,
    QueryRequest, Table, UpdateResult, VersionInfo,
};
use memwal_core::{ColumnAlteration, NewColumns};
use memwal_core::{CompactOptions, TagInfo};

use crate::error::Error;
use crate::memwal::{MemWalTable, Turn};

/// A table of the server: its base table with a MemWAL in front.
#[derive(Debug, Clone)]
pub struct ServedTable {
    mem: Arc<MemWalTable>,
}

fn core(e: Error) -> memwal_core::Error {
    e.into_core()
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> crate::Result<T> + Send + 'static,
) -> crate::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Core(memwal_core::Error::internal(e.to_string())))?
}

impl ServedTable {
    /// Wraps an open MemWAL table.
    pub fn new(mem: Arc<MemWalTable>) -> Self {
        Self { mem }
    }

    /// The MemWAL under this table.
    pub fn memwal(&self) -> &Arc<MemWalTable> {
        &self.mem
    }

    /// Rows (matching `filter`), every acknowledged write included.
    pub async fn count(&self, filter: Option<String>) -> crate::Result<u64> {
        let mem = self.mem.clone();
        blocking(move || mem.count_rows(filter.as_deref())).await
    }

    /// A scan through the overlay.
    pub async fn scan(&self, req: QueryRequest) -> crate::Result<Vec<RecordBatch>> {
        let mem = self.mem.clone();
        blocking(move || mem.query(&req)).await
    }

    /// Adds rows (append, or overwrite: every row and the schema replaced,
    /// buffered upserts included).
    pub async fn add_rows(&self, data: Data, mode: AddMode) -> crate::Result<u64> {
        match mode {
            AddMode::Append => {
                self.mem
                    .direct(Turn::Drain, move |c| Ok(c.base.add_sync(data, mode)?))
                    .await
            }
            AddMode::Overwrite => {
                self.mem
                    .direct(Turn::Replace, move |c| {
                        Ok(c.base.add_with_metadata_sync(data, mode, &c.metadata)?)
                    })
                    .await
            }
        }
    }

    /// A merge insert: through the MemWAL when `params.mem_wal` (or the
    /// table's LSM write spec) says so, otherwise a native merge in the
    /// writer's turn.
    pub async fn merge(&self, params: MergeInsert, data: Data) -> crate::Result<MergeResult> {
        // A recorded LSM write spec sends upserts to the MemWAL unless the
        // request says use_lsm=false (the manifest is cached: no I/O).
        let params = self.mem.base().route_merge_sync(params)?;
        if params.mem_wal == Some(true) {
            let raw = data.ipc.clone();
            return self.mem.upsert(params.on.clone(), data, raw).await;
        }
        self.mem
            .direct(Turn::Drain, move |c| {
                Ok(c.base.merge_insert_sync(&params, data)?)
            })
            .await
    }

    /// Deletes the rows matching `predicate`.
    pub async fn delete_rows(&self, predicate: String) -> crate::Result<DeleteResult> {
        self.mem
            .direct(Turn::Drain, move |c| Ok(c.base.delete_sync(&predicate)?))
            .await
    }

    /// Sets `column = SQL` on the rows matching `predicate`.
    pub async fn update_rows(
        &self,
        predicate: Option<String>,
        values: Vec<(String, String)>,
    ) -> crate::Result<UpdateResult> {
        self.mem
            .direct(Turn::Drain, move |c| {
                Ok(c.base.update_sync(predicate.as_deref(), &values)?)
            })
            .await
    }

    /// Compacts the base (after merging the memtables into it), then adds
    /// its unindexed rows to its indexes.
    pub async fn compact(&self, options: CompactOptions) -> crate::Result<OptimizeStats> {
        let mut stats = self
            .mem
            .direct(Turn::Drain, move |c| {
                Ok(c.base.compact_all_sync(&options)?)
            })
            .await?;
        let base = self.mem.base().clone();
        if let Some(v) = blocking(move || Ok(base.optimize_indices_sync()?)).await? {
            stats.version = v;
        }
        Ok(stats)
    }

    /// Merges the memtables into the base, then builds an index over it
    /// (so it holds every row acknowledged before the call, as on a local
    /// table). Writes go on during the build (the index commits on
    /// whatever version is then the latest; rows it does not hold are
    /// searched exactly), as do reads.
    pub async fn build_index(&self, request: IndexRequest) -> crate::Result<()> {
        self.mem.flush_all().await?;
        let base = self.mem.base().clone();
        blocking(move || Ok(base.create_index_sync(&request)?)).await
    }

    /// Restores `version` after merging the memtables (so the rows they
    /// hold are history, as on a local table); the version's schema may
    /// differ, so the next memtable takes the restored one (a reshape).
    pub async fn restore_version(&self, version: u64) -> crate::Result<u64> {
        self.reshape(move |base| base.restore_sync(Some(version)))
            .await
    }

    /// A schema change, after merging the memtables (rows buffered before
    /// it read afterwards with the new schema, as the base's rows do).
    async fn reshape(
        &self,
        f: impl FnOnce(&memwal_core::NativeTable) -> memwal_core::Result<u64> + Send + 'static,
    ) -> crate::Result<u64> {
        self.mem
            .direct(Turn::Reshape, move |c| Ok(f(c.base)?))
            .await
    }

    /// The base's statistics; rows still in the memtables count in `num_rows`.
    pub async fn table_stats(&self) -> crate::Result<memwal_core::TableStats> {
        let mem = self.mem.clone();
        blocking(move || {
            let mut s = mem.base().stats_sync()?;
            s.num_rows = mem.count_rows(None)?;
            Ok(s)
        })
        .await
    }

    /// The base's indexes; rows still in the memtables count as unindexed
    /// (they are searched exactly).
    pub async fn indices(&self) -> crate::Result<Vec<IndexInfo>> {
        let mem = self.mem.clone();
        blocking(move || {
            let buffered = mem.buffered_rows()?;
            let mut list = mem.base().list_indices_sync()?;
            for i in &mut list {
                i.num_unindexed_rows += buffered;
            }
            Ok(list)
        })
        .await
    }

    /// One index of the base, as [`Self::indices`] counts it (without its files' sizes, which stats do not report).
    pub async fn index_stats_of(&self, name: String) -> crate::Result<IndexInfo> {
        let mem = self.mem.clone();
        blocking(move || {
            let buffered = mem.buffered_rows()?;
            let mut info = mem.base().index_stats_sync(&name)?;
            info.num_unindexed_rows += buffered;
            Ok(info)
        })
        .await
    }
}

#[async_trait]
impl Table for ServedTable {
    fn name(&self) -> &str {
        self.mem.base().table_name()
    }
    async fn schema(&self) -> memwal_core::Result<SchemaRef> {
        self.mem.base().schema_sync()
    }
    async fn version(&self) -> memwal_core::Result<u64> {
        self.mem.base().version_sync()
    }
    async fn list_versions(&self) -> memwal_core::Result<Vec<VersionInfo>> {
        self.mem.base().list_versions_sync()
    }
    async fn checkout(&self, version: Option<u64>) -> memwal_core::Result<Arc<dyn Table>> {
        match version {
            None => Ok(Arc::new(self.clone())),
            // Older versions are the base's alone (MemWAL rows belong to no
            // version until flushed).
            Some(v) => Ok(Arc::new(self.mem.base().checkout_sync(Some(v))?)),
        }
    }
    async fn count_rows(&self, filter: Option<String>) -> memwal_core::Result<u64> {
        self.count(filter).await.map_err(core)
    }
    async fn add(&self, data: Data, mode: AddMode) -> memwal_core::Result<u64> {
        self.add_rows(data, mode).await.map_err(core)
    }
    async fn delete(&self, predicate: &str) -> memwal_core::Result<DeleteResult> {
        self.delete_rows(predicate.to_string()).await.map_err(core)
    }
    async fn update(
        &self,
        predicate: Option<String>,
        values: Vec<(String, String)>,
    ) -> memwal_core::Result<UpdateResult> {
        self.update_rows(predicate, values).await.map_err(core)
    }
    async fn query(&self, request: QueryRequest) -> memwal_core::Result<Vec<RecordBatch>> {
        self.scan(request).await.map_err(core)
    }
    async fn optimize(&self, options: CompactOptions) -> memwal_core::Result<OptimizeStats> {
        options.validate()?;
        self.compact(options).await.map_err(core)
    }
    async fn cleanup_old_versions(
        &self,
        older_than: std::time::Duration,
        delete_unverified: bool,
    ) -> memwal_core::Result<memwal_core::PruneStats> {
        // Beside the writer, not in its turn: acknowledged writes never wait
        // on it (a flush's commit waits at most for the removals).
        self.mem
            .base()
            .cleanup_old_versions(older_than, delete_unverified)
            .await
    }
    async fn merge_insert(
        &self,
        params: MergeInsert,
        data: Data,
    ) -> memwal_core::Result<MergeResult> {
        self.merge(params, data).await.map_err(core)
    }
    async fn create_index(&self, request: IndexRequest) -> memwal_core::Result<()> {
        self.build_index(request).await.map_err(core)
    }
    async fn list_indices(&self) -> memwal_core::Result<Vec<IndexInfo>> {
        self.indices().await.map_err(core)
    }
    async fn index_stats(&self, name: &str) -> memwal_core::Result<IndexInfo> {
        self.index_stats_of(name.to_string()).await.map_err(core)
    }
    async fn restore(&self, version: Option<u64>) -> memwal_core::Result<u64> {
        let v = version.ok_or_else(|| memwal_core::Error::invalid("restore needs a version"))?;
        self.restore_version(v).await.map_err(core)
    }
    async fn stats(&self) -> memwal_core::Result<memwal_core::TableStats> {
        self.table_stats().await.map_err(core)
    }
    async fn explain_plan(
        &self,
        request: QueryRequest,
        verbose: bool,
    ) -> memwal_core::Result<String> {
        let mem = self.mem.clone();
        blocking(move || {
            let lsm = mem.lsm_stats()?;
            let memtables = lsm
                .buckets
                .first()
                .and_then(|b| b.memtables.as_deref())
                .unwrap_or(&[]);
            let buffered = memwal_core::table::explain::Buffered {
                rows: memtables.iter().map(|m| m.rows).sum(),
                memtables: memtables.iter().filter(|m| m.rows > 0).count() as u64,
            };
            let base = mem.base();
            Ok(memwal_core::table::explain::explain(
                base.table_name(),
                &base.snapshot()?,
                &request,
                verbose,
                Some(buffered),
            )?)
        })
        .await
        .map_err(core)
    }
    async fn add_columns(&self, columns: NewColumns) -> memwal_core::Result<u64> {
        self.reshape(move |b| b.add_columns_sync(&columns))
            .await
            .map_err(core)
    }
    async fn alter_columns(&self, alterations: Vec<ColumnAlteration>) -> memwal_core::Result<u64> {
        self.reshape(move |b| b.alter_columns_sync(&alterations))
            .await
            .map_err(core)
    }
    async fn drop_columns(&self, columns: Vec<String>) -> memwal_core::Result<u64> {
        self.reshape(move |b| b.drop_columns_sync(&columns))
            .await
            .map_err(core)
    }
    async fn lsm_stats(&self, _rows: bool) -> memwal_core::Result<Option<memwal_core::LsmStats>> {
        self.mem.lsm_stats().map(Some).map_err(core)
    }
    async fn flush_lsm(&self) -> memwal_core::Result<()> {
        self.mem.flush_all().await.map_err(core)
    }
    // Tags name versions of the base (MemWAL rows belong to no version).
    async fn tags(&self) -> memwal_core::Result<BTreeMap<String, TagInfo>> {
        Table::tags(self.mem.base()).await
    }
    async fn set_tag(&self, tag: &str, version: u64, replace: bool) -> memwal_core::Result<()> {
        Table::set_tag(self.mem.base(), tag, version, replace).await
    }
    async fn delete_tag(&self, tag: &str) -> memwal_core::Result<()> {
        Table::delete_tag(self.mem.base(), tag).await
    }
    async fn tag_version(&self, tag: &str) -> memwal_core::Result<u64> {
        Table::tag_version(self.mem.base(), tag).await
    }
    async fn set_unenforced_primary_key(&self, columns: Vec<String>) -> memwal_core::Result<()> {
        // A schema change: the memtables drain first and then take the
        // schema that records the key.
        self.reshape(move |b| b.set_primary_key_sync(&columns))
            .await
            .map(|_| ())
            .map_err(core)
    }
    async fn set_lsm_write_spec(
        &self,
        spec: Option<memwal_core::LsmWriteSpec>,
    ) -> memwal_core::Result<()> {
        self.mem
            .direct(Turn::Drain, move |c| Ok(c.base.set_lsm_spec_sync(spec)?))
            .await
            .map(|_| ())
            .map_err(core)
    }
    async fn lsm_write_spec(&self) -> memwal_core::Result<Option<memwal_core::LsmWriteSpec>> {
        self.mem.base().lsm_spec_sync()
    }
    async fn update_config(
        &self,
        upsert: std::collections::BTreeMap<String, String>,
        delete: Vec<String>,
    ) -> memwal_core::Result<()> {
        // A metadata-only version, committed in the writer's turn like the
        // other table-wide changes.
        self.mem
            .direct(Turn::Drain, move |c| {
                Ok(c.base.update_config_sync(upsert, delete)?)
            })
            .await
            .map(|_| ())
            .map_err(core)
    }
    async fn config(&self) -> memwal_core::Result<std::collections::BTreeMap<String, String>> {
        let base = self.mem.base().clone();
        blocking(move || Ok(base.config_sync()?))
            .await
            .map_err(core)
    }
    async fn drop_index(&self, name: &str) -> memwal_core::Result<()> {
        let base = self.mem.base().clone();
        let n = name.to_string();
        blocking(move || Ok(base.drop_index_sync(&n)?))
            .await
            .map_err(core)
    }
}
