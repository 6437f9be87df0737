//! [`ObjectStorage`]: table files on an object store (S3, GCS, Azure or any
//! other `object_store` backend), behind the same synchronous [`Storage`]
//! interface as a local folder.
//!
//! The engine calls storage from blocking threads; each call here runs its
//! requests on one small runtime owned by this module and waits for them, so
//! it works the same from any thread. What an object store does not give,
//! this module builds without assuming it:
//! - **create-only publish**: `put_new` is a conditional put (`If-None-Match:
//!   *` on S3, preconditions on GCS and Azure). A put whose answer was lost
//!   (a timeout, a 5xx after the write, a retry that then meets its own
//!   object) is settled by reading the object back: the same bytes mean this
//!   writer created it, so a commit is never reported lost when it landed,
//!   nor landed twice.
//! - **no atomic rename**: `rename_dir` copies every file, the manifests last,
//!   then deletes the source's manifests first, so an interruption leaves
//!   either the old table, or both (the new one complete), never a table
//!   with missing files.
//! - **large files** go up as multipart uploads; every request is bounded by
//!   the client's timeout and retried with backoff on 5xx by the crate.

use std::future::Future;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use futures::{StreamExt, TryStreamExt};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};

use super::{PutNew, Storage};
use crate::error::{Error, Result};

/// Files at least this large are uploaded in parts of this size.
const PART_SIZE: usize = 8 << 20;
/// How many times `put_new` re-sends a put whose outcome it could not learn.
const PUT_NEW_TRIES: usize = 3;

/// Table files under one prefix of an object store.
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    root: ObjPath,
    /// What errors and `Debug` call it (the URI without credentials).
    label: String,
}

impl std::fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStorage")
            .field("at", &self.label)
            .finish()
    }
}

/// The runtime every object-store request runs on (two worker threads:
/// the requests are I/O, the engine's own work stays on its threads).
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    static RT: OnceLock<std::result::Result<tokio::runtime::Runtime, String>> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("memwal-objstore")
            .enable_all()
            .build()
            .map_err(|e| e.to_string())
    })
    .as_ref()
    .map_err(|e| Error::internal(format!("cannot start the object-store runtime: {e}")))
}

/// Runs `fut` on the object-store runtime and waits for it (from any thread).
fn run<T: Send + 'static>(fut: impl Future<Output = T> + Send + 'static) -> Result<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime()?.spawn(async move {
        let _ = tx.send(fut.await);
    });
    rx.recv()
        .map_err(|_| Error::internal("an object-store request stopped without an answer"))
}

impl ObjectStorage {
    /// Files of `store` under `root`; `label` names it in errors.
    pub fn new(store: Arc<dyn ObjectStore>, root: ObjPath, label: impl Into<String>) -> Self {
        Self {
            store,
            root,
            label: label.into(),
        }
    }

    fn path(&self, rel: &str) -> ObjPath {
        rel.split('/')
            .filter(|p| !p.is_empty())
            .fold(self.root.clone(), |p, part| p.join(part))
    }

    fn err(&self, rel: &str, e: object_store::Error) -> Error {
        use std::io::ErrorKind as K;
        let kind = match &e {
            object_store::Error::NotFound { .. } => K::NotFound,
            object_store::Error::AlreadyExists { .. }
            | object_store::Error::Precondition { .. } => K::AlreadyExists,
            object_store::Error::PermissionDenied { .. }
            | object_store::Error::Unauthenticated { .. } => K::PermissionDenied,
            _ => K::Other,
        };
        Error::io(
            format!("{}/{rel}", self.label.trim_end_matches('/')),
            std::io::Error::new(kind, e.to_string()),
        )
    }

    /// Every object under `rel` (recursively).
    fn list_all(&self, rel: &str) -> Result<Vec<ObjPath>> {
        let (store, prefix) = (self.store.clone(), self.path(rel));
        run(async move {
            store
                .list(Some(&prefix))
                .map_ok(|m| m.location)
                .try_collect()
                .await
        })?
        .map_err(|e| self.err(rel, e))
    }

    /// `rel` relative to the root, for a path under it.
    fn relative(&self, p: &ObjPath) -> Option<String> {
        p.prefix_match(&self.root).map(|parts| {
            parts
                .map(|s| s.as_ref().to_string())
                .collect::<Vec<_>>()
                .join("/")
        })
    }

    /// Whether `rel` holds exactly `data`; `None` when it does not exist.
    fn holds(&self, rel: &str, data: &[u8]) -> Result<Option<bool>> {
        Ok(self.get(rel)?.map(|b| b.as_ref() == data))
    }

    fn delete_paths(&self, paths: Vec<ObjPath>, what: &str) -> Result<()> {
        let store = self.store.clone();
        run(async move {
            let stream = futures::stream::iter(paths.into_iter().map(Ok)).boxed();
            store
                .delete_stream(stream)
                .try_for_each(|_| async { Ok(()) })
                .await
        })?
        .or_else(|e| match e {
            object_store::Error::NotFound { .. } => Ok(()),
            e => Err(self.err(what, e)),
        })
    }
}

impl Storage for ObjectStorage {
    fn put(&self, rel: &str, data: &[u8]) -> Result<()> {
        let (store, path) = (self.store.clone(), self.path(rel));
        let bytes = Bytes::copy_from_slice(data);
        run(async move {
            if bytes.len() < PART_SIZE {
                return store.put(&path, PutPayload::from(bytes)).await.map(|_| ());
            }
            let upload = store.put_multipart(&path).await?;
            let mut w = WriteMultipart::new_with_chunk_size(upload, PART_SIZE);
            w.put(bytes);
            w.finish().await.map(|_| ())
        })?
        .map_err(|e| self.err(rel, e))
    }

    fn put_new(&self, rel: &str, data: &[u8]) -> Result<PutNew> {
        let bytes = Bytes::copy_from_slice(data);
        let mut last = None;
        for _ in 0..PUT_NEW_TRIES {
            let (store, path, payload) = (self.store.clone(), self.path(rel), bytes.clone());
            let opts = PutOptions {
                mode: PutMode::Create,
                ..Default::default()
            };
            match run(async move { store.put_opts(&path, payload.into(), opts).await })? {
                Ok(_) => return Ok(PutNew::Created),
                // Ours (a retry that met the object its first try wrote) or another writer's.
                Err(object_store::Error::AlreadyExists { .. }) => {
                    return Ok(match self.holds(rel, data)? {
                        Some(true) => PutNew::Created,
                        _ => PutNew::AlreadyExists,
                    });
                }
                // The outcome is unknown: look before trying again.
                Err(e) => match self.holds(rel, data) {
                    Ok(Some(true)) => return Ok(PutNew::Created),
                    Ok(Some(false)) => return Ok(PutNew::AlreadyExists),
                    Ok(None) | Err(_) => last = Some(self.err(rel, e)),
                },
            }
        }
        Err(last.unwrap_or_else(|| Error::internal("put_new made no attempt")))
    }

    fn get(&self, rel: &str) -> Result<Option<Bytes>> {
        let (store, path) = (self.store.clone(), self.path(rel));
        match run(async move { store.get(&path).await?.bytes().await })? {
            Ok(b) => Ok(Some(b)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(rel, e)),
        }
    }

    fn exists(&self, rel: &str) -> Result<bool> {
        Ok(self.size(rel)?.is_some())
    }

    fn size(&self, rel: &str) -> Result<Option<u64>> {
        let (store, path) = (self.store.clone(), self.path(rel));
        match run(async move { store.head(&path).await })? {
            Ok(m) => Ok(Some(m.size)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(rel, e)),
        }
    }

    fn modified(&self, rel: &str) -> Result<Option<std::time::SystemTime>> {
        let (store, path) = (self.store.clone(), self.path(rel));
        match run(async move { store.head(&path).await })? {
            Ok(m) => Ok(Some(m.last_modified.into())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.err(rel, e)),
        }
    }

    fn list(&self, dir: &str) -> Result<Vec<String>> {
        let (store, prefix) = (self.store.clone(), self.path(dir));
        let listed = run(async move { store.list_with_delimiter(Some(&prefix)).await })?
            .map_err(|e| self.err(dir, e))?;
        let dirs = listed.common_prefixes.iter();
        let files = listed.objects.iter().map(|m| &m.location);
        let mut out: Vec<String> = dirs
            .chain(files)
            .filter_map(|p| p.filename().map(str::to_string))
            .collect();
        out.sort();
        out.dedup();
        Ok(out)
    }

    fn delete(&self, rel: &str) -> Result<()> {
        let (store, path) = (self.store.clone(), self.path(rel));
        match run(async move { store.delete(&path).await })? {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.err(rel, e)),
        }
    }

    fn delete_dir(&self, dir: &str) -> Result<()> {
        let mut paths = self.list_all(dir)?;
        // Manifests first: the table stops existing before its files go.
        paths.sort_by_key(|p| !is_manifest(p));
        self.delete_paths(paths, dir)
    }

    fn rename_dir(&self, from: &str, to: &str) -> Result<()> {
        if !self.list_all(to)?.is_empty() {
            return Err(Error::io(
                format!("{}/{to}", self.label.trim_end_matches('/')),
                std::io::Error::from(std::io::ErrorKind::AlreadyExists),
            ));
        }
        let mut paths = self.list_all(from)?;
        // Manifests last: the new name becomes a table only once every file it names is there.
        paths.sort_by_key(is_manifest);
        let from_root = self.path(from);
        for src in &paths {
            let rest: Vec<String> = src
                .prefix_match(&from_root)
                .map(|parts| parts.map(|s| s.as_ref().to_string()).collect())
                .unwrap_or_default();
            let dst = self.path(&format!("{to}/{}", rest.join("/")));
            let (store, s) = (self.store.clone(), src.clone());
            run(async move { store.copy(&s, &dst).await })?
                .map_err(|e| self.err(&self.relative(src).unwrap_or_default(), e))?;
        }
        self.delete_dir(from)
    }

    fn local_path(&self, _dir: &str) -> Option<PathBuf> {
        None
    }
}

/// Whether `p` is a version's manifest (what makes a folder a table).
fn is_manifest(p: &ObjPath) -> bool {
    p.parts().any(|part| part.as_ref() == "_versions")
}

#[cfg(test)]
mod tests {
    //! `put_new` when the store's answer is lost or wrong: a store wrapper
    //! that writes and then fails, or fails before writing.
    use std::sync::atomic::{AtomicUsize, Ordering};

    use async_trait::async_trait;
    use futures::stream::BoxStream;
    use object_store::memory::InMemory;
    use object_store::{
        CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta,
        PutMultipartOptions, PutResult,
    };

    use super::*;

    /// What the next create-only puts do (one entry per put, then pass).
    #[derive(Debug, Clone, Copy)]
    enum Fault {
        /// Write, then answer a 500 (the answer is lost).
        WriteThenFail,
        /// Answer a 500 without writing.
        FailBefore,
    }

    #[derive(Debug)]
    struct Flaky {
        inner: InMemory,
        faults: std::sync::Mutex<Vec<Fault>>,
        puts: AtomicUsize,
    }

    impl std::fmt::Display for Flaky {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "Flaky")
        }
    }

    fn server_error() -> object_store::Error {
        object_store::Error::Generic {
            store: "Flaky",
            source: "500 Internal Server Error".into(),
        }
    }

    #[async_trait]
    impl ObjectStore for Flaky {
        async fn put_opts(
            &self,
            location: &ObjPath,
            payload: PutPayload,
            opts: PutOptions,
        ) -> object_store::Result<PutResult> {
            self.puts.fetch_add(1, Ordering::SeqCst);
            let fault = {
                let mut f = self.faults.lock().expect("faults");
                (!f.is_empty()).then(|| f.remove(0))
            };
            match fault {
                Some(Fault::FailBefore) => Err(server_error()),
                Some(Fault::WriteThenFail) => {
                    self.inner.put_opts(location, payload, opts).await?;
                    Err(server_error())
                }
                None => self.inner.put_opts(location, payload, opts).await,
            }
        }
        async fn put_multipart_opts(
            &self,
            location: &ObjPath,
            opts: PutMultipartOptions,
        ) -> object_store::Result<Box<dyn MultipartUpload>> {
            self.inner.put_multipart_opts(location, opts).await
        }
        async fn get_opts(
            &self,
            location: &ObjPath,
            options: GetOptions,
        ) -> object_store::Result<GetResult> {
            self.inner.get_opts(location, options).await
        }
        fn delete_stream(
            &self,
            locations: BoxStream<'static, object_store::Result<ObjPath>>,
        ) -> BoxStream<'static, object_store::Result<ObjPath>> {
            self.inner.delete_stream(locations)
        }
        fn list(
            &self,
            prefix: Option<&ObjPath>,
        ) -> BoxStream<'static, object_store::Result<ObjectMeta>> {
            self.inner.list(prefix)
        }
        async fn list_with_delimiter(
            &self,
            prefix: Option<&ObjPath>,
        ) -> object_store::Result<ListResult> {
            self.inner.list_with_delimiter(prefix).await
        }
        async fn copy_opts(
            &self,
            from: &ObjPath,
            to: &ObjPath,
            options: CopyOptions,
        ) -> object_store::Result<()> {
            self.inner.copy_opts(from, to, options).await
        }
    }

    fn flaky(faults: Vec<Fault>) -> (Arc<Flaky>, ObjectStorage) {
        let store = Arc::new(Flaky {
            inner: InMemory::new(),
            faults: std::sync::Mutex::new(faults),
            puts: AtomicUsize::new(0),
        });
        let s = ObjectStorage::new(store.clone(), "t".into(), "flaky://t");
        (store, s)
    }

    #[test]
    fn a_create_whose_answer_was_lost_is_ours() {
        let (store, s) = flaky(vec![Fault::WriteThenFail]);
        assert_eq!(
            s.put_new("_versions/1", b"mine").expect("put"),
            PutNew::Created
        );
        assert_eq!(
            store.puts.load(Ordering::SeqCst),
            1,
            "read back, not re-sent"
        );
        assert_eq!(
            s.get("_versions/1").expect("get").as_deref(),
            Some(&b"mine"[..])
        );
    }

    #[test]
    fn a_create_that_failed_before_writing_is_sent_again() {
        let (store, s) = flaky(vec![Fault::FailBefore, Fault::FailBefore]);
        assert_eq!(
            s.put_new("_versions/1", b"mine").expect("put"),
            PutNew::Created
        );
        assert_eq!(store.puts.load(Ordering::SeqCst), 3);
        let (_, s) = flaky(vec![Fault::FailBefore; PUT_NEW_TRIES]);
        let e = s
            .put_new("_versions/1", b"mine")
            .expect_err("every try failed");
        assert!(e.to_string().contains("flaky://t/_versions/1"), "{e}");
        assert!(!s.exists("_versions/1").expect("exists"));
    }

    #[test]
    fn another_writers_object_is_already_there_even_after_a_lost_answer() {
        let (_, s) = flaky(vec![]);
        assert_eq!(
            s.put_new("_versions/1", b"theirs").expect("put"),
            PutNew::Created
        );
        assert_eq!(
            s.put_new("_versions/1", b"mine").expect("put"),
            PutNew::AlreadyExists
        );
        let (store, s) = flaky(vec![]);
        s.put_new("_versions/1", b"theirs").expect("put");
        store.faults.lock().expect("f").push(Fault::FailBefore);
        assert_eq!(
            s.put_new("_versions/1", b"mine").expect("put"),
            PutNew::AlreadyExists
        );
        assert_eq!(
            s.get("_versions/1").expect("get").as_deref(),
            Some(&b"theirs"[..])
        );
    }

    #[test]
    fn large_files_go_up_in_parts_and_read_back_whole() {
        let (_, s) = flaky(vec![]);
        let big: Vec<u8> = (0..PART_SIZE * 2 + 17).map(|i| (i % 251) as u8).collect();
        s.put("data/big.arrow", &big).expect("put");
        assert_eq!(
            s.get("data/big.arrow").expect("get").as_deref(),
            Some(&big[..])
        );
        assert_eq!(
            s.size("data/big.arrow").expect("size"),
            Some(big.len() as u64)
        );
    }

    #[test]
    fn a_rename_moves_every_file_and_leaves_no_source() {
        let (_, s) = flaky(vec![]);
        for f in [
            "a/data/1.arrow",
            "a/_versions/1.manifest",
            "a/_indices/i/x.arrow",
        ] {
            s.put(f, f.as_bytes()).expect("put");
        }
        s.rename_dir("a", "b").expect("rename");
        assert!(s.list("a").expect("list").is_empty());
        assert_eq!(
            s.list("b").expect("list"),
            vec!["_indices", "_versions", "data"]
        );
        assert_eq!(
            s.get("b/_indices/i/x.arrow").expect("get").as_deref(),
            Some(&b"a/_indices/i/x.arrow"[..])
        );
    }
}
