//! Segments built apart from disjoint rows joined into one (an index build splits its rows among
//! threads): documents numbered on, term dictionaries merged, postings appended. Nothing is
//! tokenized again. Talks to `segment.rs` and `remap.rs` (rows that do not come out ascending are
//! put in order by an identity remap).

use std::cmp::Ordering;

use crate::error::{FtsError, Result};
use crate::segment::{Posting, Segment};

impl Segment {
    /// One segment holding the rows of every part (`parts` keep their own order of documents; rows
    /// need not be ascending across parts). A row in two parts is refused; an empty list gives an
    /// empty segment.
    pub fn concat(parts: Vec<Segment>, with_position: bool) -> Result<Segment> {
        let mut it = parts.into_iter();
        let Some(mut out) = it.next() else {
            return Ok(Segment {
                with_position,
                row_ids: Vec::new(),
                lengths: Vec::new(),
                total_tokens: 0,
                terms: Vec::new(),
                postings: Vec::new(),
                blocks: Default::default(),
            });
        };
        for next in it {
            if next.with_position != out.with_position {
                return Err(FtsError::Limit(
                    "segments with and without positions cannot be joined".into(),
                ));
            }
            out = append(out, next)?;
        }
        if out.row_ids.windows(2).all(|w| w[0] < w[1]) {
            Ok(out)
        } else {
            out.remapped(&Some)
        }
    }
}

/// `a` followed by `b`: `b`'s documents numbered after `a`'s.
fn append(a: Segment, b: Segment) -> Result<Segment> {
    let offset = u32::try_from(a.row_ids.len())
        .ok()
        .filter(|o| o.checked_add(b.row_ids.len() as u32).is_some())
        .ok_or_else(|| FtsError::Limit("a segment holds at most 2^32 - 1 documents".into()))?;
    let mut terms = Vec::with_capacity(a.terms.len().max(b.terms.len()));
    let mut postings = Vec::with_capacity(terms.capacity());
    let mut ai = a.terms.into_iter().zip(a.postings).peekable();
    let mut bi = b.terms.into_iter().zip(b.postings).peekable();
    loop {
        let order = match (ai.peek(), bi.peek()) {
            (None, None) => break,
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (Some((ta, _)), Some((tb, _))) => ta.cmp(tb),
        };
        let next = match order {
            Ordering::Less => ai.next(),
            Ordering::Greater => bi.next().map(|(t, p)| (t, shifted(&p, offset))),
            Ordering::Equal => ai
                .next()
                .zip(bi.next())
                .map(|((t, pa), (_, pb))| (t, joined(pa, &pb, offset))),
        };
        let Some((term, posting)) = next else { break };
        terms.push(term);
        postings.push(posting);
    }
    let mut row_ids = a.row_ids;
    row_ids.extend_from_slice(&b.row_ids);
    let mut lengths = a.lengths;
    lengths.extend_from_slice(&b.lengths);
    Ok(Segment {
        with_position: a.with_position,
        row_ids,
        lengths,
        total_tokens: a.total_tokens + b.total_tokens,
        terms,
        postings,
        blocks: Default::default(),
    })
}

/// `b`'s postings with documents numbered from `offset`.
fn shifted(b: &Posting, offset: u32) -> Posting {
    joined(Posting::default(), b, offset)
}

/// `a`'s postings followed by `b`'s, `b`'s documents numbered from `offset`.
fn joined(mut a: Posting, b: &Posting, offset: u32) -> Posting {
    a.docs.extend(b.docs.iter().map(|d| d + offset));
    a.freqs.extend_from_slice(&b.freqs);
    if !b.starts.is_empty() {
        let base = a.positions.len() as u32;
        if a.starts.is_empty() {
            a.starts.push(0);
        }
        a.starts.extend(b.starts.iter().skip(1).map(|s| s + base));
        a.positions.extend_from_slice(&b.positions);
    }
    a
}

#[cfg(test)]
mod tests {
    use crate::analyzer::Analyzer;
    use crate::params::FtsParams;
    use crate::segment::{Segment, SegmentBuilder};
    use proptest::prelude::*;

    fn built(a: &Analyzer, rows: &[(u64, String)], with_position: bool) -> Segment {
        let mut b = SegmentBuilder::new(a, with_position);
        for (r, t) in rows {
            b.add(*r, Some(t)).expect("add");
        }
        b.finish().expect("finish")
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Rows split among parts and joined make the segment built from all of them at once.
        #[test]
        fn parts_joined_equal_one_build(
            texts in proptest::collection::vec("(a|b|c|dog|fox|the| ){0,12}", 0..40),
            cuts in proptest::collection::vec(0usize..40, 0..4),
            shuffle in any::<bool>(),
            with_position in any::<bool>(),
        ) {
            let a = Analyzer::new(&FtsParams::default()).expect("analyzer");
            let mut rows: Vec<(u64, String)> =
                texts.into_iter().enumerate().map(|(i, t)| (i as u64 * 3 + 1, t)).collect();
            if shuffle {
                rows.reverse();
            }
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(rows.len())).collect();
            cuts.sort_unstable();
            let mut parts = Vec::new();
            let mut from = 0;
            for c in cuts.into_iter().chain([rows.len()]) {
                parts.push(built(&a, &rows[from..c.max(from)], with_position));
                from = c.max(from);
            }
            let joined = Segment::concat(parts, with_position).expect("concat");
            prop_assert_eq!(joined, built(&a, &rows, with_position));
        }
    }

    #[test]
    fn a_row_in_two_parts_is_refused() {
        let a = Analyzer::new(&FtsParams::default()).expect("analyzer");
        let p = built(&a, &[(5, "fox".into())], false);
        assert!(Segment::concat(vec![p.clone(), p], false).is_err());
    }
}
