//! Commit fences between writers that take a table over from one another
//! (the server's MemWAL on an object store): a writer claims an epoch by
//! committing it into the manifest's metadata, and from then on every
//! commit of this process refuses to land on a version that records a
//! newer epoch. The create-only publish makes this exact: a stale writer
//! that planned on an older version loses the publish race, plans again on
//! the latest one, finds the newer epoch there and stops with `Fenced`.

use super::commit::Change;
use super::{lock, NativeTable, Snapshot};
use crate::deadline::Deadline;
use crate::error::{Error, Result};

/// The epoch `snap` records under `key` (0 when none does).
fn recorded(snap: &Snapshot, key: &str) -> u64 {
    snap.manifest
        .metadata
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

impl NativeTable {
    /// Claims `epoch` under the metadata `key`: commits a version that
    /// records it (no rows change), then fences every later commit of this
    /// process on the table (every handle of this database) against newer
    /// epochs. `Fenced` when the table already records `epoch` or a newer
    /// one: another writer claimed it first. Returns the committed version.
    pub fn claim_epoch_sync(&self, key: &str, epoch: u64) -> Result<u64> {
        *lock(&self.inner.fence) = None;
        let (version, (), _) = self.write_with_retry(
            Deadline::new(None),
            |snap| {
                let found = recorded(snap, key);
                if found >= epoch {
                    return Err(self.fenced(snap, key, found, epoch));
                }
                let change = Change {
                    operation: "claim",
                    metadata: [(key.to_string(), epoch.to_string())].into(),
                    ..Default::default()
                };
                Ok((Some(change), ()))
            },
            // No row moves: the key index stays valid.
            |idx, c, _| {
                if let Some(i) = idx.as_mut() {
                    i.version = c.manifest.version;
                }
            },
        )?;
        *lock(&self.inner.fence) = Some((key.to_string(), epoch));
        version.ok_or_else(|| Error::internal("an epoch claim committed nothing"))
    }

    /// Refuses a commit planned on `snap` when it records an epoch newer
    /// than the one this process claimed.
    pub(crate) fn check_fence(&self, snap: &Snapshot) -> Result<()> {
        let fence = lock(&self.inner.fence).clone();
        let Some((key, epoch)) = fence else {
            return Ok(());
        };
        let found = recorded(snap, &key);
        if found > epoch {
            return Err(self.fenced(snap, &key, found, epoch));
        }
        Ok(())
    }

    fn fenced(&self, snap: &Snapshot, key: &str, found: u64, epoch: u64) -> Error {
        Error::Fenced {
            table: self.inner.name.clone(),
            message: format!(
                "version {} records {key} = {found}, this writer holds {epoch}: another writer has taken the table over",
                snap.manifest.version
            ),
        }
    }
}
