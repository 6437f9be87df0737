use memwal_core::{AddMode, CreateMode, CreateOptions, NativeDatabase, QueryRequest};

use crate::support::*;

#[test]
fn create_modes_names_and_drop() {
    let dir = tempfile::tempdir().expect("tmp");
    let (db, _t) = new_table(dir.path(), people(&[(1, 1)]));
    let e = db
        .create_table_sync("t", people(&[]), CreateOptions::default())
        .expect_err("exists");
    assert_eq!(e.code(), "TableAlreadyExists");
    let t = db
        .create_table_sync(
            "t",
            people(&[]),
            CreateOptions {
                exist_ok: true,
                ..Default::default()
            },
        )
        .expect("exist_ok");
    assert_eq!(t.count_rows_sync(None).expect("c"), 1);
    let t = db
        .create_table_sync(
            "t",
            people(&[(5, 5), (6, 6)]),
            CreateOptions {
                mode: CreateMode::Overwrite,
                exist_ok: false,
            },
        )
        .expect("overwrite");
    assert_eq!(ages(&t), vec![(5, Some(5)), (6, Some(6))]);
    db.create_table_sync("other", people(&[]), CreateOptions::default())
        .expect("create");
    assert_eq!(db.table_names_sync().expect("names"), vec!["other", "t"]);
    db.drop_table_sync("other").expect("drop");
    assert_eq!(
        db.drop_table_sync("other").expect_err("gone").code(),
        "TableNotFound"
    );
    assert_eq!(
        db.open_table_sync("other").expect_err("gone").to_string(),
        "Table 'other' was not found"
    );
    assert_eq!(db.table_names_sync().expect("names"), vec!["t"]);
}

/// Tables live in `{name}.lance`, as Lance's do; a table an earlier memwal made in `{name}` opens,
/// lists, writes, renames (to `{new}.lance`) and drops as before.
#[test]
fn table_folders_are_named_as_lances_and_older_ones_still_open() {
    let dir = tempfile::tempdir().expect("tmp");
    let (db, _t) = new_local_table(dir.path(), people(&[(1, 1)]));
    assert!(dir.path().join("t.lance/_versions").is_dir());
    assert!(!dir.path().join("t").exists());
    drop(db);
    // The layout of an earlier memwal: the table's folder is its name.
    std::fs::rename(dir.path().join("t.lance"), dir.path().join("t")).expect("mv");
    let db = NativeDatabase::open(dir.path().to_str().expect("utf8")).expect("db");
    db.create_table_sync("u", people(&[(9, 9)]), CreateOptions::default())
        .expect("create");
    assert_eq!(db.table_names_sync().expect("names"), vec!["t", "u"]);
    let t = db.open_table_sync("t").expect("open the old folder");
    t.add_sync(people(&[(2, 2)]), AddMode::Append).expect("add");
    assert_eq!(by_id(&t), vec![(1, Some(1)), (2, Some(2))]);
    assert!(!dir.path().join("t.lance").exists(), "written where it was");
    let e = db
        .create_table_sync("t", people(&[]), CreateOptions::default())
        .expect_err("exists");
    assert_eq!(e.code(), "TableAlreadyExists");
    db.rename_table_sync("t", "v").expect("rename");
    assert!(dir.path().join("v.lance/_versions").is_dir() && !dir.path().join("t").exists());
    let v = db.open_table_sync("v").expect("renamed");
    assert_eq!(by_id(&v), vec![(1, Some(1)), (2, Some(2))]);
    std::fs::rename(dir.path().join("v.lance"), dir.path().join("v")).expect("mv");
    db.drop_table_sync("v").expect("drop the old folder");
    assert!(!dir.path().join("v").exists());
    assert_eq!(db.table_names_sync().expect("names"), vec!["u"]);
    // "u.lance" is another table, not a second name of u (its folder is u.lance.lance).
    for e in [
        db.open_table_sync("u.lance").map(|_| ()),
        db.drop_table_sync("u.lance"),
        db.rename_table_sync("u.lance", "w"),
    ] {
        assert_eq!(e.expect_err("no such table").code(), "TableNotFound");
    }
    let over = CreateOptions {
        mode: CreateMode::Overwrite,
        exist_ok: false,
    };
    db.create_table_sync("u.lance", people(&[(5, 5)]), over)
        .expect("a table of its own");
    assert_eq!(
        by_id(&db.open_table_sync("u").expect("u")),
        vec![(9, Some(9))]
    );
    assert_eq!(db.table_names_sync().expect("names"), vec!["u", "u.lance"]);
}

#[test]
fn versions_checkout_and_reopen() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 1)]));
    t.add_sync(people(&[(2, 2)]), AddMode::Append).expect("add");
    t.delete_sync("id = 1").expect("delete");
    let versions = t.list_versions_sync().expect("versions");
    let ops: Vec<&str> = versions.iter().map(|v| v.operation.as_str()).collect();
    assert_eq!(ops, vec!["create", "append", "delete"]);
    let v2 = t.checkout_sync(Some(2)).expect("checkout");
    assert_eq!(ages(&v2), vec![(1, Some(1)), (2, Some(2))]);
    assert!(v2
        .add_sync(people(&[(9, 9)]), AddMode::Append)
        .expect_err("read-only")
        .to_string()
        .contains("cannot be modified when a specific version is checked out"));
    assert_eq!(
        t.checkout_sync(Some(9)).expect_err("none").code(),
        "VersionNotFound"
    );
    // A new process sees the same latest state from disk alone.
    let t2 = crate::support::open_db(dir.path().to_str().expect("p"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(ages(&t2), vec![(2, Some(2))]);
    assert_eq!(t2.version_sync().expect("v"), 3);
}

#[test]
fn delete_update_query_optimize() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20), (3, 30), (4, 40)]));
    let d = t.delete_sync("age >= 30").expect("delete");
    assert_eq!((d.num_deleted_rows, d.version), (2, 2));
    let u = t
        .update_sync(Some("id = 2"), &[("age".into(), "age * 2 + 1".into())])
        .expect("update");
    assert_eq!((u.rows_updated, u.version), (1, 3));
    let u = t
        .update_sync(Some("id = 99"), &[("age".into(), "0".into())])
        .expect("update none");
    assert_eq!((u.rows_updated, u.version), (0, 3));
    assert_eq!(ages(&t), vec![(1, Some(10)), (2, Some(41))]);
    t.add_sync(people(&[(5, 50), (6, 60)]), AddMode::Append)
        .expect("add");
    let q = t
        .query_sync(&QueryRequest {
            filter: Some("age > 20".into()),
            columns: Some(vec!["id".into()]),
            limit: Some(2),
            offset: Some(1),
            ..Default::default()
        })
        .expect("query");
    let n: usize = q.iter().map(|b| b.num_rows()).sum();
    assert_eq!(n, 2);
    assert_eq!(q[0].num_columns(), 1);
    let before = dump(&t);
    let s = t.optimize_sync().expect("optimize");
    assert!(
        s.fragments_removed >= 2 && s.deleted_rows_purged >= 2,
        "{s:?}"
    );
    assert_eq!(dump(&t), before);
    assert_eq!(t.optimize_sync().expect("again").fragments_removed, 0);
    // Merge after compaction uses a rebuilt index correctly.
    let mut p = memwal_core::MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = true;
    let r = t
        .merge_insert_sync(&checked(&p), people(&[(5, 55)]))
        .expect("merge");
    assert_eq!(r.num_updated_rows, 1);
    t.add_sync(people(&[(7, 7)]), AddMode::Overwrite)
        .expect("overwrite");
    assert_eq!(ages(&t), vec![(7, Some(7))]);
}

#[test]
fn memory_database_works_without_files() {
    let db = NativeDatabase::open("memory://").expect("db");
    let t = db
        .create_table_sync("m", people(&[(1, 1)]), CreateOptions::default())
        .expect("create");
    t.add_sync(people(&[(2, 2)]), AddMode::Append).expect("add");
    assert_eq!(ages(&t), vec![(1, Some(1)), (2, Some(2))]);
    assert_eq!(db.table_names_sync().expect("names"), vec!["m"]);
}

#[test]
fn data_files_are_plain_arrow_ipc() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, _t) = crate::support::new_local_table(dir.path(), people(&[(1, 1), (2, 2)]));
    let f = std::fs::read_dir(dir.path().join("t.lance/data"))
        .expect("ls")
        .next()
        .expect("one")
        .expect("entry");
    let bytes = std::fs::read(f.path()).expect("read");
    let r = arrow_ipc::reader::FileReader::try_new(std::io::Cursor::new(bytes), None)
        .expect("ipc file");
    let n: usize = r.map(|b| b.expect("batch").num_rows()).sum();
    assert_eq!(n, 2);
}

/// Restore: a new version equal to the old one (rows, schema, indexes),
/// from a checked-out handle or by number; later merges see the restored
/// rows (the key index does not keep the newer version's keys).
#[test]
fn restore_makes_an_old_version_the_latest() {
    use memwal_core::merge::MergeInsertParams;
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10), (2, 20)]));
    let v1 = t.version_sync().expect("v");
    let upsert = |t: &memwal_core::NativeTable, rows: &[(i64, i64)]| {
        let mut p = MergeInsertParams::new(vec!["id".into()]);
        p.when_matched_update_all = true;
        p.when_not_matched_insert_all = true;
        t.merge_insert_sync(&checked(&p), people(rows))
            .expect("merge")
    };
    // The key index learns id 3 here.
    upsert(&t, &[(3, 30), (1, 11)]);
    t.delete_sync("id = 2").expect("delete");
    assert_eq!(by_id(&t), vec![(1, Some(11)), (3, Some(30))]);
    let old = t.checkout_sync(Some(v1)).expect("checkout");
    let v = old.restore_sync(None).expect("restore");
    assert_eq!(v, v1 + 3);
    assert_eq!(t.version_sync().expect("v"), v);
    assert_eq!(by_id(&t), vec![(1, Some(10)), (2, Some(20))]);
    // id 3 is gone again: a merge inserts it rather than updating a ghost.
    let r = upsert(&t, &[(3, 33), (2, 22)]);
    assert_eq!((r.num_inserted_rows, r.num_updated_rows), (1, 1));
    assert_eq!(by_id(&t), vec![(1, Some(10)), (2, Some(22)), (3, Some(33))]);
    // By number, from the latest handle; history is kept.
    let again = t.restore_sync(Some(v)).expect("restore v");
    assert_eq!(by_id(&t), vec![(1, Some(10)), (2, Some(20))]);
    assert_eq!(
        t.list_versions_sync().expect("l").last().map(|x| x.version),
        Some(again)
    );
    let e = t.restore_sync(None).expect_err("no version");
    assert!(e.to_string().contains("restore needs a version"), "{e}");
    let e = t.restore_sync(Some(999)).expect_err("missing");
    assert_eq!(e.code(), "VersionNotFound");
    // A reopened table reads the restored version.
    drop(t);
    let t = crate::support::open_db(dir.path().to_str().expect("p"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(by_id(&t), vec![(1, Some(10)), (2, Some(20))]);
}

#[test]
fn stats_report_sizes_and_fragments() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) =
        crate::support::new_local_table(dir.path(), people(&[(1, 10), (2, 20), (3, 30)]));
    t.add_sync(people(&[(4, 40)]), AddMode::Append)
        .expect("add");
    t.delete_sync("id = 1").expect("delete");
    let s = t.stats_sync().expect("stats");
    assert_eq!((s.num_rows, s.num_indices), (3, 0));
    let f = &s.fragment_stats;
    assert_eq!((f.num_fragments, f.num_small_fragments), (2, 2));
    assert_eq!((f.lengths.min, f.lengths.max, f.lengths.p50), (1, 2, 2)); // Lance: index floor(0.5 * 2) of [1, 2]
    let mut on_disk = 0;
    for sub in ["data", "_deletions"] {
        for e in std::fs::read_dir(dir.path().join("t.lance").join(sub)).expect("dir") {
            on_disk += e.expect("entry").metadata().expect("meta").len();
        }
    }
    // Every data file is live; the deletion file is counted by its range.
    assert!(
        s.total_bytes > 0 && s.total_bytes <= on_disk,
        "{} vs {on_disk}",
        s.total_bytes
    );
    let empty = NativeDatabase::open("memory://")
        .expect("memory")
        .create_table_sync("e", people(&[]), CreateOptions::default())
        .expect("create");
    assert_eq!(
        empty
            .stats_sync()
            .expect("stats")
            .fragment_stats
            .num_fragments,
        0
    );
}

fn by_id(t: &memwal_core::NativeTable) -> Vec<(i64, Option<i64>)> {
    let mut v = ages(t);
    v.sort_unstable();
    v
}

#[test]
fn tags_name_versions() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_table(dir.path(), people(&[(1, 10)]));
    let v1 = t.version_sync().expect("v");
    t.add_sync(people(&[(2, 20)]), AddMode::Append)
        .expect("add");
    let v2 = t.version_sync().expect("v");
    t.set_tag_sync("first", v1, false).expect("create");
    t.set_tag_sync("latest-1.0", v2, false).expect("create");
    let e = t.set_tag_sync("first", v2, false).expect_err("exists");
    assert!(e.to_string().contains("already has the tag 'first'"), "{e}");
    assert_eq!(
        t.set_tag_sync("x", 99, false).expect_err("v").code(),
        "VersionNotFound"
    );
    for bad in ["", "a/b", ".hidden", "sp ace"] {
        let e = t.set_tag_sync(bad, v1, false).expect_err("bad");
        assert!(e.to_string().contains("invalid tag"), "{bad}: {e}");
    }
    let e = t
        .set_tag_sync("nope", v1, true)
        .expect_err("update missing");
    assert!(e.to_string().contains("has no tag 'nope'"), "{e}");
    let tags = t.tags_sync().expect("list");
    assert_eq!(tags.keys().collect::<Vec<_>>(), ["first", "latest-1.0"]);
    assert_eq!(tags["first"].version, v1);
    assert!(tags["first"].manifest_size > 0);
    t.set_tag_sync("first", v2, true).expect("update");
    assert_eq!(t.tag_version_sync("first").expect("v"), v2);
    t.delete_tag_sync("first").expect("delete");
    assert!(t.tag_version_sync("first").is_err());
    assert!(t.delete_tag_sync("first").is_err());
    // Tags live with the table: a reopened one sees them.
    drop(t);
    let t = crate::support::open_db(dir.path().to_str().expect("p"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(t.tag_version_sync("latest-1.0").expect("v"), v2);
}

/// Reads follow the read-consistency setting (LanceDB's `read_consistency_interval`); writes
/// always plan on the latest version, so a handle with a stale read view never loses a write.
#[test]
fn read_consistency_decides_when_reads_see_other_writers() {
    use memwal_core::ReadConsistency;
    let dir = tempfile::tempdir().expect("tmp");
    let path = dir.path().to_str().expect("p");
    let (_w, writer) = new_table(dir.path(), people(&[(1, 1)]));
    let open = |c| {
        crate::support::open_db(path)
            .expect("db")
            .with_read_consistency(c)
            .open_table_sync("t")
            .expect("open")
    };
    let strong = open(ReadConsistency::Strong);
    let owned = open(ReadConsistency::OwnWritesOnly);
    let lagging = open(ReadConsistency::Interval(std::time::Duration::from_millis(
        300,
    )));
    for t in [&strong, &owned, &lagging] {
        assert_eq!(t.count_rows_sync(None).expect("count"), 1);
    }
    writer
        .add_sync(people(&[(2, 2)]), AddMode::Append)
        .expect("add");
    assert_eq!(strong.count_rows_sync(None).expect("count"), 2);
    assert_eq!(
        owned.count_rows_sync(None).expect("count"),
        1,
        "never looks"
    );
    assert_eq!(
        lagging.count_rows_sync(None).expect("count"),
        1,
        "inside its interval"
    );
    std::thread::sleep(std::time::Duration::from_millis(350));
    assert_eq!(
        lagging.count_rows_sync(None).expect("count"),
        2,
        "after its interval"
    );
    // A write from the stale handle lands on the latest version, and its own reads see it all.
    owned
        .add_sync(people(&[(3, 3)]), AddMode::Append)
        .expect("add");
    assert_eq!(ages(&owned), vec![(1, Some(1)), (2, Some(2)), (3, Some(3))]);
}
