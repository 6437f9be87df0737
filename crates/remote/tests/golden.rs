//! Golden captures: for every operation, what our client sends must match
//! what the official @lancedb/lancedb 0.31.0 client sent for it, field for
//! field (method, path, query in order, the headers that matter, the JSON
//! body, the Arrow body's format and schema).
//!
//! Vector queries are compared with @lancedb/lancedb 0.39.0's capture
//! (`fixtures/official-node-0.39.0.json`, same script).
//!
//! The fixture `fixtures/official-node-0.31.0.json` was recorded by
//! `scripts/capture-official.mjs`: the official client against our real
//! server through a recording proxy. Here our client runs the same steps
//! against the real server (in process, on 127.0.0.1) through a recording
//! proxy too, so both sides got real answers.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use arrow::array::{Float64Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use memwal_core::{
    AddMode, CreateMode, CreateOptions, Data, Database, DistanceType, MergeInsertParams,
    QueryRequest, VectorQuery,
};
use memwal_core::{ColumnAlteration, NewColumns};
use memwal_remote::{ClientConfig, ConnectOptions, RemoteDatabase, StaticHeaders};
use serde_json::Value;

#[derive(Debug, Clone)]
struct Seen {
    op: String,
    method: String,
    path: String,
    query: Vec<(String, String)>,
    headers: HeaderMap,
    body: Vec<u8>,
}

struct Proxy {
    upstream: String,
    op: Mutex<String>,
    seen: Mutex<Vec<Seen>>,
    http: reqwest::Client,
}

async fn forward(
    State(p): State<Arc<Proxy>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let query = uri.query().map(url_pairs).unwrap_or_default();
    p.seen.lock().expect("lock").push(Seen {
        op: p.op.lock().expect("lock").clone(),
        method: method.to_string(),
        path: uri.path().to_string(),
        query,
        headers: headers.clone(),
        body: body.to_vec(),
    });
    let url = format!(
        "{}{}",
        p.upstream,
        uri.path_and_query().map(|x| x.as_str()).unwrap_or("/")
    );
    let mut req = p
        .http
        .request(
            reqwest::Method::from_bytes(method.as_str().as_bytes()).expect("method"),
            url,
        )
        .body(body.to_vec());
    for (k, v) in headers.iter() {
        if k != "host" && k != "content-length" {
            req = req.header(k.as_str(), v.as_bytes());
        }
    }
    let resp = req.send().await.expect("upstream");
    let status = StatusCode::from_u16(resp.status().as_u16()).expect("status");
    let ct = resp
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap_or("").to_string());
    let bytes = resp.bytes().await.expect("body");
    let mut r = (status, bytes.to_vec()).into_response();
    if let Some(ct) = ct {
        r.headers_mut()
            .insert("content-type", ct.parse().expect("ct"));
    }
    r
}

/// Decodes an x-www-form-urlencoded query.
fn url_pairs(q: &str) -> Vec<(String, String)> {
    url::form_urlencoded::parse(q.as_bytes())
        .into_owned()
        .collect()
}

async fn proxy_to(upstream: String) -> (String, Arc<Proxy>) {
    let p = Arc::new(Proxy {
        upstream,
        op: Mutex::new(String::new()),
        seen: Mutex::new(Vec::new()),
        http: reqwest::Client::new(),
    });
    let app = axum::Router::new().fallback(forward).with_state(p.clone());
    let url = support::serve_on_loopback(app).await;
    (url, p)
}

fn rows(v: &[(f64, f64, &str)]) -> Data {
    let s = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Float64, true),
        Field::new("a", DataType::Float64, true),
        Field::new("s", DataType::Utf8, true),
    ]));
    let b = RecordBatch::try_new(
        s.clone(),
        vec![
            Arc::new(Float64Array::from_iter_values(v.iter().map(|r| r.0))),
            Arc::new(Float64Array::from_iter_values(v.iter().map(|r| r.1))),
            Arc::new(StringArray::from_iter_values(v.iter().map(|r| r.2))),
        ],
    )
    .expect("batch");
    Data::new(s, vec![b])
}

/// Every JSON number as f64 (the official client's JS side turned
/// i64::MAX into 9223372036854776000).
fn norm(v: &Value) -> Value {
    match v {
        Value::Number(n) => serde_json::json!(n.as_f64()),
        Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
        // Key order carries no meaning here (serde_json keeps insertion
        // order, the capture is sorted): compare sorted.
        Value::Object(o) => {
            let sorted: std::collections::BTreeMap<&String, &Value> = o.iter().collect();
            Value::Object(
                sorted
                    .into_iter()
                    .map(|(k, v)| (k.clone(), norm(v)))
                    .collect(),
            )
        }
        other => other.clone(),
    }
}

/// (fields as (name, type, nullable), rows) of an Arrow IPC body.
fn arrow_shape(bytes: &[u8]) -> (Vec<(String, DataType, bool)>, usize) {
    assert_eq!(&bytes[..4], &[0xff; 4], "an Arrow IPC stream");
    let d = memwal_core::ipc::decode(bytes).expect("ipc");
    let fields = d
        .schema
        .fields()
        .iter()
        .map(|f| (f.name().clone(), f.data_type().clone(), f.is_nullable()))
        .collect();
    (fields, d.num_rows())
}

fn fixture() -> Vec<Value> {
    fixture_of("official-node-0.39.0.json")
}

fn fixture_of(name: &str) -> Vec<Value> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    let v: Value = serde_json::from_str(&std::fs::read_to_string(path).expect("fixture"))
        .expect("fixture JSON");
    v["captured"].as_array().expect("captured").clone()
}

fn b64(s: &str) -> Vec<u8> {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}

/// Compares our last request of `op` with the official client's.
fn compare(op: &str, theirs: &Value, ours: &Seen) -> Vec<String> {
    let mut diffs = Vec::new();
    let mut check = |what: &str, a: String, b: String| {
        if a != b {
            diffs.push(format!("{op}: {what}: official {a} / ours {b}"));
        }
    };
    check(
        "method",
        theirs["method"].as_str().unwrap_or("").into(),
        ours.method.clone(),
    );
    check(
        "path",
        theirs["path"].as_str().unwrap_or("").into(),
        ours.path.clone(),
    );
    let tq: Vec<(String, String)> = theirs["query"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|kv| {
                    (
                        kv[0].as_str().unwrap_or("").to_string(),
                        kv[1].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    check("query", format!("{tq:?}"), format!("{:?}", ours.query));
    let th = theirs["headers"].as_object().cloned().unwrap_or_default();
    let oh = |k: &str| {
        ours.headers
            .get(k)
            .map(|v| v.to_str().unwrap_or("").to_string())
    };
    let header_names = [
        "content-type",
        "x-request-timeout-ms",
        "x-lancedb-mem-wal-enabled",
        "x-use-wal",
        "x-api-key",
        "x-lancedb-database",
        "x-lancedb-user-id",
        "x-extra",
        "x-from-provider",
    ];
    for h in header_names {
        check(
            &format!("header {h}"),
            format!("{:?}", th.get(h).and_then(Value::as_str)),
            format!("{:?}", oh(h).as_deref()),
        );
    }
    // Read-after-write consistency: where the official client asked for a
    // minimum version, ours asks for the same one.
    if let Some(v) = th.get("x-lancedb-min-version").and_then(Value::as_str) {
        check(
            "header x-lancedb-min-version",
            format!("{v:?}"),
            format!("{:?}", oh("x-lancedb-min-version").unwrap_or_default()),
        );
    }
    let rid = oh("x-request-id").unwrap_or_default();
    check(
        "x-request-id is a uuid",
        "true".into(),
        uuid::Uuid::parse_str(&rid).is_ok().to_string(),
    );
    let body = &theirs["body"];
    match body["kind"].as_str() {
        Some("empty") => check("body bytes", "0".into(), ours.body.len().to_string()),
        Some("json") => {
            let o: Value = serde_json::from_slice(&ours.body).unwrap_or(Value::Null);
            check(
                "JSON body",
                norm(&body["value"]).to_string(),
                norm(&o).to_string(),
            );
        }
        Some("arrow") => {
            let t = arrow_shape(&b64(body["base64"].as_str().unwrap_or("")));
            let o = arrow_shape(&ours.body);
            check("Arrow body", format!("{t:?}"), format!("{o:?}"));
        }
        other => check(
            "body kind",
            "empty, json or arrow".into(),
            format!("{other:?}"),
        ),
    }
    diffs
}

#[tokio::test]
async fn every_operation_matches_the_official_client_capture() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = memwal_server::ServerConfig::new(dir.path());
    cfg.api_key = Some("sk-capture".into());
    let server = memwal_server::start(cfg).await.expect("server");
    let (url, proxy) = proxy_to(server.url()).await;
    let connect = |f: &dyn Fn(&mut ConnectOptions)| {
        let mut o = ConnectOptions {
            api_key: Some("sk-capture".into()),
            region: Some("us-east-1".into()),
            host_override: Some(url.clone()),
            ..Default::default()
        };
        f(&mut o);
        RemoteDatabase::connect("db://capture", o).expect("connect")
    };
    let db = connect(&|_| {});
    let set = |op: &str| *proxy.op.lock().expect("lock") = op.to_string();
    let three = [(1.0, 1.5, "a"), (2.0, 2.5, "b"), (3.0, 3.5, "c")];

    set("table_names");
    db.table_names().await.expect("names");
    set("create_table");
    db.create_table("t", rows(&three), CreateOptions::default())
        .await
        .expect("create");
    set("create_table_exist_ok");
    let opts = CreateOptions {
        mode: CreateMode::Create,
        exist_ok: true,
    };
    db.create_table("t", rows(&three), opts)
        .await
        .expect("exist_ok");
    set("create_table_overwrite");
    let opts = CreateOptions {
        mode: CreateMode::Overwrite,
        exist_ok: false,
    };
    db.create_table("t", rows(&three), opts)
        .await
        .expect("overwrite");
    set("create_empty_table");
    let es = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("name", DataType::Utf8, true),
    ]));
    db.create_table("e", Data::new(es, vec![]), CreateOptions::default())
        .await
        .expect("empty");
    set("open_table");
    let t = db.open_table("t").await.expect("open");
    set("schema");
    t.schema().await.expect("schema");
    set("version");
    t.version().await.expect("version");
    set("count_rows");
    assert_eq!(t.count_rows(None).await.expect("count"), 3);
    set("count_rows_filter");
    assert_eq!(t.count_rows(Some("id > 1".into())).await.expect("c"), 2);
    set("add");
    t.add(rows(&[(4.0, 4.5, "d")]), AddMode::Append)
        .await
        .expect("add");
    set("add_overwrite");
    t.add(rows(&three), AddMode::Overwrite)
        .await
        .expect("overwrite");
    set("delete");
    t.delete("id > 2").await.expect("delete");
    set("update_values");
    t.update(Some("id = 1".into()), vec![("s".into(), "'x'".into())])
        .await
        .expect("update");
    set("update_values_sql");
    t.update(None, vec![("a".into(), "a + 1".into())])
        .await
        .expect("update");
    set("query");
    t.query(QueryRequest {
        filter: Some("id > 0".into()),
        columns: Some(vec!["id".into(), "a".into()]),
        limit: Some(10),
        offset: Some(1),
        ..Default::default()
    })
    .await
    .expect("query");
    set("query_all");
    t.query(QueryRequest::default()).await.expect("all");
    set("to_arrow");
    t.query(QueryRequest::default()).await.expect("all");
    set("list_versions");
    t.list_versions().await.expect("versions");
    set("merge_insert");
    let upsert = MergeInsertParams {
        when_matched_update_all: true,
        when_not_matched_insert_all: true,
        ..MergeInsertParams::new(vec!["id".into()])
    };
    t.merge_insert(
        upsert.validate().expect("valid"),
        rows(&[(2.0, 20.0, "bb"), (9.0, 9.0, "i")]),
    )
    .await
    .expect("merge");
    set("merge_insert_all_clauses");
    let all = MergeInsertParams {
        when_matched_update_all: true,
        when_matched_update_all_filt: Some("target.a < source.a".into()),
        when_not_matched_insert_all: true,
        when_not_matched_by_source_delete: true,
        when_not_matched_by_source_delete_filt: Some("id < 2".into()),
        timeout: Some(Duration::from_millis(5000)),
        ..MergeInsertParams::new(vec!["id".into()])
    };
    t.merge_insert(all.validate().expect("valid"), rows(&[(2.0, 30.0, "bb")]))
        .await
        .expect("merge");
    set("merge_insert_no_index");
    let no_index = MergeInsertParams {
        when_not_matched_insert_all: true,
        use_index: false,
        ..MergeInsertParams::new(vec!["id".into()])
    };
    t.merge_insert(
        no_index.validate().expect("valid"),
        rows(&[(10.0, 10.0, "j")]),
    )
    .await
    .expect("merge");
    set("checkout");
    let old = t.checkout(Some(2)).await.expect("checkout");
    set("checkout_version");
    assert_eq!(old.version().await.expect("v"), 2);
    set("checkout_count_rows");
    assert_eq!(old.count_rows(None).await.expect("count at 2"), 3);
    set("checkout_query");
    old.query(QueryRequest {
        filter: Some("id > 0".into()),
        ..Default::default()
    })
    .await
    .expect("query at 2");
    let e = old
        .delete("id > 0")
        .await
        .expect_err("a checked-out version is read-only");
    assert!(e.to_string().contains("checked out"), "{e}");
    set("checkout_latest");
    let latest = old.checkout(None).await.expect("latest");
    set("latest_count_rows");
    assert_eq!(latest.count_rows(None).await.expect("count"), 3);
    set("stats");
    assert_eq!(latest.stats().await.expect("stats").num_rows, 3);
    set("restore_checkout");
    let two = latest.checkout(Some(2)).await.expect("checkout 2");
    set("restore");
    two.restore(None).await.expect("restore");
    set("get_lsm_stats");
    let lsm = latest.lsm_stats(false).await.expect("lsm stats");
    assert_eq!(lsm.map(|s| s.buckets.len()), Some(1));
    set("flush_lsm");
    latest.flush_lsm().await.expect("flush");
    set("tags_create");
    latest.set_tag("v2", 2, false).await.expect("tag");
    set("tags_list");
    assert_eq!(latest.tags().await.expect("tags")["v2"].version, 2);
    set("tags_update");
    latest.set_tag("v2", 3, true).await.expect("update");
    set("tags_version");
    assert_eq!(latest.tag_version("v2").await.expect("version"), 3);
    set("tags_delete");
    latest.delete_tag("v2").await.expect("delete");
    set("query_projection");
    latest
        .query(QueryRequest {
            projections: Some(vec![
                ("twice".into(), "id * 2".into()),
                ("s".into(), "s".into()),
            ]),
            ..Default::default()
        })
        .await
        .expect("projection");
    set("query_order_by");
    latest
        .query(QueryRequest {
            order_by: vec![memwal_core::OrderBy {
                column: "a".into(),
                ascending: false,
                nulls_first: true,
            }],
            ..Default::default()
        })
        .await
        .expect("order by");
    let filtered = QueryRequest {
        filter: Some("id > 1".into()),
        ..Default::default()
    };
    set("explain_plan");
    let plan = latest
        .explain_plan(filtered.clone(), true)
        .await
        .expect("explain");
    assert!(plan.contains("id > 1"), "{plan}");
    set("analyze_plan");
    let ran = latest.analyze_plan(filtered).await.expect("analyze");
    assert!(ran.contains("ran:"), "{ran}");
    set("add_columns");
    latest
        .add_columns(NewColumns::Sql(vec![("b".into(), "a * 2".into())]))
        .await
        .expect("add columns");
    set("alter_columns");
    latest
        .alter_columns(vec![
            ColumnAlteration {
                path: "b".into(),
                rename: Some("b2".into()),
                nullable: Some(true),
                ..Default::default()
            },
            ColumnAlteration {
                path: "a".into(),
                data_type: Some(arrow_schema::DataType::Float32),
                ..Default::default()
            },
        ])
        .await
        .expect("alter columns");
    set("drop_columns");
    latest
        .drop_columns(vec!["b2".into()])
        .await
        .expect("drop columns");
    set("rename_table");
    db.rename_table("e", "e2").await.expect("rename");
    set("rename_table_back");
    db.rename_table("e2", "e").await.expect("rename back");
    let ns1 = vec!["ns1".to_string()];
    set("namespace_create");
    db.create_namespace(
        &ns1,
        BTreeMap::from([("k".to_string(), "v".to_string())]),
        true,
    )
    .await
    .expect("create namespace");
    set("namespace_list");
    let (names, _) = db
        .list_namespaces(&[], None, Some(5))
        .await
        .expect("list namespaces");
    assert_eq!(names, ns1);
    set("namespace_describe");
    assert_eq!(
        db.describe_namespace(&ns1).await.expect("describe")["k"],
        "v"
    );
    set("namespace_create_table");
    db.create_table_in(&ns1, "nt", rows(&three), Default::default())
        .await
        .expect("create in namespace");
    set("namespace_table_names");
    assert_eq!(
        db.table_names_in(&ns1, None, Some(5)).await.expect("names"),
        vec!["nt".to_string()]
    );
    set("namespace_drop");
    db.drop_namespace(&ns1, true, false)
        .await
        .expect("drop namespace");
    set("drop_table");
    db.drop_table("e").await.expect("drop");
    set("open_missing_table");
    let e = db.open_table("missing").await.expect_err("404");
    assert_eq!(e.code(), "TableNotFound");
    assert!(e.to_string().contains("request_id="), "{e}");
    set("open_table_delimiter");
    let db2 = connect(&|o| {
        o.client_config = ClientConfig {
            id_delimiter: Some(".".into()),
            extra_headers: BTreeMap::from([("x-extra".to_string(), "1".to_string())]),
            user_id: Some("user-7".into()),
            ..Default::default()
        };
    });
    let _ = db2
        .open_table_in(&["ns1".to_string()], "t")
        .await
        .expect_err("no such namespace on our server");
    set("header_provider");
    let db3 = connect(&|o| {
        o.header_provider = Some(Arc::new(StaticHeaders(vec![(
            "x-from-provider".into(),
            "p1".into(),
        )])))
    });
    db3.table_names().await.expect("names");

    // Compare, operation by operation.
    let ours = proxy.seen.lock().expect("lock").clone();
    let mut diffs = Vec::new();
    let mut compared = 0;
    let captured = fixture();
    let ops: std::collections::BTreeSet<&str> =
        captured.iter().filter_map(|c| c["op"].as_str()).collect();
    for op in ops {
        // `$`-joined ids: see protocol.rs namespaced_ids_use_the_delimiter
        // (our server refuses `$` in names, so no answer was captured).
        if op == "open_table_namespaced" {
            continue;
        }
        // Compared by index_routes_... and vector_queries_... below.
        let elsewhere = [
            "create_index",
            "create_index_btree",
            "create_index_flat",
            "create_index_hnsw",
            "drop_index",
            "index_stats",
            "index_table",
            "list_indices",
        ];
        if op.starts_with("vector_") || elsewhere.contains(&op) {
            continue;
        }
        let Some(theirs) = captured
            .iter()
            .rfind(|c| c["op"] == op && c.get("method").is_some())
        else {
            continue;
        };
        match ours.iter().rfind(|s| s.op == op) {
            Some(o) => {
                diffs.extend(compare(op, theirs, o));
                compared += 1;
            }
            None => diffs.push(format!(
                "{op}: the official client sent a request, ours none"
            )),
        }
    }
    assert!(compared >= 30, "compared only {compared} operations");
    assert!(diffs.is_empty(), "differences:\n{}", diffs.join("\n"));
    server.close().await;
}

fn vector_rows() -> Data {
    use arrow::array::FixedSizeListArray;
    use arrow::datatypes::Float32Type;
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Float64, true),
        Field::new("kind", DataType::Utf8, true),
        Field::new("vector", DataType::FixedSizeList(item, 3), true),
    ]));
    let n = 20;
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Float64Array::from_iter_values((0..n).map(f64::from))),
            Arc::new(StringArray::from_iter_values(
                (0..n).map(|i| ["a", "b"][i as usize % 2]),
            )),
            Arc::new(
                FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
                    (0..n).map(|i| Some(vec![Some(i as f32), Some(i as f32 * 0.5), Some(1.0)])),
                    3,
                ),
            ),
        ],
    )
    .expect("batch");
    Data::new(schema, vec![b])
}

fn nearest(
    limit: Option<usize>,
    f: impl FnOnce(&mut QueryRequest, &mut VectorQuery),
) -> QueryRequest {
    let mut q = VectorQuery::new(vec![1.0, 2.0, 3.0]);
    let mut r = QueryRequest {
        limit,
        ..Default::default()
    };
    f(&mut r, &mut q);
    r.nearest = Some(q);
    r
}

/// Our server behind a recording proxy, and our client pointed at it.
async fn recorded(
    dir: &std::path::Path,
) -> (memwal_server::ServerHandle, Arc<Proxy>, RemoteDatabase) {
    let mut cfg = memwal_server::ServerConfig::new(dir);
    cfg.api_key = Some("sk-capture".into());
    let server = memwal_server::start(cfg).await.expect("server");
    let (url, proxy) = proxy_to(server.url()).await;
    let db = RemoteDatabase::connect(
        "db://capture",
        ConnectOptions {
            api_key: Some("sk-capture".into()),
            region: Some("us-east-1".into()),
            host_override: Some(url.clone()),
            ..Default::default()
        },
    )
    .expect("connect");
    (server, proxy, db)
}

/// Differences between what we sent for `ops` and the 0.39 capture.
fn against_capture(proxy: &Proxy, ops: &[&str]) -> Vec<String> {
    let ours = proxy.seen.lock().expect("lock").clone();
    let captured = fixture_of("official-node-0.39.0.json");
    let mut diffs = Vec::new();
    for op in ops {
        let theirs = captured
            .iter()
            .rfind(|c| c["op"] == *op && c.get("method").is_some())
            .unwrap_or_else(|| panic!("{op} is in the capture"));
        match ours.iter().rfind(|s| s.op == *op) {
            Some(o) => diffs.extend(compare(op, theirs, o)),
            None => diffs.push(format!("{op}: ours sent nothing")),
        }
    }
    diffs
}

#[tokio::test]
async fn index_routes_match_the_official_0_39_capture() {
    use memwal_core::{IndexRequest, IndexType};
    let dir = tempfile::tempdir().expect("tmp");
    let (server, proxy, db) = recorded(dir.path()).await;
    let set = |op: &str| *proxy.op.lock().expect("lock") = op.to_string();
    let t = db
        .create_table("it", index_rows(), CreateOptions::default())
        .await
        .expect("create");
    set("create_index");
    t.create_index(IndexRequest {
        index_type: Some(IndexType::IvfPq),
        distance_type: Some(DistanceType::Cosine),
        num_partitions: Some(4),
        num_sub_vectors: Some(2),
        num_bits: Some(8),
        max_iterations: Some(20),
        sample_rate: Some(64),
        ..IndexRequest::new("vector")
    })
    .await
    .expect("ivf_pq");
    set("create_index_flat");
    t.create_index(IndexRequest {
        index_type: Some(IndexType::IvfFlat),
        distance_type: Some(DistanceType::L2),
        num_partitions: Some(2),
        name: Some("vf".into()),
        ..IndexRequest::new("vector")
    })
    .await
    .expect("ivf_flat");
    set("list_indices");
    let list = t.list_indices().await.expect("list");
    assert_eq!(list.len(), 1);
    set("index_stats");
    let s = t.index_stats("vf").await.expect("stats");
    assert_eq!(
        (s.num_indexed_rows, s.index_type.as_str()),
        (300, "IVF_FLAT")
    );
    set("drop_index");
    t.drop_index("vf").await.expect("drop");
    set("create_index_hnsw");
    t.create_index(IndexRequest {
        index_type: Some(IndexType::IvfHnswSq),
        distance_type: Some(DistanceType::Dot),
        m: Some(8),
        ef_construction: Some(40),
        name: Some("vh".into()),
        ..IndexRequest::new("vector")
    })
    .await
    .expect("hnsw");
    set("create_index_btree");
    t.create_index(IndexRequest {
        index_type: Some(IndexType::BTree),
        name: Some("ib".into()),
        replace: false,
        ..IndexRequest::new("id")
    })
    .await
    .expect("btree");
    let ops = [
        "create_index",
        "create_index_flat",
        "list_indices",
        "index_stats",
        "drop_index",
        "create_index_hnsw",
        "create_index_btree",
    ];
    let diffs = against_capture(&proxy, &ops);
    assert!(diffs.is_empty(), "differences:\n{}", diffs.join("\n"));
    server.close().await;
}

fn index_rows() -> Data {
    use arrow::array::FixedSizeListArray;
    use arrow::datatypes::Float32Type;
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Float64, true),
        Field::new("vector", DataType::FixedSizeList(item, 4), true),
    ]));
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Float64Array::from_iter_values((0..300).map(f64::from))),
            Arc::new(
                FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(
                    (0..300).map(|i| {
                        Some(vec![
                            Some((i % 7) as f32),
                            Some((i % 5) as f32),
                            Some((i % 3) as f32),
                            Some(1.0),
                        ])
                    }),
                    4,
                ),
            ),
        ],
    )
    .expect("batch");
    Data::new(schema, vec![b])
}

#[tokio::test]
async fn vector_queries_match_the_official_0_39_capture() {
    let dir = tempfile::tempdir().expect("tmp");
    let (server, proxy, db) = recorded(dir.path()).await;
    let set = |op: &str| *proxy.op.lock().expect("lock") = op.to_string();
    let t = db
        .create_table("vt", vector_rows(), CreateOptions::default())
        .await
        .expect("create");
    let queries = [
        ("vector_search", nearest(None, |_, _| {})),
        (
            "vector_search_options",
            nearest(Some(5), |r, q| {
                q.column = Some("vector".into());
                q.distance_type = Some(DistanceType::Cosine);
                r.filter = Some("kind = 'a'".into());
                r.columns = Some(vec!["id".into()]);
                r.offset = Some(1);
                r.with_row_id = true;
            }),
        ),
        (
            "vector_postfilter_range",
            nearest(Some(3), |r, q| {
                r.filter = Some("id > 2".into());
                q.prefilter = false;
                q.lower_bound = Some(0.5);
                q.upper_bound = Some(100.0);
            }),
        ),
        (
            "vector_tuning",
            nearest(None, |_, q| {
                q.tuning.nprobes = Some(30);
                q.tuning.refine_factor = Some(2);
                q.tuning.ef = Some(64);
                q.tuning.bypass_vector_index = true;
                q.tuning.fast_search = true;
            }),
        ),
        (
            "vector_multi",
            nearest(Some(2), |_, q| q.vectors.push(vec![3.0, 2.0, 1.0])),
        ),
        ("vector_nearest_to", nearest(Some(4), |_, _| {})),
    ];
    for (op, req) in queries.iter().cloned() {
        set(op);
        let b = t.query(req).await.expect(op);
        assert!(
            b.iter().map(RecordBatch::num_rows).sum::<usize>() > 0,
            "{op} found rows"
        );
    }
    let ops: Vec<&str> = queries.iter().map(|(op, _)| *op).collect();
    let diffs = against_capture(&proxy, &ops);
    assert!(diffs.is_empty(), "differences:\n{}", diffs.join("\n"));
    server.close().await;
}
