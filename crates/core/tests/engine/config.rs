//! The table's config (Lance's `update_config` / `config`) and the automatic
//! cleanup its `lance.auto_cleanup.*` keys ask for: every interval-th
//! version removes the versions older than `older_than`, never the latest or
//! a tagged one, and leaves no file that no kept version names.

use std::collections::BTreeMap;
use std::time::Duration;

use memwal_core::table::config::{AUTO_CLEANUP_INTERVAL, AUTO_CLEANUP_OLDER_THAN};
use memwal_core::{AddMode, NativeTable};

use crate::cleanup::{named, on_disk};
use crate::support::{dump, new_local_table, people};

fn versions(t: &NativeTable) -> Vec<u64> {
    let v: Vec<u64> = t
        .list_versions_sync()
        .expect("versions")
        .iter()
        .map(|v| v.version)
        .collect();
    v
}

fn set(entries: &[(&str, &str)]) -> BTreeMap<String, String> {
    entries
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Adds one row `id` and lets the clock pass the commit's millisecond (a
/// cleanup removes versions strictly older than its cutoff).
fn add(t: &NativeTable, id: i64) -> u64 {
    let v = t
        .add_sync(people(&[(id, id)]), AddMode::Append)
        .expect("add");
    std::thread::sleep(Duration::from_millis(3));
    v
}

#[test]
fn auto_cleanup_runs_every_interval_versions_and_keeps_tagged_ones() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_local_table(dir.path(), people(&[(1, 1)]));
    t.set_tag_sync("first", 1, false).expect("tag");
    let v = t
        .update_config_sync(
            set(&[
                (AUTO_CLEANUP_INTERVAL, "3"),
                (AUTO_CLEANUP_OLDER_THAN, "0s"),
            ]),
            vec![],
        )
        .expect("config");
    assert_eq!(v, 2);
    let config = t.config_sync().expect("config");
    assert_eq!(
        config.get(AUTO_CLEANUP_INTERVAL).map(String::as_str),
        Some("3")
    );
    std::thread::sleep(Duration::from_millis(3));
    assert_eq!(add(&t, 2), 3);
    assert_eq!(
        versions(&t),
        vec![1, 3],
        "version 3 is due: 2 goes, 1 is tagged"
    );
    add(&t, 3);
    add(&t, 4);
    assert_eq!(versions(&t), vec![1, 3, 4, 5], "nothing due at 4 and 5");
    add(&t, 5);
    assert_eq!(versions(&t), vec![1, 6]);
    let st = memwal_core::storage::LocalStorage::new(dir.path()).expect("storage");
    assert_eq!(named(&st, &versions(&t)), on_disk(&st));
    assert_eq!(dump(&t).len(), 5);
    let first = t.checkout_sync(Some(1)).expect("tagged version");
    assert_eq!(dump(&first).len(), 1);
    // Removing a key stops it: versions 7, 8 and 9 stay.
    t.update_config_sync(BTreeMap::new(), vec![AUTO_CLEANUP_INTERVAL.into()])
        .expect("remove");
    std::thread::sleep(Duration::from_millis(3));
    assert!(!t
        .config_sync()
        .expect("config")
        .contains_key(AUTO_CLEANUP_INTERVAL));
    add(&t, 6);
    add(&t, 7);
    assert_eq!(versions(&t), vec![1, 6, 7, 8, 9]);
}

#[test]
fn a_young_table_keeps_its_versions_and_bad_config_commits_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let (_db, t) = new_local_table(dir.path(), people(&[(1, 1)]));
    t.update_config_sync(
        set(&[
            (AUTO_CLEANUP_INTERVAL, "1"),
            (AUTO_CLEANUP_OLDER_THAN, "1h"),
            ("mine", "x"),
        ]),
        vec![],
    )
    .expect("config");
    for id in 2..5 {
        add(&t, id);
    }
    assert_eq!(
        versions(&t),
        vec![1, 2, 3, 4, 5],
        "no version is an hour old"
    );
    for (entries, delete, says) in [
        (set(&[(AUTO_CLEANUP_OLDER_THAN, "soon")]), vec![], "'soon'"),
        (set(&[(AUTO_CLEANUP_INTERVAL, "0")]), vec![], "at least 1"),
        (
            set(&[("memwal.flushed_seq", "9")]),
            vec![],
            "belong to memwal",
        ),
        (
            BTreeMap::new(),
            vec!["lance.lsm_write_spec".to_string()],
            "belong to memwal",
        ),
        (
            set(&[("mine", "y")]),
            vec!["mine".to_string()],
            "both set and removed",
        ),
    ] {
        let e = t
            .update_config_sync(entries, delete)
            .expect_err(says)
            .to_string();
        assert!(e.contains(says), "{e}");
    }
    assert_eq!(
        versions(&t).last(),
        Some(&5),
        "a refused change commits nothing"
    );
    assert_eq!(
        t.config_sync()
            .expect("config")
            .get("mine")
            .map(String::as_str),
        Some("x")
    );
    // Reopened, the config is the table's.
    let again = memwal_core::NativeDatabase::open(dir.path().to_str().expect("p"))
        .expect("db")
        .open_table_sync("t")
        .expect("open");
    assert_eq!(
        again.configured_retention().expect("retention"),
        Some(Duration::from_secs(3600))
    );
}
