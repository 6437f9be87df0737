//! Served search against local search on the same rows, in process (no
//! HTTP): a table of N x 128-d clustered vectors with an IVF_PQ index,
//! searched through a served table (with `M` memtable rows buffered) and
//! through a plain local handle of the same base. Prints p50 / p99 of each.
//! `cargo run --release -p memwal-server --example served_search [N M Q]`.

use std::sync::Arc;
use std::time::{Duration, Instant};

use arrow::array::{FixedSizeListArray, Int64Array, RecordBatch};
use arrow::datatypes::Float32Type;
use arrow_schema::{DataType, Field, Schema};
use memwal_core::{
    CreateOptions, Data, IndexRequest, IndexType, MergeInsertParams, NativeDatabase, QueryRequest,
    VectorQuery,
};
use memwal_server::state::AppState;
use memwal_server::ServerConfig;

const DIM: i32 = 128;

fn rng(seed: &mut u64) -> f32 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    (*seed >> 40) as f32 / (1u64 << 24) as f32
}

fn batch(ids: std::ops::Range<i64>, seed: &mut u64) -> Data {
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Int64, false),
        Field::new(
            "v",
            DataType::FixedSizeList(Arc::new(Field::new("item", DataType::Float32, true)), DIM),
            true,
        ),
    ]));
    let n = ids.end - ids.start;
    let vecs = (0..n).map(|i| {
        let c = (i % 100) as f32;
        Some(
            (0..DIM)
                .map(|_| Some(c + rng(seed) * 0.05))
                .collect::<Vec<_>>(),
        )
    });
    let b = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(ids)),
            Arc::new(FixedSizeListArray::from_iter_primitive::<Float32Type, _, _>(vecs, DIM)),
        ],
    )
    .expect("batch");
    Data::new(schema, vec![b])
}

fn pct(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let at = |q: f64| v[((v.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e3;
    (at(0.5), at(0.99))
}

fn main() {
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let (n, m, q) = (
        *args.first().unwrap_or(&100_000),
        *args.get(1).unwrap_or(&1000),
        *args.get(2).unwrap_or(&300),
    );
    let dir = tempfile::tempdir().expect("tmp");
    let mut cfg = ServerConfig::new(dir.path());
    cfg.memwal.flush_rows = 1 << 30;
    cfg.memwal.flush_interval = Duration::from_secs(3600);
    let rt = tokio::runtime::Runtime::new().expect("rt");
    let state = Arc::new(AppState::new(cfg).expect("state"));
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    rt.block_on(state.create_table("t", batch(0..n as i64, &mut seed), CreateOptions::default()))
        .expect("create");
    let t = state.table("t").expect("table");
    let idx = IndexRequest {
        index_type: Some(IndexType::IvfPq),
        num_partitions: Some(256),
        ..IndexRequest::new("v")
    };
    rt.block_on(t.build_index(idx)).expect("index");
    let mut p = MergeInsertParams::new(vec!["id".into()]);
    p.when_matched_update_all = true;
    p.when_not_matched_insert_all = true;
    p.mem_wal = Some(true);
    let p = p.validate().expect("params");
    // Half updates of base rows, half new rows.
    let lo = (n - m / 2) as i64;
    rt.block_on(t.merge(p, batch(lo..lo + m as i64, &mut seed)))
        .expect("upsert");
    let local = NativeDatabase::open(dir.path().to_str().unwrap_or_default())
        .and_then(|db| db.open_table_sync("t"));
    let req = |s: &mut u64| {
        let c = (rng(s) * 100.0).floor();
        let mut v = VectorQuery::new((0..DIM).map(|_| c + rng(s) * 0.05).collect());
        v.tuning.nprobes = Some(20);
        v.tuning.refine_factor = std::env::var("REFINE").ok().and_then(|r| r.parse().ok());
        QueryRequest {
            limit: Some(10),
            nearest: Some(v),
            ..Default::default()
        }
    };
    let mut served = Vec::new();
    for _ in 0..q {
        let r = req(&mut seed);
        let t0 = Instant::now();
        let b = rt.block_on(t.scan(r)).expect("served search");
        served.push(t0.elapsed());
        if served.len() == 1 {
            let bytes = memwal_core::ipc::encode_file(&b[0].schema(), &b).expect("encode");
            println!(
                "answer: {} rows, {} bytes as IPC",
                b.iter().map(|x| x.num_rows()).sum::<usize>(),
                bytes.len()
            );
        }
    }
    let (a, b) = pct(served);
    println!("served ({m} buffered): p50 {a:.3} p99 {b:.3} ms");
    match local {
        Ok(l) => {
            let mut times = Vec::new();
            for _ in 0..q {
                let r = req(&mut seed);
                let t0 = Instant::now();
                l.query_sync(&r).expect("local search");
                times.push(t0.elapsed());
            }
            let (a, b) = pct(times);
            println!("local base: p50 {a:.3} p99 {b:.3} ms");
        }
        Err(e) => println!("no local handle: {e}"),
    }
}
