use crate::support::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_4xx_and_the_server_keeps_serving() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.max_body_bytes = 64 * 1024;
    let h = memwal_server::start(cfg).await.expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(1, 10)]).await;
    let mi = "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true";
    let arrow = "application/vnd.apache.arrow.stream";
    let cases: Vec<(&str, &str, Vec<u8>, u16, &str)> = vec![
        (
            mi,
            arrow,
            b"definitely not arrow".to_vec(),
            400,
            "malformed Arrow IPC",
        ),
        (
            mi,
            arrow,
            ipc_rows(&[(1, 1)])[..30].to_vec(),
            400,
            "malformed Arrow IPC",
        ),
        (mi, arrow, vec![], 400, "empty"),
        (mi, "text/plain", ipc_rows(&[(1, 1)]), 400, "content-type"),
        (
            "/v1/table/t/merge_insert/?when_matched_update_all=true",
            arrow,
            ipc_rows(&[(1, 1)]),
            400,
            "`on`",
        ),
        (
            "/v1/table/t/merge_insert/?on=id",
            arrow,
            ipc_rows(&[(1, 1)]),
            400,
            "MemWAL requires when_matched_update_all()",
        ),
        (
            "/v1/table/..%2Fx/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true",
            arrow,
            ipc_rows(&[(1, 1)]),
            400,
            "invalid table name",
        ),
        (
            "/v1/table/nope/count_rows/",
            "application/json",
            b"{}".to_vec(),
            404,
            "Table 'nope' was not found",
        ),
        (
            "/v1/table/t/count_rows/",
            "application/json",
            b"{not json".to_vec(),
            400,
            "malformed JSON",
        ),
        (
            "/v1/table/t/count_rows/",
            "application/json",
            br#"{"predicate": "nope > 1"}"#.to_vec(),
            400,
            "unknown column 'nope'",
        ),
        (mi, arrow, vec![0u8; 200 * 1024], 413, ""),
        // A condition without its clause, a flag given twice, a parameter a route does not
        // take: refused by name (were dropped, or read last-wins).
        (
            "/v1/table/t/merge_insert/?on=id&when_not_matched_insert_all=true&when_matched_update_all_filt=target.v%3C0",
            arrow,
            ipc_rows(&[(1, 1)]),
            400,
            "when_matched_update_all_filt is given without when_matched_update_all=true",
        ),
        (
            "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_matched_update_all=false",
            arrow,
            ipc_rows(&[(1, 1)]),
            400,
            "given twice",
        ),
        (
            "/v1/table/t/insert/?zzz=1",
            arrow,
            ipc_rows(&[(9, 9)]),
            400,
            "insert does not know the query parameter \"zzz\"",
        ),
        (
            "/v1/table/u/create/?mode=create&zzz=1",
            arrow,
            ipc_rows(&[(9, 9)]),
            400,
            "create does not know the query parameter \"zzz\"",
        ),
    ];
    for (path, ct, body, status, needle) in cases {
        let (s, b) = c
            .post(path, ct, body, &[("x-lancedb-mem-wal-enabled", "true")])
            .await;
        assert_eq!(s, status, "{path}: {b}");
        assert!(b.contains(needle), "{path}: {b}");
    }
    let mut wrong = Client::new(&h.url());
    wrong.key = "wrong".into();
    let (s, _) = wrong
        .post(
            "/v1/table/t/count_rows/",
            "application/json",
            b"{}".to_vec(),
            &[],
        )
        .await;
    assert_eq!(s, 401);
    // A MemWAL header that is neither true nor false is refused, not read as false.
    let (s, b) = c
        .post(mi, arrow, ipc_rows(&[(1, 1)]), &[("x-use-wal", "maybe")])
        .await;
    assert_eq!(s, 400, "{b}");
    assert!(b.contains("x-use-wal"), "{b}");
    // Nothing was written by any of it, and the server still answers.
    assert_eq!(c.rows("t", None).await, vec![(1, 10)]);
    assert!(!dir.path().join("x").exists());
    h.close().await;
}

/// Regression (hostile-input issue, item 7): the server ignored what it
/// does not implement (a full-text query returned unfiltered rows, missing
/// routes answered an empty 404 that clients read as "table not found").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_what_is_not_implemented_says_so() {
    let dir = tempfile::tempdir().expect("tmp");
    let h = memwal_server::start(config(dir.path()))
        .await
        .expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(1, 10)]).await;
    let json = "application/json";
    let cases: Vec<(&str, &str, u16, &str)> = vec![
        (
            "/v1/table/t/create_index/",
            r#"{"column":"v","index_type":"LABEL_LIST"}"#,
            400,
            "index type LABEL_LIST is not supported by memwal yet",
        ),
        (
            "/v1/table/t/create_index/",
            r#"{"column":"v","index_type":"IVF_HNSW_PQ","m":20}"#,
            400,
            "index type IVF_HNSW_PQ is not supported by memwal yet",
        ),
        (
            "/v1/table/t/create_index/",
            r#"{"column":"v","index_type":"IVF_PQ","num_bits":8,"bogus":1}"#,
            400,
            "bogus",
        ),
        ("/v1/table/t/index/nope/stats/", "{}", 404, "Index 'nope'"),
        (
            "/v1/table/t/restore/",
            "{}",
            400,
            "restore needs {\"version\": N}",
        ),
        (
            "/v1/table/t/restore/",
            r#"{"version":77}"#,
            404,
            "Version 77 of table 't' does not exist",
        ),
        (
            "/v1/table/t/restore/",
            r#"{"version":1,"x":1}"#,
            400,
            "unknown field `x`",
        ),
        ("/v1/table/t/stats/", "[1]", 400, "malformed JSON body"),
        (
            "/v1/table/t/tags/create/",
            r#"{"version":1}"#,
            400,
            "the body needs \"tag\"",
        ),
        (
            "/v1/table/t/tags/create/",
            r#"{"tag":"a","version":1,"x":2}"#,
            400,
            "unknown field `x`",
        ),
        (
            "/v1/table/t/tags/create/",
            r#"{"tag":"a/b","version":1}"#,
            400,
            "invalid tag",
        ),
        (
            "/v1/table/t/tags/version/",
            r#"{"tag":"nope"}"#,
            404,
            "has no tag 'nope'",
        ),
        (
            "/v1/table/t/tags/update/",
            r#"{"tag":"nope","version":1}"#,
            404,
            "has no tag 'nope'",
        ),
        (
            "/v1/table/t/get_lsm_stats/",
            r#"{"include_generation_rows":true,"bogus":1}"#,
            400,
            "unknown field `bogus`",
        ),
        (
            "/v1/table/t/add_columns/",
            r#"{"new_columns":[{"name":"id","expression":"1"}]}"#,
            400,
            "column 'id' already exists",
        ),
        (
            "/v1/table/t/add_columns/",
            r#"{"new_columns":[{"name":"x","expression":"nope * 2"}]}"#,
            400,
            "unknown column 'nope'",
        ),
        (
            "/v1/table/t/add_columns/",
            r#"{"new_columns":[{"name":"x","computed":"id"}]}"#,
            400,
            "computed column 'x'",
        ),
        ("/v1/table/t/add_columns/", "", 400, "at least one column"),
        (
            "/v1/table/t/alter_columns/",
            r#"{"alterations":[{"path":"v","data_type":{"type":"string"}}]}"#,
            400,
            "cannot change type",
        ),
        (
            "/v1/table/t/alter_columns/",
            r#"{"alterations":[{"path":"v","data_type":{"type":"blob"}}]}"#,
            400,
            "blob",
        ),
        (
            "/v1/table/t/alter_columns/",
            r#"{"alterations":[{"path":"v","nullable":false,"bogus":1}]}"#,
            400,
            "unknown field `bogus`",
        ),
        (
            "/v1/table/t/alter_columns/",
            r#"{"alterations":[{"path":"v","rename":"id"}]}"#,
            400,
            "'id' appears twice",
        ),
        (
            "/v1/table/t/drop_columns/",
            r#"{"columns":["id","v","s"]}"#,
            400,
            "cannot drop every column",
        ),
        (
            "/v1/table/t/drop_columns/",
            r#"{"columns":["nope"]}"#,
            400,
            "no column 'nope'",
        ),
        (
            "/v1/table/t/explain_plan/",
            r#"{"query":{"vector":[],"filter":"nope > 1"},"verbose":false}"#,
            400,
            "unknown column 'nope'",
        ),
        (
            "/v1/table/t/explain_plan/",
            r#"{"query":{"vector":[]},"bogus":1}"#,
            400,
            "unknown field `bogus`",
        ),
        (
            "/v1/table/t/analyze_plan/",
            r#"{"vector":[],"order_by":[{"column_name":"nope"}]}"#,
            400,
            "no column 'nope'",
        ),
        ("/v1/table/t/rename/", "{}", 400, "new_table_name"),
        (
            "/v1/table/t/rename/",
            r#"{"new_table_name":"a/b"}"#,
            400,
            "invalid table name",
        ),
        (
            "/v1/table/nope/rename/",
            r#"{"new_table_name":"b"}"#,
            404,
            "nope",
        ),
        ("/v1/table/t/index/nope/drop/", "", 404, "Index 'nope'"),
        (
            "/v1/table/t/index/nope/frobnicate/",
            "",
            501,
            "index/nope/frobnicate",
        ),
        (
            // The route is a GET: another method names itself, never an empty 405.
            "/v1/namespace/$/table/list",
            "{}",
            501,
            "does not implement POST /v1/namespace/$/table/list",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"k":10,"full_text_query":{"query":"x"}}"#,
            400,
            "Cannot perform full text search unless an INVERTED index has been created",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[1.0,2.0],"k":10}"#,
            400,
            "no vector column of dimension 2",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"k":10,"order_by":[{"column_name":"nope"}]}"#,
            400,
            "order_by: no column 'nope'",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"k":10,"order_by":[{"col":"id"}]}"#,
            400,
            "`order_by` must be",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[1.0,2.0],"k":10,"order_by":[{"column_name":"id"}]}"#,
            400,
            "ordering a vector search",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"k":10,"bogus":1}"#,
            400,
            "bogus",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"columns":{"x":"nope + 1"}}"#,
            400,
            "projection \"x\" = \"nope + 1\"",
        ),
        (
            "/v1/table/t/count_rows/",
            r#"{"predicate":"id > 0","extra":true}"#,
            400,
            "extra",
        ),
        (
            "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&bogus_param=1",
            "",
            400,
            "bogus_param",
        ),
    ];
    for (path, body, status, text) in cases {
        let (s, b) = c.post(path, json, body.as_bytes().to_vec(), &[]).await;
        assert_eq!(s, status, "{path} {body}: {b}");
        assert!(b.contains(text), "{path} {body}: {b}");
    }
    // The official default plain query still works.
    let body = r#"{"vector":[],"k":10,"prefilter":true,"version":null,"nprobes":20,"minimum_nprobes":20,"maximum_nprobes":20,"lower_bound":null,"upper_bound":null,"ef":null,"refine_factor":null,"columns":{"id":"id"}}"#;
    let (s, b) = c
        .post("/v1/table/t/query/", json, body.as_bytes().to_vec(), &[])
        .await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(c.count("t", None).await, 1);
    // The namespace listing: the root pages as GET /v1/table/ does; any
    // other namespace is refused by name.
    let get = |path: &str| {
        let req = c
            .http
            .get(format!("{}{path}", c.base))
            .header("x-api-key", c.key.clone());
        async move {
            let r = req.send().await.expect("send");
            (r.status().as_u16(), r.text().await.expect("text"))
        }
    };
    c.create("u", &[(1, 10)]).await;
    let (s, b) = get("/v1/namespace/$/table/list?limit=1").await;
    assert_eq!(
        (s, b.as_str()),
        (200, r#"{"tables":["t"],"page_token":"t"}"#)
    );
    let (s, b) = get("/v1/namespace/$/table/list?page_token=t").await;
    assert_eq!((s, b.as_str()), (200, r#"{"tables":["u"]}"#));
    // A namespace that does not exist is 404 naming it (issue 30 item 12:
    // it was 400); bad namespace requests are 400 and say why.
    let (s, b) = get("/v1/namespace/ns1/table/list").await;
    assert!(
        s == 404 && b.contains("\"ns1\"") && b.contains("does not exist"),
        "{s} {b}"
    );
    let (s, b) = get("/v1/namespace/a%2Fb/list").await;
    assert!(s == 400 && b.contains("invalid namespace name"), "{s} {b}");
    for (path, body, text) in [
        (
            "/v1/namespace/n/create",
            r#"{"mode":"Overwrite"}"#,
            "use Create or ExistOk (others are not supported",
        ),
        (
            "/v1/namespace/n/create",
            r#"{"bogus":1}"#,
            "unknown field `bogus`",
        ),
        (
            "/v1/namespace/$/create",
            "{}",
            "root namespace always exists",
        ),
        (
            "/v1/namespace/n/drop",
            r#"{"behavior":"Maybe"}"#,
            "use Restrict or Cascade",
        ),
        ("/v1/namespace/n/drop", "{}", "does not exist"),
        (
            "/v1/namespace/$/drop",
            "{}",
            "root namespace cannot be dropped",
        ),
        ("/v1/namespace/n/describe", "{}", "does not exist"),
    ] {
        let (s, b) = c.post(path, json, body.as_bytes().to_vec(), &[]).await;
        let want = if text == "does not exist" { 404 } else { 400 };
        assert!(s == want && b.contains(text), "{path} {body}: {s} {b}");
    }
    h.close().await;
}

/// Regression (hostile-input issue, item 10): slowly sent bodies were never
/// timed out, a declared Content-Length over the limit was read first, and
/// a full disk during create answered 400 "arrow error: Io error".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn regression_slow_large_bodies_and_a_full_disk() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().expect("tmp");
    let full = Arc::new(AtomicBool::new(false));
    let f = full.clone();
    let local = Arc::new(memwal_core::storage::LocalStorage::new(dir.path()).expect("storage"));
    let mut cfg = config(dir.path());
    cfg.max_body_bytes = 1 << 20;
    cfg.body_timeout = std::time::Duration::from_millis(300);
    cfg.storage = Some(Arc::new(memwal_core::storage::FaultyStorage::no_space(
        local,
        move |_, _| f.load(Ordering::SeqCst),
    )));
    let h = memwal_server::start(cfg).await.expect("start");
    let raw = |head: String, body: Vec<u8>| {
        let addr = h.addr;
        async move {
            let mut s = tokio::net::TcpStream::connect(addr).await.expect("connect");
            s.write_all(head.as_bytes()).await.expect("head");
            s.write_all(&body).await.expect("body");
            let started = std::time::Instant::now();
            let mut out = Vec::new();
            let _ =
                tokio::time::timeout(std::time::Duration::from_secs(5), s.read_to_end(&mut out))
                    .await;
            (String::from_utf8_lossy(&out).to_string(), started.elapsed())
        }
    };
    // Declares 1 GB: 413 at once, nothing read.
    let (resp, took) = raw(
        "POST /v1/table/t/create/ HTTP/1.1\r\nhost: x\r\nx-api-key: k\r\ncontent-length: 1000000000\r\nconnection: close\r\n\r\n".into(),
        vec![],
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 413"), "{resp}");
    assert!(resp.contains("over the server's"), "{resp}");
    assert!(took < std::time::Duration::from_secs(2));
    // Sends 10 of 100 declared bytes, then stalls: 408 after the timeout.
    let (resp, took) = raw(
        "POST /v1/table/t/create/ HTTP/1.1\r\nhost: x\r\nx-api-key: k\r\ncontent-length: 100\r\nconnection: close\r\n\r\n".into(),
        vec![0; 10],
    )
    .await;
    assert!(resp.starts_with("HTTP/1.1 408"), "{resp}");
    assert!(took < std::time::Duration::from_secs(3), "{took:?}");
    // A full disk during create: 507 naming the condition, not 400.
    let c = Client::new(&h.url());
    full.store(true, Ordering::SeqCst);
    let (s, b) = c
        .post(
            "/v1/table/t/create/",
            "application/vnd.apache.arrow.stream",
            ipc_rows(&[(1, 1)]),
            &[],
        )
        .await;
    assert_eq!(s, 507, "{b}");
    assert!(b.contains("No space left"), "{b}");
    full.store(false, Ordering::SeqCst);
    c.create("t", &[(1, 1)]).await;
    assert_eq!(c.count("t", None).await, 1);
    h.close().await;
}
