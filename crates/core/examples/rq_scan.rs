//! Times IVF_RQ's per-row estimate at 1536 dimensions, 1 and 4 bits (`cargo run --release -p memwal-core --example rq_scan`).
use memwal_core::index::rq::Rq;
use std::time::Instant;

fn main() {
    let dim = 1536;
    let n = 5000;
    let mut s = 1u64;
    let mut rnd = || {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        (s % 2000) as f32 / 1000.0 - 1.0
    };
    let data: Vec<f32> = (0..n * dim).map(|_| rnd()).collect();
    let q: Vec<f32> = (0..dim).map(|_| rnd()).collect();
    for bits in [1u8, 4] {
        let rq = Rq::new(dim, bits, 3).expect("rq").attach(&vec![0.0; dim]);
        let codes = rq.encode(&data, &vec![0; n]).expect("encode");
        let mut t = vec![0f32; dim];
        rq.rotate(&q, &mut t);
        let mut table = Vec::new();
        let t0 = Instant::now();
        let mut acc = 0f32;
        for _ in 0..20 {
            let sum = rq.table(&t, &mut table);
            for c in codes.chunks_exact(rq.code_width()) {
                acc += rq.estimate(&table, sum, c).1;
            }
        }
        let est = t0.elapsed().as_nanos() as f64 / (20 * n) as f64;
        let t0 = Instant::now();
        if bits > 1 {
            for _ in 0..20 {
                let sum = rq.table(&t, &mut table);
                for c in codes.chunks_exact(rq.code_width()) {
                    acc += rq.first_stage(&table, sum, c).1;
                }
            }
        }
        let first = t0.elapsed().as_nanos() as f64 / (20 * n) as f64;
        println!("bits {bits}: estimate {est:.0} ns/row, first stage {first:.0} ns/row ({acc})");
    }
}
