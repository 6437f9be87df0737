//! Posting blocks for block-max pruning: each term's postings cut into blocks of the index's
//! `block_size` documents (Lance's 128 or 256), each block summarized by its last document, its
//! largest term frequency and its shortest document. A BM25 term score grows with the frequency and
//! shrinks with the length, so the score of those two is a bound on every entry of the block under
//! any statistics: the summaries are made once per segment and the bounds per query. Derived from
//! the postings (not stored: the codec's format is unchanged), so a segment of any age gets them.
//! Talks to `segment.rs` and `bm25.rs`.

use std::sync::OnceLock;

use crate::bm25;
use crate::segment::Segment;

/// The block size an index uses when none is given (Lance's default).
pub const DEFAULT_BLOCK_SIZE: usize = 128;

/// One block of a term's postings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct BlockMax {
    /// The last (largest) document of the block.
    pub last_doc: u32,
    /// The largest term frequency in the block.
    pub max_tf: u32,
    /// The shortest document of the block, in tokens.
    pub min_len: u32,
}

impl BlockMax {
    /// An upper bound of the BM25 score of every entry of the block.
    pub fn bound(&self, idf: f64, avgdl: f64) -> f64 {
        bm25::term_score(idf, self.max_tf, self.min_len, avgdl)
    }
}

/// The blocks of every term of a segment: term `t`'s are `blocks[starts[t]..starts[t + 1]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Blocks {
    /// Entries per block.
    pub size: usize,
    starts: Vec<u32>,
    blocks: Vec<BlockMax>,
}

impl Blocks {
    /// The blocks of `seg`'s postings, `size` entries each (at least 1).
    pub fn of(seg: &Segment, size: usize) -> Blocks {
        let size = size.max(1);
        let mut starts = Vec::with_capacity(seg.terms().len() + 1);
        let mut blocks = Vec::new();
        starts.push(0);
        let lengths = seg.lengths();
        for t in 0..seg.terms().len() {
            let Some(p) = seg.posting(t) else { break };
            for (docs, freqs) in p.docs.chunks(size).zip(p.freqs.chunks(size)) {
                let min_len = docs
                    .iter()
                    .map(|&d| lengths.get(d as usize).copied().unwrap_or(0))
                    .min()
                    .unwrap_or(0);
                blocks.push(BlockMax {
                    last_doc: docs.last().copied().unwrap_or(0),
                    max_tf: freqs.iter().copied().max().unwrap_or(0),
                    min_len,
                });
            }
            starts.push(u32::try_from(blocks.len()).unwrap_or(u32::MAX));
        }
        Blocks {
            size,
            starts,
            blocks,
        }
    }

    /// The blocks of the `term`-th term of the dictionary.
    pub fn of_term(&self, term: usize) -> &[BlockMax] {
        match (self.starts.get(term), self.starts.get(term + 1)) {
            (Some(&a), Some(&b)) => self.blocks.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// A segment's blocks, made on first use (or ahead, when the index is loaded). Not part of the
/// segment's value: two segments with the same postings are equal whatever their cache holds.
#[derive(Debug, Default)]
pub(crate) struct BlockCache(OnceLock<Blocks>);

impl BlockCache {
    /// The blocks of `seg` at `size` entries: cached when the cache is empty or holds that size.
    pub fn get_or_make(&self, seg: &Segment, size: usize) -> std::borrow::Cow<'_, Blocks> {
        let cached = self.0.get_or_init(|| Blocks::of(seg, size));
        if cached.size == size.max(1) {
            std::borrow::Cow::Borrowed(cached)
        } else {
            std::borrow::Cow::Owned(Blocks::of(seg, size))
        }
    }
}

impl Clone for BlockCache {
    fn clone(&self) -> Self {
        BlockCache::default()
    }
}

impl PartialEq for BlockCache {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for BlockCache {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analyzer::Analyzer;
    use crate::params::FtsParams;
    use crate::segment::SegmentBuilder;

    #[test]
    fn blocks_summarize_frequencies_lengths_and_last_documents() {
        let p = FtsParams {
            stem: false,
            remove_stop_words: false,
            ..FtsParams::default()
        };
        let a = Analyzer::new(&p).expect("analyzer");
        let mut b = SegmentBuilder::new(&a, false);
        // "a" in docs 0..5 with tf 1, 3, 1, 2, 1; lengths 1, 4, 3, 2, 1.
        for (row, text) in ["a", "a a a b", "a b c", "a a", "a"].iter().enumerate() {
            b.add(row as u64, Some(text)).expect("add");
        }
        let seg = b.finish().expect("finish");
        let blocks = Blocks::of(&seg, 2);
        let a_blocks = blocks.of_term(0);
        assert_eq!(
            a_blocks,
            &[
                BlockMax {
                    last_doc: 1,
                    max_tf: 3,
                    min_len: 1
                },
                BlockMax {
                    last_doc: 3,
                    max_tf: 2,
                    min_len: 2
                },
                BlockMax {
                    last_doc: 4,
                    max_tf: 1,
                    min_len: 1
                },
            ]
        );
        // Every entry's score is at most its block's bound.
        let (idf, avgdl) = (0.7, 2.2);
        let post = seg.posting(0).expect("a");
        for (i, (&d, &tf)) in post.docs.iter().zip(&post.freqs).enumerate() {
            let s = bm25::term_score(idf, tf, seg.lengths()[d as usize], avgdl);
            assert!(s <= a_blocks[i / 2].bound(idf, avgdl));
        }
        assert!(blocks.of_term(9).is_empty());
    }
}
