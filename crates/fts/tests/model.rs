//! Model test: random documents from a small Zipf-ish vocabulary, random adds, deletes and updates
//! (an update is a delete plus a new row id: the old row is superseded), rows sealed into several
//! segments (through the codec) or left unindexed, and every query type compared with a plain
//! reference scorer written here: brute force over the live rows with the same analyzer, global
//! statistics, no index. Scores within 1e-4 relative, identical order.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use memwal_fts::bm25::{idf, term_score};
use memwal_fts::query::{BooleanQuery, BoostQuery, MultiMatchQuery, PhraseQuery};
use memwal_fts::{
    codec, search, Analyzer, ColumnInput, Corpus, FtsParams, FtsQuery, LiveRows, MatchQuery,
    Operator, Segment, SegmentBuilder, UnindexedRow,
};
use proptest::prelude::*;
use roaring::RoaringTreemap;

const VOCAB: &[&str] = &[
    "fox", "dog", "the", "runs", "running", "run", "quick", "brown", "lazy", "jumps", "over",
    "and", "cat", "cats", "foxes", "river", "rover", "bank", "banks", "tree", "trees", "a", "blue",
    "glue", "clue", "fax", "dig", "dug",
];
const COLUMNS: [&str; 2] = ["a", "b"];

fn word(u: u32) -> &'static str {
    // Zipf-ish: low indexes far more often.
    let x = (u % 10_000) as f64 / 10_000.0;
    VOCAB[((x * x * x) * VOCAB.len() as f64) as usize % VOCAB.len()]
}

fn text_strategy() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        12 => proptest::collection::vec(any::<u32>(), 0..12)
            .prop_map(|ws| Some(ws.into_iter().map(word).collect::<Vec<_>>().join(" "))),
    ]
}

#[derive(Debug, Clone)]
enum Op {
    Add(Option<String>, Option<String>),
    Delete(usize),
    Update(usize, Option<String>, Option<String>),
    Seal,
}

fn op_strategy() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (text_strategy(), text_strategy()).prop_map(|(a, b)| Op::Add(a, b)),
        1 => any::<usize>().prop_map(Op::Delete),
        1 => (any::<usize>(), text_strategy(), text_strategy()).prop_map(|(i, a, b)| Op::Update(i, a, b)),
        1 => Just(Op::Seal),
    ]
}

fn terms_strategy(n: std::ops::Range<usize>) -> impl Strategy<Value = String> {
    proptest::collection::vec(any::<u32>(), n)
        .prop_map(|ws| ws.into_iter().map(word).collect::<Vec<_>>().join(" "))
}

fn match_strategy() -> impl Strategy<Value = FtsQuery> {
    (
        prop::sample::select(vec![Some("a"), Some("b"), None]),
        terms_strategy(1..4),
        prop::sample::select(vec![Some(0u32), Some(0), Some(1), None]),
        prop::bool::ANY,
        prop::sample::select(vec![1.0f32, 2.5]),
        0usize..4,
        0u32..2,
    )
        .prop_map(
            |(column, terms, fuzziness, and, boost, exp, prefix_length)| {
                FtsQuery::Match(MatchQuery {
                    column: column.map(str::to_string),
                    terms,
                    boost,
                    fuzziness,
                    max_expansions: [50, 1, 2, 3][exp],
                    operator: if and { Operator::And } else { Operator::Or },
                    prefix_length,
                })
            },
        )
}

fn leaf_strategy() -> impl Strategy<Value = FtsQuery> {
    prop_oneof![
        4 => match_strategy(),
        2 => (prop::sample::select(vec!["a", "b"]), terms_strategy(2..4), 0u32..3).prop_map(|(c, terms, slop)| {
            FtsQuery::Phrase(PhraseQuery { column: Some(c.to_string()), terms, slop })
        }),
        1 => (terms_strategy(1..3), prop::sample::select(vec![1.0f32, 3.0])).prop_map(|(query, boost)| {
            FtsQuery::MultiMatch(MultiMatchQuery {
                query,
                columns: vec!["a".into(), "b".into()],
                boost: Some(vec![boost, 1.0]),
                operator: Operator::Or,
            })
        }),
    ]
}

fn query_strategy() -> impl Strategy<Value = FtsQuery> {
    leaf_strategy().prop_recursive(2, 8, 3, |inner| {
        prop_oneof![
            (
                inner.clone(),
                inner.clone(),
                prop::sample::select(vec![0.5f32, 0.0, 2.0])
            )
                .prop_map(|(p, n, w)| {
                    FtsQuery::Boost(BoostQuery {
                        positive: Box::new(p),
                        negative: Box::new(n),
                        negative_boost: w,
                    })
                }),
            (
                proptest::collection::vec(inner.clone(), 0..3),
                proptest::collection::vec(inner.clone(), 0..3),
                proptest::collection::vec(inner, 0..2)
            )
                .prop_map(|(must, should, must_not)| FtsQuery::Boolean(BooleanQuery {
                    should,
                    must,
                    must_not
                })),
        ]
    })
}

/// The table: rows by id with both columns' texts, which are live, and the segments per column.
struct World {
    rows: BTreeMap<u64, [Option<String>; 2]>,
    dead: RoaringTreemap,
    sealed: BTreeSet<u64>,
    segments: [Vec<Segment>; 2],
    next: u64,
}

impl World {
    fn apply(&mut self, op: Op, analyzer: &Analyzer) {
        match op {
            Op::Add(a, b) => {
                self.rows.insert(self.next, [a, b]);
                self.next += 1;
            }
            Op::Delete(i) | Op::Update(i, ..) if self.live().is_empty() => {
                let _ = i;
            }
            Op::Delete(i) => {
                let live = self.live();
                self.dead.insert(live[i % live.len()]);
            }
            Op::Update(i, a, b) => {
                let live = self.live();
                self.dead.insert(live[i % live.len()]);
                self.rows.insert(self.next, [a, b]);
                self.next += 1;
            }
            Op::Seal => self.seal(analyzer),
        }
    }

    fn live(&self) -> Vec<u64> {
        self.rows
            .keys()
            .copied()
            .filter(|r| !self.dead.contains(*r))
            .collect()
    }

    /// Builds one segment per column from every row not sealed yet (dead ones too: a segment
    /// keeps rows deleted after it was built) and stores it through the codec.
    fn seal(&mut self, analyzer: &Analyzer) {
        let fresh: Vec<u64> = self
            .rows
            .keys()
            .copied()
            .filter(|r| !self.sealed.contains(r))
            .collect();
        if fresh.is_empty() {
            return;
        }
        for (c, segs) in self.segments.iter_mut().enumerate() {
            let mut b = SegmentBuilder::new(analyzer, true);
            // Rows in reverse to exercise the builder's sort.
            for r in fresh.iter().rev() {
                b.add(*r, self.rows[r][c].as_deref()).expect("add");
            }
            let seg = b.finish().expect("finish");
            segs.push(codec::decode(&codec::encode(&seg)).expect("round trip"));
        }
        self.sealed.extend(fresh);
    }
}

// ---------------------------------------------------------------- the reference scorer

struct RefDoc {
    len: u32,
    tokens: Vec<(String, u32)>,
}

struct RefColumn {
    docs: BTreeMap<u64, RefDoc>,
    df: HashMap<String, u64>,
    n: u64,
    avgdl: f64,
}

fn ref_column(world: &World, c: usize, analyzer: &Analyzer) -> RefColumn {
    let mut docs = BTreeMap::new();
    let mut df: HashMap<String, u64> = HashMap::new();
    let mut total = 0u64;
    for r in world.live() {
        let Some(text) = &world.rows[&r][c] else {
            continue;
        };
        let tokens: Vec<(String, u32)> = analyzer
            .tokens(text)
            .expect("tokens")
            .into_iter()
            .map(|t| (t.text, t.position))
            .collect();
        if tokens.is_empty() {
            continue; // no tokens, no document (Lance)
        }
        let distinct: BTreeSet<&String> = tokens.iter().map(|(t, _)| t).collect();
        for t in distinct {
            *df.entry(t.clone()).or_default() += 1;
        }
        total += tokens.len() as u64;
        docs.insert(
            r,
            RefDoc {
                len: tokens.len() as u32,
                tokens,
            },
        );
    }
    let n = docs.len() as u64;
    let avgdl = if n == 0 || total == 0 {
        1.0
    } else {
        total as f64 / n as f64
    };
    RefColumn { docs, df, n, avgdl }
}

impl RefColumn {
    fn score(&self, term: &str, doc: &RefDoc) -> Option<f64> {
        let tf = doc.tokens.iter().filter(|(t, _)| t == term).count() as u32;
        (tf > 0).then(|| term_score(idf(self.n, self.df[term]), tf, doc.len, self.avgdl))
    }
}

fn lev(a: &str, b: &str) -> usize {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let mut d: Vec<Vec<usize>> = (0..=a.len()).map(|i| vec![i; b.len() + 1]).collect();
    for (j, cell) in d[0].iter_mut().enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            d[i][j] = (d[i - 1][j - 1] + usize::from(a[i - 1] != b[j - 1]))
                .min(d[i - 1][j] + 1)
                .min(d[i][j - 1] + 1);
        }
    }
    d[a.len()][b.len()]
}

struct Reference<'w> {
    cols: [RefColumn; 2],
    analyzer: &'w Analyzer,
}

type Out = BTreeMap<u64, f64>;

impl Reference<'_> {
    fn col(&self, name: &str) -> &RefColumn {
        &self.cols[COLUMNS.iter().position(|c| *c == name).expect("column")]
    }

    fn analyze(&self, text: &str) -> Vec<(String, u32)> {
        self.analyzer
            .tokens(text)
            .expect("tokens")
            .into_iter()
            .map(|t| (t.text, t.position))
            .collect()
    }

    fn eval(&self, q: &FtsQuery) -> Out {
        match q {
            FtsQuery::Match(m) => match &m.column {
                Some(c) => self.matches(self.col(c), m),
                None => self.eval(&FtsQuery::MultiMatch(MultiMatchQuery {
                    query: m.terms.clone(),
                    columns: COLUMNS.iter().map(|c| c.to_string()).collect(),
                    boost: Some(vec![m.boost; 2]),
                    operator: m.operator,
                })),
            },
            FtsQuery::Phrase(p) => self.phrase(self.col(p.column.as_deref().expect("column")), p),
            FtsQuery::Boost(b) => {
                let (pos, neg) = (self.eval(&b.positive), self.eval(&b.negative));
                pos.into_iter()
                    .map(|(r, s)| {
                        (
                            r,
                            s - f64::from(b.negative_boost) * neg.get(&r).copied().unwrap_or(0.0),
                        )
                    })
                    .collect()
            }
            FtsQuery::MultiMatch(mm) => {
                let mut best = Out::new();
                for (i, c) in mm.columns.iter().enumerate() {
                    let boost = mm.boost.as_ref().map_or(1.0, |b| b[i]);
                    let m = MatchQuery {
                        boost,
                        operator: mm.operator,
                        ..MatchQuery::new(Some(c.clone()), mm.query.clone())
                    };
                    for (r, s) in self.matches(self.col(c), &m) {
                        let e = best.entry(r).or_insert(s);
                        *e = e.max(s);
                    }
                }
                best
            }
            FtsQuery::Boolean(b) => self.boolean(b),
        }
    }

    fn boolean(&self, b: &BooleanQuery) -> Out {
        let musts: Vec<Out> = b.must.iter().map(|q| self.eval(q)).collect();
        let shoulds: Vec<Out> = b.should.iter().map(|q| self.eval(q)).collect();
        let nots: Vec<Out> = b.must_not.iter().map(|q| self.eval(q)).collect();
        let mut candidates: BTreeSet<u64> = BTreeSet::new();
        if musts.is_empty() {
            shoulds.iter().for_each(|s| candidates.extend(s.keys()));
        } else {
            candidates.extend(musts[0].keys());
            candidates.retain(|r| musts.iter().all(|m| m.contains_key(r)));
        }
        candidates.retain(|r| !nots.iter().any(|n| n.contains_key(r)));
        candidates
            .into_iter()
            .map(|r| {
                let mut s = 0.0;
                let mut first = true;
                for v in musts.iter().chain(&shoulds).filter_map(|o| o.get(&r)) {
                    s = if first { *v } else { s + v };
                    first = false;
                }
                (r, s)
            })
            .collect()
    }

    fn groups(&self, col: &RefColumn, m: &MatchQuery) -> Vec<Vec<String>> {
        let fuzzy = m.fuzziness != Some(0);
        let mut raw = Vec::new();
        let analyzed = if fuzzy {
            // Fuzzy terms: the base tokenizer alone (LanceDB's behaviour).
            self.analyzer
                .for_each_raw_token(&m.terms, |t, _| raw.push(t.to_string()))
                .expect("raw");
            raw
        } else {
            self.analyze(&m.terms).into_iter().map(|(t, _)| t).collect()
        };
        // A repeated query term is a group each time (LanceDB counts it as often).
        let tokens: Vec<String> = analyzed;
        if !fuzzy {
            return tokens.into_iter().map(|t| vec![t]).collect();
        }
        let vocab: BTreeSet<&String> = col.df.keys().collect();
        let mut total = 0;
        tokens
            .iter()
            .map(|t| {
                let prefix: String = t.chars().take(m.prefix_length as usize).collect();
                let mut g = Vec::new();
                for v in &vocab {
                    if v.starts_with(&prefix)
                        && lev(t, v) <= m.fuzziness_for(t) as usize
                        && total < m.max_expansions
                    {
                        g.push((*v).clone());
                        total += 1;
                    }
                }
                g
            })
            .collect()
    }

    fn matches(&self, col: &RefColumn, m: &MatchQuery) -> Out {
        let groups = self.groups(col, m);
        let mut out = Out::new();
        for (&r, doc) in &col.docs {
            let mut s = 0.0;
            let mut hit_groups = 0;
            for g in &groups {
                let mut hit = false;
                for t in g {
                    if let Some(v) = col.score(t, doc) {
                        s += f64::from(m.boost) * v;
                        hit = true;
                    }
                }
                hit_groups += usize::from(hit);
            }
            let need = if m.operator == Operator::And {
                groups.len()
            } else {
                1
            };
            if hit_groups >= need && hit_groups > 0 {
                out.insert(r, s);
            }
        }
        out
    }

    fn phrase(&self, col: &RefColumn, p: &PhraseQuery) -> Out {
        let q = self.analyze(&p.terms);
        let mut out = Out::new();
        let Some(first) = q.first().map(|(_, pos)| *pos) else {
            return out;
        };
        let offsets: Vec<u32> = q.iter().map(|(_, pos)| pos - first).collect();
        for (&r, doc) in &col.docs {
            let pos = |t: &str| {
                doc.tokens
                    .iter()
                    .filter(|(x, _)| x == t)
                    .map(|(_, p)| *p)
                    .collect::<Vec<u32>>()
            };
            // Brute force: every choice of a position per phrase term.
            fn fits(
                q: &[(String, u32)],
                offsets: &[u32],
                i: usize,
                prev: Option<u32>,
                slop: u32,
                pos: &dyn Fn(&str) -> Vec<u32>,
            ) -> bool {
                if i == q.len() {
                    return true;
                }
                pos(&q[i].0).into_iter().any(|p| {
                    let ok = match prev {
                        None => true,
                        Some(pp) => {
                            let gap = offsets[i] - offsets[i - 1];
                            p >= pp + gap && p <= pp + gap + slop
                        }
                    };
                    ok && fits(q, offsets, i + 1, Some(p), slop, pos)
                })
            }
            if fits(&q, &offsets, 0, None, p.slop, &pos) {
                // Every phrase term scores, a repeated one as often as it is asked.
                let mut s = 0.0;
                for (t, _) in &q {
                    s += col.score(t, doc).unwrap_or(0.0);
                }
                out.insert(r, s);
            }
        }
        out
    }
}

/// A page of answers: `(limit, offset, block size)`, or every row.
type Page = Option<(usize, usize, usize)>;

fn engine(
    world: &World,
    analyzer: &Analyzer,
    q: &FtsQuery,
    keep: &dyn Fn(u64) -> bool,
    page: Page,
) -> Vec<(u64, f32)> {
    let live = LiveRows::Except(&world.dead);
    let corpora: Vec<Corpus<'_>> = COLUMNS
        .iter()
        .enumerate()
        .map(|(c, name)| {
            let unindexed = world
                .live()
                .into_iter()
                .filter(|r| !world.sealed.contains(r))
                .filter_map(|r| {
                    world.rows[&r][c].as_deref().map(|t| UnindexedRow {
                        row_id: r,
                        texts: vec![t],
                    })
                })
                .collect();
            let input = ColumnInput {
                name: name.to_string(),
                analyzer,
                with_position: true,
                segments: world.segments[c].iter().collect(),
                unindexed,
                block_size: page.map_or(3, |p| p.2),
            };
            Corpus::new(input, live).expect("corpus")
        })
        .collect();
    let (limit, offset) = page.map_or((None, 0), |(l, o, _)| (Some(l), o));
    search(&corpora, q, Some(keep), limit, offset)
        .expect("search")
        .into_iter()
        .map(|h| (h.row_id, h.score))
        .collect()
}

fn reference(
    world: &World,
    analyzer: &Analyzer,
    q: &FtsQuery,
    keep: &dyn Fn(u64) -> bool,
    page: Page,
) -> Vec<(u64, f32)> {
    let r = Reference {
        cols: [
            ref_column(world, 0, analyzer),
            ref_column(world, 1, analyzer),
        ],
        analyzer,
    };
    let mut out: Vec<(u64, f32)> = r
        .eval(q)
        .into_iter()
        .filter(|(row, _)| keep(*row))
        .map(|(row, s)| (row, s as f32))
        .collect();
    out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
    match page {
        Some((limit, offset, _)) => out.into_iter().skip(offset).take(limit).collect(),
        None => out,
    }
}

proptest! {
    #[test]
    fn every_query_type_equals_the_reference(
        ops in proptest::collection::vec(op_strategy(), 1..120),
        queries in proptest::collection::vec(query_strategy(), 1..6),
        modulus in 1u64..4,
        pages in proptest::collection::vec(proptest::option::of((0usize..8, 0usize..4, 1usize..5)), 6),
    ) {
        let analyzer = Analyzer::new(&FtsParams::default()).expect("analyzer");
        let mut world = World { rows: BTreeMap::new(), dead: RoaringTreemap::new(), sealed: BTreeSet::new(), segments: [Vec::new(), Vec::new()], next: 0 };
        for op in ops {
            world.apply(op, &analyzer);
        }
        let keep = move |r: u64| modulus == 1 || !r.is_multiple_of(modulus);
        // A page (limit, offset) walks an Or match by block-max WAND (blocks of 1 to 4 documents),
        // every row exhaustively: both equal the reference's rows in its order.
        for (q, page) in queries.iter().zip(pages) {
            let got = engine(&world, &analyzer, q, &keep, page);
            let want = reference(&world, &analyzer, q, &keep, page);
            prop_assert_eq!(got.len(), want.len(), "query {:?}\n got {:?}\nwant {:?}", q, got, want);
            for (g, w) in got.iter().zip(&want) {
                prop_assert_eq!(g.0, w.0, "order differs for {:?}\n got {:?}\nwant {:?}", q, got, want);
                let tol = 1e-4 * w.1.abs().max(1e-6);
                prop_assert!((g.1 - w.1).abs() <= tol, "score {} vs {} for {:?}", g.1, w.1, q);
            }
        }
    }
}
