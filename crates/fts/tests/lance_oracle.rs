//! Our scores against LanceDB's own engine: writes a generated corpus, index parameters and queries
//! with our answers to a file and runs `lance_oracle.py` with the official Python client (the
//! `.venv-compat` venv `scripts/test.sh` installs, or `MEMWAL_COMPAT_PYTHON`). Fails when neither
//! exists: a missing oracle is never a silent pass. Everything indexed: rows and scores (1e-3) equal, with the default analyzer
//! and with stemming only. Rows added after the build plus deleted rows: the same rows match, but
//! scores differ by design: LanceDB (0.40 measured) counts deleted rows in its statistics and scores
//! the unindexed rows with other statistics than the indexed ones, and its fuzzy matches miss the
//! unindexed rows; ours are one set of live statistics over every row (issue 26).

use std::path::PathBuf;
use std::process::Command;

use memwal_fts::query::{BooleanQuery, BoostQuery, MultiMatchQuery, PhraseQuery};
use memwal_fts::{
    search, Analyzer, ColumnInput, Corpus, FtsParams, FtsQuery, LiveRows, MatchQuery, Operator,
    SegmentBuilder, UnindexedRow,
};
use roaring::RoaringTreemap;
use serde_json::json;

const WORDS: &[&str] = &[
    "the",
    "a",
    "and",
    "of",
    "fox",
    "foxes",
    "dog",
    "dogs",
    "running",
    "runs",
    "run",
    "runner",
    "quick",
    "quickly",
    "brown",
    "lazy",
    "jumped",
    "jumps",
    "river",
    "rivers",
    "bank",
    "banking",
    "banks",
    "café",
    "cafés",
    "Résumé",
    "tree",
    "trees",
    "blue",
    "glue",
    "clue",
    "search",
    "searching",
    "searched",
    "index",
    "indexes",
    "table",
    "tables",
];

struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn text(&mut self, max: u64) -> String {
        let n = 1 + self.next() % max;
        (0..n)
            .map(|_| {
                let u = (self.next() % 10_000) as f64 / 10_000.0;
                WORDS[(u * u * WORDS.len() as f64) as usize]
            })
            .collect::<Vec<_>>()
            .join(" ")
    }
}

fn python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("MEMWAL_COMPAT_PYTHON") {
        return Some(PathBuf::from(p));
    }
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../.venv-compat/bin/python");
    p.exists().then_some(p)
}

fn mq(col: &str, terms: &str, op: Operator, fuzziness: u32) -> FtsQuery {
    FtsQuery::Match(MatchQuery {
        operator: op,
        fuzziness: Some(fuzziness),
        ..MatchQuery::new(Some(col.into()), terms)
    })
}

fn queries() -> Vec<FtsQuery> {
    let mut qs = Vec::new();
    for terms in [
        "fox",
        "running dogs",
        "the quick brown fox",
        "cafe",
        "RÉSUMÉ banking",
        "searched indexes tables",
        // A repeated term counts each time it is asked (LanceDB scores "fox fox" twice "fox").
        "fox fox dog",
        "dogs dog dogs",
    ] {
        for col in ["a", "b"] {
            qs.push(mq(col, terms, Operator::Or, 0));
            qs.push(mq(col, terms, Operator::And, 0));
        }
    }
    for terms in ["dig", "rivr", "tabl", "glues", "dig dig", "dig dog"] {
        qs.push(mq("a", terms, Operator::Or, 1));
    }
    // Two query terms expanding to the same dictionary terms, under a tight expansion budget.
    qs.push(FtsQuery::Match(MatchQuery {
        max_expansions: 3,
        ..match mq("a", "dog dig", Operator::Or, 1) {
            FtsQuery::Match(m) => m,
            _ => unreachable!(),
        }
    }));
    for (terms, slop) in [
        ("quick brown", 0),
        ("brown fox", 1),
        ("the dog", 0),
        ("lazy dogs run", 2),
        ("dog dog", 3),
    ] {
        qs.push(FtsQuery::Phrase(PhraseQuery {
            column: Some("a".into()),
            terms: terms.into(),
            slop,
        }));
    }
    qs.push(FtsQuery::Boost(BoostQuery {
        positive: Box::new(mq("a", "fox dog", Operator::Or, 0)),
        negative: Box::new(mq("a", "lazy", Operator::Or, 0)),
        negative_boost: 0.5,
    }));
    qs.push(FtsQuery::MultiMatch(MultiMatchQuery {
        query: "river bank".into(),
        columns: vec!["a".into(), "b".into()],
        boost: Some(vec![2.0, 1.0]),
        operator: Operator::Or,
    }));
    qs.push(FtsQuery::Boolean(BooleanQuery {
        must: vec![mq("a", "fox", Operator::Or, 0)],
        should: vec![mq("a", "quick", Operator::Or, 0)],
        must_not: vec![mq("a", "lazy", Operator::Or, 0)],
    }));
    qs
}

struct Row {
    id: u64,
    a: String,
    b: String,
}

fn run(name: &str, params_json: serde_json::Value, added: usize, deleted: &[u64]) {
    let Some(py) = python() else {
        panic!("lance_oracle {name}: no .venv-compat (scripts/test.sh makes it) and no MEMWAL_COMPAT_PYTHON: the oracle is required, never skipped");
    };
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let rows: Vec<Row> = (0..300)
        .map(|id| Row {
            id,
            a: rng.text(12),
            b: rng.text(4),
        })
        .collect();
    let extra: Vec<Row> = (300..300 + added as u64)
        .map(|id| Row {
            id,
            a: rng.text(12),
            b: rng.text(4),
        })
        .collect();
    let params = FtsParams::from_json(&params_json).expect("params");
    let analyzer = Analyzer::new(&params).expect("analyzer");
    let mut dead = RoaringTreemap::new();
    deleted.iter().for_each(|&d| {
        dead.insert(d);
    });
    let mut segments = Vec::new();
    for col in 0..2 {
        let mut b = SegmentBuilder::new(&analyzer, true);
        for r in &rows {
            b.add(r.id, Some(if col == 0 { &r.a } else { &r.b }))
                .expect("add");
        }
        segments.push(b.finish().expect("segment"));
    }
    let corpora: Vec<Corpus<'_>> = ["a", "b"]
        .iter()
        .enumerate()
        .map(|(c, name)| {
            let unindexed = extra
                .iter()
                .filter(|r| !dead.contains(r.id))
                .map(|r| UnindexedRow {
                    row_id: r.id,
                    texts: vec![if c == 0 { r.a.as_str() } else { r.b.as_str() }],
                })
                .collect();
            let input = ColumnInput {
                name: name.to_string(),
                analyzer: &analyzer,
                with_position: true,
                segments: vec![&segments[c]],
                unindexed,
                block_size: memwal_fts::DEFAULT_BLOCK_SIZE,
            };
            Corpus::new(input, LiveRows::Except(&dead)).expect("corpus")
        })
        .collect();
    let cases: Vec<serde_json::Value> = queries()
        .into_iter()
        .map(|q| {
            let ours: Vec<(u64, f32)> = search(&corpora, &q, None, None, 0)
                .expect("search")
                .into_iter()
                .map(|h| (h.row_id, h.score))
                .collect();
            json!({"query": q, "ours": ours})
        })
        .collect();
    let as_json = |rs: &[Row]| {
        rs.iter()
            .map(|r| json!({"id": r.id, "a": r.a, "b": r.b}))
            .collect::<Vec<_>>()
    };
    let body = json!({"compare_scores": added == 0 && deleted.is_empty(), "params": params_json, "rows": as_json(&rows), "added": as_json(&extra), "deleted": deleted, "queries": cases});
    let dir = std::env::temp_dir().join(format!("memwal-fts-oracle-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let file = dir.join("cases.json");
    std::fs::write(&file, serde_json::to_vec(&body).expect("json")).expect("write");
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/lance_oracle.py");
    let out = Command::new(py)
        .arg(&script)
        .arg(&file)
        .output()
        .expect("run python");
    let stdout = String::from_utf8_lossy(&out.stdout);
    eprintln!("lance_oracle {name}: {stdout}");
    assert!(
        out.status.success(),
        "LanceDB disagrees ({name}):\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stemming_only_equals_lancedb() {
    run(
        "stem",
        json!({"with_position": true, "stem": true, "remove_stop_words": false, "ascii_folding": false}),
        0,
        &[],
    );
}

#[test]
fn everything_indexed_equals_lancedb() {
    run("indexed", json!({"with_position": true}), 0, &[]);
}

#[test]
fn unindexed_and_deleted_rows_equal_lancedb() {
    run(
        "fresh",
        json!({"with_position": true}),
        40,
        &[3, 7, 150, 310],
    );
}
