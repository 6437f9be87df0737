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
            r#"{"column":"v"}"#,
            501,
            "does not implement POST /v1/table/t/create_index/",
        ),
        ("/v1/table/t/index/list/", "{}", 501, "index/list"),
        (
            "/v1/namespace/$/table/list",
            "{}",
            501,
            "does not implement",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"k":10,"full_text_query":{"query":"x"}}"#,
            400,
            "full_text_query",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"k":10,"with_row_id":true}"#,
            400,
            "with_row_id",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"k":10,"order_by":[{"column_name":"id"}]}"#,
            400,
            "order_by",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"k":10,"bogus":1}"#,
            400,
            "bogus",
        ),
        (
            "/v1/table/t/query/",
            r#"{"vector":[],"columns":{"x":"id + 1"}}"#,
            400,
            "SQL expressions",
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
    h.close().await;
}
