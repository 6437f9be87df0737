//! [`LocalStorage`]: a folder on local disk. Every file is fsynced before a
//! call returns, a new file's folder entry too; `put_new` publishes with a
//! hard link, which fails when the name exists, so two writers can never both
//! publish the same version. A commit's files written deferred are synced
//! together with its manifest's (`put_new_after`), and their folders only
//! where the file system needs it ([`super::durability`]). Data files are read
//! mapped (`get_mapped`), so a table's rows take page cache, not heap.
//! Files are written paced ([`super::paced`]): a large one never queues
//! more than two MiB at the disk ahead of a WAL's fdatasync.

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::durability::{file_sync_keeps_entry, sync_files};
use super::paced::PacedFile;
use super::{PutNew, Storage};
use crate::error::{Error, Result};

/// Files in a folder on local disk.
#[derive(Debug)]
pub struct LocalStorage {
    root: PathBuf,
    /// Whether a file's fsync makes its folder entry durable here, so that
    /// [`Storage::persist`] need not sync the folders.
    entry_with_file: bool,
    /// The device `root` is on: a folder on another one (a mount or a
    /// symlink under the root) is synced whatever `entry_with_file` says.
    root_dev: Option<u64>,
}

impl LocalStorage {
    /// Opens (and creates if missing) the folder `root`.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self> {
        let root = root.into();
        fs::create_dir_all(&root).map_err(|e| Error::io(root.display().to_string(), e))?;
        let entry_with_file = file_sync_keeps_entry(&root);
        let root_dev = fs::metadata(&root).ok().map(|m| m.dev());
        Ok(Self {
            root,
            entry_with_file,
            root_dev,
        })
    }

    /// As [`LocalStorage::new`], syncing the folders of persisted files
    /// whatever the file system (as POSIX asks).
    pub fn syncing_folders(root: impl Into<PathBuf>) -> Result<Self> {
        Ok(Self {
            entry_with_file: false,
            ..Self::new(root)?
        })
    }

    /// Whether persisting files leaves their folders unsynced (see
    /// [`super::durability`]).
    pub fn folder_syncs_skipped(&self) -> bool {
        self.entry_with_file
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

    /// Hard-links the durable file `tmp` as `full` and removes `tmp`:
    /// link(2) fails if the target exists, so two writers can never both
    /// publish the same name and no reader sees a partial file. The folder
    /// is synced: a link is not a new file's creation, which
    /// [`super::durability`] covers.
    fn link_into_place(&self, tmp: &Path, full: &Path) -> Result<PutNew> {
        let linked = fs::hard_link(tmp, full);
        let _ = fs::remove_file(tmp);
        match linked {
            Ok(()) => {
                if let Some(parent) = full.parent() {
                    sync_dir(parent).map_err(|e| self.relabel(e))?;
                }
                Ok(PutNew::Created)
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(PutNew::AlreadyExists),
            Err(e) => Err(Error::io(self.shown(full), e)),
        }
    }

    /// Streams `write`'s bytes into the file `full`, not synced yet.
    fn write_streamed(
        &self,
        full: &Path,
        write: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<File> {
        self.ensure_parent(full)?;
        let io = |e| Error::io(self.shown(full), e);
        let f = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(full)
            .map_err(io)?;
        let mut w = std::io::BufWriter::with_capacity(1 << 20, PacedFile::new(f));
        write(&mut w)?;
        w.into_inner()
            .map_err(|e| io(e.into_error()))?
            .into_inner()
            .map_err(io)
    }

    /// Syncs each folder holding one of `files`, unless a file's sync
    /// already made its entry durable there (the root's file system says so
    /// and the folder is on the root's device).
    fn sync_folders_of(&self, files: &[PathBuf]) -> Result<()> {
        let folders: std::collections::BTreeSet<&Path> =
            files.iter().filter_map(|f| f.parent()).collect();
        for dir in folders {
            let same_device = self
                .root_dev
                .is_some_and(|r| fs::metadata(dir).is_ok_and(|m| m.dev() == r));
            if !(self.entry_with_file && same_device) {
                sync_dir(dir).map_err(|e| self.relabel(e))?;
            }
        }
        Ok(())
    }

    fn ensure_parent(&self, full: &Path) -> Result<()> {
        let Some(parent) = full.parent() else {
            return Ok(());
        };
        if parent.exists() {
            return Ok(());
        }
        // The folders about to be made, deepest first.
        let missing: Vec<&Path> = parent.ancestors().take_while(|a| !a.exists()).collect();
        fs::create_dir_all(parent).map_err(|e| Error::io(self.shown(parent), e))?;
        // Each new folder's entry must be durable too: sync the folder that
        // holds it, outermost first.
        for made in missing.iter().rev() {
            if let Some(holder) = made.parent() {
                sync_dir(holder).map_err(|e| self.relabel(e))?;
            }
        }
        Ok(())
    }
}

/// A private name beside `full` for a file about to be linked into place.
fn tmp_name(full: &Path) -> PathBuf {
    full.with_extension(format!("tmp-{}", uuid::Uuid::new_v4().simple()))
}

/// fsyncs a directory so that entries created in it survive a crash.
pub fn sync_dir(dir: &Path) -> Result<()> {
    let f = File::open(dir).map_err(|e| Error::io(dir.display().to_string(), e))?;
    f.sync_all()
        .map_err(|e| Error::io(dir.display().to_string(), e))
}

fn write_synced(path: &Path, data: &[u8]) -> Result<()> {
    write_file(path, data)?
        .sync_data()
        .map_err(|e| Error::io(path.display().to_string(), e))
}

/// Writes `data` as the file `path`, not synced yet.
fn write_file(path: &Path, data: &[u8]) -> Result<File> {
    let io = |e| Error::io(path.display().to_string(), e);
    let f = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(path)
        .map_err(io)?;
    let mut f = PacedFile::new(f);
    f.write_all(data).map_err(io)?;
    f.into_inner().map_err(io)
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
        let f = self.write_streamed(&full, write)?;
        f.sync_data().map_err(|e| Error::io(self.shown(&full), e))
    }

    fn put_deferred(&self, path: &str, data: &[u8]) -> Result<()> {
        let full = self.full(path);
        self.ensure_parent(&full)?;
        write_file(&full, data).map_err(|e| self.relabel(e))?;
        Ok(())
    }

    fn put_with_deferred(
        &self,
        path: &str,
        write: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<()> {
        self.write_streamed(&self.full(path), write)?;
        Ok(())
    }

    fn persist(&self, paths: &[String]) -> Result<()> {
        let full: Vec<PathBuf> = paths.iter().map(|p| self.full(p)).collect();
        sync_files(&full, &|p| self.shown(p))?;
        self.sync_folders_of(&full)
    }

    fn put_new_after(&self, path: &str, data: &[u8], pending: &[String]) -> Result<PutNew> {
        let full = self.full(path);
        self.ensure_parent(&full)?;
        if full.exists() {
            return Ok(PutNew::AlreadyExists);
        }
        // The manifest's private copy and the files it names are synced
        // together, then published as `put_new` publishes.
        let tmp = tmp_name(&full);
        if let Err(e) = write_file(&tmp, data) {
            let _ = fs::remove_file(&tmp);
            return Err(self.relabel(e));
        }
        let mut files: Vec<PathBuf> = pending.iter().map(|p| self.full(p)).collect();
        files.push(tmp.clone());
        let synced = sync_files(&files, &|p| self.shown(p));
        files.pop();
        let synced = synced.and_then(|()| self.sync_folders_of(&files));
        if let Err(e) = synced {
            let _ = fs::remove_file(&tmp);
            return Err(e);
        }
        self.link_into_place(&tmp, &full)
    }

    fn put_new(&self, path: &str, data: &[u8]) -> Result<PutNew> {
        // A private temporary file made durable, then hard-linked into place.
        self.put_new_after(path, data, &[])
    }

    fn get(&self, path: &str) -> Result<Option<Bytes>> {
        let full = self.full(path);
        match fs::read(&full) {
            Ok(v) => Ok(Some(Bytes::from(v))),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(self.shown(&full), e)),
        }
    }

    fn get_mapped(&self, path: &str) -> Result<Option<Bytes>> {
        let full = self.full(path);
        let io = |e| Error::io(self.shown(&full), e);
        let f = match File::open(&full) {
            Ok(f) => f,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io(e)),
        };
        if f.metadata().map_err(io)?.len() == 0 {
            return Ok(Some(Bytes::new()));
        }
        // SAFETY: the mapping is read-only and callers map only files that
        // are written once under a fresh name and never changed in place
        // (`Storage::get_mapped`); removing or renaming a mapped file keeps
        // its pages valid until the mapping is dropped.
        #[allow(unsafe_code)]
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(io)?;
        Ok(Some(Bytes::from_owner(map)))
    }

    fn maps_files(&self) -> bool {
        true
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
