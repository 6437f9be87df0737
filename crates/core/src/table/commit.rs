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
use crate::error::{Error, Result};
use crate::fragment::encode_deletions;
use crate::keys::KeyIndex;
use crate::manifest::{
    now_ms, publish_manifest, FragmentMeta, IndexMeta, Manifest, FORMAT_VERSION,
};
use crate::traits::Deadline;

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
}

/// A change that made it into a version.
#[derive(Debug)]
pub(crate) struct Committed {
    pub manifest: Arc<Manifest>,
    /// Fragment ids of `new_rows`, in order, with their row counts.
    pub new_fragments: Vec<(u64, RecordBatch)>,
}

impl NativeTable {
    /// Tries to commit `change` as version `base + 1`. `Ok(None)` means
    /// another writer published that version first (nothing of ours remains).
    pub(crate) fn try_commit(&self, base: &Snapshot, change: &Change) -> Result<Option<Committed>> {
        let dir = self.dir().to_string();
        let storage = self.inner.storage.clone();
        let m = &base.manifest;
        let version = m.version + 1;
        let schema = change
            .schema
            .clone()
            .unwrap_or_else(|| Arc::new(m.schema.clone()));
        let mut written: Vec<String> = Vec::new();
        let result = (|| -> Result<Option<Committed>> {
            let mut next_id = m.next_fragment_id;
            let mut fragments: Vec<FragmentMeta> = Vec::new();
            // Every changed deletion vector of this commit goes into one file.
            let del_rel = format!("_deletions/{version}-{}.bin", uuid::Uuid::new_v4().simple());
            let mut del_bytes: Vec<u8> = Vec::new();
            if !change.replace_all {
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
            }
            if !del_bytes.is_empty() {
                let path = format!("{dir}/{del_rel}");
                storage.put(&path, &del_bytes)?;
                written.push(path);
            }
            let mut new_fragments = Vec::new();
            if let Some(rows) = change.new_rows.as_ref().filter(|r| r.num_rows() > 0) {
                let mut offset = 0;
                while offset < rows.num_rows() {
                    let len = MAX_ROWS_PER_FRAGMENT.min(rows.num_rows() - offset);
                    let part = rows.slice(offset, len);
                    offset += len;
                    let rel = format!("data/{}.arrow", uuid::Uuid::new_v4().simple());
                    let path = format!("{dir}/{rel}");
                    let mut crc = 0;
                    storage.put_with(&path, &mut |w| {
                        let mut w = crate::fragment::CrcWriter::new(w);
                        crate::ipc::write_file(&mut w, &schema, std::slice::from_ref(&part))?;
                        crc = w.crc;
                        Ok(())
                    })?;
                    written.push(path);
                    fragments.push(FragmentMeta {
                        id: next_id,
                        file: rel,
                        physical_rows: len as u64,
                        deletion_file: None,
                        deletion_offset: 0,
                        deletion_len: 0,
                        num_deleted: 0,
                        crc32c: Some(crc),
                        deletion_crc32c: None,
                    });
                    new_fragments.push((next_id, part));
                    next_id += 1;
                }
            }
            let manifest = Manifest {
                format: FORMAT_VERSION,
                version,
                timestamp_ms: now_ms(),
                operation: change.operation.to_string(),
                schema: schema.as_ref().clone(),
                fragments,
                next_fragment_id: next_id,
                metadata: {
                    let mut md = m.metadata.clone();
                    md.extend(change.metadata.clone());
                    md
                },
                indices: change.indices.clone().unwrap_or_else(|| m.indices.clone()),
            };
            // The new files' folder entries must be durable before the
            // manifest that references them is.
            for sub in ["data", "_deletions"] {
                if written
                    .iter()
                    .any(|p| p.starts_with(&format!("{dir}/{sub}/")))
                {
                    storage.sync(&format!("{dir}/{sub}"))?;
                }
            }
            if !publish_manifest(storage.as_ref(), &dir, &manifest)? {
                return Ok(None);
            }
            Ok(Some(Committed {
                manifest: Arc::new(manifest),
                new_fragments,
            }))
        })();
        if !matches!(result, Ok(Some(_))) {
            // Lost the race or failed mid-way: our files are unreferenced.
            for p in &written {
                let _ = storage.delete(p);
            }
        }
        result
    }

    /// Installs a committed version as the cached state.
    pub(crate) fn install(&self, st: &mut State, c: &Committed) {
        for (id, b) in &c.new_fragments {
            st.batches.insert(*id, b.clone());
        }
        let live: std::collections::HashSet<u64> =
            c.manifest.fragments.iter().map(|f| f.id).collect();
        st.batches.retain(|id, _| live.contains(id));
        st.manifest = Some(c.manifest.clone());
    }

    /// Plans against the latest version and commits, re-planning on every
    /// lost race. `plan` returns `None` when there is nothing to write.
    /// Returns the committed version (if any) and the number of attempts.
    pub(crate) fn write_with_retry<T>(
        &self,
        deadline: Deadline,
        mut plan: impl FnMut(&Snapshot) -> Result<(Option<Change>, T)>,
        mut on_commit: impl FnMut(&mut Option<KeyIndex>, &Committed, &T),
    ) -> Result<(Option<u64>, T, u32)> {
        self.ensure_writable()?;
        let _writer = lock(&self.inner.write_lock);
        let mut attempts = 0;
        loop {
            attempts += 1;
            let snap = {
                let mut st = lock(&self.inner.state);
                let m = self.refresh_locked(&mut st)?;
                self.load_locked(&mut st, &m)?
            };
            // Planning holds no lock on the table state (readers go on).
            let (change, out) = plan(&snap)?;
            let Some(change) = change else {
                return Ok((None, out, attempts));
            };
            deadline.check()?;
            match self.try_commit(&snap, &change)? {
                Some(c) => {
                    let mut st = lock(&self.inner.state);
                    let mut idx = self.index_write();
                    on_commit(&mut idx, &c, &out);
                    if idx
                        .as_ref()
                        .is_some_and(|i| i.version != c.manifest.version)
                    {
                        *idx = None; // an operation that does not maintain the index
                    }
                    self.install(&mut st, &c);
                    drop(idx);
                    return Ok((Some(c.manifest.version), out, attempts));
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
