//! Where table files live. [`Storage`] is the narrow interface the engine
//! writes through: immutable files (`put`), atomically published files
//! (`put_new`, create-new: the commit point of a version), reads, listing and
//! removal. [`LocalStorage`] is a folder on disk with fsync before
//! acknowledging; [`MemoryStorage`] backs `memory://`; [`FaultyStorage`]
//! fails chosen operations so tests can simulate a crash mid-commit;
//! [`ObjectStorage`] puts them on S3, GCS or Azure ([`open_uri`] picks one
//! by URI); [`Prefixed`] is any of them seen from one of its folders.

use std::path::PathBuf;

use bytes::Bytes;

use crate::error::Result;

mod durability;
mod faulty;
mod local;
mod memory;
mod object;
mod options;
mod paced;
mod prefixed;

pub use faulty::{FaultFn, FaultyStorage, Op};
pub use local::{sync_dir, LocalStorage};
pub use memory::MemoryStorage;
pub use object::ObjectStorage;
pub use options::{open_uri, StorageOptions};
pub use prefixed::Prefixed;

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
    /// Writes an immutable file like [`Storage::put`] whose durability may
    /// wait for [`Storage::put_new_after`] (or [`Storage::persist`]) to name
    /// it, so that the files of one commit are made durable together (the
    /// default is durable at once).
    fn put_deferred(&self, path: &str, data: &[u8]) -> Result<()> {
        self.put(path, data)
    }
    /// [`Storage::put_with`] with the durability of
    /// [`Storage::put_deferred`].
    fn put_with_deferred(
        &self,
        path: &str,
        write: &mut dyn FnMut(&mut dyn std::io::Write) -> Result<()>,
    ) -> Result<()> {
        self.put_with(path, write)
    }
    /// Makes files written by the deferred puts durable, with their entries
    /// in their folders.
    fn persist(&self, _paths: &[String]) -> Result<()> {
        Ok(())
    }
    /// [`Storage::put_new`] of a file that names `pending` (files written by
    /// the deferred puts): they are durable before it is published. When the
    /// name exists, `pending` stays as it is (the caller removes it).
    fn put_new_after(&self, path: &str, data: &[u8], pending: &[String]) -> Result<PutNew> {
        self.persist(pending)?;
        self.put_new(path, data)
    }
    /// Reads a whole file; `Ok(None)` if it does not exist.
    fn get(&self, path: &str) -> Result<Option<Bytes>>;
    /// Reads a whole file like [`Storage::get`], mapped into memory where
    /// the storage can (a local file: its bytes stay in the kernel's page
    /// cache, which can drop them under pressure, instead of the process's
    /// heap). Only for files never changed in place once written (data files
    /// have unique names): a mapped file cut short under the process would
    /// fault the reader.
    fn get_mapped(&self, path: &str) -> Result<Option<Bytes>> {
        self.get(path)
    }
    /// Whether [`Storage::get_mapped`] maps files (so reading a file just
    /// written back costs no copy and no download).
    fn maps_files(&self) -> bool {
        false
    }
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
        exercise_deferred(s);
    }

    /// Files written deferred, then a file naming them published after them.
    fn exercise_deferred(s: &dyn Storage) {
        s.put_deferred("d/_deletions/1.bin", b"del").expect("put");
        s.put_with_deferred("d/data/a.arrow", &mut |w| {
            w.write_all(b"rows")
                .map_err(|e| crate::error::Error::io("a.arrow", e))
        })
        .expect("put_with");
        let pending = ["d/_deletions/1.bin".to_string(), "d/data/a.arrow".into()];
        assert_eq!(
            s.put_new_after("d/_versions/1", b"m1", &pending)
                .expect("publish"),
            PutNew::Created
        );
        assert_eq!(
            s.get("d/data/a.arrow").expect("get").as_deref(),
            Some(&b"rows"[..])
        );
        assert_eq!(
            s.get("d/_deletions/1.bin").expect("get").as_deref(),
            Some(&b"del"[..])
        );
        // The name taken: nothing replaced, the other files left to the caller.
        s.put_deferred("d/data/b.arrow", b"late").expect("put");
        let late = ["d/data/b.arrow".to_string()];
        assert_eq!(
            s.put_new_after("d/_versions/1", b"m2", &late)
                .expect("publish"),
            PutNew::AlreadyExists
        );
        assert_eq!(
            s.get("d/_versions/1").expect("get").as_deref(),
            Some(&b"m1"[..])
        );
        assert!(s.exists("d/data/b.arrow").expect("exists"));
        s.persist(&late).expect("persist");
        assert_eq!(s.list("d/_versions").expect("list"), vec!["1"]);
        s.delete_dir("d").expect("rm");
    }

    #[test]
    fn a_local_publish_whose_files_cannot_be_synced_publishes_nothing() {
        let dir = tempfile::tempdir().expect("tmp");
        for s in [
            LocalStorage::new(dir.path()).expect("local"),
            LocalStorage::syncing_folders(dir.path()).expect("local"),
        ] {
            let gone = ["t/data/never-written.arrow".to_string()];
            let e = s
                .put_new_after("t/_versions/1", b"m", &gone)
                .expect_err("unsynced");
            assert!(e.to_string().contains("never-written"), "{e}");
            assert!(!s.exists("t/_versions/1").expect("exists"));
            // No private copy of the manifest is left either.
            assert_eq!(s.list("t/_versions").expect("list"), Vec::<String>::new());
        }
    }

    #[test]
    fn local_memory_and_object_storage_behave_alike() {
        let dir = tempfile::tempdir().expect("tmp");
        exercise(&LocalStorage::new(dir.path()).expect("local"));
        exercise(&LocalStorage::syncing_folders(dir.path()).expect("local"));
        exercise(&MemoryStorage::default());
        let store = std::sync::Arc::new(object_store::memory::InMemory::new());
        exercise(&ObjectStorage::new(store, "db/x".into(), "mem://db/x"));
        let outer: std::sync::Arc<dyn Storage> = std::sync::Arc::new(MemoryStorage::default());
        outer.put("beside/f", b"kept").expect("put");
        let inner = Prefixed::new(outer.clone(), "ns/.namespaces/a");
        exercise(&inner);
        inner.put("t/f", b"in").expect("put");
        assert_eq!(
            outer.get("ns/.namespaces/a/t/f").expect("get").as_deref(),
            Some(&b"in"[..])
        );
        assert_eq!(inner.list("").expect("list"), vec!["t"]);
        assert_eq!(outer.list("").expect("list"), vec!["beside", "ns"]);
        assert_eq!(outer.list("ns/.namespaces").expect("list"), vec!["a"]);
    }
}
