//! [`MemoryStorage`]: files in a map, for `memory://` databases and tests.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Mutex;

use bytes::Bytes;

use super::{PutNew, Storage};
use crate::error::{Error, Result};

/// Files held in memory (`memory://`); gone when the database is dropped.
#[derive(Debug, Default)]
pub struct MemoryStorage {
    files: Mutex<BTreeMap<String, Bytes>>,
}

impl MemoryStorage {
    fn files(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Bytes>> {
        // A poisoned map is still a consistent map: every mutation is one insert/remove.
        self.files.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Storage for MemoryStorage {
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        self.files()
            .insert(path.to_string(), Bytes::copy_from_slice(data));
        Ok(())
    }
    fn put_new(&self, path: &str, data: &[u8]) -> Result<PutNew> {
        let mut files = self.files();
        if files.contains_key(path) {
            return Ok(PutNew::AlreadyExists);
        }
        files.insert(path.to_string(), Bytes::copy_from_slice(data));
        Ok(PutNew::Created)
    }
    fn get(&self, path: &str) -> Result<Option<Bytes>> {
        Ok(self.files().get(path).cloned())
    }
    fn exists(&self, path: &str) -> Result<bool> {
        Ok(self.files().contains_key(path))
    }
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        let prefix = if dir.is_empty() {
            String::new()
        } else {
            format!("{}/", dir.trim_end_matches('/'))
        };
        let mut out: Vec<String> = self
            .files()
            .keys()
            .filter_map(|k| k.strip_prefix(&prefix))
            .filter_map(|rest| rest.split('/').next())
            .map(str::to_string)
            .collect();
        out.dedup();
        Ok(out)
    }
    fn delete(&self, path: &str) -> Result<()> {
        self.files().remove(path);
        Ok(())
    }
    fn delete_dir(&self, dir: &str) -> Result<()> {
        let prefix = format!("{}/", dir.trim_end_matches('/'));
        self.files().retain(|k, _| !k.starts_with(&prefix));
        Ok(())
    }
    fn rename_dir(&self, from: &str, to: &str) -> Result<()> {
        let (src, dst) = (
            format!("{}/", from.trim_end_matches('/')),
            format!("{}/", to.trim_end_matches('/')),
        );
        let mut files = self.files();
        if files.keys().any(|k| k.starts_with(&dst)) {
            return Err(Error::io(
                to,
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        let moved: Vec<String> = files
            .keys()
            .filter(|k| k.starts_with(&src))
            .cloned()
            .collect();
        for k in moved {
            if let Some(v) = files.remove(&k) {
                files.insert(format!("{dst}{}", &k[src.len()..]), v);
            }
        }
        Ok(())
    }
    fn local_path(&self, _dir: &str) -> Option<PathBuf> {
        None
    }
}
