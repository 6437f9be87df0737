//! Fuzzy term expansion as Lance does it: each query term becomes the dictionary terms within its
//! edit distance (Levenshtein over characters, sharing the first `prefix_length` characters),
//! taken in dictionary order until `max_expansions` terms in all. The dictionary is the union of
//! every segment's, the unindexed rows' included, less the terms no live row holds (so deleted rows
//! take no expansion slot). Talks to `corpus.rs`.

use std::collections::BTreeSet;

use crate::corpus::Corpus;

/// For each query term, the dictionary terms it expands to (possibly none), at most
/// `max_expansions` over all terms (each query term's expansions count, as in LanceDB: two query
/// terms expanding to the same dictionary term take two).
pub(crate) fn expand(
    corpus: &Corpus<'_>,
    tokens: &[String],
    distances: &[u32],
    prefix_length: u32,
    max_expansions: usize,
) -> Vec<Vec<String>> {
    let mut out = Vec::with_capacity(tokens.len());
    let mut total = 0usize;
    for (token, &k) in tokens.iter().zip(distances) {
        let mut found = BTreeSet::new();
        let chars: Vec<char> = token.chars().collect();
        let prefix: String = chars.iter().take(prefix_length as usize).collect();
        for seg in corpus.segments() {
            let terms = seg.terms();
            let start = terms.partition_point(|t| t.as_str() < prefix.as_str());
            for t in terms[start..]
                .iter()
                .take_while(|t| t.starts_with(prefix.as_str()))
            {
                if within(&chars, t, k as usize) && corpus.df(t) > 0 {
                    found.insert(t.as_str());
                }
            }
        }
        let mut group = Vec::new();
        for t in found {
            if total >= max_expansions {
                break;
            }
            group.push(t.to_string());
            total += 1;
        }
        out.push(group);
    }
    out
}

/// Whether the Levenshtein distance between `a` and `b` is at most `k` (banded, stops early).
pub(crate) fn within(a: &[char], b: &str, k: usize) -> bool {
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > k {
        return false;
    }
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, &ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        let mut best = cur[0];
        for (j, &cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
            best = best.min(cur[j + 1]);
        }
        if best > k {
            return false;
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()] <= k
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(a: &str, b: &str, k: usize) -> bool {
        within(&a.chars().collect::<Vec<_>>(), b, k)
    }

    #[test]
    fn levenshtein_bounds() {
        assert!(w("kitten", "sitting", 3));
        assert!(!w("kitten", "sitting", 2));
        assert!(w("abc", "abc", 0));
        assert!(!w("abc", "acb", 1));
        assert!(w("abc", "acb", 2));
        assert!(w("", "ab", 2));
        assert!(w("héllo", "hello", 1));
    }
}
