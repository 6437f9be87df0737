use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use memwal_core::storage::{FaultyStorage, LocalStorage, Op, Storage};
use memwal_core::{CreateOptions, MergeInsertParams, NativeDatabase};

use crate::support::*;

fn upsert() -> MergeInsertParams {
    let mut p = MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    p
}

#[test]
fn failed_manifest_publish_leaves_previous_version_intact() {
    let dir = tempfile::tempdir().expect("tmp");
    let local: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).expect("local"));
    let crash = Arc::new(AtomicBool::new(false));
    let c2 = crash.clone();
    let faulty: Arc<dyn Storage> = Arc::new(FaultyStorage::new(local, move |op, path| {
        c2.load(Ordering::SeqCst) && op == Op::PutNew && path.contains("_versions")
    }));
    let db = NativeDatabase::with_storage("faulty", faulty);
    let t = db
        .create_table_sync("t", people(&[(1, 10), (2, 20)]), CreateOptions::default())
        .expect("create");
    crash.store(true, Ordering::SeqCst);
    let e = t
        .merge_insert_sync(&checked(&upsert()), people(&[(2, 99), (3, 30)]))
        .expect_err("crash");
    assert!(e.to_string().contains("injected fault"), "{e}");
    // The data file written before the failed publish was cleaned up, and a
    // fresh process sees version 1 whole.
    let fresh = NativeDatabase::open(dir.path().to_str().expect("p")).expect("db");
    let t2 = fresh.open_table_sync("t").expect("open");
    assert_eq!(t2.version_sync().expect("v"), 1);
    assert_eq!(ages(&t2), vec![(1, Some(10)), (2, Some(20))]);
    let files = std::fs::read_dir(dir.path().join("t.lance/data"))
        .expect("ls")
        .count();
    assert_eq!(
        files, 1,
        "the interrupted commit's data file must not remain"
    );
    // After the "restart" writes work again.
    crash.store(false, Ordering::SeqCst);
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(2, 21)]))
        .expect("merge");
    assert_eq!(r.version, 2);
}

#[test]
fn crash_after_data_files_before_manifest() {
    // A real crash would leave the data file (no cleanup runs): simulate by
    // failing the manifest publish on a storage whose deletes are ignored.
    #[derive(Debug)]
    struct NoDelete(LocalStorage);
    impl Storage for NoDelete {
        fn put(&self, p: &str, d: &[u8]) -> memwal_core::Result<()> {
            self.0.put(p, d)
        }
        fn put_new(&self, p: &str, _d: &[u8]) -> memwal_core::Result<memwal_core::storage::PutNew> {
            Err(memwal_core::Error::io(
                p,
                std::io::Error::other("power cut"),
            ))
        }
        fn get(&self, p: &str) -> memwal_core::Result<Option<bytes::Bytes>> {
            self.0.get(p)
        }
        fn exists(&self, p: &str) -> memwal_core::Result<bool> {
            self.0.exists(p)
        }
        fn list(&self, d: &str) -> memwal_core::Result<Vec<String>> {
            self.0.list(d)
        }
        fn delete(&self, _p: &str) -> memwal_core::Result<()> {
            Ok(())
        }
        fn delete_dir(&self, _d: &str) -> memwal_core::Result<()> {
            Ok(())
        }
        fn rename_dir(&self, f: &str, t: &str) -> memwal_core::Result<()> {
            self.0.rename_dir(f, t)
        }
        fn local_path(&self, d: &str) -> Option<std::path::PathBuf> {
            self.0.local_path(d)
        }
    }
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().to_str().expect("p");
    let (_db, _t) = crate::support::new_local_table(dir.path(), people(&[(1, 10)]));
    let crashing = NativeDatabase::with_storage(
        "x",
        Arc::new(NoDelete(LocalStorage::new(dir.path()).expect("l"))),
    );
    let t = crashing.open_table_sync("t").expect("open");
    t.merge_insert_sync(&checked(&upsert()), people(&[(1, 11), (2, 2)]))
        .expect_err("power cut");
    assert_eq!(
        std::fs::read_dir(dir.path().join("t.lance/data"))
            .expect("ls")
            .count(),
        2,
        "orphan left"
    );
    let t2 = NativeDatabase::open(path)
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(t2.version_sync().expect("v"), 1);
    assert_eq!(ages(&t2), vec![(1, Some(10))]);
}

#[test]
fn concurrent_writers_both_land_with_retries() {
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().to_str().expect("p").to_string();
    let (_db, _t) = crate::support::new_local_table(dir.path(), people(&[]));
    let rounds = 30;
    let handles: Vec<_> = (0..2i64)
        .map(|w| {
            let path = path.clone();
            std::thread::spawn(move || {
                // Separate databases: like two processes sharing the folder.
                let db = NativeDatabase::open(&path).expect("db");
                let t = db.open_table_sync("t").expect("open");
                let mut attempts = 0;
                for r in 0..rounds {
                    // Each writer inserts its own keys and both upsert key 0:
                    // the shared new key must never appear twice.
                    let res = t
                        .merge_insert_sync(
                            &checked(&upsert()),
                            people(&[(0, w), (1000 * (w + 1) + r, r)]),
                        )
                        .expect("merge");
                    attempts = attempts.max(res.num_attempts);
                }
                attempts
            })
        })
        .collect();
    let attempts: Vec<u32> = handles
        .into_iter()
        .map(|h| h.join().expect("join"))
        .collect();
    let t = NativeDatabase::open(&path)
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    let rows = ages(&t);
    assert_eq!(
        rows.len(),
        1 + 2 * rounds as usize,
        "no row lost, no duplicate key"
    );
    assert_eq!(rows.iter().filter(|r| r.0 == 0).count(), 1);
    // Whether the two writers raced is up to the scheduler; the retry
    // itself is forced, deterministically, in the next test.
    assert!(attempts.iter().all(|a| *a >= 1), "{attempts:?}");
}

#[test]
fn a_writer_that_loses_the_publish_race_retries_on_the_new_version() {
    let dir = tempfile::tempdir().expect("tmp");
    let local: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).expect("local"));
    let other = NativeDatabase::with_storage("other", local.clone());
    other
        .create_table_sync("t", people(&[(1, 10)]), CreateOptions::default())
        .expect("create");
    // Just before our writer publishes its manifest, another writer (same
    // folder, another handle) commits the same version number first.
    let armed = Arc::new(AtomicBool::new(false));
    let a2 = armed.clone();
    let faulty: Arc<dyn Storage> = Arc::new(FaultyStorage::new(local, move |op, path| {
        if op == Op::PutNew && path.contains("_versions") && a2.swap(false, Ordering::SeqCst) {
            let t = other.open_table_sync("t").expect("other open");
            t.merge_insert_sync(&checked(&upsert()), people(&[(2, 20)]))
                .expect("the other writer commits first");
        }
        false
    }));
    let db = NativeDatabase::with_storage("ours", faulty);
    let t = db.open_table_sync("t").expect("open");
    armed.store(true, Ordering::SeqCst);
    let r = t
        .merge_insert_sync(&checked(&upsert()), people(&[(1, 11), (3, 30)]))
        .expect("merge after a lost race");
    assert_eq!(r.num_attempts, 2, "one lost publish, one retry");
    assert_eq!((r.num_inserted_rows, r.num_updated_rows), (1, 1));
    assert_eq!(r.version, 3);
    assert_eq!(ages(&t), vec![(1, Some(11)), (2, Some(20)), (3, Some(30))]);
}

#[test]
fn a_creator_that_loses_the_race_leaves_no_file_and_says_so() {
    // Table creation goes through the one commit path: a creator whose
    // version 1 is published first by another removes its own data file and
    // answers TableAlreadyExists (or, with exist_ok, opens the winner's).
    for exist_ok in [false, true] {
        let dir = tempfile::tempdir().expect("tmp");
        let local: Arc<dyn Storage> = Arc::new(LocalStorage::new(dir.path()).expect("local"));
        let other = NativeDatabase::with_storage("other", local.clone());
        let armed = Arc::new(AtomicBool::new(true));
        let a2 = armed.clone();
        let faulty: Arc<dyn Storage> = Arc::new(FaultyStorage::new(local, move |op, path| {
            if op == Op::PutNew && path.contains("_versions") && a2.swap(false, Ordering::SeqCst) {
                other
                    .create_table_sync("t", people(&[(9, 90)]), CreateOptions::default())
                    .expect("the other creator wins");
            }
            false
        }));
        let db = NativeDatabase::with_storage("ours", faulty);
        let opts = CreateOptions {
            exist_ok,
            ..Default::default()
        };
        let r = db.create_table_sync("t", people(&[(1, 10), (2, 20)]), opts);
        assert!(!armed.load(Ordering::SeqCst), "the race happened");
        if exist_ok {
            let t = r.expect("exist_ok opens the winner's table");
            assert_eq!(ages(&t), vec![(9, Some(90))]);
        } else {
            let e = r.expect_err("lost the race");
            assert_eq!(e.code(), "TableAlreadyExists", "{e}");
        }
        let data = std::fs::read_dir(dir.path().join("t.lance").join("data"))
            .expect("data folder")
            .count();
        assert_eq!(data, 1, "only the winner's data file remains");
    }
}

/// A publish that links the manifest and then fails (its folder's sync
/// failed, say) leaves a visible version: the commit reports the failure but
/// keeps the files that version names, so the table still reads whole.
#[test]
fn a_publish_that_fails_after_the_link_keeps_the_versions_files() {
    #[derive(Debug)]
    struct FailAfterLink(LocalStorage);
    impl Storage for FailAfterLink {
        fn put(&self, p: &str, d: &[u8]) -> memwal_core::Result<()> {
            self.0.put(p, d)
        }
        fn put_new(&self, p: &str, d: &[u8]) -> memwal_core::Result<memwal_core::storage::PutNew> {
            self.0.put_new(p, d)?;
            Err(memwal_core::Error::io(
                p,
                std::io::Error::other("folder sync failed"),
            ))
        }
        fn get(&self, p: &str) -> memwal_core::Result<Option<bytes::Bytes>> {
            self.0.get(p)
        }
        fn exists(&self, p: &str) -> memwal_core::Result<bool> {
            self.0.exists(p)
        }
        fn list(&self, d: &str) -> memwal_core::Result<Vec<String>> {
            self.0.list(d)
        }
        fn delete(&self, p: &str) -> memwal_core::Result<()> {
            self.0.delete(p)
        }
        fn delete_dir(&self, d: &str) -> memwal_core::Result<()> {
            self.0.delete_dir(d)
        }
        fn rename_dir(&self, f: &str, t: &str) -> memwal_core::Result<()> {
            self.0.rename_dir(f, t)
        }
        fn local_path(&self, d: &str) -> Option<std::path::PathBuf> {
            self.0.local_path(d)
        }
    }
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, _t) = new_local_table(dir.path(), people(&[(1, 10)]));
    let failing = NativeDatabase::with_storage(
        "x",
        Arc::new(FailAfterLink(LocalStorage::new(dir.path()).expect("l"))),
    );
    let t = failing.open_table_sync("t").expect("open");
    t.merge_insert_sync(&checked(&upsert()), people(&[(1, 11), (2, 2)]))
        .expect_err("the publish failed");
    let again = NativeDatabase::open(dir.path().to_str().expect("p"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(
        again.version_sync().expect("v"),
        2,
        "the link made version 2 visible"
    );
    assert_eq!(
        ages(&again),
        vec![(1, Some(11)), (2, Some(2))],
        "its files are there"
    );
}

/// The private copy of a manifest a crash left in `_versions` goes with a
/// cleanup once it is older than the cutoff; a fresh one (a publish in
/// flight) stays.
#[test]
fn cleanup_removes_stale_manifest_copies() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_local_table(dir.path(), people(&[(1, 10)]));
    let versions = dir.path().join("t.lance/_versions");
    let stale = versions.join("00000000000000000002.tmp-stale");
    let fresh = versions.join("00000000000000000002.tmp-fresh");
    for p in [&stale, &fresh] {
        std::fs::write(p, b"{").expect("write");
    }
    let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
    std::fs::File::options()
        .write(true)
        .open(&stale)
        .expect("open")
        .set_modified(two_hours_ago)
        .expect("mtime");
    let s = t
        .cleanup_sync(std::time::Duration::from_secs(3600), false)
        .expect("cleanup");
    assert!(!stale.exists(), "the stale copy goes");
    assert!(fresh.exists(), "a fresh copy stays");
    assert_eq!(s.bytes_removed, 1);
    assert_eq!(ages(&t), vec![(1, Some(10))]);
}
