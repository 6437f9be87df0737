//! The best rows of an Or match without scoring every matching row: block-max WAND (Ding and
//! Suel, 2011) over the block summaries of `blocks.rs`. The walk keeps the best `want` rows seen so
//! far; a document is scored only when the bounds of the terms it can hold (each term's largest
//! block bound first, then the bounds of the blocks holding the document) could beat the worst kept
//! row. The answer is exactly the exhaustive walk's best rows, ties included: rows are ordered by
//! their score as reported (f32) then by row id, a bound is compared in f32 too (rounding is
//! monotone, and a relative slack covers the bound's own rounding), and only a bound strictly below
//! the worst kept score prunes. Talks to `walk.rs` (cursors), `blocks.rs` and `corpus.rs`.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::blocks::BlockMax;
use crate::corpus::Corpus;
use crate::segment::Segment;
use crate::walk::{self, Cursor};

/// A row kept, ordered so that the heap's top is the worst one (lowest score, then highest id).
#[derive(Debug, Clone, Copy, PartialEq)]
struct Kept {
    score: f32,
    row: u64,
    exact: f64,
}

impl Eq for Kept {}

impl Ord for Kept {
    fn cmp(&self, other: &Self) -> Ordering {
        other
            .score
            .total_cmp(&self.score)
            .then(self.row.cmp(&other.row))
    }
}

impl PartialOrd for Kept {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// The best `want` rows offered so far.
struct TopK {
    want: usize,
    heap: BinaryHeap<Kept>,
}

impl TopK {
    /// The worst kept score once `want` rows are kept: a row must reach it to enter.
    fn threshold(&self) -> Option<f32> {
        if self.heap.len() < self.want {
            return None;
        }
        self.heap.peek().map(|k| k.score)
    }

    fn offer(&mut self, row: u64, exact: f64) {
        let k = Kept {
            score: exact as f32,
            row,
            exact,
        };
        if self.heap.len() < self.want {
            self.heap.push(k);
        } else if self.heap.peek().is_some_and(|worst| k < *worst) {
            self.heap.pop();
            self.heap.push(k);
        }
    }
}

/// Whether a row scoring at most `bound` could still enter above `threshold` (a tie on the
/// reported score may enter by its row id, so only a bound strictly below prunes).
fn can_enter(bound: f64, threshold: f32) -> bool {
    ((bound * (1.0 + 1e-9)) as f32) >= threshold
}

/// What a query asks of the walk.
pub(crate) struct Ask<'q> {
    /// `(group, term)` pairs, as `walk::match_rows` takes them (any one matches).
    pub terms: &'q [(usize, &'q str)],
    /// The match's boost (> 0).
    pub boost: f64,
    /// How many rows to keep.
    pub want: usize,
    /// The caller's filter: rows it refuses are neither kept nor counted against `want`.
    pub keep: Option<&'q dyn Fn(u64) -> bool>,
}

/// The best `ask.want` live rows holding any of `ask.terms`, with their scores (unordered): the
/// same rows the exhaustive walk ranks first.
pub(crate) fn top_match(corpus: &Corpus<'_>, ask: &Ask<'_>) -> Vec<(u64, f64)> {
    if ask.want == 0 || ask.terms.is_empty() {
        return Vec::new();
    }
    let mut top = TopK {
        want: ask.want,
        heap: BinaryHeap::with_capacity(ask.want.min(1 << 16)),
    };
    let idfs = walk::idfs(corpus, ask.terms);
    let avgdl = corpus.stats().avgdl();
    for seg in corpus.segments() {
        let blocks = seg.blocks(corpus.block_size());
        let cs = walk::cursors(seg, ask.terms, &idfs);
        let per_cursor: Vec<&[BlockMax]> = cs.iter().map(|c| blocks.of_term(c.term)).collect();
        let ub = cs
            .iter()
            .zip(&per_cursor)
            .map(|(c, bs)| bs.iter().map(|b| b.bound(c.idf, avgdl)).fold(0.0, f64::max))
            .collect();
        let mut w = SegmentWalk {
            seg,
            cs,
            blocks: per_cursor,
            block_size: blocks.size,
            ub,
            avgdl,
            corpus,
            ask,
        };
        w.run(&mut top);
    }
    top.heap.into_iter().map(|k| (k.row, k.exact)).collect()
}

/// One segment's walk.
struct SegmentWalk<'s, 'q> {
    seg: &'s Segment,
    cs: Vec<Cursor<'s>>,
    /// Each cursor's term's blocks.
    blocks: Vec<&'s [BlockMax]>,
    block_size: usize,
    /// Each cursor's largest block bound.
    ub: Vec<f64>,
    avgdl: f64,
    corpus: &'q Corpus<'q>,
    ask: &'q Ask<'q>,
}

impl SegmentWalk<'_, '_> {
    fn doc(&self, i: usize) -> u32 {
        self.cs[i].doc().unwrap_or(u32::MAX)
    }

    fn run(&mut self, top: &mut TopK) {
        let mut order: Vec<usize> = (0..self.cs.len()).collect();
        loop {
            order.retain(|&i| self.cs[i].doc().is_some());
            order.sort_by_key(|&i| (self.doc(i), i));
            let Some(&first) = order.first() else { return };
            let threshold = top.threshold();
            let Some(mut p) = self.pivot(&order, threshold) else {
                return;
            };
            let d = self.doc(order[p]);
            while order.get(p + 1).is_some_and(|&i| self.doc(i) == d) {
                p += 1;
            }
            if let Some(t) = threshold {
                let (bound, mut next) = self.block_bound(&order[..=p], d);
                if let Some(&i) = order.get(p + 1) {
                    next = next.min(u64::from(self.doc(i)));
                }
                if !can_enter(bound * self.ask.boost, t) {
                    let to = u32::try_from(next).unwrap_or(u32::MAX);
                    for &i in &order[..=p] {
                        self.cs[i].seek(to);
                    }
                    continue;
                }
            }
            if self.doc(first) == d {
                self.score(&order[..=p], d, top);
                for &i in &order[..=p] {
                    self.cs[i].at += 1;
                }
            } else {
                for &i in &order[..p] {
                    self.cs[i].seek(d);
                }
            }
        }
    }

    /// The first place in `order` where the terms' largest bounds, summed, could enter.
    fn pivot(&self, order: &[usize], threshold: Option<f32>) -> Option<usize> {
        let Some(t) = threshold else {
            return Some(0);
        };
        let mut acc = 0.0;
        for (j, &i) in order.iter().enumerate() {
            acc += self.ub[i];
            if can_enter(acc * self.ask.boost, t) {
                return Some(j);
            }
        }
        None
    }

    /// The summed bounds of the blocks of `cursors` that hold or follow document `d`, and the
    /// first document past the nearest of those blocks' ends.
    fn block_bound(&self, cursors: &[usize], d: u32) -> (f64, u64) {
        let (mut sum, mut next) = (0.0, u64::MAX);
        for &i in cursors {
            let bs = self.blocks[i];
            let start = (self.cs[i].at / self.block_size).min(bs.len());
            let b = start + bs[start..].partition_point(|bm| bm.last_doc < d);
            if let Some(bm) = bs.get(b) {
                sum += bm.bound(self.cs[i].idf, self.avgdl);
                next = next.min(u64::from(bm.last_doc) + 1);
            }
        }
        (sum, next)
    }

    /// Scores document `d`, which every one of `cursors` is on, and offers it.
    fn score(&self, cursors: &[usize], d: u32, top: &mut TopK) {
        let row = self.seg.row_ids()[d as usize];
        if !self.corpus.live().contains(row) || self.ask.keep.is_some_and(|k| !k(row)) {
            return;
        }
        let mut at: Vec<usize> = cursors.to_vec();
        // Summed in the cursors' order, as the exhaustive walk sums them.
        at.sort_unstable();
        let s: f64 = at
            .iter()
            .map(|&i| self.cs[i].score(self.seg, self.avgdl))
            .sum();
        top.offer(row, self.ask.boost * s);
    }
}
