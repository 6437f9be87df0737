//! An inverted index segment: the documents of some rows of one column (row id, length in tokens),
//! a sorted term dictionary and, per term, its postings (document, term frequency, positions when
//! the index keeps them). Immutable once built; [`SegmentBuilder`] makes one from rows, the codec
//! (`codec.rs`) stores it. Rows of a segment are sorted by row id, so a row is found by binary
//! search. Talks to `analyzer.rs`.

use std::collections::HashMap;

use crate::analyzer::Analyzer;
use crate::blocks::{BlockCache, Blocks};
use crate::error::{FtsError, Result};

/// Most documents one segment holds (document numbers are `u32`).
pub const MAX_DOCS_PER_SEGMENT: usize = u32::MAX as usize - 1;

/// The postings of one term: parallel arrays, documents ascending.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Posting {
    /// Document numbers (indexes into the segment's rows), strictly ascending.
    pub docs: Vec<u32>,
    /// Occurrences of the term in each document (>= 1).
    pub freqs: Vec<u32>,
    /// With positions: every document's positions back to back, `freqs[i]` of them for `docs[i]`,
    /// each document's ascending. Empty without positions.
    pub positions: Vec<u32>,
    /// With positions: where document `i`'s positions start in `positions` (`docs.len() + 1`
    /// entries). Empty without positions.
    pub starts: Vec<u32>,
}

impl Posting {
    /// The positions of the `i`-th document of the posting (empty without positions).
    pub fn positions_of(&self, i: usize) -> &[u32] {
        match (self.starts.get(i), self.starts.get(i + 1)) {
            (Some(&a), Some(&b)) => self.positions.get(a as usize..b as usize).unwrap_or(&[]),
            _ => &[],
        }
    }
}

/// An immutable inverted index over some rows of one column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    pub(crate) with_position: bool,
    pub(crate) row_ids: Vec<u64>,
    pub(crate) lengths: Vec<u32>,
    pub(crate) total_tokens: u64,
    pub(crate) terms: Vec<String>,
    pub(crate) postings: Vec<Posting>,
    /// Block summaries of the postings (`blocks.rs`), made on first use.
    pub(crate) blocks: BlockCache,
}

impl Segment {
    /// Whether positions are stored (phrase queries need them).
    pub fn with_position(&self) -> bool {
        self.with_position
    }
    /// Number of documents (rows with text).
    pub fn num_docs(&self) -> usize {
        self.row_ids.len()
    }
    /// Sum of the documents' lengths in tokens.
    pub fn total_tokens(&self) -> u64 {
        self.total_tokens
    }
    /// The row ids, ascending.
    pub fn row_ids(&self) -> &[u64] {
        &self.row_ids
    }
    /// Document lengths in tokens, parallel to [`Segment::row_ids`].
    pub fn lengths(&self) -> &[u32] {
        &self.lengths
    }
    /// The term dictionary, ascending.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }
    /// The postings of the `i`-th term of the dictionary.
    pub fn posting(&self, i: usize) -> Option<&Posting> {
        self.postings.get(i)
    }
    /// The postings of `term`, if the segment holds it.
    pub fn postings_of(&self, term: &str) -> Option<&Posting> {
        self.postings.get(self.term_index(term)?)
    }
    /// Where `term` is in the dictionary, if the segment holds it.
    pub fn term_index(&self, term: &str) -> Option<usize> {
        self.terms.binary_search_by(|t| t.as_str().cmp(term)).ok()
    }
    /// Makes the block summaries pruning reads (`block_size` entries each) ahead of the first
    /// query, as an index is loaded.
    pub fn prepare_blocks(&self, block_size: usize) {
        let _ = self.blocks(block_size);
    }
    /// The block summaries at `block_size` entries per block.
    pub(crate) fn blocks(&self, block_size: usize) -> std::borrow::Cow<'_, Blocks> {
        self.blocks.get_or_make(self, block_size)
    }
    /// The document number of `row_id`, if the segment holds it.
    pub fn find_row(&self, row_id: u64) -> Option<usize> {
        self.row_ids.binary_search(&row_id).ok()
    }
}

/// Per-term postings while building, documents in the order they were added.
#[derive(Default)]
struct Acc {
    docs: Vec<u32>,
    freqs: Vec<u32>,
    positions: Vec<u32>,
}

/// Builds a [`Segment`] from rows: `(row_id, texts)`, one text for a string column, the elements
/// for a list of strings (tokenized one after the other, positions running on). A row whose texts
/// give no token (null, empty, only stop words) is not a document, as in Lance.
pub struct SegmentBuilder<'a> {
    analyzer: &'a Analyzer,
    with_position: bool,
    row_ids: Vec<u64>,
    lengths: Vec<u32>,
    dict: HashMap<String, usize>,
    accs: Vec<Acc>,
    scratch: HashMap<usize, Vec<u32>>,
}

impl<'a> SegmentBuilder<'a> {
    /// An empty builder.
    pub fn new(analyzer: &'a Analyzer, with_position: bool) -> SegmentBuilder<'a> {
        SegmentBuilder {
            analyzer,
            with_position,
            row_ids: Vec::new(),
            lengths: Vec::new(),
            dict: HashMap::new(),
            accs: Vec::new(),
            scratch: HashMap::new(),
        }
    }

    /// Adds a row of a string column; `None` (null) is skipped.
    pub fn add(&mut self, row_id: u64, text: Option<&str>) -> Result<()> {
        match text {
            Some(t) => self.add_texts(row_id, std::iter::once(t)),
            None => Ok(()),
        }
    }

    /// Adds a row whose document is several texts (a list of strings; null elements skipped by
    /// the caller). A row with no token at all is left out.
    pub fn add_texts<'t>(
        &mut self,
        row_id: u64,
        texts: impl IntoIterator<Item = &'t str>,
    ) -> Result<()> {
        if self.row_ids.len() >= MAX_DOCS_PER_SEGMENT {
            return Err(FtsError::Limit(format!(
                "a segment holds at most {MAX_DOCS_PER_SEGMENT} documents"
            )));
        }
        let doc = self.row_ids.len() as u32;
        let mut scratch = std::mem::take(&mut self.scratch);
        let mut length = 0u32;
        let mut base = 0u32;
        for text in texts {
            let mut last = None;
            self.analyzer.for_each_token(text, |token, position| {
                let term = self.term_id(token);
                scratch
                    .entry(term)
                    .or_default()
                    .push(base.saturating_add(position));
                length = length.saturating_add(1);
                last = Some(position);
            })?;
            if let Some(p) = last {
                base = base.saturating_add(p).saturating_add(1);
            }
        }
        for (term, positions) in scratch.drain() {
            let acc = &mut self.accs[term];
            acc.docs.push(doc);
            acc.freqs.push(positions.len() as u32);
            if self.with_position {
                acc.positions.extend_from_slice(&positions);
            }
        }
        self.scratch = scratch;
        // A text with no tokens (empty, only stop words) is no document, as in Lance: it counts
        // in neither N nor the average length.
        if length > 0 {
            self.row_ids.push(row_id);
            self.lengths.push(length);
        }
        Ok(())
    }

    fn term_id(&mut self, token: &str) -> usize {
        if let Some(&id) = self.dict.get(token) {
            return id;
        }
        let id = self.accs.len();
        self.dict.insert(token.to_string(), id);
        self.accs.push(Acc::default());
        id
    }

    /// The segment: rows sorted by row id, terms sorted; refuses a row id given twice.
    pub fn finish(self) -> Result<Segment> {
        let order = row_order(&self.row_ids)?;
        let renumber = order.as_ref().map(|o| inverse(o));
        let mut terms: Vec<(String, usize)> = self.dict.into_iter().collect();
        terms.sort_unstable();
        let mut accs: Vec<Option<Acc>> = self.accs.into_iter().map(Some).collect();
        let mut postings = Vec::with_capacity(terms.len());
        for (_, id) in &terms {
            let acc = accs.get_mut(*id).and_then(Option::take).unwrap_or_default();
            postings.push(to_posting(acc, renumber.as_deref(), self.with_position));
        }
        let (row_ids, lengths) = match &order {
            Some(o) => (
                o.iter().map(|&i| self.row_ids[i]).collect(),
                o.iter().map(|&i| self.lengths[i]).collect(),
            ),
            None => (self.row_ids, self.lengths),
        };
        let total_tokens = lengths.iter().map(|&l| u64::from(l)).sum();
        Ok(Segment {
            with_position: self.with_position,
            row_ids,
            lengths,
            total_tokens,
            terms: terms.into_iter().map(|(t, _)| t).collect(),
            postings,
            blocks: BlockCache::default(),
        })
    }
}

/// `None` when the rows are already ascending; else the order that sorts them. Duplicates refused.
fn row_order(row_ids: &[u64]) -> Result<Option<Vec<usize>>> {
    let sorted = row_ids.windows(2).all(|w| w[0] < w[1]);
    let order = if sorted {
        None
    } else {
        let mut o: Vec<usize> = (0..row_ids.len()).collect();
        o.sort_unstable_by_key(|&i| row_ids[i]);
        Some(o)
    };
    let check: Box<dyn Iterator<Item = u64>> = match &order {
        Some(o) => Box::new(o.iter().map(|&i| row_ids[i])),
        None => Box::new(row_ids.iter().copied()),
    };
    let mut prev = None;
    for r in check {
        if prev == Some(r) {
            return Err(FtsError::DuplicateRow { row_id: r });
        }
        prev = Some(r);
    }
    Ok(order)
}

/// `order[new] = old` turned into `new_of[old] = new`.
fn inverse(order: &[usize]) -> Vec<u32> {
    let mut new_of = vec![0u32; order.len()];
    for (new, &old) in order.iter().enumerate() {
        new_of[old] = new as u32;
    }
    new_of
}

fn to_posting(acc: Acc, renumber: Option<&[u32]>, with_position: bool) -> Posting {
    let mut starts = Vec::new();
    if with_position {
        starts.reserve(acc.docs.len() + 1);
        let mut at = 0u32;
        starts.push(0);
        for &f in &acc.freqs {
            at += f;
            starts.push(at);
        }
    }
    let posting = Posting {
        docs: acc.docs,
        freqs: acc.freqs,
        positions: acc.positions,
        starts,
    };
    match renumber {
        None => posting,
        Some(new_of) => renumbered(posting, new_of, with_position),
    }
}

fn renumbered(p: Posting, new_of: &[u32], with_position: bool) -> Posting {
    let mut idx: Vec<usize> = (0..p.docs.len()).collect();
    idx.sort_unstable_by_key(|&i| new_of[p.docs[i] as usize]);
    let mut out = Posting::default();
    if with_position {
        out.starts.push(0);
    }
    for i in idx {
        out.docs.push(new_of[p.docs[i] as usize]);
        out.freqs.push(p.freqs[i]);
        if with_position {
            out.positions.extend_from_slice(p.positions_of(i));
            out.starts.push(out.positions.len() as u32);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::FtsParams;

    fn analyzer() -> Analyzer {
        let p = FtsParams {
            stem: false,
            remove_stop_words: false,
            ..FtsParams::default()
        };
        Analyzer::new(&p).expect("analyzer")
    }

    #[test]
    fn builds_sorted_rows_terms_and_positions() {
        let a = analyzer();
        let mut b = SegmentBuilder::new(&a, true);
        b.add(9, Some("b a b")).expect("add");
        b.add(3, Some("a c")).expect("add");
        b.add(5, None).expect("null");
        b.add_texts(4, ["c", "b"]).expect("list");
        let s = b.finish().expect("finish");
        assert_eq!(s.row_ids(), &[3, 4, 9]);
        assert_eq!(s.lengths(), &[2, 2, 3]);
        assert_eq!(s.total_tokens(), 7);
        assert_eq!(s.terms(), &["a", "b", "c"]);
        let b_post = s.postings_of("b").expect("b");
        assert_eq!(b_post.docs, vec![1, 2]);
        assert_eq!(b_post.freqs, vec![1, 2]);
        assert_eq!(b_post.positions_of(0), &[1]);
        assert_eq!(b_post.positions_of(1), &[0, 2]);
        assert_eq!(s.find_row(9), Some(2));
        assert_eq!(s.find_row(5), None);
    }

    #[test]
    fn duplicate_rows_are_refused() {
        let a = analyzer();
        let mut b = SegmentBuilder::new(&a, false);
        b.add(1, Some("x")).expect("add");
        b.add(1, Some("y")).expect("add");
        assert!(matches!(
            b.finish(),
            Err(FtsError::DuplicateRow { row_id: 1 })
        ));
    }
}
