use std::time::Duration;

use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn read_your_writes_before_and_after_flush_and_restart() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_interval = Duration::from_secs(3600); // flush only on demand here
    let h = memwal_server::start(cfg.clone()).await.expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(1, 10), (2, 20)]).await;
    let r = c.upsert("t", &[(2, 21), (3, 30)], true).await;
    assert_eq!(
        (
            r["num_inserted_rows"].as_u64(),
            r["num_updated_rows"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(
        r["version"].as_u64(),
        Some(1),
        "a MemWAL upsert commits no version"
    );
    // Visible at once, before any flush.
    assert_eq!(c.count("t", None).await, 3);
    assert_eq!(c.count("t", Some("v > 20")).await, 2);
    assert_eq!(c.rows("t", None).await, vec![(1, 10), (2, 21), (3, 30)]);
    let r = c.upsert("t", &[(3, 31), (4, 40)], true).await;
    assert_eq!(
        (
            r["num_inserted_rows"].as_u64(),
            r["num_updated_rows"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(c.count("t", None).await, 4);
    // Restart without flushing: the WAL brings every acknowledged write back.
    h.close().await;
    let h = memwal_server::start(cfg.clone()).await.expect("restart");
    let c = Client::new(&h.url());
    assert_eq!(
        c.rows("t", None).await,
        vec![(1, 10), (2, 21), (3, 31), (4, 40)]
    );
    assert_eq!(c.count("t", None).await, 4);
    // Flush: one new base version holding every row, the WAL truncated.
    let (s, b) = c
        .post("/v1/table/t/flush/", "application/json", vec![], &[])
        .await;
    assert_eq!(s, 200, "{b}");
    let (_, versions) = c
        .post("/v1/table/t/version/list/", "application/json", vec![], &[])
        .await;
    let v: serde_json::Value = serde_json::from_str(&versions).expect("json");
    let last = v["versions"]
        .as_array()
        .expect("list")
        .last()
        .expect("one")
        .clone();
    assert_eq!(last["operation"], "merge_insert");
    assert_eq!(last["metadata"]["memwal.flushed_seq"], "2");
    assert_eq!(
        c.rows("t", None).await,
        vec![(1, 10), (2, 21), (3, 31), (4, 40)]
    );
    let (_, health) = c
        .post("/v1/table/t/describe/", "application/json", vec![], &[])
        .await;
    let d: serde_json::Value = serde_json::from_str(&health).expect("json");
    assert_eq!(d["stats"]["num_rows"], 4);
    assert_eq!(d["schema"]["fields"][0]["type"]["type"], "int64");
    h.close().await;
    let h = memwal_server::start(cfg).await.expect("restart 2");
    let c = Client::new(&h.url());
    assert_eq!(
        c.count("t", None).await,
        4,
        "flushed records are not replayed twice"
    );
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_clients_get_exact_counts() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_rows = 300; // several flushes during the run
    cfg.memwal.flush_interval = Duration::from_millis(50);
    let h = memwal_server::start(cfg).await.expect("start");
    let base = h.url();
    Client::new(&base).create("t", &[]).await;
    let mut tasks = Vec::new();
    for w in 0..8i64 {
        let base = base.clone();
        tasks.push(tokio::spawn(async move {
            let c = Client::new(&base);
            let (mut ins, mut upd) = (0u64, 0u64);
            for r in 0..25i64 {
                // Overlapping keys: every writer touches 0..40, plus its own range.
                let rows: Vec<(i64, i64)> = (0..10)
                    .map(|i| ((r * 7 + i * 3 + w) % 40, w * 1000 + r))
                    .chain((0..10).map(|i| (1000 + w * 100 + i, r)))
                    .collect();
                let mut rows = rows;
                rows.sort();
                rows.dedup_by_key(|x| x.0);
                let res = c.upsert("t", &rows, true).await;
                ins += res["num_inserted_rows"].as_u64().expect("n");
                upd += res["num_updated_rows"].as_u64().expect("n");
                assert_eq!(
                    res["num_inserted_rows"].as_u64().expect("n")
                        + res["num_updated_rows"].as_u64().expect("n"),
                    rows.len() as u64
                );
            }
            (ins, upd)
        }));
    }
    let mut inserted = 0;
    for t in tasks {
        inserted += t.await.expect("join").0;
    }
    let c = Client::new(&base);
    let rows = c.rows("t", None).await;
    let distinct: std::collections::BTreeSet<i64> = rows.iter().map(|r| r.0).collect();
    assert_eq!(distinct.len(), rows.len(), "no key twice");
    assert_eq!(
        inserted,
        rows.len() as u64,
        "inserted counts add up to the distinct keys"
    );
    assert_eq!(c.count("t", None).await, rows.len() as u64);
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn direct_merge_and_validation_over_http() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(1, 10)]).await;
    let r = c.upsert("t", &[(1, 11), (2, 20)], false).await;
    assert_eq!(
        (r["version"].as_u64(), r["num_inserted_rows"].as_u64()),
        (Some(2), Some(1))
    );
    let wal = [("x-lancedb-mem-wal-enabled", "true")];
    for (q, msg) in [
        ("on=id&when_not_matched_insert_all=true", "MemWAL requires when_matched_update_all() to be set"),
        ("on=id&when_matched_update_all=true&when_matched_update_all_filt=target.v%20%3E%200&when_not_matched_insert_all=true", "MemWAL does not support conditional when_matched_update_all (no filter allowed)"),
        ("on=id&when_matched_update_all=true", "MemWAL requires when_not_matched_insert_all() to be set"),
        ("on=id&when_matched_update_all=true&when_not_matched_insert_all=true&when_not_matched_by_source_delete=true", "MemWAL does not support when_not_matched_by_source_delete()"),
    ] {
        let (s, b) = c.post(&format!("/v1/table/t/merge_insert/?{q}"), "application/vnd.apache.arrow.stream", ipc_rows(&[(5, 5)]), &wal).await;
        assert_eq!((s, b.as_str()), (400, msg));
    }
    let (s, b) = c.post("/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true", "application/vnd.apache.arrow.stream", ipc_rows(&[(7, 1), (7, 2)]), &wal).await;
    assert_eq!(s, 400);
    assert!(b.contains("(id = 7)"), "{b}");
    assert_eq!(c.count("t", None).await, 2);
    h.close().await;
}
