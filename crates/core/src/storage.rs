//! Where table files live. [`Storage`] is the narrow interface the engine
//! writes through: immutable files (`put`), atomically published files
//! (`put_new`, create-new: the commit point of a version), reads, listing and
//! removal. [`LocalStorage`] is a folder on disk with fsync before
//! acknowledging; [`MemoryStorage`] backs `memory://`; [`FaultyStorage`]
//! fails chosen operations so tests can simulate a crash mid-commit.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::error::{Error, Result};

/// Outcome of [`Storage::put_new`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PutNew {
    /// The file did not exist and now holds the bytes.
    Created,
    /// The file existed already; nothing was written.
    AlreadyExists,
}

/// A flat namespace of files addressed by `/`-separated relative paths.
pub trait Storage: Send + Sync + std::fmt::Debug {
    /// Writes an immutable file durably (overwrites if it exists).
    fn put(&self, path: &str, data: &[u8]) -> Result<()>;
    /// Like [`Storage::put`], with the bytes produced by `write` (so a
    /// large file need not be held in memory first where the storage can
    /// stream it; the default gathers them and calls `put`).
    fn put_with(
        &self,
        path: &str,
        write: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<()> {
        let mut buf = Vec::new();
        write(&mut buf)?;
        self.put(path, &buf)
    }
    /// Publishes a file atomically with create-new semantics: readers see
    /// either no file or all of it, and an existing file is never replaced.
    fn put_new(&self, path: &str, data: &[u8]) -> Result<PutNew>;
    /// Reads a whole file; `Ok(None)` if it does not exist.
    fn get(&self, path: &str) -> Result<Option<Bytes>>;
    /// Whether a file exists.
    fn exists(&self, path: &str) -> Result<bool>;
    /// A file's size in bytes; `Ok(None)` if it does not exist (the default
    /// reads it).
    fn size(&self, path: &str) -> Result<Option<u64>> {
        Ok(self.get(path)?.map(|b| b.len() as u64))
    }
    /// When a file was last written; `Ok(None)` if it does not exist or the
    /// storage keeps no times (cleanup then treats files no version names
    /// as too new to remove, unless told to remove them).
    fn modified(&self, _path: &str) -> Result<Option<std::time::SystemTime>> {
        Ok(None)
    }
    /// Names (not paths) of the entries directly under `dir`, sorted.
    fn list(&self, dir: &str) -> Result<Vec<String>>;
    /// Removes a file; missing is fine.
    fn delete(&self, path: &str) -> Result<()>;
    /// Removes everything under `dir`.
    fn delete_dir(&self, dir: &str) -> Result<()>;
    /// Moves everything under `from` to `to` in one step (a folder rename
    /// on disk); `to` must not exist.
    fn rename_dir(&self, from: &str, to: &str) -> Result<()>;
    /// A local folder for `dir`, when this storage is on local disk.
    fn local_path(&self, dir: &str) -> Option<PathBuf>;
    /// Makes the entries of files created in `dir` durable (fsync of the
    /// folder); called once per commit before the manifest is published.
    fn sync(&self, _dir: &str) -> Result<()> {
        Ok(())
    }
}

/// Files in a folder on local disk.
#[derive(Debug)]
pub struct LocalStorage {
    root: PathBuf,
}

impl LocalStorage {
    /// Opens (and creates if missing) the folder `root`.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| Error::io(root.display().to_string(), e))?;
        Ok(Self { root })
    }

    fn full(&self, path: &str) -> PathBuf {
        self.root.join(path)
    }

    /// How an error names `p`: relative to the storage's folder, so that the
    /// absolute folders of a server never reach a client (a 500's body).
    fn shown(&self, p: &Path) -> String {
        match p.strip_prefix(&self.root) {
            Ok(rel) if rel.as_os_str().is_empty() => ".".into(),
            Ok(rel) => rel.display().to_string(),
            Err(_) => p
                .file_name()
                .map_or_else(|| "?".into(), |n| n.to_string_lossy().into_owned()),
        }
    }

    /// `e` with its path shown as [`LocalStorage::shown`] shows it.
    fn relabel(&self, e: Error) -> Error {
        match e {
            Error::Io { path, source } => Error::Io {
                path: self.shown(Path::new(&path)),
                source,
            },
            other => other,
        }
    }

    fn ensure_parent(&self, full: &Path) -> Result<()> {
        if let Some(parent) = full.parent() {
            if !parent.exists() {
                fs::create_dir_all(parent).map_err(|e| Error::io(self.shown(parent), e))?;
                // The new folder's entry must be durable too.
                if let Some(grand) = parent.parent() {
                    sync_dir(grand).map_err(|e| self.relabel(e))?;
                }
            }
        }
        Ok(())
    }
}

/// fsyncs a directory so that entries created in it survive a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let f = File::open(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    f.sync_all()
        .map_err(|e| Error::io(dir.display().to_string(), e))
}

fn write_synced(path: &Path, data: &[u8]) -> Result<()> {
    let io = |e| Error::io(path.display().to_string(), e);
    let mut f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io)?;
    f.write_all(data).map_err(io)?;
    f.sync_data().map_err(io)
}

impl Storage for LocalStorage {
    fn put(&self, path: &str, data: &[u8]) -> Result<()> {
        let full = self.full(path);
        self.ensure_parent(&full)?;
        write_synced(&full, data).map_err(|e| self.relabel(e))
    }

    fn put_with(
        &self,
        path: &str,
        write: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<()> {
        let full = self.full(path);
        self.ensure_parent(&full)?;
        let io = |e| Error::io(self.shown(&full), e);
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&full)
            .map_err(io)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
        write(&mut w)?;
        let f = w.into_inner().map_err(|e| io(e.into_error()))?;
        f.sync_data().map_err(io)
    }

    fn put_new(&self, path: &str, data: &[u8]) -> Result<PutNew> {
        let full = self.full(path);
        self.ensure_parent(&full)?;
        if full.exists() {
            return Ok(PutNew::AlreadyExists);
        }
        // Write a private temporary file, make it durable, then hard-link it
        // into place: link(2) fails if the target exists, so two writers can
        // never both publish the same name and no reader sees a partial file.
        let tmp = full.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()));
        write_synced(&tmp, data).map_err(|e| self.relabel(e))?;
        let linked = fs::hard_link(&tmp, &full);
        let _ = fs::remove_file(&tmp);
        match linked {
            Ok(()) => {
                if let Some(parent) = full.parent() {
                    sync_dir(parent).map_err(|e| self.relabel(e))?;
                }
                Ok(PutNew::Created)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(PutNew::AlreadyExists),
            Err(e) => Err(Error::io(self.shown(&full), e)),
        }
    }

    fn get(&self, path: &str) -> Result<Option<Bytes>> {
        let full = self.full(path);
        match fs::read(&full) {
            Ok(v) => Ok(Some(Bytes::from(v))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(self.shown(&full), e)),
        }
    }

    fn exists(&self, path: &str) -> Result<bool> {
        Ok(self.full(path).exists())
    }

    fn size(&self, path: &str) -> Result<Option<u64>> {
        let full = self.full(path);
        match fs::metadata(&full) {
            Ok(m) => Ok(Some(m.len())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(self.shown(&full), e)),
        }
    }

    fn modified(&self, path: &str) -> Result<Option<std::time::SystemTime>> {
        let full = self.full(path);
        match fs::metadata(&full).and_then(|m| m.modified()) {
            Ok(t) => Ok(Some(t)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(self.shown(&full), e)),
        }
    }

    fn list(&self, dir: &str) -> Result<Vec<String>> {
        let full = self.full(dir);
        let rd = match fs::read_dir(&full) {
            Ok(rd) => rd,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(Error::io(self.shown(&full), e)),
        };
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| Error::io(self.shown(&full), e))?;
            if let Some(name) = entry.file_name().to_str() {
                out.push(name.to_string());
            }
        }
        out.sort();
        Ok(out)
    }

    fn delete(&self, path: &str) -> Result<()> {
        let full = self.full(path);
        match fs::remove_file(&full) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(self.shown(&full), e)),
        }
    }

    fn delete_dir(&self, dir: &str) -> Result<()> {
        let full = self.full(dir);
        match fs::remove_dir_all(&full) {
            Ok(()) => sync_dir(&self.root).map_err(|e| self.relabel(e)),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(self.shown(&full), e)),
        }
    }

    fn rename_dir(&self, from: &str, to: &str) -> Result<()> {
        let (src, dst) = (self.full(from), self.full(to));
        if dst.exists() {
            return Err(Error::io(
                self.shown(&dst),
                std::io::Error::from(ErrorKind::AlreadyExists),
            ));
        }
        fs::rename(&src, &dst).map_err(|e| Error::io(self.shown(&src), e))?;
        sync_dir(&self.root).map_err(|e| self.relabel(e))
    }

    fn local_path(&self, dir: &str) -> Option<PathBuf> {
        Some(self.full(dir))
    }

    fn sync(&self, dir: &str) -> Result<()> {
        let full = self.full(dir);
        if full.exists() {
            sync_dir(&full)?;
        }
        Ok(())
    }
}

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
        self.inner.get(path)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn exercise(s: &dyn Storage) {
        s.put("t/data/a.arrow", b"abc").expect("put");
        assert_eq!(
            s.get("t/data/a.arrow").expect("get").as_deref(),
            Some(&b"abc"[..])
        );
        assert_eq!(s.get("t/data/none").expect("get"), None);
        assert_eq!(
            s.put_new("t/_versions/1", b"v1").expect("new"),
            PutNew::Created
        );
        assert_eq!(
            s.put_new("t/_versions/1", b"xx").expect("new"),
            PutNew::AlreadyExists
        );
        assert_eq!(
            s.get("t/_versions/1").expect("get").as_deref(),
            Some(&b"v1"[..])
        );
        assert_eq!(s.list("t").expect("list"), vec!["_versions", "data"]);
        assert_eq!(s.list("").expect("list"), vec!["t"]);
        s.put("u/x", b"u").expect("put u");
        s.rename_dir("t", "u").expect_err("onto an existing folder");
        s.delete_dir("u").expect("rm u");
        s.rename_dir("t", "u").expect("rename");
        assert_eq!(s.list("").expect("list"), vec!["u"]);
        assert_eq!(
            s.get("u/data/a.arrow").expect("get").as_deref(),
            Some(&b"abc"[..])
        );
        assert!(!s.exists("t/_versions/1").expect("exists"));
        s.delete_dir("u").expect("rm");
        assert!(!s.exists("u/_versions/1").expect("exists"));
    }

    #[test]
    fn local_and_memory_behave_alike() {
        let dir = tempfile::tempdir().expect("tmp");
        exercise(&LocalStorage::new(dir.path()).expect("local"));
        exercise(&MemoryStorage::default());
    }
}
