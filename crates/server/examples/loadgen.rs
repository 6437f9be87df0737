//! A light load generator for the D workload of the benchmarks: one thread,
//! N connections, each sending 200-row 128-d memWal upserts (half of the
//! keys new, half updates) back to back to a running memwal-server; prints
//! p50 / p99 latency and upserts/s as JSON. What it leaves out of the timed
//! part: encoding the bodies (done before the clock starts) and the table's
//! creation and warm-up.
//!
//! `cargo run --release -p memwal-server --example loadgen -- URL [connections] [seconds]`

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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(run(url, conns, Duration::from_secs(secs)));
}

async fn run(url: String, conns: usize, dur: Duration) {
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
    let path = format!("{url}/v1/table/{table}/merge_insert/?on=id&when_matched_update_all=true&when_not_matched_insert_all=true&when_not_matched_by_source_delete=false");
    let send = |b: bytes::Bytes| {
        http.post(&path)
            .header("content-type", "application/vnd.apache.arrow.stream")
            .header("x-api-key", "k")
            .header("x-lancedb-mem-wal-enabled", "true")
            .header("x-use-wal", "true")
            .body(b)
            .send()
    };
    for b in bodies.iter().take(8) {
        let r = send(b.clone()).await.expect("warm-up");
        assert!(r.status().is_success(), "warm-up: {}", r.status());
    }
    let start = Instant::now();
    let tasks: Vec<_> = (0..conns)
        .map(|c| {
            let bodies = bodies.clone();
            let send = &send;
            async move {
                let mut lat = Vec::new();
                let mut i = c;
                while start.elapsed() < dur {
                    let t = Instant::now();
                    let r = send(bodies[i % bodies.len()].clone()).await.expect("send");
                    assert!(r.status().is_success(), "upsert: {}", r.status());
                    let _ = r.bytes().await;
                    lat.push(t.elapsed().as_secs_f64() * 1e3);
                    i += conns;
                }
                lat
            }
        })
        .collect();
    let mut lat: Vec<f64> = futures_join(tasks).await.concat();
    let elapsed = start.elapsed().as_secs_f64();
    lat.sort_by(|a, b| a.total_cmp(b));
    let q = |p: f64| lat[((lat.len() as f64 * p) as usize).min(lat.len() - 1)];
    println!(
        "{{\"connections\": {conns}, \"upserts\": {}, \"p50_ms\": {:.3}, \"p99_ms\": {:.3}, \"upserts_per_s\": {:.1}}}",
        lat.len(),
        q(0.50),
        q(0.99),
        lat.len() as f64 / elapsed
    );
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
