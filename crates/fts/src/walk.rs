//! Match and phrase queries walked over sorted postings, segment by segment, with no hashing: an Or
//! is a merge of its terms' postings (a heap past a few terms), an And of exact terms and a
//! phrase a leapfrog intersection driven by the rarest term (galloping search in the others), the
//! phrase's documents then checked on positions. Each answers `(row_id, score)` for the live rows,
//! in segment order. Talks to `corpus.rs`, `segment.rs`, `bm25.rs` and `phrase.rs`.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use crate::bm25;
use crate::corpus::{Corpus, LiveRows};
use crate::phrase;
use crate::segment::{Posting, Segment};

/// One query term in one segment: its group (a query term and its fuzzy expansions share one),
/// its idf, its postings and the walk's place in them.
pub(crate) struct Cursor<'s> {
    pub(crate) group: usize,
    /// Where the term is in the segment's dictionary.
    pub(crate) term: usize,
    pub(crate) idf: f64,
    pub(crate) posting: &'s Posting,
    pub(crate) at: usize,
}

impl Cursor<'_> {
    pub(crate) fn doc(&self) -> Option<u32> {
        self.posting.docs.get(self.at).copied()
    }

    /// Moves to the first entry whose document is `>= doc` (galloping, then binary search).
    pub(crate) fn seek(&mut self, doc: u32) -> Option<u32> {
        let docs = &self.posting.docs;
        let mut step = 1;
        let mut hi = self.at;
        while hi < docs.len() && docs[hi] < doc {
            self.at = hi;
            hi += step;
            step *= 2;
        }
        let hi = hi.min(docs.len());
        self.at += docs[self.at.min(hi)..hi].partition_point(|&d| d < doc);
        self.doc()
    }

    pub(crate) fn score(&self, seg: &Segment, avgdl: f64) -> f64 {
        let doc = self.posting.docs[self.at] as usize;
        bm25::term_score(
            self.idf,
            self.posting.freqs[self.at],
            seg.lengths()[doc],
            avgdl,
        )
    }
}

/// The idf of each of `terms` over the whole corpus (computed once, not per segment).
pub(crate) fn idfs(corpus: &Corpus<'_>, terms: &[(usize, &str)]) -> Vec<f64> {
    let n = corpus.stats().num_docs;
    terms
        .iter()
        .map(|&(_, term)| bm25::idf(n, corpus.df(term)))
        .collect()
}

/// The cursors of `terms` (`(group, term)`, with their [`idfs`]) in `seg`; terms the segment
/// lacks have none.
pub(crate) fn cursors<'s>(
    seg: &'s Segment,
    terms: &[(usize, &str)],
    idfs: &[f64],
) -> Vec<Cursor<'s>> {
    terms
        .iter()
        .zip(idfs)
        .filter_map(|(&(group, term), &idf)| {
            let at = seg.term_index(term)?;
            seg.posting(at).map(|posting| Cursor {
                group,
                term: at,
                idf,
                posting,
                at: 0,
            })
        })
        .collect()
}

/// Rows matching `terms` (`(group, term)` pairs): any group (Or), or every one of `groups`
/// (`all`), scored as the sum of their matched terms' BM25 times `boost`.
pub(crate) fn match_rows(
    corpus: &Corpus<'_>,
    terms: &[(usize, &str)],
    groups: usize,
    all: bool,
    boost: f64,
) -> Vec<(u64, f64)> {
    let avgdl = corpus.stats().avgdl();
    let exact_groups = {
        let mut g: Vec<usize> = terms.iter().map(|t| t.0).collect();
        g.dedup();
        g.len() == terms.len()
    };
    let mut out = Vec::new();
    if groups == 0 {
        return out;
    }
    let idfs = idfs(corpus, terms);
    for seg in corpus.segments() {
        let mut cs = cursors(seg, terms, &idfs);
        if all && exact_groups {
            if cs.len() < groups {
                continue;
            }
            intersect(&mut cs, |cs, doc| {
                let row = seg.row_ids()[doc as usize];
                if corpus.live().contains(row) {
                    let s: f64 = cs.iter().map(|c| c.score(seg, avgdl)).sum();
                    out.push((row, boost * s));
                }
            });
        } else {
            union(seg, &mut cs, corpus.live(), avgdl, |row, s, matched| {
                if !all || matched == groups {
                    out.push((row, boost * s));
                }
            });
        }
    }
    out
}

/// Calls `f(cursors, doc)` for every document every cursor holds, cursors placed on it.
fn intersect<'s>(cs: &mut [Cursor<'s>], mut f: impl FnMut(&[Cursor<'s>], u32)) {
    if cs.is_empty() {
        return;
    }
    cs.sort_by_key(|c| c.posting.docs.len());
    let Some(mut doc) = cs[0].doc() else { return };
    'outer: loop {
        for c in cs.iter_mut() {
            match c.seek(doc) {
                None => return,
                Some(d) if d > doc => {
                    doc = d;
                    continue 'outer;
                }
                Some(_) => {}
            }
        }
        f(cs, doc);
        cs[0].at += 1;
        match cs[0].doc() {
            Some(d) => doc = d,
            None => return,
        }
    }
}

/// Calls `f(row, score, groups matched)` for every live document some cursor holds, in order.
fn union(
    seg: &Segment,
    cs: &mut [Cursor<'_>],
    live: &LiveRows<'_>,
    avgdl: f64,
    mut f: impl FnMut(u64, f64, usize),
) {
    let mut heap: BinaryHeap<Reverse<(u32, usize)>> = cs
        .iter()
        .enumerate()
        .filter_map(|(i, c)| c.doc().map(|d| Reverse((d, i))))
        .collect();
    let mut seen_groups: Vec<usize> = Vec::new();
    while let Some(Reverse((doc, _))) = heap.peek().copied() {
        let (mut score, row) = (0.0, seg.row_ids()[doc as usize]);
        seen_groups.clear();
        while let Some(Reverse((d, i))) = heap.peek().copied() {
            if d != doc {
                break;
            }
            heap.pop();
            let c = &mut cs[i];
            score += c.score(seg, avgdl);
            if !seen_groups.contains(&c.group) {
                seen_groups.push(c.group);
            }
            c.at += 1;
            if let Some(next) = c.doc() {
                heap.push(Reverse((next, i)));
            }
        }
        if live.contains(row) {
            f(row, score, seen_groups.len());
        }
    }
}

/// Rows holding the phrase `terms` (query offsets `offsets`, `slop` extra positions), scored as
/// the sum of its terms' BM25 (a term the phrase repeats counted each time).
pub(crate) fn phrase_rows(
    corpus: &Corpus<'_>,
    terms: &[String],
    offsets: &[u32],
    slop: u32,
) -> Vec<(u64, f64)> {
    let mut distinct: Vec<&str> = Vec::new();
    for t in terms {
        if !distinct.contains(&t.as_str()) {
            distinct.push(t);
        }
    }
    // Which distinct term each phrase term is, and how often each is in the phrase (a term's
    // score counts that often, as in LanceDB).
    let slot: Vec<usize> = terms
        .iter()
        .map(|t| distinct.iter().position(|d| *d == t).unwrap_or(0))
        .collect();
    let mut times = vec![0f64; distinct.len()];
    slot.iter().for_each(|&s| times[s] += 1.0);
    let avgdl = corpus.stats().avgdl();
    let mut out = Vec::new();
    if distinct.is_empty() {
        return out;
    }
    let pairs: Vec<(usize, &str)> = distinct.iter().copied().enumerate().collect();
    let idfs = idfs(corpus, &pairs);
    for seg in corpus.segments() {
        let mut cs = cursors(seg, &pairs, &idfs);
        if cs.len() < distinct.len() {
            continue;
        }
        // Reused for every candidate document: its positions per distinct term, then per phrase term.
        let mut lists: Vec<&[u32]> = vec![&[]; distinct.len()];
        let mut ordered: Vec<&[u32]> = vec![&[]; slot.len()];
        intersect(&mut cs, |cs, doc| {
            let row = seg.row_ids()[doc as usize];
            if !corpus.live().contains(row) {
                return;
            }
            for c in cs {
                lists[c.group] = c.posting.positions_of(c.at);
            }
            for (o, &s) in ordered.iter_mut().zip(&slot) {
                *o = lists[s];
            }
            if phrase::matches(&ordered, offsets, slop) {
                let score = cs.iter().map(|c| times[c.group] * c.score(seg, avgdl));
                out.push((row, score.sum()));
            }
        });
    }
    out
}
