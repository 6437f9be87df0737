//! Regressions of the hostile probe of the newer surfaces (namespaces,
//! ids, start-up), each named after what broke: a namespace drop racing the
//! creation of a table in it (and memWal upserts to it) let the late table's
//! buffered rows outlive the drop; deep namespaces and long ids reached the
//! file system's limits, after which the server could not start.

use std::collections::BTreeMap;
use std::sync::Arc;

use arrow::array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use memwal_core::{CreateOptions, Data, MergeInsertParams, QueryRequest};
use memwal_server::memwal::PersistMode;
use memwal_server::state::AppState;

use crate::support::{config, Client};

fn rows(ids: &[i64]) -> Data {
    let schema = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![Arc::new(Int64Array::from(ids.to_vec()))],
    )
    .expect("batch");
    Data::new(schema, vec![b])
}

fn memwal_upsert() -> memwal_core::MergeInsert {
    let mut p = MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    p.mem_wal = Some(true);
    p.validate().expect("valid")
}

async fn ids(state: &AppState, id: &str) -> Vec<i64> {
    use arrow::array::AsArray;
    let t = state.table(id).expect("table");
    let mut out: Vec<i64> = t
        .scan(QueryRequest::default())
        .await
        .expect("scan")
        .iter()
        .flat_map(|b| {
            b.column(0)
                .as_primitive::<arrow::datatypes::Int64Type>()
                .values()
                .to_vec()
        })
        .collect();
    out.sort_unstable();
    out
}

/// Issue 30 item 1: `drop_namespace` (cascade) racing the creation of a
/// table in it and memWal upserts to that table. Whichever wins, nothing
/// acknowledged outlives the drop (a recreated table starts empty), and
/// what is acknowledged after the recreation survives a crash.
#[test]
fn a_namespace_drop_and_a_create_in_it_are_ordered() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.persist = PersistMode::Buffer;
    let ns = vec!["ns".to_string()];
    let none = BTreeMap::new();
    for round in 0..12i64 {
        let state = Arc::new(AppState::new(cfg.clone()).expect("state"));
        rt.block_on(async {
            state.create_namespace(&ns, &none, true).await.expect("ns");
            let writer = {
                let s = state.clone();
                tokio::spawn(async move {
                    // Create the table and write to it while the drop runs;
                    // every call may fail once the namespace is gone.
                    if s.create_table("ns$t", rows(&[round]), CreateOptions::default())
                        .await
                        .is_err()
                    {
                        return;
                    }
                    for i in 0..20 {
                        let Ok(t) = s.table("ns$t") else { return };
                        if t.merge(memwal_upsert(), rows(&[1000 + i])).await.is_err() {
                            return;
                        }
                    }
                })
            };
            // Let the writer get going on odd rounds, race it on even ones.
            if round % 2 == 1 {
                tokio::time::sleep(std::time::Duration::from_millis(round as u64)).await;
            }
            state.drop_namespace(&ns, true, true).await.expect("drop");
            writer.await.expect("writer");
            // Either way the namespace is gone with everything in it.
            assert!(state.namespaces.db(&ns).is_err(), "round {round}");
            state
                .create_namespace(&ns, &none, false)
                .await
                .expect("again");
            state
                .create_table("ns$t", rows(&[-1]), CreateOptions::default())
                .await
                .expect("table again");
            assert_eq!(
                ids(&state, "ns$t").await,
                vec![-1],
                "round {round}: rows outlived the drop"
            );
            let t = state.table("ns$t").expect("t");
            t.merge(memwal_upsert(), rows(&[7])).await.expect("upsert");
        });
        // A crash: nothing flushed, the WAL replays.
        state.shutdown();
        drop(state);
        let state = AppState::new(cfg.clone()).expect("restart");
        assert!(
            state.startup_problems.is_empty(),
            "{:?}",
            state.startup_problems
        );
        assert_eq!(
            rt.block_on(ids(&state, "ns$t")),
            vec![-1, 7],
            "round {round}"
        );
        rt.block_on(async {
            let state = Arc::new(state);
            state.drop_namespace(&ns, true, false).await.expect("clean");
            state.shutdown();
        });
    }
}

/// Issue 30 item 7: namespaces nested past the file system's limits answered
/// 500, left folders behind and stopped the server from starting; ids over
/// 255 bytes were created but could never be used. Now both are refused with
/// 400 before anything touches the disk, and a folder left by an older
/// version is skipped at start and reported in `/health`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_namespaces_and_long_ids_are_refused_and_never_stop_a_start() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    let name = "n".repeat(100);
    let mut path: Vec<String> = Vec::new();
    for depth in 1..=9 {
        path.push(format!("{name}{depth}"));
        let (s, b) = c
            .post(
                &format!("/v1/namespace/{}/create", path.join("$")),
                "application/json",
                b"{}".to_vec(),
                &[],
            )
            .await;
        // Three levels of 101 bytes leave no room for a table id.
        let want = if depth <= 2 { 200 } else { 400 };
        assert_eq!(s, want, "depth {depth}: {b}");
        if s == 400 {
            assert!(b.contains("too long") || b.contains("nest at most"), "{b}");
        }
    }
    let long = format!("{}$t{}", path[..2].join("$"), "x".repeat(60));
    let (s, b) = c
        .post(
            &format!("/v1/table/{long}/create/"),
            "application/vnd.apache.arrow.stream",
            crate::support::ipc_rows(&[(1, 1)]),
            &[],
        )
        .await;
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("too long"), "{b}");
    h.close().await;

    // A nesting deeper than the bound, as an older version could leave it.
    let mut deep = dir.path().to_path_buf();
    for i in 0..10 {
        deep = deep.join(".namespaces").join(format!("d{i}"));
    }
    std::fs::create_dir_all(&deep).expect("deep");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("a bad folder never stops the start");
    let c = Client::new(&h.url());
    let r = c
        .http
        .get(format!("{}/health", h.url()))
        .header("x-api-key", "k")
        .send()
        .await
        .expect("health");
    let health: serde_json::Value =
        serde_json::from_str(&r.text().await.expect("body")).expect("json");
    let problems = health["startup_problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 1, "{health}");
    assert!(
        problems[0].as_str().unwrap_or("").contains("nest at most"),
        "{health}"
    );
    h.close().await;
}

/// Issue 30 item 11: a 500's body named the server's absolute folders. Now
/// a storage error names the file inside the data folder (the table's).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_error_never_names_the_servers_folders() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    Client::new(&h.url()).create("t", &[(1, 1)]).await;
    h.close().await;
    // A data file that cannot be read (a folder where the file was).
    let data = dir.path().join("t.lance").join("data");
    for f in std::fs::read_dir(&data).expect("data").flatten() {
        std::fs::remove_file(f.path()).expect("rm");
        std::fs::create_dir(f.path()).expect("mkdir");
    }
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    let (s, b) = c
        .post(
            "/v1/table/t/count_rows/",
            "application/json",
            br#"{"predicate": "id > 0"}"#.to_vec(),
            &[],
        )
        .await;
    assert!(s >= 500, "{s} {b}");
    let root = dir.path().display().to_string();
    assert!(!b.contains(&root), "the body names the data folder: {b}");
    assert!(
        b.contains("t.lance/data/"),
        "the body names the table's file: {b}"
    );
    h.close().await;
}

/// Issue 30 item 12: the list routes accepted unknown query parameters (the
/// JSON routes refuse unknown fields) and ignored a namespace delimiter the
/// server does not read ids by. Now an unknown parameter is a 400 naming it,
/// and a delimiter other than `$` is refused as not supported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_routes_refuse_parameters_they_do_not_honour() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(1, 1)]).await;
    let get = |q: &'static str| {
        let (http, url) = (c.http.clone(), h.url());
        async move {
            let r = http
                .get(format!("{url}{q}"))
                .header("x-api-key", "k")
                .send()
                .await
                .expect("get");
            (r.status().as_u16(), r.text().await.expect("body"))
        }
    };
    let (s, b) = get("/v1/table/?limit=5").await;
    assert_eq!((s, b.contains("\"t\"")), (200, true), "{b}");
    let (s, b) = get("/v1/table/?limit=5&delimiter=%24").await;
    assert_eq!(s, 200, "{b}");
    let (s, b) = get("/v1/table/?limti=5").await;
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("limti"), "{b}");
    let (s, b) = get("/v1/namespace/%24/list?delimiter=.").await;
    assert!(s == 400 || s == 501, "{s} {b}");
    assert!(b.contains("delimiter"), "{b}");
    h.close().await;
}
