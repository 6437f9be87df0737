//! [`Prefixed`]: a storage seen from one of its folders, so a database of
//! tables can live in a folder of another (a namespace's tables, see
//! [`crate::namespace`]) on any backend: every path is taken relative to
//! the folder.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use super::{PutNew, Storage};
use crate::error::Result;

/// The files of `inner` under `prefix`, addressed relative to it.
#[derive(Debug)]
pub struct Prefixed {
    inner: Arc<dyn Storage>,
    prefix: String,
}

impl Prefixed {
    /// `inner`'s folder `prefix` (a `/`-separated relative path, not empty).
    pub fn new(inner: Arc<dyn Storage>, prefix: &str) -> Self {
        Self {
            inner,
            prefix: prefix.trim_matches('/').to_string(),
        }
    }

    fn at(&self, path: &str) -> String {
        let path = path.trim_start_matches('/');
        if path.is_empty() {
            self.prefix.clone()
        } else {
            format!("{}/{path}", self.prefix)
        }
    }
}

impl Storage for Prefixed {
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        self.inner.put(&self.at(path), data)
    }
    fn put_with(
        &self,
        path: &str,
        write: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<()> {
        self.inner.put_with(&self.at(path), write)
    }
    fn put_new(&self, path: &str, data: &[u8]) -> Result<PutNew> {
        self.inner.put_new(&self.at(path), data)
    }
    fn put_deferred(&self, path: &str, data: &[u8]) -> Result<()> {
        self.inner.put_deferred(&self.at(path), data)
    }
    fn put_with_deferred(
        &self,
        path: &str,
        write: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<()> {
        self.inner.put_with_deferred(&self.at(path), write)
    }
    fn persist(&self, paths: &[String]) -> Result<()> {
        let paths: Vec<String> = paths.iter().map(|p| self.at(p)).collect();
        self.inner.persist(&paths)
    }
    fn put_new_after(&self, path: &str, data: &[u8], pending: &[String]) -> Result<PutNew> {
        let pending: Vec<String> = pending.iter().map(|p| self.at(p)).collect();
        self.inner.put_new_after(&self.at(path), data, &pending)
    }
    fn get(&self, path: &str) -> Result<Option<Bytes>> {
        self.inner.get(&self.at(path))
    }
    fn get_mapped(&self, path: &str) -> Result<Option<Bytes>> {
        self.inner.get_mapped(&self.at(path))
    }
    fn maps_files(&self) -> bool {
        self.inner.maps_files()
    }
    fn exists(&self, path: &str) -> Result<bool> {
        self.inner.exists(&self.at(path))
    }
    fn size(&self, path: &str) -> Result<Option<u64>> {
        self.inner.size(&self.at(path))
    }
    fn modified(&self, path: &str) -> Result<Option<std::time::SystemTime>> {
        self.inner.modified(&self.at(path))
    }
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        self.inner.list(&self.at(dir))
    }
    fn delete(&self, path: &str) -> Result<()> {
        self.inner.delete(&self.at(path))
    }
    fn delete_dir(&self, dir: &str) -> Result<()> {
        self.inner.delete_dir(&self.at(dir))
    }
    fn rename_dir(&self, from: &str, to: &str) -> Result<()> {
        self.inner.rename_dir(&self.at(from), &self.at(to))
    }
    fn local_path(&self, dir: &str) -> Option<PathBuf> {
        self.inner.local_path(&self.at(dir))
    }
    fn sync(&self, dir: &str) -> Result<()> {
        self.inner.sync(&self.at(dir))
    }
}
