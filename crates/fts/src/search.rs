//! Runs a full-text query over the corpora of its columns: match (Or / And, fuzzy), phrase, boost,
//! boolean and multi_match, each leaf scored with BM25 on its column's global live statistics; then
//! the caller's filter, the order (score descending, then row id ascending) and the page.
//! Talks to `corpus.rs`, `query.rs`, `fuzzy.rs`, `walk.rs` (the match and phrase leaves) and
//! `wand.rs` (an Or match's best rows).

use std::collections::HashMap;

use crate::corpus::Corpus;
use crate::error::{FtsError, Result};
use crate::fuzzy;
use crate::query::{BooleanQuery, FtsQuery, MatchQuery, Operator, PhraseQuery};
use crate::{walk, wand};

/// Most analyzed terms (before fuzzy expansion) one query may hold in all its leaves.
pub const MAX_QUERY_TERMS: usize = 1024;

/// One answer row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ScoredRow {
    /// The row id.
    pub row_id: u64,
    /// Its BM25 score.
    pub score: f32,
}

/// Rows matched by a query node, with their scores.
type Scores = HashMap<u64, f64>;

/// The best `limit` rows (all without a limit) after `offset`, of the rows `keep` accepts (all
/// without one). Leaves without a column get every column of `corpora` (Lance's rule).
pub fn search(
    corpora: &[Corpus<'_>],
    query: &FtsQuery,
    keep: Option<&dyn Fn(u64) -> bool>,
    limit: Option<usize>,
    offset: usize,
) -> Result<Vec<ScoredRow>> {
    query.validate()?;
    let names: Vec<String> = corpora.iter().map(|c| c.name.clone()).collect();
    let query = query.fill_columns(&names, false)?;
    let mut ev = Evaluator { corpora, terms: 0 };
    // A match or a phrase (most queries) is walked straight into a list; compounds combine maps.
    // An Or match with a limit walks only the rows that can make the page (block-max WAND).
    let want = limit.map(|l| offset.saturating_add(l));
    let scored: Vec<(u64, f64)> = match &query {
        FtsQuery::Match(m) if m.operator == Operator::Or && m.boost > 0.0 && want.is_some() => {
            let corpus = ev.corpus(m.column.as_deref())?;
            let groups = ev.match_terms(corpus, m)?;
            let ask = wand::Ask {
                terms: &pairs(&groups),
                boost: f64::from(m.boost),
                want: want.unwrap_or(usize::MAX),
                keep,
            };
            wand::top_match(corpus, &ask)
        }
        FtsQuery::Match(m) => {
            let corpus = ev.corpus(m.column.as_deref())?;
            ev.match_rows(corpus, m)?
        }
        FtsQuery::Phrase(p) => ev.phrase_rows(p)?,
        q => ev.eval(q)?.into_iter().collect(),
    };
    let mut rows: Vec<ScoredRow> = scored
        .into_iter()
        .filter(|(row, _)| keep.is_none_or(|k| k(*row)))
        .map(|(row_id, s)| ScoredRow {
            row_id,
            score: s as f32,
        })
        .collect();
    Ok(top(&mut rows, limit, offset))
}

/// `(group, term)` pairs of term groups, as the walks take them.
fn pairs(groups: &[Vec<String>]) -> Vec<(usize, &str)> {
    groups
        .iter()
        .enumerate()
        .flat_map(|(g, terms)| terms.iter().map(move |t| (g, t.as_str())))
        .collect()
}

/// Rows `offset..offset + limit` (all from `offset` without a limit) in order: score descending,
/// then row id ascending; only the first `offset + limit` are sorted.
fn top(rows: &mut Vec<ScoredRow>, limit: Option<usize>, offset: usize) -> Vec<ScoredRow> {
    let order =
        |a: &ScoredRow, b: &ScoredRow| b.score.total_cmp(&a.score).then(a.row_id.cmp(&b.row_id));
    if let Some(want) = limit.map(|l| offset.saturating_add(l)) {
        if want == 0 {
            rows.clear();
        } else if want < rows.len() {
            rows.select_nth_unstable_by(want - 1, order);
            rows.truncate(want);
        }
    }
    rows.sort_unstable_by(order);
    rows.get(offset.min(rows.len())..)
        .map(<[ScoredRow]>::to_vec)
        .unwrap_or_default()
}

struct Evaluator<'c, 'a> {
    corpora: &'c [Corpus<'a>],
    terms: usize,
}

impl<'c, 'a> Evaluator<'c, 'a> {
    fn eval(&mut self, q: &FtsQuery) -> Result<Scores> {
        match q {
            FtsQuery::Match(m) => {
                let corpus = self.corpus(m.column.as_deref())?;
                self.match_on(corpus, m)
            }
            FtsQuery::Phrase(p) => Ok(self.phrase_rows(p)?.into_iter().collect()),
            FtsQuery::Boost(b) => {
                let pos = self.eval(&b.positive)?;
                let neg = self.eval(&b.negative)?;
                let w = f64::from(b.negative_boost);
                Ok(pos
                    .into_iter()
                    .map(|(r, s)| (r, s - w * neg.get(&r).copied().unwrap_or(0.0)))
                    .collect())
            }
            FtsQuery::MultiMatch(mm) => {
                let mut best = Scores::new();
                for (i, column) in mm.columns.iter().enumerate() {
                    let boost = mm
                        .boost
                        .as_ref()
                        .and_then(|b| b.get(i))
                        .copied()
                        .unwrap_or(1.0);
                    let m = MatchQuery {
                        boost,
                        operator: mm.operator,
                        ..MatchQuery::new(Some(column.clone()), mm.query.clone())
                    };
                    let corpus = self.corpus(Some(column))?;
                    for (row, s) in self.match_on(corpus, &m)? {
                        let e = best.entry(row).or_insert(s);
                        *e = e.max(s);
                    }
                }
                Ok(best)
            }
            FtsQuery::Boolean(b) => self.boolean(b),
        }
    }

    fn corpus(&self, column: Option<&str>) -> Result<&'c Corpus<'a>> {
        let name = column
            .ok_or_else(|| FtsError::Column("the column must be specified in the query".into()))?;
        let corpora: &'c [Corpus<'a>] = self.corpora;
        corpora.iter().find(|c| c.name == name).ok_or_else(|| {
            FtsError::Column(format!(
                "column {name:?} has no FTS index; create one with index_type FTS"
            ))
        })
    }

    /// The analyzed terms of `text` and their query offsets; `raw`: the base tokenizer's alone.
    fn analyze(
        &mut self,
        corpus: &Corpus<'_>,
        text: &str,
        raw: bool,
    ) -> Result<(Vec<String>, Vec<u32>)> {
        let mut terms = Vec::new();
        let mut offsets = Vec::new();
        let sink = |t: &str, p| {
            terms.push(t.to_string());
            offsets.push(p);
        };
        if raw {
            corpus.analyzer.for_each_raw_token(text, sink)?;
        } else {
            corpus.analyzer.for_each_token(text, sink)?;
        }
        self.terms += terms.len();
        if self.terms > MAX_QUERY_TERMS {
            return Err(FtsError::query(format!(
                "the query has more than {MAX_QUERY_TERMS} terms after analysis"
            )));
        }
        let first = offsets.first().copied().unwrap_or(0);
        offsets.iter_mut().for_each(|o| *o -= first);
        Ok((terms, offsets))
    }

    /// A match: exact terms are analyzed like documents; a fuzzy match (fuzziness not 0) splits
    /// its text with the base tokenizer alone and expands each raw term in the dictionary, as
    /// LanceDB does (`"Runs"` at distance 1 finds nothing in a lower-cased index).
    fn match_rows(&mut self, corpus: &Corpus<'_>, m: &MatchQuery) -> Result<Vec<(u64, f64)>> {
        let groups = self.match_terms(corpus, m)?;
        Ok(walk::match_rows(
            corpus,
            &pairs(&groups),
            groups.len(),
            m.operator == Operator::And,
            f64::from(m.boost),
        ))
    }

    /// A match's terms: one group per query term, a fuzzy term's group its expansions. A term
    /// the query repeats is a group each time (its score counts as often), as in LanceDB.
    fn match_terms(&mut self, corpus: &Corpus<'_>, m: &MatchQuery) -> Result<Vec<Vec<String>>> {
        let fuzzy = m.fuzziness != Some(0);
        let (tokens, _) = self.analyze(corpus, &m.terms, fuzzy)?;
        let distances: Vec<u32> = tokens.iter().map(|t| m.fuzziness_for(t)).collect();
        Ok(if !fuzzy {
            tokens.into_iter().map(|t| vec![t]).collect()
        } else {
            fuzzy::expand(
                corpus,
                &tokens,
                &distances,
                m.prefix_length,
                m.max_expansions,
            )
        })
    }

    fn match_on(&mut self, corpus: &Corpus<'_>, m: &MatchQuery) -> Result<Scores> {
        Ok(self.match_rows(corpus, m)?.into_iter().collect())
    }

    fn phrase_rows(&mut self, p: &PhraseQuery) -> Result<Vec<(u64, f64)>> {
        let corpus = self.corpus(p.column.as_deref())?;
        if !corpus.with_position {
            return Err(FtsError::PositionsRequired);
        }
        let (terms, offsets) = self.analyze(corpus, &p.terms, false)?;
        Ok(walk::phrase_rows(corpus, &terms, &offsets, p.slop))
    }

    fn boolean(&mut self, b: &BooleanQuery) -> Result<Scores> {
        let mut out: Option<Scores> = None;
        for q in &b.must {
            let s = self.eval(q)?;
            out = Some(match out {
                None => s,
                Some(acc) => acc
                    .into_iter()
                    .filter_map(|(r, v)| s.get(&r).map(|w| (r, v + w)))
                    .collect(),
            });
        }
        let require_should = out.is_none();
        let mut acc = out.unwrap_or_default();
        for q in &b.should {
            for (r, v) in self.eval(q)? {
                match acc.get_mut(&r) {
                    Some(e) => *e += v,
                    None if require_should => {
                        acc.insert(r, v);
                    }
                    None => {}
                }
            }
        }
        for q in &b.must_not {
            for r in self.eval(q)?.keys() {
                acc.remove(r);
            }
        }
        Ok(acc)
    }
}
