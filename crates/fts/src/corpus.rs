//! One column as a query sees it: its index segments, a segment made on the fly from the rows the
//! index does not cover yet (so a row is searchable the moment it is written), and which rows are
//! live. Statistics (N, average length, document frequencies) are global over all of them and
//! count live rows only, so a deleted or superseded row never weighs on a score. Talks to
//! `segment.rs`, `analyzer.rs` and `bm25.rs`.

use roaring::RoaringTreemap;

use crate::analyzer::Analyzer;
use crate::bm25::CorpusStats;
use crate::error::Result;
use crate::segment::{Posting, Segment, SegmentBuilder};

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
        };
        corpus.stats = corpus.live_stats();
        Ok(corpus)
    }

    /// N and total length over live documents.
    pub fn stats(&self) -> CorpusStats {
        self.stats
    }

    /// Which rows are live.
    pub(crate) fn live(&self) -> &LiveRows<'a> {
        &self.live
    }

    /// Every segment, the unindexed one last.
    pub(crate) fn segments(&self) -> impl Iterator<Item = &Segment> {
        self.segments.iter().copied().chain(self.fresh.as_ref())
    }

    fn live_stats(&self) -> CorpusStats {
        let mut s = CorpusStats::default();
        for seg in self.segments() {
            s.num_docs += seg.num_docs() as u64;
            s.total_tokens += seg.total_tokens();
            let LiveRows::Except(dead) = self.live else {
                continue;
            };
            if dead.len() < seg.num_docs() as u64 {
                for row in dead.iter() {
                    if let Some(doc) = seg.find_row(row) {
                        s.num_docs -= 1;
                        s.total_tokens -= u64::from(seg.lengths()[doc]);
                    }
                }
            } else {
                for (&row, &len) in seg.row_ids().iter().zip(seg.lengths()) {
                    if dead.contains(row) {
                        s.num_docs -= 1;
                        s.total_tokens -= u64::from(len);
                    }
                }
            }
        }
        s
    }

    /// Live documents holding `term`.
    pub(crate) fn df(&self, term: &str) -> u64 {
        let mut df = 0;
        for seg in self.segments() {
            if let Some(p) = seg.postings_of(term) {
                df += match self.live {
                    LiveRows::All => p.docs.len() as u64,
                    LiveRows::Except(_) => live_entries(seg, p, &self.live).count() as u64,
                };
            }
        }
        df
    }
}

fn live_entries<'s>(
    seg: &'s Segment,
    p: &'s Posting,
    live: &'s LiveRows<'_>,
) -> impl Iterator<Item = usize> + 's {
    (0..p.docs.len()).filter(move |&i| live.contains(seg.row_ids()[p.docs[i] as usize]))
}
