//! Restoring an old version (a new version equal to it) and table
//! statistics (`stats()`).

use super::commit::Change;
use super::NativeTable;
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::manifest::read_manifest;
use crate::stats::{FragmentStats, TableStats};

impl NativeTable {
    /// Commits a new version with the rows, schema and indexes of
    /// `version` (`None`: the version this handle is checked out at);
    /// returns the new version. Works from a checked-out handle too: the
    /// new version is the table's latest.
    pub fn restore_sync(&self, version: Option<u64>) -> Result<u64> {
        let v = version
            .or_else(|| self.pinned.as_ref().map(|m| m.version))
            .ok_or_else(|| {
                Error::invalid(
                    "restore needs a version: check out the version to restore first, or pass it",
                )
            })?;
        let old = read_manifest(self.storage(), self.dir(), v)?.ok_or_else(|| {
            Error::VersionNotFound {
                table: self.table_name().into(),
                version: v,
                hint: String::new(),
            }
        })?;
        let old = std::sync::Arc::new(old);
        let latest = self.checkout_sync(None)?;
        let (committed, _, _) = latest.write_with_retry(
            Deadline::new(None),
            |_| {
                Ok((
                    Some(Change {
                        restore: Some(old.clone()),
                        operation: "restore",
                        ..Default::default()
                    }),
                    (),
                ))
            },
            // Not maintained here: write_with_retry drops the key index, so
            // later merges rebuild it from the restored fragments.
            |_, _, _| {},
        )?;
        committed.ok_or_else(|| Error::internal("restore committed nothing"))
    }

    /// Sizes and fragment layout of the version reads see.
    pub fn stats_sync(&self) -> Result<TableStats> {
        let m = self.manifest()?;
        let mut total_bytes = 0;
        for f in &m.fragments {
            let path = format!("{}/{}", self.dir(), f.file);
            total_bytes += self.storage().size(&path)?.unwrap_or(0);
            total_bytes += f.deletion_len;
        }
        let rows: Vec<u64> = m.fragments.iter().map(|f| f.live_rows()).collect();
        Ok(TableStats {
            total_bytes,
            num_rows: m.num_rows(),
            num_indices: m.indices.len() as u64,
            fragment_stats: FragmentStats::of(&rows),
        })
    }
}
