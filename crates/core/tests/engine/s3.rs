//! Tables on an object store: moto_server's S3 API on 127.0.0.1 (see
//! `support::s3_endpoint`), which enforces `If-None-Match: *` with 412 as
//! AWS does, and on the Azure pass Azurite's blob API (the same header,
//! 409 as Azure answers). What a local folder gets from the file system
//! (create-new by hard link, rename), these get from conditional puts and
//! copies; the rest of the engine suite runs against S3 and Azure too
//! (scripts/test.sh's later passes).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use memwal_core::manifest::list_versions;
use memwal_core::storage::{open_uri, Storage};
use memwal_core::{AddMode, CreateOptions, ErrorCode, MergeInsertParams, NativeDatabase};

use crate::cleanup::{named, on_disk};
use crate::support::{checked, dump, people, s3_options, s3_uri, shared_store};

fn open(uri: &str, options: &memwal_core::storage::StorageOptions) -> NativeDatabase {
    NativeDatabase::open_with(uri, options).expect("open object-store database")
}

/// Two databases on one prefix (no shared cache or lock: as two processes
/// or two hosts) append at once; each loser of a version's conditional put
/// (a 412) re-plans, so every acknowledged row is there exactly once.
#[test]
fn two_writers_racing_on_one_prefix_lose_nothing() {
    let (uri, opts) = shared_store("race");
    open(&uri, &opts)
        .create_table_sync("t", people(&[(0, 0)]), CreateOptions::default())
        .expect("create");
    let writers: Vec<_> = [1000i64, 2000]
        .into_iter()
        .map(|base| {
            let (uri, opts) = (uri.clone(), opts.clone());
            std::thread::spawn(move || {
                let t = open(&uri, &opts).open_table_sync("t").expect("open");
                for i in 1..=25 {
                    t.add_sync(people(&[(base + i, i)]), AddMode::Append)
                        .expect("append");
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("writer");
    }
    let t = open(&uri, &opts).open_table_sync("t").expect("reopen");
    let ids: BTreeSet<i64> = dump(&t).into_iter().map(|r| r.0).collect();
    let want: BTreeSet<i64> = std::iter::once(0)
        .chain((1..=25).map(|i| 1000 + i))
        .chain((1..=25).map(|i| 2000 + i))
        .collect();
    assert_eq!(ids, want);
    assert_eq!(dump(&t).len(), 51, "no row twice");
    let st = open_uri(&uri, &opts).expect("storage");
    assert_eq!(
        list_versions(st.as_ref(), "t.lance").expect("versions"),
        (1..=51).collect::<Vec<_>>()
    );
}

/// Upserts, deletes, compaction, cleanup, an index and a rename on S3; a
/// fresh database sees the same rows, and after cleanup the bucket holds
/// exactly the files the kept versions name.
#[test]
fn a_table_on_s3_lives_through_upkeep_and_a_rename() {
    let (uri, opts) = shared_store("upkeep");
    let db = open(&uri, &opts);
    let t = db
        .create_table_sync("t", people(&[(1, 1), (2, 2)]), CreateOptions::default())
        .expect("create");
    let mut upsert = MergeInsertParams::new(vec!["id".into()]);
    upsert.when_matched_update_all = true;
    upsert.when_not_matched_insert_all = true;
    for i in 0..6i64 {
        t.merge_insert_sync(&checked(&upsert), people(&[(2, 20 + i), (10 + i, i)]))
            .expect("upsert");
    }
    t.delete_sync("id = 1").expect("delete");
    let before = dump(&t);
    t.optimize_sync().expect("optimize");
    t.cleanup_sync(Duration::ZERO, true).expect("cleanup");
    assert_eq!(dump(&t), before);
    let st: Arc<dyn Storage> = open_uri(&uri, &opts).expect("storage");
    let kept = list_versions(st.as_ref(), "t.lance").expect("versions");
    assert_eq!(kept.len(), 1, "only the latest version is kept: {kept:?}");
    assert_eq!(on_disk(st.as_ref()), named(st.as_ref(), &kept));

    db.rename_table_sync("t", "u").expect("rename");
    let fresh = open(&uri, &opts);
    assert_eq!(
        fresh.table_names_sync().expect("names"),
        vec!["u".to_string()]
    );
    assert_eq!(dump(&fresh.open_table_sync("u").expect("open u")), before);
    assert!(
        st.list("t.lance").expect("list").is_empty(),
        "nothing left under the old name"
    );
}

#[test]
fn storage_options_are_checked_by_name() {
    let mut opts = s3_options();
    opts.insert("aws_regoin".into(), "x".into());
    let e = NativeDatabase::open_with(&s3_uri("opts"), &opts).expect_err("typo");
    assert_eq!(e.code(), ErrorCode::InvalidInput);
    assert!(e.to_string().contains("aws_regoin"), "{e}");
    let dir = tempfile::tempdir().expect("tmp");
    let e = NativeDatabase::open_with(dir.path().to_str().expect("p"), &s3_options())
        .expect_err("options on a folder");
    assert!(e.to_string().contains("aws_endpoint"), "{e}");
    let e = NativeDatabase::open_with("s3:///prefix", &s3_options()).expect_err("no bucket");
    assert!(e.to_string().contains("no bucket"), "{e}");
    let e = NativeDatabase::open_with("s3://no-such-bucket/x", &s3_options())
        .expect("opening does not reach the store")
        .table_names_sync()
        .expect_err("a missing bucket");
    assert_eq!(e.code(), ErrorCode::Io, "{e}");
}

/// The store itself enforces create-only puts (S3's 412, Azure's 409 to
/// `If-None-Match: *`): a second put of a name answers AlreadyExists and
/// the first bytes stay. Every commit's safety rests on this.
#[test]
fn a_create_only_put_never_replaces_a_file() {
    use memwal_core::storage::PutNew;
    let (uri, opts) = shared_store("putnew");
    let st = open_uri(&uri, &opts).expect("storage");
    assert_eq!(
        st.put_new("x/one", b"first").expect("first"),
        PutNew::Created
    );
    assert_eq!(
        st.put_new("x/one", b"second").expect("second"),
        PutNew::AlreadyExists
    );
    assert_eq!(
        st.get("x/one").expect("get").as_deref(),
        Some(&b"first"[..])
    );
}
