//! Row ids of a segment mapped to new ones (a compaction moved the rows) or dropped (the rows are
//! gone): the postings are renumbered, nothing is tokenized again. Talks to `segment.rs`.

use crate::error::{FtsError, Result};
use crate::segment::{Posting, Segment};

impl Segment {
    /// The same segment with each row id mapped by `map` (`None`: the row is gone). Two rows may
    /// not map to one id.
    pub fn remapped(&self, map: &dyn Fn(u64) -> Option<u64>) -> Result<Segment> {
        // (new row id, old doc) for the docs that stay, by new row id.
        let mut keep: Vec<(u64, usize)> = self
            .row_ids
            .iter()
            .enumerate()
            .filter_map(|(doc, &r)| map(r).map(|n| (n, doc)))
            .collect();
        keep.sort_unstable();
        if let Some(w) = keep.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(FtsError::DuplicateRow { row_id: w[0].0 });
        }
        let mut new_of = vec![u32::MAX; self.row_ids.len()];
        for (new, &(_, old)) in keep.iter().enumerate() {
            new_of[old] = new as u32;
        }
        let mut terms = Vec::new();
        let mut postings = Vec::new();
        for (term, p) in self.terms.iter().zip(&self.postings) {
            let q = renumber(p, &new_of, self.with_position);
            if !q.docs.is_empty() {
                terms.push(term.clone());
                postings.push(q);
            }
        }
        let lengths: Vec<u32> = keep.iter().map(|&(_, old)| self.lengths[old]).collect();
        Ok(Segment {
            with_position: self.with_position,
            row_ids: keep.iter().map(|&(n, _)| n).collect(),
            total_tokens: lengths.iter().map(|&l| u64::from(l)).sum(),
            lengths,
            terms,
            postings,
            blocks: Default::default(),
        })
    }
}

fn renumber(p: &Posting, new_of: &[u32], with_position: bool) -> Posting {
    let mut idx: Vec<(u32, usize)> = p
        .docs
        .iter()
        .enumerate()
        .filter_map(|(i, &d)| Some((*new_of.get(d as usize)?, i)).filter(|(n, _)| *n != u32::MAX))
        .collect();
    idx.sort_unstable();
    let mut out = Posting::default();
    if with_position {
        out.starts.push(0);
    }
    for (new, i) in idx {
        out.docs.push(new);
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
    use crate::analyzer::Analyzer;
    use crate::params::FtsParams;
    use crate::segment::SegmentBuilder;

    #[test]
    fn remapped_equals_a_segment_built_from_the_moved_rows() {
        let a = Analyzer::new(&FtsParams::default()).expect("analyzer");
        let rows = [(1u64, "quick fox"), (2, "lazy dog"), (3, "quick dog dog")];
        let mut b = SegmentBuilder::new(&a, true);
        rows.iter()
            .for_each(|(r, t)| b.add(*r, Some(t)).expect("add"));
        let seg = b.finish().expect("finish");
        // Row 2 gone; rows 1 and 3 moved (and swapped in order).
        let moved = seg.remapped(&|r| match r {
            1 => Some(20),
            3 => Some(10),
            _ => None,
        });
        let mut b = SegmentBuilder::new(&a, true);
        b.add(20, Some("quick fox")).expect("add");
        b.add(10, Some("quick dog dog")).expect("add");
        assert_eq!(moved.expect("remap"), b.finish().expect("finish"));
        assert!(seg.remapped(&|_| Some(7)).is_err(), "two rows onto one id");
    }
}
