//! One column as a query sees it: its index segments, a segment made on the fly from the rows the
//! index does not cover yet (so a row is searchable the moment it is written), and which rows are
//! live. Statistics (N, average length, document frequencies) are global over all of them and
//! count live rows only, so a deleted or superseded row never weighs on a score. Talks to
//! `segment.rs`, `analyzer.rs` and `bm25.rs`.

use roaring::RoaringTreemap;

use crate::analyzer::Analyzer;
use crate::bm25::CorpusStats;
use crate::error::Result;
use crate::segment::{Segment, SegmentBuilder};

/// Which rows exist for a query: all of them, or all but a set (deleted, superseded by a newer
/// version of the row). A row id must be live in at most one of a column's segments.
#[derive(Debug, Clone, Copy, Default)]
pub enum LiveRows<'a> {
    /// Every row of every segment.
    #[default]
    All,
    /// Every row except these.
    Except(&'a RoaringTreemap),
}

impl LiveRows<'_> {
    /// Whether `row_id` is live.
    pub fn contains(&self, row_id: u64) -> bool {
        match self {
            LiveRows::All => true,
            LiveRows::Except(dead) => !dead.contains(row_id),
        }
    }
}

/// A row the index does not cover, given as its text(s): one for a string column, the elements of
/// a list. Rows whose value is null are not documents: leave them out.
#[derive(Debug, Clone)]
pub struct UnindexedRow<'a> {
    /// The row id.
    pub row_id: u64,
    /// The texts of the document.
    pub texts: Vec<&'a str>,
}

/// What a caller hands the search for one FTS-indexed column.
#[derive(Debug, Clone)]
pub struct ColumnInput<'a> {
    /// The column's name, as queries name it.
    pub name: String,
    /// The index's analyzer (the same for every segment of the column).
    pub analyzer: &'a Analyzer,
    /// Whether the index keeps positions.
    pub with_position: bool,
    /// The index segments.
    pub segments: Vec<&'a Segment>,
    /// Rows the index does not cover, tokenized per query.
    pub unindexed: Vec<UnindexedRow<'a>>,
    /// Documents per posting block, the unit of pruning (the index's `block_size`;
    /// [`crate::DEFAULT_BLOCK_SIZE`] when it has none).
    pub block_size: usize,
}

/// A column ready to be queried: its segments plus the unindexed one, and live statistics.
#[derive(Debug)]
pub struct Corpus<'a> {
    pub(crate) name: String,
    pub(crate) analyzer: &'a Analyzer,
    pub(crate) with_position: bool,
    segments: Vec<&'a Segment>,
    fresh: Option<Segment>,
    live: LiveRows<'a>,
    stats: CorpusStats,
    /// Per segment (the unindexed one last), its dead documents, ascending.
    dead_docs: Vec<Vec<u32>>,
    block_size: usize,
}

impl<'a> Corpus<'a> {
    /// Tokenizes the unindexed rows and computes the live statistics.
    pub fn new(input: ColumnInput<'a>, live: LiveRows<'a>) -> Result<Corpus<'a>> {
        let fresh = if input.unindexed.is_empty() {
            None
        } else {
            let mut b = SegmentBuilder::new(input.analyzer, input.with_position);
            for row in input.unindexed {
                b.add_texts(row.row_id, row.texts)?;
            }
            Some(b.finish()?)
        };
        let mut corpus = Corpus {
            name: input.name,
            analyzer: input.analyzer,
            with_position: input.with_position,
            segments: input.segments,
            fresh,
            live,
            stats: CorpusStats::default(),
            dead_docs: Vec::new(),
            block_size: input.block_size.max(1),
        };
        (corpus.stats, corpus.dead_docs) = corpus.live_stats();
        Ok(corpus)
    }

    /// N and total length over live documents.
    pub fn stats(&self) -> CorpusStats {
        self.stats
    }

    /// Documents per posting block.
    pub(crate) fn block_size(&self) -> usize {
        self.block_size
    }

    /// Which rows are live.
    pub(crate) fn live(&self) -> &LiveRows<'a> {
        &self.live
    }

    /// Every segment, the unindexed one last.
    pub(crate) fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.segments.iter().copied().chain(self.fresh.as_ref())
    }

    /// N and total length over live documents, and each segment's dead documents (sorted).
    fn live_stats(&self) -> (CorpusStats, Vec<Vec<u32>>) {
        let mut s = CorpusStats::default();
        let mut dead_docs = Vec::new();
        for seg in self.segments() {
            s.num_docs += seg.num_docs() as u64;
            s.total_tokens += seg.total_tokens();
            let mut docs: Vec<u32> = Vec::new();
            if let LiveRows::Except(dead) = self.live {
                if dead.len() < seg.num_docs() as u64 {
                    docs.extend(
                        dead.iter()
                            .filter_map(|row| seg.find_row(row))
                            .map(|d| d as u32),
                    );
                } else {
                    let rows = seg.row_ids().iter().zip(0u32..);
                    docs.extend(rows.filter(|(&r, _)| dead.contains(r)).map(|(_, d)| d));
                }
            }
            docs.sort_unstable();
            for &d in &docs {
                s.num_docs -= 1;
                s.total_tokens -= u64::from(seg.lengths()[d as usize]);
            }
            dead_docs.push(docs);
        }
        (s, dead_docs)
    }

    /// Live documents holding `term`: its postings less the dead documents among them (two
    /// sorted lists, the longer one searched).
    pub(crate) fn df(&self, term: &str) -> u64 {
        let mut df = 0;
        for (seg, dead) in self.segments().zip(&self.dead_docs) {
            if let Some(p) = seg.postings_of(term) {
                df += (p.docs.len() - common(&p.docs, dead)) as u64;
            }
        }
        df
    }
}

/// How many values two ascending lists share.
fn common(a: &[u32], b: &[u32]) -> usize {
    let (small, large) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    let mut rest = large;
    let mut n = 0;
    for &x in small {
        rest = &rest[rest.partition_point(|&y| y < x)..];
        match rest.first() {
            Some(&y) if y == x => n += 1,
            Some(_) => {}
            None => break,
        }
    }
    n
}
