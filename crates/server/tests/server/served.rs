//! Regressions of the served-table issue, each against the real server on
//! 127.0.0.1 (or its state in process where faults are injected), named
//! after what broke.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use arrow::array::{Int64Array, RecordBatch, StringArray, UInt64Array};
use arrow_schema::{DataType, Field, Schema};
use memwal_core::ipc;
use memwal_core::storage::{FaultyStorage, LocalStorage, Op};
use memwal_server::memwal::wal::{Fault, FaultyWalIo};
use memwal_server::RecoveryMode;

use crate::support::*;

const STREAM: &str = "application/vnd.apache.arrow.stream";
const MEMWAL: &[(&str, &str)] = &[("x-lancedb-mem-wal-enabled", "true"), ("x-use-wal", "true")];

fn merge_path(t: &str, on: &str) -> String {
    format!("/v1/table/{t}/merge_insert/?on={on}&when_matched_update_all=true&when_not_matched_insert_all=true")
}

fn u64_rows(ids: &[u64]) -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::UInt64, false),
        Field::new("v", DataType::Int64, true),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(UInt64Array::from(ids.to_vec())),
            Arc::new(Int64Array::from_iter_values(ids.iter().map(|_| 1))),
        ],
    )
    .expect("batch");
    ipc::encode_stream(&schema, &[b]).expect("ipc")
}

fn named_rows(rows: &[(i64, &str, i64)]) -> Vec<u8> {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
        Field::new("v", DataType::Int64, true),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.0))),
            Arc::new(StringArray::from_iter_values(rows.iter().map(|r| r.1))),
            Arc::new(Int64Array::from_iter_values(rows.iter().map(|r| r.2))),
        ],
    )
    .expect("batch");
    ipc::encode_stream(&schema, &[b]).expect("ipc")
}

async fn ok(c: &Client, path: &str, ct: &str, body: Vec<u8>, h: &[(&str, &str)]) -> String {
    let (s, b) = c.post(path, ct, body, h).await;
    assert_eq!(s, 200, "{path}: {b}");
    b
}

async fn flush(c: &Client, t: &str) {
    ok(
        c,
        &format!("/v1/table/{t}/flush/"),
        "application/json",
        vec![],
        &[],
    )
    .await;
}

/// Issue item 1: three upserts of `[2^63+5, 2^64-1, 7]` left 9 rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_uint64_keys_at_or_above_2_pow_63_match() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    let ids = [(1u64 << 63) + 5, u64::MAX, 7];
    for (t, memwal) in [("native", &[][..]), ("memwal", MEMWAL)] {
        ok(
            &c,
            &format!("/v1/table/{t}/create/"),
            STREAM,
            u64_rows(&ids),
            &[],
        )
        .await;
        for _ in 0..3 {
            let b = ok(&c, &merge_path(t, "id"), STREAM, u64_rows(&ids), memwal).await;
            assert!(b.contains("\"num_updated_rows\":3"), "{t}: {b}");
        }
        assert_eq!(c.count(t, None).await, 3, "{t}");
        flush(&c, t).await;
        assert_eq!(c.count(t, None).await, 3, "{t} after flush");
    }
    h.close().await;
}

/// Issue item 2: a MemWAL upsert on another key was applied with the old key.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_memwal_upsert_on_another_key_gives_the_native_result() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    let start = named_rows(&[(1, "a", 0), (2, "b", 0), (3, "c", 0)]);
    let mut answers = Vec::new();
    for (t, memwal) in [("native", &[][..]), ("memwal", MEMWAL)] {
        ok(
            &c,
            &format!("/v1/table/{t}/create/"),
            STREAM,
            start.clone(),
            &[],
        )
        .await;
        let a = ok(
            &c,
            &merge_path(t, "id"),
            STREAM,
            named_rows(&[(1, "a", 1)]),
            memwal,
        )
        .await;
        flush(&c, t).await;
        // Same names, new ids: on `name` these update a and b.
        let body = named_rows(&[(10, "a", 2), (20, "b", 2)]);
        let b = ok(&c, &merge_path(t, "name"), STREAM, body.clone(), memwal).await;
        // And back on `id` with rows still buffered on `name`.
        let d = ok(
            &c,
            &merge_path(t, "id"),
            STREAM,
            named_rows(&[(10, "z", 3), (4, "d", 3)]),
            memwal,
        )
        .await;
        let counts = |s: &str| {
            let v: serde_json::Value = serde_json::from_str(s).expect("json");
            (
                v["num_inserted_rows"].clone(),
                v["num_updated_rows"].clone(),
            )
        };
        answers.push((
            counts(&a),
            counts(&b),
            counts(&d),
            c.count(t, None).await,
            c.rows(t, None).await,
        ));
    }
    assert_eq!(answers[0], answers[1], "native vs MemWAL");
    assert_eq!(answers[1].3, 4);
    h.close().await;
}

/// Issue item 3: an overwrite left 100 buffered upserts visible over 5 new
/// rows, and one that changed a column type made the table unflushable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_overwrite_supersedes_buffered_upserts() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_interval = Duration::from_secs(3600);
    let h = memwal_server::start(cfg.clone()).await.expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(0, 0)]).await;
    for i in 1..=100 {
        c.upsert("t", &[(i, i)], true).await;
    }
    assert_eq!(c.count("t", None).await, 101);
    let five: Vec<(i64, i64)> = (1000..1005).map(|i| (i, 1)).collect();
    ok(
        &c,
        "/v1/table/t/create/?mode=overwrite",
        STREAM,
        ipc_rows(&five),
        &[],
    )
    .await;
    assert_eq!(c.count("t", None).await, 5);
    assert_eq!(c.rows("t", None).await, five);
    flush(&c, "t").await;
    assert_eq!(c.rows("t", None).await, five);
    h.close().await;
    let h = memwal_server::start(cfg.clone()).await.expect("restart");
    let c = Client::new(&h.url());
    assert_eq!(c.rows("t", None).await, five, "after restart");
    // An overwrite that changes a column's type, with upserts buffered.
    for i in 1..=50 {
        c.upsert("t", &[(i, i)], true).await;
    }
    let body = named_rows(&[(1, "x", 1), (2, "y", 2)]);
    ok(&c, "/v1/table/t/create/?mode=overwrite", STREAM, body, &[]).await;
    assert_eq!(c.count("t", None).await, 2);
    let b = ok(
        &c,
        &merge_path("t", "id"),
        STREAM,
        named_rows(&[(3, "z", 3)]),
        MEMWAL,
    )
    .await;
    assert!(b.contains("\"num_inserted_rows\":1"), "{b}");
    flush(&c, "t").await;
    assert_eq!(c.count("t", None).await, 3);
    h.close().await;
    let h = memwal_server::start(cfg).await.expect("restart");
    let c = Client::new(&h.url());
    assert_eq!(c.count("t", None).await, 3, "after the second restart");
    h.close().await;
}

/// Issue item 4: a MemWAL upsert racing a direct merge of the same new
/// keys: both answered "20 inserted", and count_rows ran 20 above the rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn regression_direct_writes_and_memwal_upserts_are_ordered() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Arc::new(Client::new(&h.url()));
    c.create("t", &[(-1, 0)]).await;
    for round in 0..60i64 {
        let rows: Vec<(i64, i64)> = (0..20).map(|i| (round * 100 + i, round)).collect();
        let (a, b) = tokio::join!(c.upsert("t", &rows, true), c.upsert("t", &rows, false));
        let ins = a["num_inserted_rows"].as_u64().unwrap_or(99)
            + b["num_inserted_rows"].as_u64().unwrap_or(99);
        let upd = a["num_updated_rows"].as_u64().unwrap_or(99)
            + b["num_updated_rows"].as_u64().unwrap_or(99);
        assert_eq!((ins, upd), (20, 20), "round {round}: {a} {b}");
        let n = c.count("t", None).await;
        assert_eq!(n, c.rows("t", None).await.len() as u64, "round {round}");
        assert_eq!(n, 1 + 20 * (round as u64 + 1), "round {round}");
    }
    h.close().await;
}

/// Issue item 5: creating then dropping a table named `_wal` destroyed every
/// table's WAL (and `data`, `_versions`, `_deletions` destroyed `_wal`'s).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_table_named_wal_cannot_reach_the_wals() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_interval = Duration::from_secs(3600);
    let h = memwal_server::start(cfg.clone()).await.expect("start");
    let c = Client::new(&h.url());
    c.create("other", &[(0, 0)]).await;
    for i in 1..=100 {
        c.upsert("other", &[(i, i)], true).await;
    }
    for name in ["_wal", "data", "_versions", "_deletions"] {
        c.create(name, &[(1, 1)]).await;
        c.upsert(name, &[(2, 2)], true).await;
    }
    for name in ["data", "_versions", "_deletions", "_wal"] {
        ok(
            &c,
            &format!("/v1/table/{name}/drop/"),
            "application/json",
            vec![],
            &[],
        )
        .await;
    }
    h.close().await;
    let h = memwal_server::start(cfg.clone()).await.expect("restart");
    let c = Client::new(&h.url());
    assert_eq!(c.count("other", None).await, 101);
    h.close().await;
    // A data folder of the first layout (`DIR/_wal/{table}`) is moved, not lost.
    std::fs::create_dir_all(dir.path().join("_wal")).expect("mkdir");
    std::fs::rename(
        dir.path().join(".memwal/wal/other"),
        dir.path().join("_wal/other"),
    )
    .expect("old layout");
    let h = memwal_server::start(cfg).await.expect("upgrade");
    let c = Client::new(&h.url());
    assert_eq!(
        c.count("other", None).await,
        101,
        "after the layout upgrade"
    );
    assert!(!dir.path().join("_wal").exists());
    h.close().await;
}

fn segment_of(dir: &std::path::Path, table: &str) -> std::path::PathBuf {
    let wal = dir.join(".memwal/wal").join(table);
    let mut segs: Vec<_> = std::fs::read_dir(&wal)
        .expect("wal dir")
        .flatten()
        .map(|e| e.path())
        .filter(|p| std::fs::metadata(p).map(|m| m.len() > 8).unwrap_or(false))
        .collect();
    segs.sort();
    segs.remove(0)
}

/// Issue item 6: a flipped byte lost 20 acknowledged records with a clean
/// `/health`. Now the table fails loudly, keeps the evidence, and the
/// others serve on; the operator's cut mode opens it with what is intact.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_recovery_tells_damage_from_a_torn_tail() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_interval = Duration::from_secs(3600);
    let h = memwal_server::start(cfg.clone()).await.expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(0, 0)]).await;
    c.create("u", &[(0, 0)]).await;
    for i in 1..=30 {
        c.upsert("t", &[(i, i)], true).await;
    }
    c.upsert("u", &[(1, 1)], true).await;
    h.close().await;
    let seg = segment_of(dir.path(), "t");
    let mut bytes = std::fs::read(&seg).expect("read");
    let at = bytes.len() / 3;
    bytes[at] ^= 0x5a;
    std::fs::write(&seg, &bytes).expect("write");
    let h = memwal_server::start(cfg.clone()).await.expect("restart");
    let c = Client::new(&h.url());
    let (s, b) = c
        .post(
            "/v1/table/t/count_rows/",
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(s, 503, "{b}");
    assert!(b.contains("damaged at byte") && b.contains(".wal"), "{b}");
    assert_eq!(c.count("u", None).await, 2, "other tables serve on");
    let (_, health) = c.post("/health", "application/json", vec![], &[]).await;
    assert!(health.is_empty() || !health.contains("\"failed\":null,\"flushes\":0,\"frozen_memtables\":0,\"last_flushed_seq\":0,\"last_seq\":0"));
    assert_eq!(std::fs::read(&seg).expect("kept"), bytes, "evidence kept");
    h.close().await;
    let mut cut = cfg;
    cut.memwal.recovery = RecoveryMode::CutAtFirstBad;
    let h = memwal_server::start(cut).await.expect("cut");
    let c = Client::new(&h.url());
    let n = c.count("t", None).await;
    assert!((1..31).contains(&n), "intact records up to the damage: {n}");
    h.close().await;
}

/// Issue item 7: a failing flush hung writers and a poisoned table answered
/// 500 (retried by every client). Now repeated flush failures poison the
/// table: 503 with the reason and retry-after, reads still see every
/// acknowledged row, other tables serve on, and a restart loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_a_failing_flush_poisons_with_503() {
    let dir = tempfile::tempdir().expect("tmp");
    let failing = Arc::new(AtomicBool::new(false));
    let f = failing.clone();
    let local = Arc::new(LocalStorage::new(dir.path()).expect("storage"));
    let mut cfg = config(dir.path());
    cfg.storage = Some(Arc::new(FaultyStorage::new(local, move |op, path| {
        f.load(Ordering::SeqCst)
            && path.starts_with("t.lance/")
            && matches!(op, Op::Put | Op::PutNew)
    })));
    cfg.memwal.poison_after_failed_flushes = 2;
    cfg.memwal.flush_interval = Duration::from_millis(50);
    let h = memwal_server::start(cfg.clone()).await.expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(0, 0)]).await;
    c.create("u", &[(0, 0)]).await;
    failing.store(true, Ordering::SeqCst);
    for i in 1..=10 {
        c.upsert("t", &[(i, i)], true).await;
    }
    let mut status = 0;
    for _ in 0..100 {
        let path = merge_path("t", "id");
        let (s, b) = c.post(&path, STREAM, ipc_rows(&[(99, 99)]), MEMWAL).await;
        status = s;
        if s == 503 {
            assert!(b.contains("flushes in a row failed"), "{b}");
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, 503, "the table poisons");
    let resp = c
        .http
        .post(format!("{}/v1/table/t/flush/", h.url()))
        .header("x-api-key", "k")
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 503);
    assert!(resp.headers().get("retry-after").is_some());
    let n = c.count("t", None).await;
    assert!(n >= 11, "reads see every acknowledged row: {n}");
    c.upsert("u", &[(1, 1)], true).await;
    assert_eq!(c.count("u", None).await, 2, "other tables serve on");
    h.close().await;
    failing.store(false, Ordering::SeqCst);
    let h = memwal_server::start(cfg).await.expect("restart");
    let c = Client::new(&h.url());
    assert_eq!(
        c.count("t", None).await,
        n,
        "nothing lost across the restart"
    );
    h.close().await;
}

/// Fault injection on the WAL (failed fsync, short write, ENOSPC): the
/// table poisons with 503, loses no acknowledged row, and the other
/// tables keep serving.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wal_faults_poison_the_table_and_lose_no_acknowledged_row() {
    for fault in [Fault::Sync, Fault::ShortWrite, Fault::NoSpace] {
        let dir = tempfile::tempdir().expect("tmp");
        let mut cfg = config(dir.path());
        cfg.memwal.flush_interval = Duration::from_secs(3600);
        // Each append is 1 sync (and 4 positioned writes): fail after a few.
        let after = if fault == Fault::Sync { 5 } else { 1 + 4 * 5 };
        cfg.memwal.io = Arc::new(FaultyWalIo::for_paths(fault, after, "/wal/t/"));
        let h = memwal_server::start(cfg.clone()).await.expect("start");
        let c = Client::new(&h.url());
        c.create("t", &[(0, 0)]).await;
        c.create("u", &[(0, 0)]).await;
        let mut acked = vec![(0, 0)];
        let mut refused = 0;
        for i in 1..=12 {
            let (s, b) = c
                .post(&merge_path("t", "id"), STREAM, ipc_rows(&[(i, i)]), MEMWAL)
                .await;
            match s {
                200 => acked.push((i, i)),
                503 => {
                    refused += 1;
                    assert!(b.contains("refuses writes"), "{fault:?}: {b}");
                }
                _ => panic!("{fault:?}: {s} {b}"),
            }
        }
        assert!(
            refused > 0 && acked.len() > 1,
            "{fault:?}: {refused} refused"
        );
        c.upsert("u", &[(1, 1)], true).await;
        assert_eq!(
            c.count("u", None).await,
            2,
            "{fault:?}: other tables serve on"
        );
        h.close().await;
        let mut healthy = cfg;
        healthy.memwal.io = Arc::new(memwal_server::memwal::OsWalIo);
        let h = memwal_server::start(healthy).await.expect("restart");
        let c = Client::new(&h.url());
        let rows = c.rows("t", None).await;
        for r in &acked {
            assert!(
                rows.contains(r),
                "{fault:?}: acknowledged {r:?} lost: {rows:?}"
            );
        }
        h.close().await;
    }
}

/// Every key type works on both paths (MemWAL and direct), with the extreme
/// values of each integer width; null keys never match.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_key_type_matches_on_both_paths() {
    use arrow::compute::cast;
    use memwal_core::{CreateOptions, Data, MergeInsertParams};
    let ints = |lo: &str, hi: &str| {
        vec![
            Some(lo.to_string()),
            Some(hi.to_string()),
            Some("7".into()),
            Some("8".into()),
        ]
    };
    let cases: Vec<(DataType, Vec<Option<String>>)> = vec![
        (DataType::Int8, ints("-128", "127")),
        (DataType::Int16, ints("-32768", "32767")),
        (DataType::Int32, ints("-2147483648", "2147483647")),
        (
            DataType::Int64,
            ints("-9223372036854775808", "9223372036854775807"),
        ),
        (DataType::UInt8, ints("0", "255")),
        (DataType::UInt16, ints("0", "65535")),
        (DataType::UInt32, ints("0", "4294967295")),
        (
            DataType::UInt64,
            ints("9223372036854775813", "18446744073709551615"),
        ),
        (DataType::Utf8, ints("a", "b")),
        (DataType::LargeUtf8, ints("a", "b")),
        (DataType::Binary, ints("a", "b")),
        (
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            ints("a", "b"),
        ),
        (DataType::Date32, ints("1970-01-01", "2262-04-11")),
        (
            DataType::Timestamp(arrow_schema::TimeUnit::Microsecond, None),
            ints("1970-01-01T00:00:00", "2262-04-11T23:47:16"),
        ),
    ];
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let state = memwal_server::state::AppState::new({
        let mut c = config(&dir.path().join("inproc"));
        c.memwal.flush_interval = Duration::from_secs(3600);
        c
    })
    .expect("state");
    let state = Arc::new(state);
    for (n, (ty, vals)) in cases.into_iter().enumerate() {
        let mut vals = vals;
        if matches!(ty, DataType::Date32) {
            vals[2] = Some("2000-01-07".into());
            vals[3] = Some("2000-01-08".into());
        }
        if matches!(ty, DataType::Timestamp(..)) {
            vals[2] = Some("2000-01-07T00:00:00".into());
            vals[3] = Some("2000-01-08T00:00:00".into());
        }
        let schema = Arc::new(Schema::new(vec![
            Field::new("k", ty.clone(), true),
            Field::new("v", DataType::Int64, true),
        ]));
        let batch = |idx: &[usize], with_null: bool| {
            let mut s: Vec<Option<String>> = idx.iter().map(|i| vals[*i].clone()).collect();
            if with_null {
                s.push(None);
            }
            let k = cast(
                &(Arc::new(StringArray::from(s.clone())) as arrow::array::ArrayRef),
                &ty,
            )
            .expect("cast");
            let v = Int64Array::from_iter_values((0..s.len() as i64).map(|i| i + 100));
            Data::new(
                schema.clone(),
                vec![RecordBatch::try_new(schema.clone(), vec![k, Arc::new(v)]).expect("batch")],
            )
        };
        for memwal in [true, false] {
            let name = format!("k{n}_{memwal}");
            state
                .create_table(&name, batch(&[0, 1, 2], true), CreateOptions::default())
                .await
                .expect("create");
            let t = state.table(&name).expect("table");
            let mut p = MergeInsertParams::new(vec!["k".into()]);
            p.when_matched_update_all = true;
            p.when_not_matched_insert_all = true;
            p.mem_wal = Some(memwal);
            let r = t
                .merge(p.validate().expect("valid"), batch(&[1, 0, 3], true))
                .await
                .expect("merge");
            assert_eq!(
                (r.num_inserted_rows, r.num_updated_rows),
                (2, 2),
                "{ty} memwal={memwal}: the null key is inserted, never matched"
            );
            assert_eq!(
                t.count(None).await.expect("count"),
                6,
                "{ty} memwal={memwal}"
            );
            t.memwal().flush_all().await.expect("flush");
            assert_eq!(t.count(None).await.expect("count"), 6, "{ty} after flush");
        }
    }
    state.shutdown();
    h.close().await;
}

/// Several clients at once, each mixing memWal upserts and direct merges
/// over one small key space: every call's rows are counted exactly once
/// (inserted or updated), every key is inserted once in all, and each
/// key's final value comes from a call that wrote it and that no later
/// call of the same client overwrote (a serial order of the acknowledged
/// calls that respects each client's own order).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_memwal_and_direct_writes_serialize() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_rows = 25; // flushes interleave with everything
    cfg.memwal.flush_interval = Duration::from_millis(20);
    let h = memwal_server::start(cfg).await.expect("start");
    let c = Arc::new(Client::new(&h.url()));
    c.create("t", &[(-1, -1)]).await;
    let mut tasks = Vec::new();
    for client in 0..4i64 {
        let c = c.clone();
        tasks.push(tokio::spawn(async move {
            let mut calls = Vec::new();
            let mut x = (client as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
            for i in 0..40i64 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let keys: Vec<i64> = (0..20).filter(|k| (x >> k) & 1 == 1).take(6).collect();
                let value = client * 1000 + i;
                let rows: Vec<(i64, i64)> = keys.iter().map(|k| (*k, value)).collect();
                let r = c.upsert("t", &rows, !x.is_multiple_of(3)).await;
                let ins = r["num_inserted_rows"].as_u64().expect("ins");
                let upd = r["num_updated_rows"].as_u64().expect("upd");
                calls.push((keys, value, ins, upd));
            }
            calls
        }));
    }
    let mut calls = Vec::new();
    for t in tasks {
        calls.extend(t.await.expect("task"));
    }
    let rows = c.rows("t", None).await;
    let inserted: u64 = calls.iter().map(|c| c.2).sum();
    assert_eq!(inserted as usize + 1, rows.len(), "each key inserted once");
    for (keys, _, ins, upd) in &calls {
        assert_eq!((ins + upd) as usize, keys.len(), "each row counted once");
    }
    assert_eq!(c.count("t", None).await as usize, rows.len());
    for (k, v) in rows.iter().filter(|r| r.0 >= 0) {
        let (client, i) = (v / 1000, v % 1000);
        let wrote = calls
            .iter()
            .any(|(keys, value, ..)| value == v && keys.contains(k));
        assert!(wrote, "key {k} holds {v}, which no call wrote to it");
        let later = calls.iter().any(|(keys, value, ..)| {
            value / 1000 == client && value % 1000 > i && keys.contains(k)
        });
        assert!(
            !later,
            "key {k} holds {v} though client {client} overwrote it later"
        );
    }
    h.close().await;
}

/// Regression (hostile-input issue, item 8): a memWal upsert of
/// dictionary-encoded strings into a utf8 column was refused while the
/// native path took it (apache-arrow's `tableFromArrays` makes strings
/// dictionaries), and a table with dictionary or decimal columns could not
/// be described.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_dictionary_strings_and_decimals_on_both_paths() {
    use arrow::array::{Decimal128Array, DictionaryArray};
    use arrow::datatypes::Int32Type;
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    let schema = Arc::new(Schema::new(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("price", DataType::Decimal128(10, 2), true),
    ]));
    let plain = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from(vec!["a", "b"])),
            Arc::new(
                Decimal128Array::from(vec![100, 250])
                    .with_precision_and_scale(10, 2)
                    .expect("dec"),
            ),
        ],
    )
    .expect("batch");
    ok(
        &c,
        "/v1/table/t/create/",
        STREAM,
        ipc::encode_stream(&schema, &[plain]).expect("ipc"),
        &[],
    )
    .await;
    let (s, b) = c
        .post("/v1/table/t/describe/", "application/json", vec![], &[])
        .await;
    assert_eq!(s, 200, "{b}");
    assert!(b.contains("decimal:128:10:2"), "{b}");
    let dschema = Arc::new(Schema::new(vec![
        Field::new(
            "name",
            DataType::Dictionary(Box::new(DataType::Int32), Box::new(DataType::Utf8)),
            false,
        ),
        Field::new("price", DataType::Decimal128(10, 2), true),
    ]));
    let names: DictionaryArray<Int32Type> = vec!["b", "c"].into_iter().collect();
    let dict = RecordBatch::try_new(
        dschema.clone(),
        vec![
            Arc::new(names),
            Arc::new(
                Decimal128Array::from(vec![300, 400])
                    .with_precision_and_scale(10, 2)
                    .expect("dec"),
            ),
        ],
    )
    .expect("batch");
    let body = ipc::encode_stream(&dschema, &[dict]).expect("ipc");
    for memwal in [MEMWAL, &[][..]] {
        let b = ok(&c, &merge_path("t", "name"), STREAM, body.clone(), memwal).await;
        assert!(b.contains("\"num_updated_rows\""), "{b}");
    }
    assert_eq!(c.count("t", None).await, 3);
    h.close().await;
}
