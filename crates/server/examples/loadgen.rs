//! A light load generator for the D workload of the benchmarks: one thread,
//! N connections, each sending 200-row 128-d memWal upserts (half of the
//! keys new, half updates) to a running memwal-server; prints latency
//! percentiles and upserts/s as JSON. What it leaves out of the timed part:
//! encoding the bodies (done before the clock starts) and the table's
//! creation and warm-up.
//!
//! Two modes:
//! - closed loop (no rate): each connection sends its next upsert when the
//!   last one is answered; latency is each call's own time. This finds the
//!   saturating rate but hides queueing: a stall delays the requests that
//!   would have been sent meanwhile, and they are never counted
//!   (coordinated omission).
//! - open loop (`rate` upserts/s): upsert i is due at start + i / rate, and its
//!   latency counts from that due time, whether or not a connection was free
//!   (at most `connections` in flight), as wrk2 and `oha -q` measure. A server
//!   that falls behind shows the queue in p99. `service_*` is the time from
//!   the request's actual start, for comparison.
//!
//! `cargo run --release -p memwal-server --example loadgen -- URL [connections] [seconds] [rate]`

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{FixedSizeListArray, Float32Array, Int64Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};

const ROWS: usize = 200;
const DIM: i32 = 128;

fn body(schema: &Arc<Schema>, first_id: i64, seed: u64) -> Vec<u8> {
    let ids = Int64Array::from_iter_values((0..ROWS as i64).map(|i| first_id + i));
    let mut x = seed | 1;
    let values = Float32Array::from_iter_values((0..ROWS * DIM as usize).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % 1000) as f32 / 1000.0
    }));
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let vectors = FixedSizeListArray::new(item, DIM, Arc::new(values), None);
    let b = RecordBatch::try_new(schema.clone(), vec![Arc::new(ids), Arc::new(vectors)])
        .expect("batch");
    memwal_core::ipc::encode_stream(schema, &[b]).expect("ipc")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let url = args
        .first()
        .cloned()
        .unwrap_or_else(|| "http://127.0.0.1:8080".into());
    let conns: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(8);
    let secs: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(10);
    let rate: Option<f64> = args
        .get(3)
        .and_then(|s| s.parse().ok())
        .filter(|r| *r > 0.0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(url, conns, Duration::from_secs(secs), rate));
}

/// Where the upserts go: one table's merge_insert route with the MemWAL headers.
#[derive(Clone)]
struct Target {
    http: reqwest::Client,
    path: String,
}

impl Target {
    /// Sends one upsert and reads its answer; panics on a failed call (a bench
    /// run with errors must not report figures).
    async fn upsert(&self, b: bytes::Bytes) {
        let r = self
            .http
            .post(&self.path)
            .header("content-type", "application/vnd.apache.arrow.stream")
            .header("x-api-key", "k")
            .header("x-lancedb-mem-wal-enabled", "true")
            .header("x-use-wal", "true")
            .body(b)
            .send()
            .await
            .expect("send");
        assert!(r.status().is_success(), "upsert: {}", r.status());
        let _ = r.bytes().await;
    }
}

async fn run(url: String, conns: usize, dur: Duration, rate: Option<f64>) {
    let item = Arc::new(Field::new("item", DataType::Float32, true));
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new("vector", DataType::FixedSizeList(item, DIM), true),
    ]));
    let http = reqwest::Client::new();
    let table = format!("loadgen_{}", std::process::id());
    let create = http
        .post(format!("{url}/v1/table/{table}/create/"))
        .header("content-type", "application/vnd.apache.arrow.stream")
        .header("x-api-key", "k")
        .body(body(&schema, 0, 1))
        .send()
        .await
        .expect("create");
    assert!(create.status().is_success(), "create: {}", create.status());
    // Bodies prepared up front: each call upserts 100 existing and 100 new ids.
    let bodies: Vec<bytes::Bytes> = (0..64)
        .map(|i| body(&schema, 100 * i as i64, i as u64 + 7).into())
        .collect();
    let target = Target {
        http,
        path: format!("{url}/v1/table/{table}/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true&when_not_matched_by_source_delete=false"),
    };
    for b in bodies.iter().take(8) {
        target.upsert(b.clone()).await;
    }
    match rate {
        None => closed_loop(&target, &bodies, conns, dur).await,
        Some(rate) => open_loop(&target, &bodies, conns, dur, rate).await,
    }
}

/// Each of `conns` connections sends back to back for `dur`.
async fn closed_loop(target: &Target, bodies: &[bytes::Bytes], conns: usize, dur: Duration) {
    let start = Instant::now();
    let tasks: Vec<_> = (0..conns)
        .map(|c| async move {
            let mut lat = Vec::new();
            let mut i = c;
            while start.elapsed() < dur {
                let t = Instant::now();
                target.upsert(bodies[i % bodies.len()].clone()).await;
                lat.push(t.elapsed().as_secs_f64() * 1e3);
                i += conns;
            }
            lat
        })
        .collect();
    let mut lat: Vec<f64> = futures_join(tasks).await.concat();
    let elapsed = start.elapsed().as_secs_f64();
    lat.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{{\"mode\": \"closed\", \"connections\": {conns}, \"body_bytes\": {}, \"upserts\": {}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"upserts_per_s\": {:.1}}}",
        bodies[0].len(),
        lat.len(),
        pct(&lat, 0.50),
        pct(&lat, 0.99),
        lat.len() as f64 / elapsed
    );
}

/// Upsert i is due at start + i / rate; at most `conns` are in flight. Each
/// latency counts from the due time (see the module doc).
async fn open_loop(
    target: &Target,
    bodies: &[bytes::Bytes],
    conns: usize,
    dur: Duration,
    rate: f64,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(conns.max(1)));
    // The schedule is kept by a thread of its own: tokio's timer wakes at 1 ms
    // granularity, which would add up to 1 ms to every latency at low rates.
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let start = Instant::now();
    std::thread::spawn(move || {
        for i in 0usize.. {
            let due = start + Duration::from_secs_f64(i as f64 / rate);
            if due - start >= dur {
                break;
            }
            std::thread::sleep(due.saturating_duration_since(Instant::now()));
            if tx.send((i, due)).is_err() {
                break;
            }
        }
    });
    let mut tasks = Vec::new();
    while let Some((i, due)) = rx.recv().await {
        let (target, b, slots) = (
            target.clone(),
            bodies[i % bodies.len()].clone(),
            slots.clone(),
        );
        tasks.push(tokio::spawn(async move {
            let _slot = slots.acquire_owned().await.expect("semaphore");
            let sent = Instant::now();
            target.upsert(b).await;
            let ms = |from: Instant| from.elapsed().as_secs_f64() * 1e3;
            (ms(due), ms(sent))
        }));
    }
    let mut lat = Vec::with_capacity(tasks.len());
    let mut service = Vec::with_capacity(tasks.len());
    for t in tasks {
        let (l, s) = t.await.expect("task");
        lat.push(l);
        service.push(s);
    }
    let elapsed = start.elapsed().as_secs_f64();
    lat.sort_by(|a, b| a.total_cmp(b));
    service.sort_by(|a, b| a.total_cmp(b));
    println!(
        "{{\"mode\": \"open\", \"rate\": {rate:.1}, \"connections\": {conns}, \"body_bytes\": {}, \"upserts\": {}, \"upserts_per_s\": {:.1}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"p999_ms\": {:.3}, \"max_ms\": {:.3}, \"service_p50_ms\": {:.3}, \"service_p99_ms\": {:.3}}}",
        bodies[0].len(),
        lat.len(),
        lat.len() as f64 / elapsed,
        pct(&lat, 0.50),
        pct(&lat, 0.99),
        pct(&lat, 0.999),
        pct(&lat, 1.0),
        pct(&service, 0.50),
        pct(&service, 0.99),
    );
}

/// The nearest-rank percentile of sorted values (0 when there are none).
fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() as f64 * p) as usize).min(sorted.len() - 1)]
}

/// Runs the futures concurrently on this one thread.
async fn futures_join<F: std::future::Future>(fs: Vec<F>) -> Vec<F::Output> {
    let mut pinned: Vec<_> = fs.into_iter().map(Box::pin).collect();
    let mut out: Vec<Option<F::Output>> = pinned.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        let mut pending = false;
        for (i, f) in pinned.iter_mut().enumerate() {
            if out[i].is_none() {
                match f.as_mut().poll(cx) {
                    std::task::Poll::Ready(v) => out[i] = Some(v),
                    std::task::Poll::Pending => pending = true,
                }
            }
        }
        if pending {
            std::task::Poll::Pending
        } else {
            std::task::Poll::Ready(())
        }
    })
    .await;
    out.into_iter().flatten().collect()
}
