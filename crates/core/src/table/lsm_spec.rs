//! A native table's record of LanceDB 0.39's LSM settings (the rules are
//! in [`crate::lsm`]): the unenforced primary key, committed as Lance's
//! field metadata in a schema-only version, and the LSM write spec,
//! committed as a metadata-only version; and the table's config (Lance's
//! `update_config`, checked by [`super::config`]), a metadata-only version
//! too. No row moves in any of them.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::commit::Change;
use super::NativeTable;
use crate::data::Data;
use crate::deadline::Deadline;
use crate::error::{Error, Result};
use crate::lsm::{self, LsmWriteSpec};
use crate::merge::{MergeInsert, MergeResult, MEM_WAL_NATIVE_UNSUPPORTED};

impl NativeTable {
    /// Records `columns` (exactly one) as the table's unenforced primary
    /// key; returns the new version.
    pub fn set_primary_key_sync(&self, columns: &[String]) -> Result<u64> {
        let (version, (), _) = self.write_with_retry(
            Deadline::new(None),
            |snap| {
                let schema = lsm::with_primary_key(&snap.manifest.schema, columns)?;
                let change = Change {
                    operation: "set_primary_key",
                    schema: Some(Arc::new(schema)),
                    ..Default::default()
                };
                Ok((Some(change), ()))
            },
            keep_key_index,
        )?;
        version.ok_or_else(|| Error::internal("recording a primary key committed nothing"))
    }

    /// Records `spec` (`None`: removes the recorded one; refused when
    /// there is none); returns the new version.
    pub fn set_lsm_spec_sync(&self, spec: Option<LsmWriteSpec>) -> Result<u64> {
        let (version, (), _) = self.write_with_retry(
            Deadline::new(None),
            |snap| {
                let m = &snap.manifest;
                let current = lsm::recorded_spec(&m.metadata)?;
                let recorded = match &spec {
                    None if current.is_none() => {
                        return Err(Error::invalid(
                            "unset_lsm_write_spec: no LSM write spec is set on this table",
                        ))
                    }
                    None => None,
                    Some(s) => {
                        let names: Vec<String> = m.indices.iter().map(|i| i.name.clone()).collect();
                        Some(lsm::check_spec(
                            s.clone(),
                            &m.schema,
                            current.as_ref(),
                            &names,
                        )?)
                    }
                };
                let change = Change {
                    operation: "set_lsm_write_spec",
                    metadata: [lsm::spec_entry(recorded.as_ref())?].into(),
                    ..Default::default()
                };
                Ok((Some(change), ()))
            },
            keep_key_index,
        )?;
        version.ok_or_else(|| Error::internal("recording an LSM write spec committed nothing"))
    }

    /// Sets the `upsert` entries of the table's config and removes the
    /// `delete` keys, as one new version (returned).
    pub fn update_config_sync(
        &self,
        upsert: BTreeMap<String, String>,
        delete: Vec<String>,
    ) -> Result<u64> {
        for (k, v) in &upsert {
            super::config::check_entry(k, Some(v))?;
        }
        for k in &delete {
            super::config::check_entry(k, None)?;
            if upsert.contains_key(k) {
                return Err(Error::invalid(format!(
                    "update_config: '{k}' is both set and removed"
                )));
            }
        }
        // A removal is recorded as an empty value, which the commit drops.
        let mut metadata = upsert;
        metadata.extend(delete.into_iter().map(|k| (k, String::new())));
        let (version, (), _) = self.write_with_retry(
            Deadline::new(None),
            |_| {
                let change = Change {
                    operation: "update_config",
                    metadata: metadata.clone(),
                    ..Default::default()
                };
                Ok((Some(change), ()))
            },
            |_, _, _| {},
        )?;
        version.ok_or_else(|| Error::internal("update_config committed nothing"))
    }

    /// The LSM write spec this handle's version records.
    pub fn lsm_spec_sync(&self) -> Result<Option<LsmWriteSpec>> {
        lsm::recorded_spec(&self.read_manifest()?.metadata)
    }

    /// A merge insert as the `Table` trait runs it on a native table:
    /// routed by the recorded spec. The LSM path of a local table is the
    /// merge itself (there is no local MemWAL: the upsert commits at once,
    /// so its rows are durable in the base when the call returns); without
    /// a spec, asking for the MemWAL is refused.
    pub fn merge_insert_routed_sync(&self, m: MergeInsert, data: Data) -> Result<MergeResult> {
        let m = self.route_merge_sync(m)?;
        if m.mem_wal == Some(true) && self.lsm_spec_sync()?.is_none() {
            return Err(Error::not_supported(MEM_WAL_NATIVE_UNSUPPORTED));
        }
        self.merge_insert_sync(&m, data)
    }

    /// `m` routed as the table's recorded spec says (see [`lsm::route`]).
    pub fn route_merge_sync(&self, m: MergeInsert) -> Result<MergeInsert> {
        if m.mem_wal == Some(false) {
            return Ok(m);
        }
        let manifest = self.read_manifest()?;
        let spec = lsm::recorded_spec(&manifest.metadata)?;
        lsm::route(m, spec.as_ref(), &manifest.schema)
    }
}

/// No row moves: the key index stays valid at the new version.
fn keep_key_index(idx: &mut Option<super::KeyIndex>, c: &super::commit::Committed, _: &()) {
    if let Some(i) = idx.as_mut() {
        i.version = c.manifest.version;
    }
}
