//! Request shapes, retries and error mapping, against a scripted HTTP
//! server on 127.0.0.1 that records what it receives. (End-to-end tests
//! against the real memwal server are in __test__/remote.test.ts.)

mod support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow::array::{Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use memwal_core::{Data, Database, MergeInsertParams};
use memwal_remote::{ClientConfig, ConnectOptions, RemoteDatabase};

#[derive(Debug, Clone)]
struct Seen {
    path: String,
    query: String,
    headers: HeaderMap,
    body: Vec<u8>,
}

/// Status, headers, body.
type Reply = (u16, Vec<(&'static str, &'static str)>, String);

#[derive(Default)]
struct Script {
    seen: Vec<Seen>,
    /// Responses to give, in order (then 200 with `ok`).
    replies: VecDeque<Reply>,
    ok: String,
}

type Shared = Arc<Mutex<Script>>;

async fn record(State(s): State<Shared>, uri: Uri, headers: HeaderMap, body: Bytes) -> Response {
    let mut s = s.lock().expect("lock");
    s.seen.push(Seen {
        path: uri.path().to_string(),
        query: uri.query().unwrap_or_default().to_string(),
        headers,
        body: body.to_vec(),
    });
    let (status, hdrs, body) = s.replies.pop_front().unwrap_or((200, vec![], s.ok.clone()));
    let mut r = (StatusCode::from_u16(status).expect("status"), body).into_response();
    for (k, v) in hdrs {
        r.headers_mut().insert(k, v.parse().expect("hv"));
    }
    r
}

async fn scripted(ok: &str) -> (String, Shared) {
    let s: Shared = Arc::new(Mutex::new(Script {
        ok: ok.to_string(),
        ..Default::default()
    }));
    let app = axum::Router::new().fallback(record).with_state(s.clone());
    let url = support::serve_on_loopback(app).await;
    (url, s)
}

fn db(url: &str, f: impl FnOnce(&mut ClientConfig)) -> RemoteDatabase {
    let mut c = ClientConfig::default();
    c.retry_config.backoff_factor = 0.01;
    c.retry_config.backoff_jitter = 0.0;
    f(&mut c);
    RemoteDatabase::connect(
        "db://mydb",
        ConnectOptions {
            api_key: Some("sk".into()),
            host_override: Some(url.into()),
            client_config: c,
            ..Default::default()
        },
    )
    .expect("connect")
}

fn data() -> Data {
    let s = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, false)]));
    let b =
        RecordBatch::try_new(s.clone(), vec![Arc::new(Int64Array::from(vec![1, 2]))]).expect("b");
    Data::new(s, vec![b])
}

/// `when_matched_update_all().when_not_matched_insert_all()` on `id`.
fn upsert_by_id() -> memwal_core::MergeInsert {
    MergeInsertParams {
        when_matched_update_all: true,
        when_not_matched_insert_all: true,
        ..MergeInsertParams::new(vec!["id".into()])
    }
    .validate()
    .expect("valid")
}

const DESCRIBE: &str = r#"{"version": 1, "schema": {"fields": [{"name": "id", "type": {"type": "int64"}, "nullable": false}]}}"#;
const MERGED: &str =
    r#"{"version": 2, "num_deleted_rows": 0, "num_inserted_rows": 1, "num_updated_rows": 1}"#;

#[tokio::test]
async fn merge_insert_request_matches_the_official_client() {
    let (url, s) = scripted(DESCRIBE).await;
    let d = db(&url, |_| {});
    let t = d.open_table("t").await.expect("open");
    s.lock().expect("l").ok = MERGED.into();
    let m = MergeInsertParams {
        when_matched_update_all: true,
        when_matched_update_all_filt: Some("target.value < source.value".into()),
        when_not_matched_insert_all: true,
        when_not_matched_by_source_delete: true,
        when_not_matched_by_source_delete_filt: Some("id < 2".into()),
        timeout: Some(Duration::from_millis(5000)),
        ..MergeInsertParams::new(vec!["id".into()])
    };
    let r = t
        .merge_insert(m.validate().expect("valid"), data())
        .await
        .expect("merge");
    assert_eq!(
        (
            r.version,
            r.num_inserted_rows,
            r.num_updated_rows,
            r.num_attempts
        ),
        (2, 1, 1, 1)
    );
    let seen = s.lock().expect("l").seen.clone();
    assert_eq!(seen[0].path, "/v1/table/t/describe/");
    let m = &seen[1];
    assert_eq!(m.path, "/v1/table/t/merge_insert/");
    // Golden capture from @lancedb/lancedb 0.31.0 (shared/PROTOCOL.md).
    assert_eq!(
        m.query,
        "on=id&when_matched_update_all=true&when_matched_update_all_filt=target.value+%3C+source.value&when_not_matched_insert_all=true&when_not_matched_by_source_delete=true&when_not_matched_by_source_delete_filt=id+%3C+2"
    );
    assert_eq!(
        m.headers["content-type"],
        "application/vnd.apache.arrow.stream"
    );
    assert_eq!(m.headers["x-request-timeout-ms"], "5000");
    assert_eq!(m.headers["x-api-key"], "sk");
    assert_eq!(m.headers["x-lancedb-database"], "mydb");
    assert!(m.headers["user-agent"]
        .to_str()
        .expect("ua")
        .starts_with("memwal/"));
    assert_eq!(m.headers["x-request-id"].len(), 36);
    assert!(m.headers.get("x-lancedb-mem-wal-enabled").is_none());
    assert!(m.headers.get("x-use-wal").is_none());
    assert_eq!(
        &m.body[..4],
        &[0xff, 0xff, 0xff, 0xff],
        "an Arrow IPC stream"
    );
    assert_eq!(
        memwal_core::ipc::decode(&m.body).expect("ipc").num_rows(),
        2
    );
}

#[tokio::test]
async fn mem_wal_headers_exactly_when_enabled() {
    let (url, s) = scripted(DESCRIBE).await;
    let d = db(&url, |_| {});
    let t = d.open_table("t").await.expect("open");
    s.lock().expect("l").ok = MERGED.into();
    let upsert = MergeInsertParams {
        when_matched_update_all: true,
        when_not_matched_insert_all: true,
        mem_wal: Some(true),
        ..MergeInsertParams::new(vec!["id".into()])
    };
    t.merge_insert(upsert.validate().expect("valid"), data())
        .await
        .expect("merge");
    // An invalid clause set never becomes a MergeInsert, so nothing is sent.
    let bad = MergeInsertParams {
        when_matched_update_all: true,
        mem_wal: Some(true),
        ..MergeInsertParams::new(vec!["id".into()])
    };
    let e = bad.validate().expect_err("invalid");
    assert_eq!(
        e.to_string(),
        "MemWAL requires when_not_matched_insert_all() to be set"
    );
    let seen = s.lock().expect("l").seen.clone();
    let m = seen.last().expect("one");
    assert_eq!(m.headers["x-lancedb-mem-wal-enabled"], "true");
    assert_eq!(m.headers["x-use-wal"], "true");
    assert!(m.query.contains("when_not_matched_by_source_delete=false"));

    // Connection-level switch: on every request, from config or storage option.
    let (url2, s2) = scripted(DESCRIBE).await;
    let d2 = RemoteDatabase::connect(
        "db://mydb",
        ConnectOptions {
            api_key: Some("sk".into()),
            host_override: Some(url2),
            storage_options: [(
                "remote_database_mem_wal_enabled".to_string(),
                "TRUE".to_string(),
            )]
            .into(),
            ..Default::default()
        },
    )
    .expect("connect");
    d2.open_table("t").await.expect("open");
    let _ = d2.table_names().await;
    for r in &s2.lock().expect("l").seen {
        assert_eq!(r.headers["x-lancedb-mem-wal-enabled"], "true", "{}", r.path);
    }
}

#[tokio::test]
async fn retries_statuses_with_one_request_id_and_honours_retry_after() {
    let (url, s) = scripted(DESCRIBE).await;
    let d = db(&url, |_| {});
    let t = d.open_table("t").await.expect("open");
    {
        let mut g = s.lock().expect("l");
        g.ok = MERGED.into();
        g.replies.push_back((409, vec![], "conflict".into()));
        g.replies.push_back((429, vec![], "slow down".into()));
        g.replies
            .push_back((503, vec![("retry-after", "0.3")], "busy".into()));
    }
    let started = Instant::now();
    let r = t.merge_insert(upsert_by_id(), data()).await.expect("merge");
    assert_eq!(r.num_attempts, 4);
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "retry-after honoured"
    );
    let seen = s.lock().expect("l").seen.clone();
    let ids: Vec<_> = seen[1..]
        .iter()
        .map(|r| r.headers["x-request-id"].clone())
        .collect();
    assert_eq!(ids.len(), 4);
    assert!(
        ids.iter().all(|i| *i == ids[0]),
        "one request id across retries"
    );

    // Giving up says so, with the counts and the request id.
    {
        let mut g = s.lock().expect("l");
        for _ in 0..5 {
            g.replies.push_back((500, vec![], "boom".into()));
        }
    }
    let e = t.count_rows(None).await.expect_err("gives up");
    let msg = e.to_string();
    assert!(msg.starts_with("Hit retry limit for request_id="), "{msg}");
    assert!(msg.contains("request_failures=4/3"), "{msg}");
    assert_eq!(e.code(), "RetryLimit");
}

#[tokio::test]
async fn status_mapping() {
    let (url, s) = scripted(DESCRIBE).await;
    let d = db(&url, |c| c.retry_config.retries = 0);
    s.lock()
        .expect("l")
        .replies
        .push_back((404, vec![], "no such table".into()));
    let e = d.open_table("gone").await.expect_err("404");
    assert_eq!(e.code(), "TableNotFound");
    assert!(
        e.to_string().starts_with("Table 'gone' was not found"),
        "{e}"
    );
    s.lock()
        .expect("l")
        .replies
        .push_back((401, vec![], "bad key".into()));
    let e = d.table_names().await.expect_err("401");
    assert_eq!(e.code(), "Auth");
    assert!(e.to_string().contains("request_id="), "{e}");
    s.lock()
        .expect("l")
        .replies
        .push_back((400, vec![], "Table 't' already exists".into()));
    let e = d
        .create_table("t", data(), Default::default())
        .await
        .expect_err("exists");
    assert_eq!(e.code(), "TableAlreadyExists");
    let t = d.open_table("t").await.expect("open");
    s.lock()
        .expect("l")
        .replies
        .push_back((400, vec![], "column 'x' is wrong".into()));
    let e = t.count_rows(Some("x > 1".into())).await.expect_err("400");
    assert_eq!(e.code(), "InvalidInput");
    assert!(e.to_string().contains("column 'x' is wrong"), "{e}");
    s.lock()
        .expect("l")
        .replies
        .push_back((418, vec![], "teapot".into()));
    let e = t.version().await.expect_err("418");
    assert!(e.to_string().starts_with("418: teapot"), "{e}");
    // No API key at all is a clear local error.
    std::env::remove_var("LANCEDB_API_KEY");
    let e = RemoteDatabase::connect("db://x", ConnectOptions::default()).expect_err("no key");
    assert!(e.to_string().contains("API key"), "{e}");
}

#[tokio::test]
async fn connection_refused_is_retried_then_reported() {
    let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", l.local_addr().expect("a"));
    drop(l);
    let d = db(&url, |c| c.retry_config.connect_retries = 1);
    let e = d.table_names().await.expect_err("refused");
    assert!(e.to_string().contains("connect_failures=2/1"), "{e}");
}

#[tokio::test]
async fn namespaced_ids_use_the_delimiter() {
    // As @lancedb/lancedb 0.31.0 sends them (fixtures/official-node-0.31.0.json):
    // `ns1$ns2$t` with the default delimiter; `ns1.t` and `?delimiter=.` with ".".
    let (url, s) = scripted(DESCRIBE).await;
    let d = db(&url, |_| {});
    let ns = ["ns1".to_string(), "ns2".to_string()];
    d.open_table_in(&ns, "t").await.expect("open");
    d.drop_table_in(&ns, "t").await.expect("drop");
    let d2 = db(&url, |c| c.id_delimiter = Some(".".into()));
    d2.open_table_in(&ns[..1], "t").await.expect("open");
    let seen = s.lock().expect("l").seen.clone();
    let got: Vec<(&str, &str)> = seen
        .iter()
        .map(|r| (r.path.as_str(), r.query.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("/v1/table/ns1$ns2$t/describe/", ""),
            ("/v1/table/ns1$ns2$t/drop/", ""),
            ("/v1/table/ns1.t/describe/", "delimiter=."),
        ]
    );
    // Every part must be a valid name; a local database's namespace must exist.
    let e = d
        .open_table_in(&["../x".to_string()], "t")
        .await
        .expect_err("bad part");
    assert_eq!(e.code(), "InvalidInput");
    let local = memwal_core::NativeDb::open("memory://").expect("mem");
    let e = local
        .open_table_in(&ns, "t")
        .await
        .expect_err("no such namespace");
    assert_eq!(e.code(), "NamespaceNotFound");
}

#[tokio::test]
async fn overall_timeout_fails_the_call_with_code_timeout() {
    // A server that answers only after 3 s; the client allows 0.3 s.
    let app = axum::Router::new().fallback(|| async {
        tokio::time::sleep(Duration::from_secs(3)).await;
        "late"
    });
    let url = support::serve_on_loopback(app).await;
    let d = db(&url, |c| c.timeout_config.timeout = Some(0.3));
    let started = Instant::now();
    let e = d.table_names().await.expect_err("timed out");
    assert_eq!(e.code(), "Timeout", "{e}");
    assert!(e.to_string().contains("request_id="), "{e}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "not retried past the limit"
    );
}

/// A rename sends what @lancedb/lancedb 0.39 sends: the table's id in the
/// path, the new name alone, and `new_namespace` only when a new namespace
/// is given and not empty.
#[tokio::test]
async fn rename_sends_the_new_name_and_a_new_namespace_only_when_given() {
    let (url, s) = scripted("{}").await;
    let d = db(&url, |_| {});
    let ns1 = vec!["ns1".to_string()];
    let ns2 = vec!["ns2".to_string()];
    d.rename_table_in(&[], "table1", None, "table2")
        .await
        .expect("root");
    d.rename_table_in(&ns1, "table1", None, "table2")
        .await
        .expect("same namespace");
    d.rename_table_in(&ns1, "table1", Some(&[]), "table2")
        .await
        .expect("empty new namespace");
    d.rename_table_in(&ns1, "table1", Some(&ns2), "table2")
        .await
        .expect("across");
    let seen: Vec<(String, serde_json::Value)> = s
        .lock()
        .expect("lock")
        .seen
        .iter()
        .map(|r| {
            let body = serde_json::from_slice(&r.body).expect("json body");
            (r.path.clone(), body)
        })
        .collect();
    let just_name = serde_json::json!({ "new_table_name": "table2" });
    assert_eq!(
        seen,
        vec![
            ("/v1/table/table1/rename/".to_string(), just_name.clone()),
            (
                "/v1/table/ns1$table1/rename/".to_string(),
                just_name.clone()
            ),
            ("/v1/table/ns1$table1/rename/".to_string(), just_name),
            (
                "/v1/table/ns1$table1/rename/".to_string(),
                serde_json::json!({ "new_table_name": "table2", "new_namespace": ["ns2"] })
            ),
        ]
    );
}
