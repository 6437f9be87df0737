//! Block-max WAND against the exhaustive walk on corpora large enough to have many blocks: for
//! random Or matches (several terms, fuzzy ones, boosts), limits, offsets, block sizes, deleted
//! rows, a caller's filter and segments whose row ids interleave, the page equals the exhaustive
//! answer's page row for row, scores included.

use memwal_fts::{
    search, Analyzer, ColumnInput, Corpus, FtsParams, FtsQuery, LiveRows, MatchQuery, Segment,
    SegmentBuilder, UnindexedRow,
};
use proptest::prelude::*;
use roaring::RoaringTreemap;

const VOCAB: [&str; 12] = [
    "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa", "lam", "mu",
];

/// A document: Zipf-ish words, so some terms are in most documents and others in few.
fn doc_strategy() -> impl Strategy<Value = String> {
    proptest::collection::vec(0u32..1000, 1..14).prop_map(|ws| {
        ws.into_iter()
            .map(|u| {
                let x = f64::from(u) / 1000.0;
                VOCAB[((x * x) * VOCAB.len() as f64) as usize % VOCAB.len()]
            })
            .collect::<Vec<_>>()
            .join(" ")
    })
}

#[derive(Debug, Clone)]
struct Case {
    docs: Vec<String>,
    /// Which segment each document goes to (the last one is the unindexed rows).
    home: Vec<u8>,
    dead_every: u64,
    keep_every: u64,
    terms: Vec<usize>,
    fuzzy: bool,
    boost: f32,
    limit: usize,
    offset: usize,
    block_size: usize,
}

fn case_strategy() -> impl Strategy<Value = Case> {
    (
        proptest::collection::vec((doc_strategy(), 0u8..3), 20..400),
        (0u64..6, 0u64..5),
        proptest::collection::vec(0usize..VOCAB.len() + 2, 1..5),
        (any::<bool>(), prop_oneof![Just(1.0f32), 0.1f32..4.0]),
        (0usize..25, 0usize..6, 1usize..9),
    )
        .prop_map(
            |(docs, (dead_every, keep_every), terms, (fuzzy, boost), (limit, offset, bs))| Case {
                home: docs.iter().map(|d| d.1).collect(),
                docs: docs.into_iter().map(|d| d.0).collect(),
                dead_every,
                keep_every,
                terms,
                fuzzy,
                boost,
                limit,
                offset,
                block_size: bs,
            },
        )
}

fn run(c: &Case, paged: bool) -> Vec<(u64, f32)> {
    let a = Analyzer::new(&FtsParams {
        stem: false,
        remove_stop_words: false,
        ..FtsParams::default()
    })
    .expect("analyzer");
    // Row ids interleave across segments: row i is 3 * i + its segment, spread over them all.
    let row = |i: usize| 3 * i as u64 + u64::from(c.home[i]);
    let mut builders = [
        SegmentBuilder::new(&a, false),
        SegmentBuilder::new(&a, false),
    ];
    let mut unindexed = Vec::new();
    for (i, d) in c.docs.iter().enumerate() {
        match c.home[i] {
            h @ 0..=1 => builders[h as usize].add(row(i), Some(d)).expect("add"),
            _ => unindexed.push(UnindexedRow {
                row_id: row(i),
                texts: vec![d.as_str()],
            }),
        }
    }
    let [b0, b1] = builders;
    let segs: Vec<Segment> = vec![b0.finish().expect("seg"), b1.finish().expect("seg")];
    let mut dead = RoaringTreemap::new();
    if c.dead_every > 0 {
        dead.extend(
            (0..c.docs.len())
                .map(row)
                .filter(|r| r.is_multiple_of(c.dead_every + 1)),
        );
    }
    let input = ColumnInput {
        name: "t".into(),
        analyzer: &a,
        with_position: false,
        segments: segs.iter().collect(),
        unindexed,
        block_size: c.block_size,
    };
    let corpus = Corpus::new(input, LiveRows::Except(&dead)).expect("corpus");
    let words: Vec<&str> = c
        .terms
        .iter()
        .map(|&t| VOCAB.get(t).copied().unwrap_or("nothing"))
        .collect();
    let mut m = MatchQuery::new(Some("t".into()), words.join(" "));
    m.fuzziness = Some(u32::from(c.fuzzy));
    m.boost = c.boost;
    let keep_every = c.keep_every;
    let keep = move |r: u64| keep_every == 0 || !r.is_multiple_of(keep_every + 1);
    let q = FtsQuery::Match(m);
    let got = if paged {
        search(&[corpus], &q, Some(&keep), Some(c.limit), c.offset)
    } else {
        search(&[corpus], &q, Some(&keep), None, 0)
    };
    let rows: Vec<(u64, f32)> = got
        .expect("search")
        .into_iter()
        .map(|h| (h.row_id, h.score))
        .collect();
    if paged {
        rows
    } else {
        rows.into_iter().skip(c.offset).take(c.limit).collect()
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]
    #[test]
    fn a_page_by_block_max_wand_equals_the_exhaustive_page(c in case_strategy()) {
        prop_assert_eq!(run(&c, true), run(&c, false));
    }
}
