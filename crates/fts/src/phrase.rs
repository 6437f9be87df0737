//! Phrase matching on positions: the phrase's terms in order, each at its offset from the previous
//! one (offsets keep the gaps of dropped stop words) plus at most `slop` extra positions. Talks to
//! nothing.

/// Whether some placement of the phrase fits: `lists[i]` are the ascending positions of the
/// `i`-th phrase term in the document, `offsets[i]` its position in the analyzed query.
pub(crate) fn matches(lists: &[&[u32]], offsets: &[u32], slop: u32) -> bool {
    let Some(first) = lists.first() else {
        return false;
    };
    if slop == 0 {
        return exact(first, &lists[1..], offsets);
    }
    let mut reach: Vec<u64> = first.iter().map(|&p| u64::from(p)).collect();
    for i in 1..lists.len() {
        let gap = u64::from(offsets[i].saturating_sub(offsets[i - 1]));
        let slop = u64::from(slop);
        // Positions of term i reachable from a reachable position r of term i-1:
        // r + gap <= p <= r + gap + slop.
        let next: Vec<u64> = lists[i]
            .iter()
            .map(|&p| u64::from(p))
            .filter(|&p| {
                let lo = p.saturating_sub(gap + slop);
                let at = reach.partition_point(|&r| r < lo);
                reach.get(at).is_some_and(|&r| r + gap <= p)
            })
            .collect();
        if next.is_empty() {
            return false;
        }
        reach = next;
    }
    !reach.is_empty()
}

/// `slop` 0: some position `p` of the first term has every later term `i` at exactly
/// `p + offsets[i] - offsets[0]` (binary search, nothing allocated).
fn exact(first: &[u32], rest: &[&[u32]], offsets: &[u32]) -> bool {
    let base = offsets.first().copied().unwrap_or(0);
    first.iter().any(|&p| {
        rest.iter().zip(offsets.iter().skip(1)).all(|(list, &o)| {
            let want = u64::from(p) + u64::from(o.saturating_sub(base));
            list.binary_search_by(|&x| u64::from(x).cmp(&want)).is_ok()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn exact_and_sloppy() {
        assert!(matches(&[&[0, 5], &[6]], &[0, 1], 0));
        assert!(!matches(&[&[0], &[2]], &[0, 1], 0));
        assert!(matches(&[&[0], &[2]], &[0, 1], 1));
        assert!(!matches(&[&[3], &[2]], &[0, 1], 5));
        // A gap in the query (a dropped stop word) must be there in the document too.
        assert!(matches(&[&[4], &[6]], &[0, 2], 0));
        assert!(!matches(&[&[4], &[5]], &[0, 2], 0));
        // Reaching the third term may need a later second-term position.
        assert!(matches(&[&[0], &[1, 3], &[4]], &[0, 1, 2], 2));
    }
}
