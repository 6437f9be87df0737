//! Version cleanup, as Lance's `cleanup_old_versions`: the manifests of
//! versions older than a cutoff go, then every file in `data/`,
//! `_deletions/` and `_indices/` (and its per-index folders) that no kept
//! version names, then the index folders left empty.
//!
//! Kept: the latest version (always), every version committed at or after
//! the cutoff, and every tagged version. A file no manifest names at all
//! (written by a commit that failed, or by one still in flight in another
//! process) is "unverified": it goes only when it is older than the cutoff,
//! or when the caller says `delete_unverified`, and never while an index
//! build of this process is writing its files. Manifests go first, files
//! after: a crash in between leaves files that no version names, which the
//! next run removes; never a kept version missing a file.

use std::collections::HashSet;
use std::time::{Duration, SystemTime};

use super::NativeTable;
use crate::api::PruneStats;
use crate::error::Result;
use crate::manifest::{list_versions, manifest_path, now_ms, read_manifest, Manifest};

/// The folders of a table that hold files versions name.
const FILE_DIRS: [&str; 3] = ["data", "_deletions", "_indices"];

/// The files of a table's file folders and its index folders (each with
/// whether it was empty), relative to the table folder.
type Listing = (Vec<String>, Vec<(String, bool)>);

/// Every file (relative to the table folder) `m` names.
fn files_of(m: &Manifest, out: &mut HashSet<String>) {
    for f in &m.fragments {
        out.insert(f.file.clone());
        if let Some(d) = &f.deletion_file {
            out.insert(d.clone());
        }
    }
    for ix in &m.indices {
        for f in &ix.files {
            out.insert(f.path.clone());
        }
    }
}

impl NativeTable {
    /// Removes the versions committed before `now - older_than` (except the
    /// latest and tagged ones) and the files only they named; see the
    /// module doc. Runs beside writers: it never removes what the latest
    /// version, or a commit racing it, can name.
    pub fn cleanup_sync(
        &self,
        older_than: Duration,
        delete_unverified: bool,
    ) -> Result<PruneStats> {
        let cutoff_ms = now_ms().saturating_sub(older_than.as_millis() as u64);
        self.cleanup_before_sync(cutoff_ms, delete_unverified)
    }

    /// [`NativeTable::cleanup_sync`] for cleanups no one asked for by call
    /// (a table's automatic cleanup, a server's upkeep under a table's own
    /// retention): a file no version names stays until it is also
    /// `unverified_age` old, as Lance keeps unverified files for 7 days
    /// whatever the cutoff, so that a commit another process has in flight
    /// never loses its files to a short retention.
    pub fn cleanup_guarded_sync(
        &self,
        older_than: Duration,
        unverified_age: Duration,
    ) -> Result<PruneStats> {
        let now = now_ms();
        let cutoff_ms = now.saturating_sub(older_than.as_millis() as u64);
        let unverified_ms = now.saturating_sub(older_than.max(unverified_age).as_millis() as u64);
        self.cleanup_run(cutoff_ms, unverified_ms, false)
    }

    /// [`NativeTable::cleanup_sync`] with the cutoff as a commit time (ms
    /// since the Unix epoch): versions committed before it go.
    pub fn cleanup_before_sync(
        &self,
        cutoff_ms: u64,
        delete_unverified: bool,
    ) -> Result<PruneStats> {
        self.cleanup_run(cutoff_ms, cutoff_ms, delete_unverified)
    }

    /// Removes the versions committed before `cutoff_ms` and the files only
    /// they named; files no version names go when written before
    /// `unverified_ms` (or with `delete_unverified`).
    fn cleanup_run(
        &self,
        cutoff_ms: u64,
        unverified_ms: u64,
        delete_unverified: bool,
    ) -> Result<PruneStats> {
        self.ensure_writable()?;
        // This process's writers wait: none publishes a file this run could
        // take for an orphan (other processes: see `delete_unverified`).
        let _writers = super::lock(&self.inner.write_lock);
        let unverified_before = SystemTime::UNIX_EPOCH + Duration::from_millis(unverified_ms);
        let st = self.storage();
        let versions = list_versions(st, self.dir())?;
        let Some(&latest) = versions.last() else {
            return Ok(PruneStats::default());
        };
        let tagged: HashSet<u64> = self.tags_sync()?.values().map(|t| t.version).collect();
        let (mut kept_files, mut named_files) = (HashSet::new(), HashSet::new());
        let mut doomed = Vec::new();
        for v in versions {
            let Some(m) = read_manifest(st, self.dir(), v)? else {
                continue; // removed meanwhile by another cleanup
            };
            files_of(&m, &mut named_files);
            if v == latest || m.timestamp_ms >= cutoff_ms || tagged.contains(&v) {
                files_of(&m, &mut kept_files);
            } else {
                doomed.push(v);
            }
        }
        let mut stats = PruneStats::default();
        for v in &doomed {
            let path = manifest_path(self.dir(), *v);
            stats.bytes_removed += st.size(&path)?.unwrap_or(0);
            st.delete(&path)?;
            stats.old_versions_removed += 1;
        }
        stats.bytes_removed += self.remove_unnamed(
            &kept_files,
            &named_files,
            unverified_before,
            delete_unverified,
        )?;
        stats.bytes_removed += self.remove_stale_temps(unverified_before)?;
        if !doomed.is_empty() {
            st.sync(&format!("{}/_versions", self.dir()))?;
        }
        Ok(stats)
    }

    /// Removes the files of the table's file folders that no kept version
    /// names: those some version named (verified) always, the others only
    /// when written before `cutoff` or with `delete_unverified`. Returns
    /// bytes.
    fn remove_unnamed(
        &self,
        kept: &HashSet<String>,
        named: &HashSet<String>,
        cutoff: SystemTime,
        delete_unverified: bool,
    ) -> Result<u64> {
        let st = self.storage();
        // An index build of this process may be writing files it has not
        // published yet: unverified files stay while one runs.
        let building = self
            .inner
            .building
            .load(std::sync::atomic::Ordering::SeqCst)
            > 0;
        let unverified_go = |path: &str| -> Result<bool> {
            let old = st.modified(path)?.is_some_and(|t| t < cutoff);
            Ok((old || delete_unverified) && !building)
        };
        let mut bytes = 0;
        let (files, folders) = self.listed()?;
        let mut emptied = HashSet::new();
        for rel in files {
            if kept.contains(&rel) {
                continue;
            }
            let path = format!("{}/{rel}", self.dir());
            if named.contains(&rel) || unverified_go(&path)? {
                bytes += st.size(&path)?.unwrap_or(0);
                st.delete(&path)?;
                if let Some((folder, _)) = rel.rsplit_once('/') {
                    emptied.insert(folder.to_string());
                }
            }
        }
        // An index folder goes once empty: emptied by this run, or found
        // empty (a failed write's) and as old as an unverified file must be.
        for (folder, was_empty) in folders {
            let path = format!("{}/{folder}", self.dir());
            let go = if was_empty {
                unverified_go(&path)?
            } else {
                emptied.contains(&folder) && st.list(&path)?.is_empty()
            };
            if go {
                st.delete_dir(&path)?;
            }
        }
        Ok(bytes)
    }

    /// Removes the private copies of manifests (`_versions/*.tmp-*`) a
    /// publish cut short by a crash left, once written before `cutoff` (a
    /// publish in flight still needs its copy). Returns bytes.
    fn remove_stale_temps(&self, cutoff: SystemTime) -> Result<u64> {
        let st = self.storage();
        let mut bytes = 0;
        for name in st.list(&format!("{}/_versions", self.dir()))? {
            if !name.contains(".tmp-") {
                continue;
            }
            let path = format!("{}/_versions/{name}", self.dir());
            if st.modified(&path)?.is_some_and(|t| t < cutoff) {
                bytes += st.size(&path)?.unwrap_or(0);
                st.delete(&path)?;
            }
        }
        Ok(bytes)
    }

    /// The files of the table's file folders, relative to the table folder,
    /// and the index folders (`_indices/{uuid}`, each with whether it was
    /// empty). An entry of `_indices` without an extension is such a folder;
    /// older tables keep their index files directly in `_indices`.
    fn listed(&self) -> Result<Listing> {
        let st = self.storage();
        let (mut files, mut folders) = (Vec::new(), Vec::new());
        for dir in FILE_DIRS {
            for name in st.list(&format!("{}/{dir}", self.dir()))? {
                let rel = format!("{dir}/{name}");
                if dir != "_indices" || name.contains('.') {
                    files.push(rel);
                    continue;
                }
                // Not a folder after all (a file named without an extension): a file.
                let Ok(inside) = st.list(&format!("{}/{rel}", self.dir())) else {
                    files.push(rel);
                    continue;
                };
                folders.push((rel.clone(), inside.is_empty()));
                files.extend(inside.into_iter().map(|f| format!("{rel}/{f}")));
            }
        }
        Ok((files, folders))
    }
}
