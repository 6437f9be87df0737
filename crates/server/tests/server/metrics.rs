//! `GET /metrics` on the real server: every counter and gauge moves with
//! the requests, WAL group commits, flushes and poisonings that happened,
//! and the scrape itself needs the key (as a bearer token or x-api-key).

use std::sync::Arc;
use std::time::Duration;

use memwal_server::memwal::wal::{Fault, FaultyWalIo};

use crate::support::*;

/// The value of the sample `series` (name and labels, exactly as printed).
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' '))
        .unwrap_or_else(|| panic!("no sample {series} in\n{text}"))
        .parse()
        .expect("a number")
}

async fn scrape(c: &Client) -> String {
    let resp = c
        .http
        .get(format!("{}/metrics", c.base))
        .bearer_auth(&c.key)
        .send()
        .await
        .expect("send");
    assert_eq!(resp.status().as_u16(), 200);
    assert_eq!(
        resp.headers()["content-type"],
        memwal_server::metrics::CONTENT_TYPE
    );
    resp.text().await.expect("text")
}

const MERGE: &str = "route=\"/v1/table/{name}/merge_insert/\",method=\"POST\"";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_follow_requests_wal_commits_and_flushes() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.flush_interval = Duration::from_secs(3600); // flush only on demand
    let h = memwal_server::start(cfg).await.expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(0, 0)]).await;
    c.upsert("t", &[(1, 1)], false).await;
    for i in 0..3 {
        c.upsert("t", &[(10 + 2 * i, 1), (11 + 2 * i, 1)], true)
            .await;
    }
    let nowhere = c
        .post("/v1/nowhere/", "application/json", vec![], &[])
        .await;
    assert_eq!(nowhere.0, 501, "{}", nowhere.1);
    let brew = c
        .http
        .request(
            reqwest::Method::from_bytes(b"BREW").expect("method"),
            format!("{}/v1/table/t/describe/", c.base),
        )
        .header("x-api-key", "k")
        .send()
        .await
        .expect("send");
    assert_eq!(brew.status().as_u16(), 501);
    let anonymous = c
        .http
        .get(format!("{}/metrics", c.base))
        .send()
        .await
        .expect("send");
    assert_eq!(anonymous.status().as_u16(), 401, "metrics need the key");

    let text = scrape(&c).await;
    let merges = format!("memwal_http_requests_total{{{MERGE},status=\"200\"}}");
    assert_eq!(sample(&text, &merges), 4.0);
    assert_eq!(
        sample(
            &text,
            &format!("memwal_http_request_duration_seconds_count{{{MERGE}}}")
        ),
        4.0
    );
    assert_eq!(
        sample(
            &text,
            "memwal_http_requests_total{route=\"unmatched\",method=\"POST\",status=\"501\"}"
        ),
        1.0
    );
    assert!(
        text.contains("method=\"other\",status=\"501\"}"),
        "an invented method is counted as other:\n{text}"
    );
    assert_eq!(
        sample(
            &text,
            "memwal_http_requests_total{route=\"/metrics\",method=\"GET\",status=\"401\"}"
        ),
        1.0
    );
    assert_eq!(sample(&text, "memwal_wal_records_total"), 3.0);
    // Each of the 3 MemWAL upserts is timed once in each phase on the
    // server; the body read of each of the 4 merge_insert requests.
    for (phase, n) in [
        ("body", 4.0),
        ("prep", 3.0),
        ("queue", 3.0),
        ("wal", 3.0),
        ("lock", 3.0),
        ("apply", 3.0),
        ("reply", 3.0),
    ] {
        let name = format!("memwal_upsert_phase_duration_seconds_count{{phase=\"{phase}\"}}");
        assert_eq!(sample(&text, &name), n, "{phase}:\n{text}");
    }
    let groups = sample(&text, "memwal_wal_group_commits_total");
    assert!((1.0..=3.0).contains(&groups), "{groups}");
    assert_eq!(sample(&text, "memwal_wal_fsyncs_total"), groups);
    assert!(sample(&text, "memwal_wal_bytes_total") > 0.0);
    assert_eq!(sample(&text, "memwal_memtable_rows"), 6.0);
    assert_eq!(sample(&text, "memwal_tables_open"), 1.0);
    assert_eq!(sample(&text, "memwal_tables_poisoned"), 0.0);
    assert_eq!(sample(&text, "memwal_flushes_total"), 0.0);

    let (s, b) = c
        .post("/v1/table/t/flush/", "application/json", vec![], &[])
        .await;
    assert_eq!(s, 200, "{b}");
    let text = scrape(&c).await;
    assert_eq!(sample(&text, "memwal_flushes_total"), 1.0);
    assert_eq!(sample(&text, "memwal_flushed_rows_total"), 6.0);
    assert_eq!(sample(&text, "memwal_flush_duration_seconds_count"), 1.0);
    assert_eq!(sample(&text, "memwal_memtable_rows"), 0.0);
    assert_eq!(c.count("t", None).await, 8);
    h.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_poisoned_table_shows_in_the_metrics() {
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = config(dir.path());
    cfg.memwal.io = Arc::new(FaultyWalIo::for_paths(Fault::Sync, 1, "/wal/t/"));
    let h = memwal_server::start(cfg).await.expect("start");
    let c = Client::new(&h.url());
    c.create("t", &[(0, 0)]).await;
    c.create("u", &[(0, 0)]).await;
    let mut refused = false;
    for i in 1..=3 {
        let (s, _) = c
            .post(
                "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true",
                "application/vnd.apache.arrow.stream",
                ipc_rows(&[(i, i)]),
                &[("x-lancedb-mem-wal-enabled", "true")],
            )
            .await;
        refused |= s == 503;
    }
    assert!(refused, "the failed fsync poisons t");
    c.upsert("u", &[(1, 1)], true).await; // u serves on (and is now open)
    let text = scrape(&c).await;
    assert_eq!(sample(&text, "memwal_tables_poisoned"), 1.0);
    assert_eq!(sample(&text, "memwal_tables_open"), 2.0);
    assert!(
        sample(
            &text,
            &format!("memwal_http_requests_total{{{MERGE},status=\"503\"}}")
        ) >= 1.0
    );
    h.close().await;
}
