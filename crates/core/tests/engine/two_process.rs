//! Upkeep racing another process on the same folder. A child process (this
//! test binary run again with `MEMWAL_TWO_PROCESS_DB` set) appends rows and
//! deletes some, logging each write only once its commit has returned,
//! while this process compacts and cleans up in a loop (a 500 ms cutoff:
//! files younger than that are unverified, as the default's rule needs; a
//! commit here takes a few ms). Then the
//! table holds exactly the child's acknowledged rows, every kept version
//! opens, and a last cleanup leaves exactly the files the kept versions name.
//! In the suite's S3 pass both processes commit to one prefix of the moto
//! bucket (the conditional put's 412 fences them), with a 5 s cutoff.

use std::collections::BTreeSet;
use std::io::Write;
use std::process::Command;
use std::sync::Arc;
use std::time::Duration;

use memwal_core::manifest::list_versions;
use memwal_core::storage::Storage;
use memwal_core::table::compact::CompactOptions;
use memwal_core::AddMode;

use crate::cleanup::{named, on_disk};
use crate::support::{dump, on_object_store, open_db, open_storage, pass_env, people};

const DB: &str = "MEMWAL_TWO_PROCESS_DB";
const LOG: &str = "MEMWAL_TWO_PROCESS_LOG";
const TEST: &str = "two_process::compaction_and_cleanup_racing_another_process_lose_nothing";

/// The child's side: 300 appends, a delete after every fifth, each logged
/// after it is acknowledged; a refused write is logged as such and is not
/// counted (another process may have removed what its snapshot read).
fn child(db: &str, log: &str) {
    let t = open_db(db).expect("db").open_table_sync("t").expect("open");
    let mut out = std::fs::File::create(log).expect("log");
    for i in 1..=300i64 {
        match t.add_sync(people(&[(i, i)]), AddMode::Append) {
            Ok(_) => writeln!(out, "add {i}").expect("log"),
            Err(e) => writeln!(out, "refused add {i}: {e}").expect("log"),
        }
        if i % 5 == 0 {
            match t.delete_sync(&format!("id = {}", i - 3)) {
                Ok(_) => writeln!(out, "del {}", i - 3).expect("log"),
                Err(e) => writeln!(out, "refused del {}: {e}", i - 3).expect("log"),
            }
        }
        // On an object store a commit takes tens of ms: writing back to back there, the
        // child would win every race and no compaction would ever land.
        std::thread::sleep(Duration::from_millis(if on_object_store() {
            40
        } else {
            4
        }));
    }
}

/// The rows the child's log says were acknowledged.
fn acknowledged(log: &str) -> (BTreeSet<i64>, usize) {
    let mut ids = BTreeSet::from([0]);
    let mut refused = 0;
    for line in std::fs::read_to_string(log).expect("log").lines() {
        let num = |s: &str| s.parse::<i64>().expect("id");
        if let Some(i) = line.strip_prefix("add ") {
            ids.insert(num(i));
        } else if let Some(i) = line.strip_prefix("del ") {
            ids.remove(&num(i));
        } else {
            refused += 1;
        }
    }
    (ids, refused)
}

#[test]
fn compaction_and_cleanup_racing_another_process_lose_nothing() {
    if let (Ok(db), Ok(log)) = (std::env::var(DB), std::env::var(LOG)) {
        return child(&db, &log);
    }
    let dir = tempfile::tempdir().expect("tmp");
    let logs = tempfile::tempdir().expect("tmp");
    let path = dir.path().to_str().expect("p").to_string();
    let log = logs.path().join("acked.log");
    let db = open_db(&path).expect("db");
    let t = db
        .create_table_sync("t", people(&[(0, 0)]), Default::default())
        .expect("create");
    let mut kid = Command::new(std::env::current_exe().expect("exe"));
    kid.args(["--exact", TEST, "--nocapture", "--test-threads=1"])
        .env(DB, &path)
        .env(LOG, &log);
    // The same object store server as this process's (not one of its own).
    kid.envs(pass_env());
    let mut kid = kid.spawn().expect("spawn the child");
    let o = CompactOptions {
        target_rows_per_fragment: 32,
        ..Default::default()
    };
    // Files younger than the cutoff are left alone (another process's
    // commit may still name them): longer than a commit takes.
    let cutoff = Duration::from_millis(if on_object_store() { 5000 } else { 500 });
    let (mut compactions, mut removed, mut starved) = (0u64, 0u64, 0u64);
    while kid.try_wait().expect("wait").is_none() {
        // Losing every one of its retries to the child's commits is no loss
        // (it changed nothing); counted, and some compaction must land.
        match t.compact_sync(&o) {
            Ok(s) => compactions += s.fragments_removed,
            Err(memwal_core::Error::CommitConflict { .. }) => starved += 1,
            Err(e) => panic!("compact: {e}"),
        }
        removed += t
            .cleanup_sync(cutoff, false)
            .expect("cleanup")
            .old_versions_removed;
        std::thread::sleep(Duration::from_millis(15));
    }
    assert!(kid.wait().expect("wait").success(), "the child failed");
    let (want, refused) = acknowledged(log.to_str().expect("p"));
    let got: BTreeSet<i64> = dump(&t).into_iter().map(|r| r.0).collect();
    assert_eq!(got, want, "{refused} writes refused");
    assert!(
        compactions > 0,
        "no compaction ran during the child's writes"
    );
    // Every kept version opens; a last cleanup, alone now, leaves exactly
    // the named files.
    let st: Arc<dyn Storage> = open_storage(&path);
    for v in list_versions(st.as_ref(), "t.lance").expect("versions") {
        t.checkout_sync(Some(v))
            .map(|o| dump(&o))
            .unwrap_or_else(|e| panic!("kept version {v}: {e}"));
    }
    t.cleanup_sync(Duration::ZERO, false).expect("last cleanup");
    let kept = list_versions(st.as_ref(), "t.lance").expect("versions");
    assert_eq!(named(st.as_ref(), &kept), on_disk(st.as_ref()));
    eprintln!(
        "two processes: {} rows, {compactions} fragments compacted, {starved} compactions out-raced, {removed} versions removed, {refused} writes refused",
        want.len()
    );
}
