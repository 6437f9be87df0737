//! Component benchmark of the engine alone (no table, no Arrow, no I/O): builds one segment over
//! N generated documents of ~50 tokens (Zipf-ish vocabulary of 20k words), encodes and decodes it,
//! and times single-term, 3-term OR, 3-term AND and phrase queries (top 10), with 1% of the rows
//! deleted and (by default) 1,000 unindexed rows tokenized per query as a served table would have them.
//! Run: `cargo run -p memwal-fts --release --example fts_bench -- DOCS [UNINDEXED_ROWS]`.

use std::time::Instant;

use memwal_fts::query::PhraseQuery;
use memwal_fts::{
    codec, search, Analyzer, ColumnInput, Corpus, FtsParams, FtsQuery, LiveRows, MatchQuery,
    Operator, SegmentBuilder, UnindexedRow,
};
use roaring::RoaringTreemap;

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn word(&mut self) -> String {
        let u = (self.next() % 1_000_000) as f64 / 1_000_000.0;
        format!("w{}", (u.powi(4) * 20_000.0) as u64)
    }
    fn doc(&mut self) -> String {
        (0..50).map(|_| self.word()).collect::<Vec<_>>().join(" ")
    }
}

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let docs: Vec<String> = (0..n).map(|_| rng.doc()).collect();
    let params = FtsParams {
        with_position: true,
        ..FtsParams::default()
    };
    let analyzer = Analyzer::new(&params).expect("analyzer");
    let t = Instant::now();
    let mut b = SegmentBuilder::new(&analyzer, true);
    for (i, d) in docs.iter().enumerate() {
        b.add(i as u64, Some(d)).expect("add");
    }
    let seg = b.finish().expect("finish");
    let build = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let bytes = codec::encode(&seg);
    let enc = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let seg = codec::decode(&bytes).expect("decode");
    let dec = t.elapsed().as_secs_f64();
    // As a table loads an index: the block summaries are made with it, off the query path.
    let t = Instant::now();
    seg.prepare_blocks(memwal_fts::DEFAULT_BLOCK_SIZE);
    let blocks = t.elapsed().as_secs_f64();
    println!("build {n} docs: {build:.2}s = {:.0} docs/s; {} terms; {:.1} MB; encode {enc:.2}s decode {dec:.2}s blocks {blocks:.2}s", n as f64 / build, seg.terms().len(), bytes.len() as f64 / 1e6);
    let mut dead = RoaringTreemap::new();
    (0..n).step_by(100).for_each(|r| {
        dead.insert(r);
    });
    let unindexed_rows: usize = std::env::args()
        .nth(2)
        .and_then(|s| s.parse().ok())
        .unwrap_or(1000);
    let fresh: Vec<String> = (0..unindexed_rows).map(|_| rng.doc()).collect();
    let queries: Vec<(&str, FtsQuery)> = vec![
        ("single", mq("w5", Operator::Or)),
        ("3-term OR", mq("w5 w40 w300", Operator::Or)),
        ("3-term AND", mq("w5 w40 w300", Operator::And)),
        (
            "phrase",
            FtsQuery::Phrase(PhraseQuery {
                column: Some("t".into()),
                terms: "w1 w2".into(),
                slop: 0,
            }),
        ),
    ];
    for (name, q) in &queries {
        let mut times = Vec::new();
        for _ in 0..30 {
            let t = Instant::now();
            let unindexed = fresh
                .iter()
                .enumerate()
                .map(|(i, d)| UnindexedRow {
                    row_id: n + i as u64,
                    texts: vec![d.as_str()],
                })
                .collect();
            let input = ColumnInput {
                name: "t".into(),
                analyzer: &analyzer,
                with_position: true,
                segments: vec![&seg],
                unindexed,
                block_size: memwal_fts::DEFAULT_BLOCK_SIZE,
            };
            let corpora = vec![Corpus::new(input, LiveRows::Except(&dead)).expect("corpus")];
            let hits = search(&corpora, q, None, Some(10), 0).expect("search");
            assert!(!hits.is_empty());
            times.push(t.elapsed().as_secs_f64() * 1e3);
        }
        times.sort_by(f64::total_cmp);
        println!(
            "{name:>10}: p50 {:.2} ms, p99 {:.2} ms",
            times[times.len() / 2],
            times[times.len() - 1]
        );
    }
}

fn mq(terms: &str, operator: Operator) -> FtsQuery {
    FtsQuery::Match(MatchQuery {
        operator,
        ..MatchQuery::new(Some("t".into()), terms)
    })
}
