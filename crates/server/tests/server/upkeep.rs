//! The server keeps a streamed table bounded by itself: small fragments are
//! compacted and versions older than the retention (with the files only
//! they name) removed in the background while memWal upserts stream in,
//! without losing, hiding or resurrecting a row; `/metrics` says what was
//! done.

use std::time::Duration;

use crate::support::{config, Client};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_cleanup_bounds_the_history_of_a_streamed_table() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_rows = 5;
    // Maintenance runs in the flusher's turn: with memtables this small the
    // queue of frozen ones grows meanwhile; let it (no 503 in this test).
    cfg.memwal.max_frozen = 10_000;
    cfg.memwal.flush_interval = Duration::from_millis(20);
    cfg.memwal.retention = Duration::ZERO;
    cfg.memwal.cleanup_every = Duration::from_millis(200);
    cfg.memwal.compaction.min_fragments = 4;
    let h = memwal_server::start(cfg).await.expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(0, 0)]).await;
    let mut want = std::collections::BTreeMap::from([(0i64, 0i64)]);
    for round in 0..40i64 {
        let rows: Vec<(i64, i64)> = (0..6).map(|i| ((round * 3 + i) % 25, round)).collect();
        for (k, v) in &rows {
            want.insert(*k, *v);
        }
        c.upsert("t", &rows, true).await;
        if round % 10 == 9 {
            // Let flushes and cleanups run between bursts.
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    }
    let want: Vec<(i64, i64)> = want.into_iter().collect();
    assert_eq!(c.rows("t", None).await, want);
    // Wait for the last flush and one more cleanup.
    let (s, b) = c
        .post(
            "/v1/table/t/flush_lsm/",
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert!(s < 300, "{s} {b}");
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (s, b) = c
        .post(
            "/v1/table/t/version/list/",
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let versions: serde_json::Value = serde_json::from_str(&b).expect("json");
    let n = versions["versions"].as_array().map_or(0, Vec::len);
    assert!(
        (1..=3).contains(&n),
        "history not bounded: {n} versions: {b}"
    );
    assert_eq!(c.rows("t", None).await, want, "a row was lost or came back");
    // Files: exactly what the kept versions name (no leftover data files).
    let st = memwal_core::storage::LocalStorage::new(dir.path()).expect("storage");
    let mut named = std::collections::BTreeSet::new();
    for v in memwal_core::manifest::list_versions(&st, "t.lance").expect("versions") {
        let m = memwal_core::manifest::read_manifest(&st, "t.lance", v)
            .expect("read")
            .expect("kept");
        named.extend(m.fragments.iter().map(|f| f.file.clone()));
    }
    let on_disk: std::collections::BTreeSet<String> =
        std::fs::read_dir(dir.path().join("t.lance").join("data"))
            .expect("data")
            .flatten()
            .map(|e| format!("data/{}", e.file_name().to_string_lossy()))
            .collect();
    assert_eq!(on_disk, named, "{n} versions");
    let text = c
        .http
        .get(format!("{}/metrics", c.base))
        .bearer_auth(&c.key)
        .send()
        .await
        .expect("scrape")
        .text()
        .await
        .expect("text");
    let sample = |series: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
            .unwrap_or_else(|| panic!("no sample {series}"))
            .parse()
            .expect("number")
    };
    assert!(
        sample("memwal_cleanup_versions_removed_total") >= 5.0,
        "{text}"
    );
    // Compaction keeps the fragment count bounded (one fragment per flush
    // otherwise: at least 40 here).
    assert!(sample("memwal_fragments_compacted_total") >= 4.0, "{text}");
    assert!(named.len() <= 8, "{} fragments left", named.len());
    // How long runs take, and when upkeep last ran (within this test).
    assert!(
        sample("memwal_compaction_duration_seconds_count") >= 1.0,
        "{text}"
    );
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("clock")
        .as_secs_f64();
    let last = sample("memwal_upkeep_last_run_timestamp_seconds");
    assert!(
        now - last < 60.0 && last <= now + 1.0,
        "last run {last}, now {now}"
    );
    h.close().await;
}

/// The number of versions `table` lists.
async fn version_count(c: &Client, table: &str) -> usize {
    let (s, b) = c
        .post(
            &format!("/v1/table/{table}/version/list/"),
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let v: serde_json::Value = serde_json::from_str(&b).expect("json");
    v["versions"].as_array().map_or(0, Vec::len)
}

/// A table's `lance.auto_cleanup.older_than` (set through `update_config/`)
/// is its retention for the background cleanup, under a server retention
/// that would keep everything; a table without it keeps its history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tables_own_retention_overrides_the_servers() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_rows = 5;
    cfg.memwal.max_frozen = 10_000;
    cfg.memwal.flush_interval = Duration::from_millis(20);
    cfg.memwal.retention = Duration::from_secs(7 * 86_400);
    cfg.memwal.cleanup_every = Duration::from_millis(200);
    let h = memwal_server::start(cfg).await.expect("start");
    let c = Client::new(&h.url());
    for t in ["own", "other"] {
        c.create(t, &[(0, 0)]).await;
    }
    let body = br#"{"upsert": {"lance.auto_cleanup.older_than": "0s"}}"#.to_vec();
    let (s, b) = c
        .post(
            "/v1/table/own/update_config/",
            "application/json",
            body,
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    let bad = br#"{"upsert": {"lance.auto_cleanup.older_than": "later"}}"#.to_vec();
    let (s, b) = c
        .post("/v1/table/own/update_config/", "application/json", bad, &[])
        .await;
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("older_than"), "{b}");
    for round in 0..12i64 {
        for t in ["own", "other"] {
            let rows: Vec<(i64, i64)> = (0..6).map(|i| (round * 6 + i, round)).collect();
            c.upsert(t, &rows, true).await;
        }
        tokio::time::sleep(Duration::from_millis(60)).await;
    }
    for t in ["own", "other"] {
        let (s, b) = c
            .post(
                &format!("/v1/table/{t}/flush_lsm/"),
                "application/json",
                b"{}".to_vec(),
                &[],
            )
            .await;
        assert!(s < 300, "{s} {b}");
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let (own, other) = (
        version_count(&c, "own").await,
        version_count(&c, "other").await,
    );
    assert!(
        (1..=3).contains(&own),
        "own retention not applied: {own} versions"
    );
    assert!(
        other > 8,
        "the server's 7 days keep the other table's history: {other}"
    );
    for t in ["own", "other"] {
        assert_eq!(c.rows(t, None).await.len(), 72, "{t}: a row was lost");
    }
    let (s, b) = c
        .post(
            "/v1/table/own/config/",
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(s, 200, "{b}");
    assert!(b.contains(r#""lance.auto_cleanup.older_than":"0s""#), "{b}");
}
