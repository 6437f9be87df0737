//! Search through the public API: a hand-computed BM25 example, statistics without deleted rows,
//! unindexed rows found, each query type's rule, paging, and hostile input (huge queries, 1 MB
//! documents, phrase without positions).

use memwal_fts::query::{BooleanQuery, BoostQuery, PhraseQuery};
use memwal_fts::{
    parse_full_text_query, search, Analyzer, ColumnInput, Corpus, FtsError, FtsParams, FtsQuery,
    LiveRows, MatchQuery, Operator, ScoredRow, Segment, SegmentBuilder, UnindexedRow,
};
use roaring::RoaringTreemap;
use serde_json::json;

fn plain() -> Analyzer {
    Analyzer::new(&FtsParams {
        stem: false,
        remove_stop_words: false,
        ..FtsParams::default()
    })
    .expect("analyzer")
}

fn segment(a: &Analyzer, with_position: bool, rows: &[(u64, &str)]) -> Segment {
    let mut b = SegmentBuilder::new(a, with_position);
    for (r, t) in rows {
        b.add(*r, Some(t)).expect("add");
    }
    b.finish().expect("finish")
}

fn run(
    cols: Vec<ColumnInput<'_>>,
    live: LiveRows<'_>,
    q: &FtsQuery,
) -> Result<Vec<ScoredRow>, FtsError> {
    let corpora: Vec<Corpus<'_>> = cols
        .into_iter()
        .map(|c| Corpus::new(c, live).expect("corpus"))
        .collect();
    search(&corpora, q, None, None, 0)
}

fn col<'a>(
    a: &'a Analyzer,
    segs: Vec<&'a Segment>,
    unindexed: Vec<UnindexedRow<'a>>,
) -> ColumnInput<'a> {
    ColumnInput {
        name: "t".into(),
        analyzer: a,
        with_position: true,
        segments: segs,
        unindexed,
        block_size: 2,
    }
}

fn m(terms: &str) -> FtsQuery {
    FtsQuery::Match(MatchQuery::new(Some("t".into()), terms))
}

/// "a b", "a a c", "c"; query "a": N = 3, df = 2, avgdl = 2, idf = ln 1.6.
/// Row 2 (tf 2, dl 3): 0.566579717; row 1 (tf 1, dl 2): 0.470003629 (hand-computed in bm25.rs).
#[test]
fn hand_computed_bm25_across_a_segment_and_unindexed_rows() {
    let a = plain();
    let seg = segment(&a, true, &[(1, "a b"), (2, "a a c")]);
    let fresh = vec![UnindexedRow {
        row_id: 3,
        texts: vec!["c"],
    }];
    let got = run(vec![col(&a, vec![&seg], fresh)], LiveRows::All, &m("a")).expect("search");
    assert_eq!(got.iter().map(|h| h.row_id).collect::<Vec<_>>(), vec![2, 1]);
    assert!((got[0].score - 0.566_579_7).abs() < 1e-6);
    assert!((got[1].score - 0.470_003_6).abs() < 1e-6);
}

#[test]
fn deleted_rows_are_neither_counted_nor_returned() {
    let a = plain();
    let seg = segment(
        &a,
        true,
        &[(1, "a b"), (2, "a a c"), (3, "c"), (4, "a z z z z z z")],
    );
    let mut dead = RoaringTreemap::new();
    dead.insert(4);
    let got = run(
        vec![col(&a, vec![&seg], vec![])],
        LiveRows::Except(&dead),
        &m("a"),
    )
    .expect("search");
    // The same numbers as without row 4 at all.
    assert_eq!(got.iter().map(|h| h.row_id).collect::<Vec<_>>(), vec![2, 1]);
    assert!((got[0].score - 0.566_579_7).abs() < 1e-6);
}

#[test]
fn operators_phrase_boost_and_boolean() {
    let a = plain();
    let seg = segment(
        &a,
        true,
        &[
            (1, "quick brown fox"),
            (2, "brown quick dog"),
            (3, "quick dog"),
        ],
    );
    let c = || vec![col(&a, vec![&seg], vec![])];
    let rows = |r: Vec<ScoredRow>| r.iter().map(|h| h.row_id).collect::<Vec<_>>();
    let and = FtsQuery::Match(MatchQuery {
        operator: Operator::And,
        ..MatchQuery::new(Some("t".into()), "brown quick")
    });
    assert_eq!(rows(run(c(), LiveRows::All, &and).expect("and")).len(), 2);
    let phrase = FtsQuery::Phrase(PhraseQuery {
        column: Some("t".into()),
        terms: "quick brown".into(),
        slop: 0,
    });
    assert_eq!(
        rows(run(c(), LiveRows::All, &phrase).expect("phrase")),
        vec![1]
    );
    let boost = FtsQuery::Boost(BoostQuery {
        positive: Box::new(m("quick")),
        negative: Box::new(m("dog")),
        negative_boost: 0.5,
    });
    let got = run(c(), LiveRows::All, &boost).expect("boost");
    assert_eq!(got[0].row_id, 1, "the row without dog wins");
    let boolean = FtsQuery::Boolean(BooleanQuery {
        must: vec![m("quick")],
        must_not: vec![m("fox")],
        should: vec![m("brown")],
    });
    assert_eq!(
        rows(run(c(), LiveRows::All, &boolean).expect("bool")),
        vec![2, 3]
    );
    let fuzzy = FtsQuery::Match(MatchQuery {
        fuzziness: Some(1),
        ..MatchQuery::new(Some("t".into()), "dig")
    });
    assert_eq!(
        rows(run(c(), LiveRows::All, &fuzzy).expect("fuzzy")),
        vec![3, 2]
    );
}

#[test]
fn phrase_without_positions_gives_lances_error() {
    let a = plain();
    let seg = segment(&a, false, &[(1, "a b")]);
    let c = ColumnInput {
        with_position: false,
        ..col(&a, vec![&seg], vec![])
    };
    let q = parse_full_text_query(&json!({"columns": ["t"], "query": "\"a b\""})).expect("parse");
    let err = run(vec![c], LiveRows::All, &q)
        .expect_err("no positions")
        .to_string();
    assert_eq!(err, "position is not found but required for phrase queries, try recreating the index with position");
}

#[test]
fn paging_filter_and_tie_order() {
    let a = plain();
    let rows: Vec<(u64, String)> = (0..20).map(|i| (i, "same text".to_string())).collect();
    let refs: Vec<(u64, &str)> = rows.iter().map(|(r, t)| (*r, t.as_str())).collect();
    let seg = segment(&a, true, &refs);
    let corpora = vec![Corpus::new(col(&a, vec![&seg], vec![]), LiveRows::All).expect("corpus")];
    let keep = |r: u64| r.is_multiple_of(2);
    let got = search(&corpora, &m("same"), Some(&keep), Some(3), 2).expect("search");
    assert_eq!(
        got.iter().map(|h| h.row_id).collect::<Vec<_>>(),
        vec![4, 6, 8]
    );
    assert!(search(&corpora, &m("same"), None, Some(5), 100)
        .expect("past the end")
        .is_empty());
}

#[test]
fn hostile_input_gets_clear_errors_and_bounded_work() {
    let a = Analyzer::new(&FtsParams::default()).expect("analyzer");
    let big = "lorem ipsum dolor sit amet ".repeat(40_000); // ~1 MB
    let seg = segment(&a, true, &[(1, &big), (2, ""), (3, "\0\u{fffd}\u{10ffff}")]);
    let c = || vec![col(&a, vec![&seg], vec![])];
    assert_eq!(
        run(c(), LiveRows::All, &m("ipsum")).expect("1 MB doc")[0].row_id,
        1
    );
    assert!(run(c(), LiveRows::All, &m("")).expect("empty").is_empty());
    assert!(run(c(), LiveRows::All, &m("the and of"))
        .expect("stop words only")
        .is_empty());
    let huge: String = (0..10_000).map(|i| format!("w{i} ")).collect();
    let err = run(c(), LiveRows::All, &m(&huge))
        .expect_err("10k terms")
        .to_string();
    assert!(err.contains("more than 1024 terms"), "{err}");
    // Any distance is a legal fuzziness, as in Lance (the expansion cap bounds the work);
    // a negative one is refused by field.
    let wide = parse_full_text_query(
        &json!({"query": {"match": {"column": "t", "terms": "a", "fuzziness": 100}}}),
    )
    .expect("fuzziness 100");
    assert!(!run(c(), LiveRows::All, &wide).expect("wide").is_empty());
    let err = parse_full_text_query(
        &json!({"query": {"match": {"column": "t", "terms": "a", "fuzziness": -1}}}),
    )
    .expect_err("negative fuzziness")
    .to_string();
    assert!(err.contains("fuzziness"), "{err}");
    let err = run(
        vec![col(&a, vec![], vec![])],
        LiveRows::All,
        &FtsQuery::Match(MatchQuery::new(Some("nope".into()), "a")),
    )
    .expect_err("unknown column")
    .to_string();
    assert!(err.contains("no FTS index"), "{err}");
}

/// LanceDB splits a fuzzy query with the base tokenizer alone: no lower case, stemming, stop words
/// or folding (measured on its engine: "Runs"~1 finds nothing, "runs"~1 finds "run", "the"~1 finds
/// "ahe").
#[test]
fn fuzzy_terms_are_not_analyzed() {
    let a = Analyzer::new(&FtsParams::default()).expect("analyzer");
    let seg = segment(&a, true, &[(1, "ahe zzz"), (2, "glue"), (3, "runs")]);
    let fuzzy = |terms: &str| {
        FtsQuery::Match(MatchQuery {
            fuzziness: Some(1),
            ..MatchQuery::new(Some("t".into()), terms)
        })
    };
    let rows = |q: &FtsQuery| {
        run(vec![col(&a, vec![&seg], vec![])], LiveRows::All, q)
            .expect("search")
            .iter()
            .map(|h| h.row_id)
            .collect::<Vec<_>>()
    };
    assert!(rows(&fuzzy("Runs")).is_empty());
    assert_eq!(rows(&fuzzy("runs")), vec![3]);
    assert_eq!(rows(&fuzzy("the")), vec![1]);
    assert_eq!(rows(&fuzzy("glues")), vec![2]);
    assert_eq!(rows(&m("Runs")), vec![3], "exact terms are analyzed");
}

/// A list of strings is one document per row, positions running on across elements (a phrase may
/// span two). The scores are LanceDB's own for the same rows (measured with lancedb 0.40).
#[test]
fn lists_of_strings_score_as_lancedb() {
    let a = Analyzer::new(&FtsParams::default()).expect("analyzer");
    let mut b = SegmentBuilder::new(&a, true);
    b.add_texts(1, ["quick", "brown fox"]).expect("add");
    b.add_texts(2, ["quick brown"]).expect("add");
    b.add_texts(3, ["xq", "xq", "dog"]).expect("add");
    let seg = b.finish().expect("segment");
    let phrase = FtsQuery::Phrase(PhraseQuery {
        column: Some("t".into()),
        terms: "quick brown".into(),
        slop: 0,
    });
    let got = run(vec![col(&a, vec![&seg], vec![])], LiveRows::All, &phrase).expect("phrase");
    let want = [(2, 1.047_096_7), (1, 0.894_277_2)];
    assert_eq!(got.len(), 2);
    for (g, (row, score)) in got.iter().zip(want) {
        assert_eq!(g.row_id, row);
        assert!((g.score - score).abs() < 1e-5, "{} vs {score}", g.score);
    }
    let got = run(
        vec![col(&a, vec![&seg], vec![])],
        LiveRows::All,
        &m("quick"),
    )
    .expect("match");
    assert!((got[0].score - 0.523_548_4).abs() < 1e-5 && (got[1].score - 0.447_138_6).abs() < 1e-5);
}
