//! Committing a change as a new version: write new data files and deletion
//! vectors, then publish the manifest create-new. Losing the publish race
//! to another writer removes our files and reports a conflict; the caller
//! re-plans on the new version and tries again ([`NativeTable::write_with_retry`]).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow_schema::SchemaRef;
use roaring::RoaringBitmap;

use super::{lock, NativeTable, Snapshot, State};
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::fragment::encode_deletions;
use crate::keys::KeyIndex;
use crate::manifest::{now_ms, publish_manifest, FragmentMeta, IndexMeta, Manifest};

/// Most commit attempts before giving up with `CommitConflict`.
pub const MAX_COMMIT_ATTEMPTS: u32 = 50;

/// Rows per fragment file written by one commit.
pub const MAX_ROWS_PER_FRAGMENT: usize = 1 << 20;

/// A change planned against one version.
#[derive(Debug, Default)]
pub(crate) struct Change {
    /// Rows to add as new fragments (already in the table schema).
    pub new_rows: Option<RecordBatch>,
    /// Further deletions per fragment id (row offsets).
    pub deletions: HashMap<u64, RoaringBitmap>,
    /// Drop every existing fragment (overwrite, compaction).
    pub replace_all: bool,
    /// A new schema (overwrite).
    pub schema: Option<SchemaRef>,
    /// Name of the operation, kept in the manifest.
    pub operation: &'static str,
    /// Metadata to record with the version.
    pub metadata: BTreeMap<String, String>,
    /// The version's indexes (`None`: the base version's).
    pub indices: Option<Vec<IndexMeta>>,
    /// Restore: the new version holds this version's fragments, schema and
    /// indexes (the other fields must be empty).
    pub restore: Option<Arc<Manifest>>,
    /// Schema evolution: these fragments' rows (every physical row, in
    /// order) written as new files under the same fragment ids, keeping
    /// their deletions, so row ids and indexes stay valid.
    pub rewrite: Vec<(u64, RecordBatch)>,
}

impl Change {
    /// Whether the change leaves every row and the schema as they were (an
    /// index or metadata change): a key index of the planned version is
    /// then the new version's too.
    pub(crate) fn keeps_rows(&self) -> bool {
        self.new_rows.is_none()
            && self.deletions.is_empty()
            && !self.replace_all
            && self.schema.is_none()
            && self.restore.is_none()
            && self.rewrite.is_empty()
    }
}

/// A change that made it into a version.
#[derive(Debug)]
pub(crate) struct Committed {
    pub manifest: Arc<Manifest>,
    /// Fragment ids of `new_rows`, in order, with their rows.
    pub new_fragments: Vec<(u64, RecordBatch)>,
    /// Fragments of `Change::rewrite`, with their new rows.
    pub rewritten: Vec<(u64, RecordBatch)>,
}

impl NativeTable {
    /// Tries to commit `change` as version `base + 1`. `Ok(None)` means
    /// another writer published that version first (nothing of ours remains).
    pub(crate) fn try_commit(&self, base: &Snapshot, change: &Change) -> Result<Option<Committed>> {
        let mut written: Vec<String> = Vec::new();
        let result = self.write_and_publish(base, change, &mut written);
        let lost_race = matches!(result, Ok(None));
        // Failed after the manifest was linked (its folder's sync failed, say),
        // the version is visible and may name our files: they stay (if it is
        // another writer's, they are orphans a cleanup removes).
        let published = result.is_err()
            && self
                .inner
                .storage
                .exists(&crate::manifest::manifest_path(
                    self.dir(),
                    base.manifest.version + 1,
                ))
                .unwrap_or(true);
        if lost_race || (result.is_err() && !published) {
            // Lost the race or failed before publishing: our files are unreferenced.
            for p in &written {
                let _ = self.inner.storage.delete(p);
            }
        }
        result
    }

    /// Commits version 1 of a new table: `rows` (already in `schema`) as
    /// its first fragments, through the same path as every later version
    /// (planned on an empty version 0 that is never written). `Ok(false)`
    /// when version 1 already exists: another creator won.
    pub(crate) fn commit_first_version(
        &self,
        schema: &SchemaRef,
        rows: RecordBatch,
    ) -> Result<bool> {
        let _writer = lock(&self.inner.write_lock);
        let genesis = Snapshot {
            manifest: Arc::new(Manifest {
                format: 1,
                version: 0,
                timestamp_ms: now_ms(),
                operation: String::new(),
                schema: schema.as_ref().clone(),
                fragments: Vec::new(),
                next_fragment_id: 0,
                metadata: BTreeMap::new(),
                indices: Vec::new(),
            }),
            fragments: Vec::new(),
            indices: Vec::new(),
            text_cache: self.inner.text_cache.clone(),
        };
        let change = Change {
            new_rows: Some(rows),
            operation: "create",
            ..Default::default()
        };
        let Some(c) = self.try_commit(&genesis, &change)? else {
            return Ok(false);
        };
        self.install(&mut lock(&self.inner.state), &c);
        Ok(true)
    }

    /// Writes the files of `change` (recording their paths in `written`)
    /// and publishes the manifest that names them.
    fn write_and_publish(
        &self,
        base: &Snapshot,
        change: &Change,
        written: &mut Vec<String>,
    ) -> Result<Option<Committed>> {
        let m = &base.manifest;
        if let Some(old) = &change.restore {
            let fragments = old.fragments.clone();
            let schema = Arc::new(old.schema.clone());
            return self.publish(
                base,
                change,
                fragments,
                &schema,
                m.next_fragment_id,
                vec![],
                &[],
            );
        }
        let schema = change
            .schema
            .clone()
            .unwrap_or_else(|| Arc::new(m.schema.clone()));
        let mut fragments = self.kept_fragments(base, change, written)?;
        self.rewrite_fragments(&schema, change, &mut fragments, written)?;
        let mut next_id = m.next_fragment_id;
        let new_fragments =
            self.write_fragments(&schema, change, &mut next_id, &mut fragments, written)?;
        // The new files were written deferred: the publish makes them (and
        // their folder entries) durable before the manifest naming them.
        self.publish(
            base,
            change,
            fragments,
            &schema,
            next_id,
            new_fragments,
            written,
        )
    }

    /// The base's fragments that stay, with `change`'s deletions applied
    /// (every changed deletion vector of the commit goes into one file).
    fn kept_fragments(
        &self,
        base: &Snapshot,
        change: &Change,
        written: &mut Vec<String>,
    ) -> Result<Vec<FragmentMeta>> {
        let m = &base.manifest;
        let mut fragments: Vec<FragmentMeta> = Vec::new();
        if change.replace_all {
            return Ok(fragments);
        }
        let del_rel = format!(
            "_deletions/{}-{}.bin",
            m.version + 1,
            uuid::Uuid::new_v4().simple()
        );
        let mut del_bytes: Vec<u8> = Vec::new();
        for f in &m.fragments {
            let mut f = f.clone();
            if let Some(extra) = change.deletions.get(&f.id) {
                let mut all = base
                    .fragment(f.id)
                    .map(|lf| (*lf.deleted).clone())
                    .unwrap_or_default();
                all |= extra;
                if all.len() >= f.physical_rows {
                    continue; // every row deleted: drop the fragment
                }
                let enc = encode_deletions(&all)?;
                f.deletion_file = Some(del_rel.clone());
                f.deletion_offset = del_bytes.len() as u64;
                f.deletion_len = enc.len() as u64;
                f.deletion_crc32c = Some(crc32c::crc32c(&enc));
                f.num_deleted = all.len();
                del_bytes.extend_from_slice(&enc);
            }
            fragments.push(f);
        }
        if !del_bytes.is_empty() {
            let path = format!("{}/{del_rel}", self.dir());
            self.inner.storage.put_deferred(&path, &del_bytes)?;
            written.push(path);
        }
        Ok(fragments)
    }

    /// Writes the rows of `change.rewrite` as new files of their fragments.
    fn rewrite_fragments(
        &self,
        schema: &SchemaRef,
        change: &Change,
        fragments: &mut [FragmentMeta],
        written: &mut Vec<String>,
    ) -> Result<()> {
        for (id, rows) in &change.rewrite {
            let Some(f) = fragments.iter_mut().find(|f| f.id == *id) else {
                continue; // deleted whole by the same change
            };
            if rows.num_rows() as u64 != f.physical_rows {
                return Err(Error::internal(format!(
                    "fragment {id} rewritten with {} rows, it has {}",
                    rows.num_rows(),
                    f.physical_rows
                )));
            }
            let (rel, crc) = self.write_data_file(schema, rows, written)?;
            f.file = rel;
            f.crc32c = Some(crc);
        }
        Ok(())
    }

    /// Writes one data file of `rows`; returns its path in the table
    /// folder and its crc32c.
    fn write_data_file(
        &self,
        schema: &SchemaRef,
        rows: &RecordBatch,
        written: &mut Vec<String>,
    ) -> Result<(String, u32)> {
        let rel = format!("data/{}.arrow", uuid::Uuid::new_v4().simple());
        let path = format!("{}/{rel}", self.dir());
        let mut crc = 0;
        self.inner.storage.put_with_deferred(&path, &mut |w| {
            let mut w = crate::fragment::CrcWriter::new(w);
            crate::ipc::write_file(&mut w, schema, std::slice::from_ref(rows))?;
            crc = w.crc;
            Ok(())
        })?;
        written.push(path);
        Ok((rel, crc))
    }

    /// Writes `change.new_rows` as fragments of at most
    /// [`MAX_ROWS_PER_FRAGMENT`] rows, numbered from `next_id`.
    fn write_fragments(
        &self,
        schema: &SchemaRef,
        change: &Change,
        next_id: &mut u64,
        fragments: &mut Vec<FragmentMeta>,
        written: &mut Vec<String>,
    ) -> Result<Vec<(u64, RecordBatch)>> {
        let mut new_fragments = Vec::new();
        let Some(rows) = change.new_rows.as_ref().filter(|r| r.num_rows() > 0) else {
            return Ok(new_fragments);
        };
        let mut offset = 0;
        while offset < rows.num_rows() {
            let len = MAX_ROWS_PER_FRAGMENT.min(rows.num_rows() - offset);
            let part = rows.slice(offset, len);
            offset += len;
            let (rel, crc) = self.write_data_file(schema, &part, written)?;
            fragments.push(FragmentMeta::new_file(*next_id, rel, len as u64, crc));
            new_fragments.push((*next_id, part));
            *next_id += 1;
        }
        Ok(new_fragments)
    }

    /// Publishes version `base + 1` with these fragments and schema, once
    /// the files `written` deferred are durable; `Ok(None)` when another
    /// writer published it first.
    #[allow(clippy::too_many_arguments)]
    fn publish(
        &self,
        base: &Snapshot,
        change: &Change,
        fragments: Vec<FragmentMeta>,
        schema: &SchemaRef,
        next_fragment_id: u64,
        new_fragments: Vec<(u64, RecordBatch)>,
        written: &[String],
    ) -> Result<Option<Committed>> {
        let m = &base.manifest;
        let default_indices = match &change.restore {
            Some(old) => &old.indices,
            None => &m.indices,
        };
        // An empty value removes its key (an unset LSM spec, a removed
        // config entry).
        let mut metadata = m.metadata.clone();
        for (k, v) in &change.metadata {
            if v.is_empty() {
                metadata.remove(k);
            } else {
                metadata.insert(k.clone(), v.clone());
            }
        }
        let indices = change
            .indices
            .clone()
            .unwrap_or_else(|| default_indices.clone());
        let manifest = Manifest {
            format: crate::manifest::format_for(&indices),
            version: m.version + 1,
            timestamp_ms: now_ms(),
            operation: change.operation.to_string(),
            schema: schema.as_ref().clone(),
            fragments,
            next_fragment_id,
            metadata,
            indices,
        };
        if !publish_manifest(self.inner.storage.as_ref(), self.dir(), &manifest, written)? {
            return Ok(None);
        }
        Ok(Some(Committed {
            manifest: Arc::new(manifest),
            new_fragments,
            rewritten: change.rewrite.clone(),
        }))
    }

    /// Installs a committed version as the cached state. The rows just
    /// written are cached as they are, or, where the storage maps files, as
    /// the mapped file (so the heap does not keep a second copy of the
    /// table; the file is ours and just written, so its checksum is not
    /// read again).
    pub(crate) fn install(&self, st: &mut State, c: &Committed) {
        let files: HashMap<u64, &str> = c
            .manifest
            .fragments
            .iter()
            .map(|f| (f.id, f.file.as_str()))
            .collect();
        let storage = self.inner.storage.as_ref();
        let schema = Arc::new(c.manifest.schema.clone());
        for (id, b) in c.new_fragments.iter().chain(&c.rewritten) {
            let Some(file) = files.get(id) else { continue };
            let mapped = storage.maps_files().then(|| {
                let path = format!("{}/{file}", self.dir());
                crate::fragment::read_data_file(storage, &path, &schema, None)
            });
            let batch = match mapped {
                Some(Ok(m)) if m.num_rows() == b.num_rows() => m,
                _ => b.clone(),
            };
            st.batches.insert(file.to_string(), batch);
        }
        st.retain_files(&c.manifest);
        st.manifest = Some(c.manifest.clone());
        st.checked = Some(std::time::Instant::now());
    }

    /// Plans against the latest version and commits, re-planning on every
    /// lost race. `plan` returns `None` when there is nothing to write.
    /// Returns the committed version (if any) and the number of attempts.
    /// The automatic cleanup the new version's config asks for runs after
    /// the publish, once this writer's lock is released
    /// ([`super::config`]).
    pub(crate) fn write_with_retry<T>(
        &self,
        deadline: Deadline,
        plan: impl FnMut(&Snapshot) -> Result<(Option<Change>, T)>,
        on_commit: impl FnMut(&mut Option<KeyIndex>, &Committed, &T),
    ) -> Result<(Option<u64>, T, u32)> {
        let (out, auto) = self.commit_with_retry(deadline, plan, on_commit)?;
        if let (Some(version), Some(auto)) = (out.0, auto) {
            self.auto_cleanup_after(version, auto);
        }
        Ok(out)
    }

    /// [`NativeTable::write_with_retry`] without the cleanup, which it
    /// returns when the committed version's config asks for one.
    #[allow(clippy::type_complexity)]
    fn commit_with_retry<T>(
        &self,
        deadline: Deadline,
        mut plan: impl FnMut(&Snapshot) -> Result<(Option<Change>, T)>,
        mut on_commit: impl FnMut(&mut Option<KeyIndex>, &Committed, &T),
    ) -> Result<((Option<u64>, T, u32), Option<super::config::AutoCleanup>)> {
        self.ensure_writable()?;
        let _writer = lock(&self.inner.write_lock);
        let mut attempts = 0;
        loop {
            attempts += 1;
            // The latest manifest, then its files read without the state
            // lock (readers and the MemWAL writer go on meanwhile).
            let m = self.refresh_locked(&mut lock(&self.inner.state))?;
            let snap = self.load(&m)?;
            self.check_fence(&snap)?;
            // Planning holds no lock on the table state (readers go on).
            let (change, out) = plan(&snap)?;
            let Some(change) = change else {
                return Ok(((None, out, attempts), None));
            };
            deadline.check()?;
            match self.try_commit(&snap, &change)? {
                Some(c) => {
                    let mut st = lock(&self.inner.state);
                    let mut idx = self.index_write();
                    on_commit(&mut idx, &c, &out);
                    // An index fold or a metadata change keeps the key index
                    // (rebuilding it is O(table), in the next writer's path).
                    if let Some(i) = idx.as_mut() {
                        if change.keeps_rows() && i.version == snap.manifest.version {
                            i.version = c.manifest.version;
                        }
                    }
                    if idx
                        .as_ref()
                        .is_some_and(|i| i.version != c.manifest.version)
                    {
                        *idx = None; // an operation that does not maintain the index
                    }
                    self.install(&mut st, &c);
                    drop(idx);
                    // A config this version cannot read only skips the
                    // cleanup (it was checked when set; another tool may
                    // have written it).
                    let auto =
                        super::config::auto_cleanup(&c.manifest.metadata).unwrap_or_else(|e| {
                            log::warn!("table {}: no automatic cleanup: {e}", self.inner.name);
                            None
                        });
                    return Ok(((Some(c.manifest.version), out, attempts), auto));
                }
                None if attempts >= MAX_COMMIT_ATTEMPTS => {
                    return Err(Error::CommitConflict {
                        table: self.inner.name.clone(),
                        attempts,
                    })
                }
                None => continue,
            }
        }
    }
}
