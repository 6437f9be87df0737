//! [`FaultyStorage`]: a wrapper that fails chosen operations, so tests can
//! simulate a crash, a failed write or a full disk at any step.

use std::path::PathBuf;
use std::sync::Arc;

use bytes::Bytes;

use super::{PutNew, Storage};
use crate::error::{Error, Result};

/// Which operation a [`FaultyStorage`] is asked about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// [`Storage::put`]
    Put,
    /// [`Storage::put_new`]
    PutNew,
    /// [`Storage::rename_dir`] (the path is the source)
    Rename,
    /// [`Storage::delete`] (cleanup's removals)
    Delete,
    /// [`Storage::get`] and [`Storage::get_mapped`] (a predicate may also
    /// block here, to hold a reader inside a read)
    Get,
}

/// A fault-injecting wrapper: operations for which the predicate answers
/// true fail with an I/O error *before* touching the inner storage, as a
/// crash at that point would leave it.
pub struct FaultyStorage {
    inner: Arc<dyn Storage>,
    fail: FaultFn,
    /// Fail as a full disk (ENOSPC) rather than with a generic error.
    no_space: bool,
}

/// Decides which operations a [`FaultyStorage`] fails.
pub type FaultFn = Box<dyn Fn(Op, &str) -> bool + Send + Sync>;

impl std::fmt::Debug for FaultyStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FaultyStorage")
            .field("inner", &self.inner)
            .finish()
    }
}

impl FaultyStorage {
    /// Wraps `inner`, failing every operation for which `fail` is true.
    pub fn new(
        inner: Arc<dyn Storage>,
        fail: impl Fn(Op, &str) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner,
            fail: Box::new(fail),
            no_space: false,
        }
    }

    /// As [`FaultyStorage::new`], failing like a full disk (ENOSPC).
    pub fn no_space(
        inner: Arc<dyn Storage>,
        fail: impl Fn(Op, &str) -> bool + Send + Sync + 'static,
    ) -> Self {
        Self {
            no_space: true,
            ..Self::new(inner, fail)
        }
    }
    fn check(&self, op: Op, path: &str) -> Result<()> {
        if (self.fail)(op, path) {
            let e = if self.no_space {
                std::io::Error::from_raw_os_error(28)
            } else {
                std::io::Error::other("injected fault (simulated crash)")
            };
            return Err(Error::io(path, e));
        }
        Ok(())
    }
}

impl Storage for FaultyStorage {
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        self.check(Op::Put, path)?;
        self.inner.put(path, data)
    }
    fn put_new(&self, path: &str, data: &[u8]) -> Result<PutNew> {
        self.check(Op::PutNew, path)?;
        self.inner.put_new(path, data)
    }
    fn get(&self, path: &str) -> Result<Option<Bytes>> {
        self.check(Op::Get, path)?;
        self.inner.get(path)
    }
    fn get_mapped(&self, path: &str) -> Result<Option<Bytes>> {
        self.check(Op::Get, path)?;
        self.inner.get_mapped(path)
    }
    fn maps_files(&self) -> bool {
        self.inner.maps_files()
    }
    fn exists(&self, path: &str) -> Result<bool> {
        self.inner.exists(path)
    }
    fn list(&self, dir: &str) -> Result<Vec<String>> {
        self.inner.list(dir)
    }
    fn modified(&self, path: &str) -> Result<Option<std::time::SystemTime>> {
        self.inner.modified(path)
    }
    fn delete(&self, path: &str) -> Result<()> {
        self.check(Op::Delete, path)?;
        self.inner.delete(path)
    }
    fn delete_dir(&self, dir: &str) -> Result<()> {
        self.inner.delete_dir(dir)
    }
    fn rename_dir(&self, from: &str, to: &str) -> Result<()> {
        self.check(Op::Rename, from)?;
        self.inner.rename_dir(from, to)
    }
    fn local_path(&self, dir: &str) -> Option<PathBuf> {
        self.inner.local_path(dir)
    }
    fn sync(&self, dir: &str) -> Result<()> {
        self.inner.sync(dir)
    }
}
