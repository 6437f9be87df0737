//! A native table: one folder of fragments, deletion vectors and manifests
//! (layout in [`crate::manifest`]). [`NativeTable`] caches the latest
//! manifest, the decoded fragments and the key index; every read first
//! checks (one `stat`) whether another process has committed since.
//! Commits go through [`commit`]; reads through [`scan`]; the write
//! operations through [`ops`]; merge insert through [`crate::merge`].

mod admin;
pub mod cleanup;
pub(crate) mod commit;
pub mod compact;
pub mod config;
pub mod evolve;
pub mod explain;
pub mod fence;
pub mod finish;
mod fts;
pub mod indices;
mod load;
mod lsm_spec;
mod merge;
mod ops;
pub mod scan;
pub mod tags;
pub mod text_search;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};

use arrow::array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use roaring::RoaringBitmap;

use crate::api::{
    AddMode, CompactOptions, DeleteResult, OptimizeStats, Table, UpdateResult, VersionInfo,
};
use crate::data::Data;
use crate::error::{Error, Result};
use crate::fragment::LoadedFragment;
use crate::index::{IndexInfo, IndexRequest};
use crate::keys::{KeyEncoder, KeyIndex};
use crate::manifest::{latest_version, list_versions, read_manifest, Manifest};
use crate::merge::{MergeInsert, MergeResult};
use crate::query::QueryRequest;
use crate::storage::Storage;

/// The rows of one version: its manifest and every fragment, loaded.
#[derive(Debug, Clone)]
pub struct Snapshot {
    /// The version's manifest.
    pub manifest: Arc<Manifest>,
    /// Fragments in manifest order.
    pub fragments: Vec<LoadedFragment>,
    /// The version's indexes.
    pub indices: Vec<indices::LoadedIndex>,
    /// The table's cache of full-text segments over fragments no FTS index covers yet.
    pub(crate) text_cache: Arc<text_search::TextCache>,
}

impl Snapshot {
    /// The schema.
    pub fn schema(&self) -> SchemaRef {
        Arc::new(self.manifest.schema.clone())
    }
    /// The fragment with id `id`.
    pub fn fragment(&self, id: u64) -> Option<&LoadedFragment> {
        self.fragments.iter().find(|f| f.id == id)
    }
}

#[derive(Debug, Default)]
pub(crate) struct State {
    pub manifest: Option<Arc<Manifest>>,
    /// Decoded fragments by data file (not by fragment id: a schema change
    /// gives a fragment a new file, and older versions still read the old).
    pub batches: HashMap<String, RecordBatch>,
    pub deletions: HashMap<String, Arc<RoaringBitmap>>,
    /// Loaded indexes by their first file.
    pub ann: HashMap<String, indices::IndexData>,
    /// When `manifest` was last known to be the latest (a probe of
    /// storage, or this process's own commit).
    pub checked: Option<std::time::Instant>,
}

impl State {
    /// Forgets decoded fragments `m` does not reference.
    pub(crate) fn retain_files(&mut self, m: &Manifest) {
        let live: std::collections::HashSet<&str> =
            m.fragments.iter().map(|f| f.file.as_str()).collect();
        self.batches.retain(|file, _| live.contains(file.as_str()));
    }
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub name: String,
    /// Its folder in the database's storage: `{name}.lance` (Lance's naming), or `{name}` for a
    /// table an earlier memwal created.
    pub dir: String,
    pub storage: Arc<dyn Storage>,
    pub state: Mutex<State>,
    /// The key index, under its own lock so that planning a merge (which
    /// reads it) never blocks readers of the table state. Lock order:
    /// `state` before `index`. Valid only while its version is the manifest's.
    pub index: RwLock<Option<KeyIndex>>,
    /// Serialises this process's writers; other processes are fenced by
    /// the create-new manifest publish.
    pub write_lock: Mutex<()>,
    /// Index builds and folds writing files before they take `write_lock`
    /// to publish them: while any runs, cleanup leaves files no version
    /// names alone (they may be theirs).
    pub building: std::sync::atomic::AtomicUsize,
    /// Whether commits run the automatic cleanup the table's config asks
    /// for ([`config`]; a server turns it off for the tables it serves).
    pub auto_cleanup: std::sync::atomic::AtomicBool,
    /// How often reads look for versions other processes committed.
    pub consistency: ReadConsistency,
    /// This process's epoch as the table's one writer, when it holds one
    /// (see `fence`): (metadata key, epoch).
    pub fence: Mutex<Option<(String, u64)>>,
    /// Full-text segments of fragments no FTS index covers yet (see `text_search`).
    pub text_cache: Arc<text_search::TextCache>,
}

/// How often reads look in storage for versions that other processes (or
/// other databases in this one) committed: LanceDB's
/// `read_consistency_interval`. Writes always plan on the latest version
/// (the create-only publish fences them), and a handle sees the commits of
/// its own database at once, whatever the setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReadConsistency {
    /// Every read checks (the default: one small request per read, a
    /// HEAD on an object store).
    #[default]
    Strong,
    /// Reads check at most once per interval.
    Interval(std::time::Duration),
    /// Reads never check: this database is the table's only writer (a
    /// server that owns its data).
    OwnWritesOnly,
}

/// Counts one index build in [`Inner::building`] while it lives.
pub(crate) struct Building<'a>(&'a Inner);

impl<'a> Building<'a> {
    pub(crate) fn start(inner: &'a Inner) -> Self {
        inner
            .building
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Self(inner)
    }
}

impl Drop for Building<'_> {
    fn drop(&mut self) {
        self.0
            .building
            .fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A table stored in a folder (or in memory), readable and writable.
#[derive(Debug, Clone)]
pub struct NativeTable {
    pub(crate) inner: Arc<Inner>,
    /// Set when checked out at an older version (read-only).
    pinned: Option<Arc<Manifest>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // Every critical section leaves the state consistent before it can
    // panic (we only replace whole values), so a poisoned lock is usable.
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl NativeTable {
    pub(crate) fn from_inner(inner: Arc<Inner>) -> Self {
        Self {
            inner,
            pinned: None,
        }
    }

    pub(crate) fn new_inner(
        name: &str,
        dir: &str,
        storage: Arc<dyn Storage>,
        consistency: ReadConsistency,
    ) -> Arc<Inner> {
        Arc::new(Inner {
            consistency,
            name: name.to_string(),
            dir: dir.to_string(),
            storage,
            state: Mutex::new(State::default()),
            index: RwLock::new(None),
            write_lock: Mutex::new(()),
            building: std::sync::atomic::AtomicUsize::new(0),
            auto_cleanup: std::sync::atomic::AtomicBool::new(true),
            fence: Mutex::new(None),
            text_cache: Arc::default(),
        })
    }

    /// The folder of this table within the storage.
    pub(crate) fn dir(&self) -> &str {
        &self.inner.dir
    }

    fn storage(&self) -> &dyn Storage {
        self.inner.storage.as_ref()
    }

    /// The table name.
    pub fn table_name(&self) -> &str {
        &self.inner.name
    }

    /// Whether this handle is a read-only checkout.
    pub fn is_checkout(&self) -> bool {
        self.pinned.is_some()
    }

    pub(crate) fn ensure_writable(&self) -> Result<()> {
        match &self.pinned {
            Some(m) => Err(Error::checked_out(&self.inner.name, m.version)),
            None => Ok(()),
        }
    }

    /// Brings the cached manifest up to date with storage; returns it.
    pub(crate) fn refresh_locked(&self, st: &mut State) -> Result<Arc<Manifest>> {
        st.checked = Some(std::time::Instant::now());
        let hint = st.manifest.as_ref().map(|m| m.version).unwrap_or(0);
        let latest = latest_version(self.storage(), self.dir(), hint)?.ok_or_else(|| {
            Error::TableNotFound {
                name: self.inner.name.clone(),
            }
        })?;
        if let Some(m) = &st.manifest {
            if m.version == latest {
                return Ok(m.clone());
            }
        }
        let m = Arc::new(
            read_manifest(self.storage(), self.dir(), latest)?.ok_or_else(|| {
                Error::TableNotFound {
                    name: self.inner.name.clone(),
                }
            })?,
        );
        st.retain_files(&m);
        st.manifest = Some(m.clone());
        Ok(m)
    }

    /// The cached manifest when the read-consistency setting lets reads
    /// skip the check, otherwise [`NativeTable::refresh_locked`].
    pub(crate) fn refresh_for_read(&self, st: &mut State) -> Result<Arc<Manifest>> {
        if let (Some(m), Some(at)) = (&st.manifest, st.checked) {
            let fresh = match self.inner.consistency {
                ReadConsistency::Strong => false,
                ReadConsistency::Interval(d) => at.elapsed() < d,
                ReadConsistency::OwnWritesOnly => true,
            };
            if fresh {
                return Ok(m.clone());
            }
        }
        self.refresh_locked(st)
    }

    /// The manifest reads should use: the pinned one, or the latest.
    pub(crate) fn read_manifest(&self) -> Result<Arc<Manifest>> {
        if let Some(m) = &self.pinned {
            return Ok(m.clone());
        }
        let mut st = lock(&self.inner.state);
        self.refresh_for_read(&mut st)
    }

    /// The rows of the version reads should see.
    pub fn snapshot(&self) -> Result<Snapshot> {
        let m = match &self.pinned {
            Some(m) => m.clone(),
            None => self.refresh_for_read(&mut lock(&self.inner.state))?,
        };
        self.load(&m)
    }

    pub(crate) fn index_read(&self) -> RwLockReadGuard<'_, Option<KeyIndex>> {
        self.inner.index.read().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn index_write(&self) -> RwLockWriteGuard<'_, Option<KeyIndex>> {
        self.inner.index.write().unwrap_or_else(|p| p.into_inner())
    }

    /// Diagnostics: the key index this process holds for the table (its key
    /// columns and the version it describes), if any.
    pub fn cached_key_index(&self) -> Option<(Vec<String>, u64)> {
        self.index_read()
            .as_ref()
            .map(|i| (i.on().to_vec(), i.version))
    }

    /// The key index over `on` at `snap`'s version (built if needed), read-locked.
    pub(crate) fn ensure_index(
        &self,
        snap: &Snapshot,
        on: &[String],
    ) -> Result<RwLockReadGuard<'_, Option<KeyIndex>>> {
        let fresh = |i: &Option<KeyIndex>| {
            i.as_ref()
                .is_some_and(|i| i.on() == on && i.version == snap.manifest.version)
        };
        {
            let g = self.index_read();
            if fresh(&g) {
                return Ok(g);
            }
        }
        {
            let mut w = self.index_write();
            if !fresh(&w) {
                *w = Some(build_index(snap, on)?);
            }
        }
        Ok(self.index_read())
    }

    /// The live rows of `snap` holding each of `keys` (on columns `on`),
    /// through the key index (built once per version, then kept up to date
    /// by merges): O(keys), not O(table).
    pub fn rows_with_keys(
        &self,
        snap: &Snapshot,
        on: &[String],
        keys: &[&crate::keys::Key],
    ) -> Result<Vec<Vec<crate::keys::RowAddr>>> {
        let idx = self.ensure_index(snap, on)?;
        let idx = idx
            .as_ref()
            .ok_or_else(|| Error::internal("key index missing"))?;
        Ok(keys.iter().map(|k| idx.get(k)).collect())
    }

    /// For each row of `batch` (the table's key columns), how many live
    /// rows of the latest version hold that key (a table written by `add`
    /// may hold a key more than once; a merge updates each). Uses (and
    /// builds) the key index, so it costs O(rows of `batch`) once it exists.
    pub fn key_counts(&self, on: &[String], batch: &RecordBatch) -> Result<Vec<u32>> {
        let lookup =
            |idx: &Option<KeyIndex>, keys: &[Option<crate::keys::Key>]| -> Result<Vec<u32>> {
                let idx = idx
                    .as_ref()
                    .ok_or_else(|| Error::internal("index missing"))?;
                Ok(keys
                    .iter()
                    .map(|k| k.as_ref().map_or(0, |k| idx.count(k)))
                    .collect())
            };
        let mut st = lock(&self.inner.state);
        let m = self.refresh_for_read(&mut st)?;
        let enc = KeyEncoder::new(&m.schema, on)?;
        let keys = enc.encode(batch)?;
        let fresh = |i: &Option<KeyIndex>| {
            i.as_ref()
                .is_some_and(|i| i.on() == on && i.version == m.version)
        };
        {
            // Holding `state` and the index together: version and index agree.
            let g = self.index_read();
            if fresh(&g) {
                return lookup(&g, &keys);
            }
        }
        drop(st);
        let snap = self.load(&m)?;
        let mut w = self.index_write();
        if !fresh(&w) {
            *w = Some(build_index(&snap, on)?);
        }
        lookup(&w, &keys)
    }

    /// The schema reads see.
    pub fn schema_sync(&self) -> Result<SchemaRef> {
        Ok(Arc::new(self.read_manifest()?.schema.clone()))
    }

    /// The version reads see.
    pub fn version_sync(&self) -> Result<u64> {
        Ok(self.read_manifest()?.version)
    }

    /// The manifest reads see (metadata included).
    pub fn manifest(&self) -> Result<Arc<Manifest>> {
        self.read_manifest()
    }

    /// The latest committed manifest, whatever the read consistency (what
    /// writes plan on; one listing of versions on the storage).
    pub fn latest_manifest(&self) -> Result<Arc<Manifest>> {
        let mut st = lock(&self.inner.state);
        self.refresh_locked(&mut st)
    }

    /// Every version, oldest first.
    pub fn list_versions_sync(&self) -> Result<Vec<VersionInfo>> {
        let mut out = Vec::new();
        for v in list_versions(self.storage(), self.dir())? {
            if let Some(m) = read_manifest(self.storage(), self.dir(), v)? {
                out.push(VersionInfo {
                    version: m.version,
                    timestamp_ms: m.timestamp_ms,
                    operation: m.operation.clone(),
                    metadata: m.metadata.clone(),
                });
            }
        }
        Ok(out)
    }

    /// A read-only handle at `version` (`None`: the latest, writable).
    pub fn checkout_sync(&self, version: Option<u64>) -> Result<NativeTable> {
        let Some(v) = version else {
            return Ok(NativeTable::from_inner(self.inner.clone()));
        };
        let Some(m) = read_manifest(self.storage(), self.dir(), v)? else {
            // Cleaned up, or never committed: say which versions there are.
            let oldest = list_versions(self.storage(), self.dir())?.first().copied();
            return Err(Error::VersionNotFound {
                table: self.inner.name.clone(),
                version: v,
                hint: match oldest {
                    Some(o) if o > v => {
                        format!(" (removed by cleanup: the oldest version kept is {o})")
                    }
                    Some(o) => format!(" (the versions kept start at {o})"),
                    None => String::new(),
                },
            });
        };
        Ok(NativeTable {
            inner: self.inner.clone(),
            pinned: Some(Arc::new(m)),
        })
    }

    /// A read (a query, a count) run on the calling task's own thread when
    /// the runtime has several workers (`block_in_place`: its other tasks move
    /// to another worker), else on the blocking pool. A read is short, and
    /// each hand-off to the pool and back is a thread wake-up (two of them, a
    /// third of a small query's cost through Node); a panic is an error
    /// either way.
    async fn read_in_place<T: Send + 'static>(
        &self,
        f: impl FnOnce(NativeTable) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        use tokio::runtime::{Handle, RuntimeFlavor};
        let multi =
            Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
        if !multi {
            return self.blocking(f).await;
        }
        let me = self.clone();
        tokio::task::block_in_place(|| {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(me))).map_err(|p| {
                let why = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                Error::internal(format!("table task failed: a read panicked: {why}"))
            })?
        })
    }

    async fn blocking<T: Send + 'static>(
        &self,
        f: impl FnOnce(NativeTable) -> Result<T> + Send + 'static,
    ) -> Result<T> {
        let me = self.clone();
        tokio::task::spawn_blocking(move || f(me))
            .await
            .map_err(|e| Error::internal(format!("table task failed: {e}")))?
    }
}

/// Builds a key index over every live row of `snap`.
pub(crate) fn build_index(snap: &Snapshot, on: &[String]) -> Result<KeyIndex> {
    let enc = KeyEncoder::new(&snap.manifest.schema, on)?;
    let mut idx = KeyIndex::new(on, snap.manifest.version);
    for f in &snap.fragments {
        idx.add_batch(&enc, f.id, &f.batch, &f.deleted)?;
    }
    Ok(idx)
}

#[async_trait]
impl Table for NativeTable {
    fn name(&self) -> &str {
        &self.inner.name
    }
    async fn schema(&self) -> Result<SchemaRef> {
        self.blocking(|t| t.schema_sync()).await
    }
    async fn version(&self) -> Result<u64> {
        self.blocking(|t| t.version_sync()).await
    }
    async fn list_versions(&self) -> Result<Vec<VersionInfo>> {
        self.blocking(|t| t.list_versions_sync()).await
    }
    async fn checkout(&self, version: Option<u64>) -> Result<Arc<dyn Table>> {
        let t = self.blocking(move |t| t.checkout_sync(version)).await?;
        Ok(Arc::new(t))
    }
    async fn count_rows(&self, filter: Option<String>) -> Result<u64> {
        self.read_in_place(move |t| t.count_rows_sync(filter.as_deref()))
            .await
    }
    async fn add(&self, data: Data, mode: AddMode) -> Result<u64> {
        self.blocking(move |t| t.add_sync(data, mode)).await
    }
    async fn delete(&self, predicate: &str) -> Result<DeleteResult> {
        let p = predicate.to_string();
        self.blocking(move |t| t.delete_sync(&p)).await
    }
    async fn update(
        &self,
        predicate: Option<String>,
        values: Vec<(String, String)>,
    ) -> Result<UpdateResult> {
        self.blocking(move |t| t.update_sync(predicate.as_deref(), &values))
            .await
    }
    async fn query(&self, request: QueryRequest) -> Result<Vec<RecordBatch>> {
        self.read_in_place(move |t| t.query_sync(&request)).await
    }
    async fn optimize(&self, options: CompactOptions) -> Result<OptimizeStats> {
        options.validate()?;
        self.blocking(move |t| {
            let mut stats = t.compact_all_sync(&options)?;
            if let Some(v) = t.optimize_indices_sync()? {
                stats.version = v;
            }
            Ok(stats)
        })
        .await
    }
    async fn cleanup_old_versions(
        &self,
        older_than: std::time::Duration,
        delete_unverified: bool,
    ) -> Result<crate::api::PruneStats> {
        self.blocking(move |t| t.cleanup_sync(older_than, delete_unverified))
            .await
    }
    async fn create_index(&self, request: IndexRequest) -> Result<()> {
        self.blocking(move |t| t.create_index_sync(&request)).await
    }
    async fn restore(&self, version: Option<u64>) -> Result<u64> {
        self.blocking(move |t| t.restore_sync(version)).await
    }
    async fn stats(&self) -> Result<crate::stats::TableStats> {
        self.blocking(|t| t.stats_sync()).await
    }
    async fn explain_plan(&self, request: QueryRequest, verbose: bool) -> Result<String> {
        self.blocking(move |t| {
            explain::explain(t.table_name(), &t.snapshot()?, &request, verbose, None)
        })
        .await
    }
    async fn add_columns(&self, columns: crate::api::NewColumns) -> Result<u64> {
        self.blocking(move |t| t.add_columns_sync(&columns)).await
    }
    async fn alter_columns(&self, alterations: Vec<crate::api::ColumnAlteration>) -> Result<u64> {
        self.blocking(move |t| t.alter_columns_sync(&alterations))
            .await
    }
    async fn drop_columns(&self, columns: Vec<String>) -> Result<u64> {
        self.blocking(move |t| t.drop_columns_sync(&columns)).await
    }
    async fn lsm_stats(&self, _include_generation_rows: bool) -> Result<Option<crate::LsmStats>> {
        Ok(None) // a local table writes no MemWAL
    }
    async fn flush_lsm(&self) -> Result<()> {
        Ok(()) // nothing is ever buffered
    }
    async fn tags(&self) -> Result<std::collections::BTreeMap<String, crate::api::TagInfo>> {
        self.blocking(|t| t.tags_sync()).await
    }
    async fn set_tag(&self, tag: &str, version: u64, replace: bool) -> Result<()> {
        let tag = tag.to_string();
        self.blocking(move |t| t.set_tag_sync(&tag, version, replace))
            .await
    }
    async fn delete_tag(&self, tag: &str) -> Result<()> {
        let tag = tag.to_string();
        self.blocking(move |t| t.delete_tag_sync(&tag)).await
    }
    async fn tag_version(&self, tag: &str) -> Result<u64> {
        let tag = tag.to_string();
        self.blocking(move |t| t.tag_version_sync(&tag)).await
    }
    async fn list_indices(&self) -> Result<Vec<IndexInfo>> {
        self.blocking(|t| t.list_indices_sync()).await
    }
    async fn index_stats(&self, name: &str) -> Result<IndexInfo> {
        let n = name.to_string();
        self.blocking(move |t| t.index_stats_sync(&n)).await
    }
    async fn drop_index(&self, name: &str) -> Result<()> {
        let n = name.to_string();
        self.blocking(move |t| t.drop_index_sync(&n)).await
    }
    async fn merge_insert(&self, m: MergeInsert, data: Data) -> Result<MergeResult> {
        self.blocking(move |t| t.merge_insert_routed_sync(m, data))
            .await
    }
    async fn set_unenforced_primary_key(&self, columns: Vec<String>) -> Result<()> {
        self.blocking(move |t| t.set_primary_key_sync(&columns).map(|_| ()))
            .await
    }
    async fn set_lsm_write_spec(&self, spec: Option<crate::lsm::LsmWriteSpec>) -> Result<()> {
        self.blocking(move |t| t.set_lsm_spec_sync(spec).map(|_| ()))
            .await
    }
    async fn lsm_write_spec(&self) -> Result<Option<crate::lsm::LsmWriteSpec>> {
        self.blocking(|t| t.lsm_spec_sync()).await
    }
    async fn update_config(
        &self,
        upsert: BTreeMap<String, String>,
        delete: Vec<String>,
    ) -> Result<()> {
        self.blocking(move |t| t.update_config_sync(upsert, delete).map(|_| ()))
            .await
    }
    async fn config(&self) -> Result<BTreeMap<String, String>> {
        self.blocking(|t| t.config_sync()).await
    }
}
