//! Failover with the WAL on S3 (moto): a writer that stalls or dies is taken
//! over by a second server on the same bucket, which serves every
//! acknowledged row exactly once; the first one, resumed, is fenced: its
//! writes and reads answer 503 and nothing it does afterwards changes the
//! table.

use std::collections::HashMap;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::durability::{spawn_at, Place};
use crate::support::*;

const UPSERT: &str =
    "/v1/table/t/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true";

/// key -> (last acknowledged value, value possibly in flight)
type Acked = Arc<Mutex<HashMap<i64, (i64, i64)>>>;

/// A server process killed (SIGKILL works on a stopped one too) and reaped
/// when the test ends, passed or failed: a failed assertion must not leave
/// a SIGSTOPped server holding the test's output open, which hangs the run.
struct Proc(Child);

impl std::ops::Deref for Proc {
    type Target = Child;
    fn deref(&self) -> &Child {
        &self.0
    }
}

impl std::ops::DerefMut for Proc {
    fn deref_mut(&mut self) -> &mut Child {
        &mut self.0
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn spawn(dir: &std::path::Path, place: Place<'_>) -> (Proc, String) {
    let (child, url) = spawn_at(dir, place);
    (Proc(child), url)
}

fn signal(child: &Child, sig: &str) {
    let ok = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success(), "kill {sig}");
}

/// One memWal upsert with a deadline (a stopped server never answers);
/// the status, or `None` when it did not answer in time.
async fn upsert(http: &reqwest::Client, url: &str, rows: &[(i64, i64)]) -> Option<(u16, String)> {
    let sent = http
        .post(format!("{url}{UPSERT}"))
        .header("x-api-key", "k")
        .header("content-type", "application/vnd.apache.arrow.stream")
        .header("x-lancedb-mem-wal-enabled", "true")
        .body(ipc_rows(rows))
        .timeout(Duration::from_secs(3))
        .send()
        .await
        .ok()?;
    let status = sent.status().as_u16();
    Some((status, sent.text().await.unwrap_or_default()))
}

/// Streams upserts from 4 tasks until the server stops answering; records
/// what was sent and what was acknowledged.
fn stream(url: &str, acked: &Acked, acks: &Arc<AtomicUsize>) -> Vec<tokio::task::JoinHandle<()>> {
    (0..4i64)
        .map(|w| {
            let (url, acked, acks) = (url.to_string(), acked.clone(), acks.clone());
            tokio::spawn(async move {
                let http = reqwest::Client::new();
                for r in 0i64.. {
                    let mut rows: Vec<(i64, i64)> = (0..10)
                        .map(|i| (w * 10_000 + (r * 10 + i) % 500, r))
                        .collect();
                    rows.sort();
                    rows.dedup_by_key(|x| x.0);
                    for (k, v) in &rows {
                        acked.lock().expect("lock").entry(*k).or_insert((-1, -1)).1 = *v;
                    }
                    match upsert(&http, &url, &rows).await {
                        Some((200, _)) => {
                            let mut a = acked.lock().expect("lock");
                            for (k, v) in &rows {
                                if let Some(e) = a.get_mut(k) {
                                    e.0 = *v;
                                }
                            }
                            acks.fetch_add(1, Ordering::SeqCst);
                        }
                        _ => return,
                    }
                }
            })
        })
        .collect()
}

async fn wait_acks(acks: &AtomicUsize, want: usize) {
    let start = Instant::now();
    while acks.load(Ordering::SeqCst) < want {
        assert!(
            start.elapsed() < Duration::from_secs(90),
            "only {} of {want} acks",
            acks.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Every acknowledged key holds its acknowledged (or in-flight) value, each key once.
async fn check(url: &str, acked: &Acked, when: &str) -> HashMap<i64, i64> {
    let c = Client::new(url);
    let got = c.rows("t", None).await;
    let rows: HashMap<i64, i64> = got.iter().copied().collect();
    assert_eq!(rows.len(), got.len(), "{when}: a key appears twice");
    let a = acked.lock().expect("lock").clone();
    let mut checked = 0;
    for (k, (ack, inflight)) in &a {
        if *ack < 0 {
            continue;
        }
        let v = rows.get(k).copied();
        assert!(
            v == Some(*ack) || v == Some(*inflight),
            "{when}: key {k} acked {ack} (in flight {inflight}) but found {v:?}"
        );
        checked += 1;
    }
    assert!(checked > 0, "{when}: nothing acknowledged");
    eprintln!("{when}: {checked} acknowledged keys verified");
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_second_server_takes_over_and_the_stalled_one_is_fenced() {
    let dir = tempfile::tempdir().expect("tmp");
    let (data, wal) = (s3_uri("failover-d"), s3_uri("failover-w"));
    let place = Place::S3All(&data, &wal);
    let (mut a, url_a) = spawn(dir.path(), place);
    Client::new(&url_a).create("t", &[]).await;
    let acked: Acked = Arc::default();
    let acks = Arc::new(AtomicUsize::new(0));
    let tasks = stream(&url_a, &acked, &acks);
    wait_acks(&acks, 150).await;
    // A stalls mid-stream (a GC pause, a partitioned host): its in-flight requests time out.
    signal(&a, "-STOP");
    for t in tasks {
        t.await.expect("join");
    }
    let (mut b, url_b) = spawn(dir.path(), place);
    let before = check(&url_b, &acked, "B after taking over").await;
    // B serves writes: every key gets a new value.
    let http = reqwest::Client::new();
    let keys: Vec<i64> = before.keys().copied().collect();
    for chunk in keys.chunks(50) {
        let rows: Vec<(i64, i64)> = chunk.iter().map(|k| (*k, 1_000_000 + k)).collect();
        let (s, body) = upsert(&http, &url_b, &rows).await.expect("B answers");
        assert_eq!(s, 200, "{body}");
        let mut acked = acked.lock().expect("lock");
        for (k, v) in rows {
            acked.insert(k, (v, v));
        }
    }
    // A resumes: its next write meets B's fence, and from then on it refuses reads too.
    signal(&a, "-CONT");
    let (s, body) = upsert(&http, &url_a, &[(7, -7)]).await.expect("A answers");
    assert_eq!(s, 503, "a stale writer's write is refused: {body}");
    assert!(
        body.contains("taken the table over") || body.contains("another server"),
        "{body}"
    );
    let (s, _, body) = Client::new(&url_a)
        .query_batches(
            "t",
            serde_json::json!({"vector": [], "filter": "id >= 0", "k": 10}),
        )
        .await;
    assert_eq!(s, 503, "a fenced server's read is refused: {body}");
    // Give A's flusher time to try (and be refused), then B's view is unchanged, and so is a
    // third server's after B dies.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let after_b = check(&url_b, &acked, "B after A resumed").await;
    assert!(
        after_b.iter().all(|(k, v)| *v == 1_000_000 + k),
        "every key holds B's value"
    );
    signal(&b, "-KILL");
    let _ = b.wait();
    let (mut c, url_c) = spawn(dir.path(), place);
    let after_c = check(&url_c, &acked, "C after B was killed").await;
    assert_eq!(after_c, after_b);
    // A, still running, stays fenced.
    let (s, _) = upsert(&http, &url_a, &[(8, -8)]).await.expect("A answers");
    assert_eq!(s, 503);
    for p in [&mut a, &mut c] {
        let _ = p.kill();
        let _ = p.wait();
    }
}

/// The same after kill -9 of the writer (no stall): the new server replays
/// every acknowledged record exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_killed_writer_is_replaced_with_every_acknowledged_row() {
    let dir = tempfile::tempdir().expect("tmp");
    let (data, wal) = (s3_uri("kill9-d"), s3_uri("kill9-w"));
    let place = Place::S3All(&data, &wal);
    let (mut a, url_a) = spawn(dir.path(), place);
    Client::new(&url_a).create("t", &[]).await;
    let acked: Acked = Arc::default();
    let acks = Arc::new(AtomicUsize::new(0));
    let tasks = stream(&url_a, &acked, &acks);
    wait_acks(&acks, 100).await;
    signal(&a, "-KILL");
    let _ = a.wait();
    for t in tasks {
        t.await.expect("join");
    }
    let (mut b, url_b) = spawn(dir.path(), place);
    check(&url_b, &acked, "B after kill -9 of A").await;
    let _ = b.kill();
    let _ = b.wait();
}
