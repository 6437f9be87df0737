//! Tags: names for versions (`{table}/_refs/tags/{tag}.json` holding
//! `{"version": N}`), as LanceDB's `tags()`: create, update, delete, list,
//! and the version a tag names (for `checkout(tag)`). A tag names a version
//! that exists; versions are never removed, so it stays valid.

use std::collections::BTreeMap;

use super::NativeTable;
use crate::api::TagInfo;
use crate::error::{Error, Result};
use crate::manifest::{manifest_path, read_manifest};
use crate::storage::PutNew;

/// A tag name: the rule of table names (it becomes a file name).
fn check_tag(tag: &str) -> Result<()> {
    crate::name::validate_name("tag", tag)
}

impl NativeTable {
    fn tag_path(&self, tag: &str) -> String {
        format!("{}/_refs/tags/{tag}.json", self.dir())
    }

    fn no_tag(&self, tag: &str) -> Error {
        Error::TagNotFound {
            table: self.table_name().into(),
            tag: tag.into(),
        }
    }

    /// The version `tag` names.
    pub fn tag_version_sync(&self, tag: &str) -> Result<u64> {
        check_tag(tag)?;
        let path = self.tag_path(tag);
        let bytes = self.storage().get(&path)?.ok_or_else(|| self.no_tag(tag))?;
        let t: TagInfo = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path,
            message: e.to_string(),
        })?;
        Ok(t.version)
    }

    /// Every tag with what it records, by name.
    pub fn tags_sync(&self) -> Result<BTreeMap<String, TagInfo>> {
        let mut out = BTreeMap::new();
        for name in self.storage().list(&format!("{}/_refs/tags", self.dir()))? {
            let Some(tag) = name.strip_suffix(".json") else {
                continue;
            };
            let version = self.tag_version_sync(tag)?;
            out.insert(tag.to_string(), self.tag_info(version)?);
        }
        Ok(out)
    }

    /// What a tag naming `version` records (the version must exist).
    fn tag_info(&self, version: u64) -> Result<TagInfo> {
        let path = manifest_path(self.dir(), version);
        let size = self.storage().size(&path)?.ok_or(Error::VersionNotFound {
            table: self.table_name().into(),
            version,
            hint: String::new(),
        })?;
        Ok(TagInfo {
            version,
            manifest_size: size,
        })
    }

    /// Names `version` `tag`; `replace`: the tag must exist (update),
    /// else it must not (create).
    pub fn set_tag_sync(&self, tag: &str, version: u64, replace: bool) -> Result<()> {
        check_tag(tag)?;
        read_manifest(self.storage(), self.dir(), version)?.ok_or(Error::VersionNotFound {
            table: self.table_name().into(),
            version,
            hint: String::new(),
        })?;
        let path = self.tag_path(tag);
        let body = serde_json::to_vec(&self.tag_info(version)?)
            .map_err(|e| Error::internal(e.to_string()))?;
        if replace {
            if !self.storage().exists(&path)? {
                return Err(self.no_tag(tag));
            }
            self.storage().put(&path, &body)?;
        } else if self.storage().put_new(&path, &body)? == PutNew::AlreadyExists {
            // Create-only: of two concurrent creates, exactly one wins.
            return Err(Error::invalid(format!(
                "table '{}' already has the tag '{tag}'; update it instead",
                self.table_name()
            )));
        }
        self.storage().sync(&format!("{}/_refs/tags", self.dir()))
    }

    /// Removes `tag` (the version stays).
    pub fn delete_tag_sync(&self, tag: &str) -> Result<()> {
        check_tag(tag)?;
        let path = self.tag_path(tag);
        if !self.storage().exists(&path)? {
            return Err(self.no_tag(tag));
        }
        self.storage().delete(&path)?;
        self.storage().sync(&format!("{}/_refs/tags", self.dir()))
    }
}
