//! BM25 as LanceDB scores it: k1 = 1.2, b = 0.75, idf = ln(1 + (N - df + 0.5) / (df + 0.5)),
//! term score = idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl)). (Lucene leaves out the
//! `k1 + 1` factor, so a Lucene-style score times 2.2 is ours.) Computed in f64, reported as f32.
//! Talks to nothing.

/// Term-frequency saturation.
pub const K1: f64 = 1.2;
/// Length normalisation.
pub const B: f64 = 0.75;

/// Collection statistics a score needs: live documents and their total length.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct CorpusStats {
    /// Live documents (N).
    pub num_docs: u64,
    /// Sum of the live documents' lengths in tokens.
    pub total_tokens: u64,
}

impl CorpusStats {
    /// Average document length (1 for an empty corpus, so nothing divides by zero).
    pub fn avgdl(&self) -> f64 {
        if self.num_docs == 0 || self.total_tokens == 0 {
            1.0
        } else {
            self.total_tokens as f64 / self.num_docs as f64
        }
    }
}

/// The inverse document frequency of a term found in `df` of `n` live documents.
pub fn idf(n: u64, df: u64) -> f64 {
    let (n, df) = (n as f64, df as f64);
    (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
}

/// One term's contribution to one document's score.
pub fn term_score(idf: f64, tf: u32, doc_len: u32, avgdl: f64) -> f64 {
    let tf = f64::from(tf);
    let norm = K1 * (1.0 - B + B * f64::from(doc_len) / avgdl);
    idf * tf * (K1 + 1.0) / (tf + norm)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three documents: "a b", "a a c", "c"; query "a". By hand: N = 3, df(a) = 2, avgdl = 6/3 = 2.
    /// idf = ln(1 + 1.5/2.5) = ln 1.6 = 0.470003629.
    /// doc 1 (tf 1, dl 2): 0.470003629 * 2.2 / (1 + 1.2) = 0.470003629.
    /// doc 2 (tf 2, dl 3): norm = 1.2 * (0.25 + 0.75 * 1.5) = 1.65; 0.470003629 * 4.4 / 3.65 = 0.566579717
    #[test]
    fn hand_computed_example() {
        let stats = CorpusStats {
            num_docs: 3,
            total_tokens: 6,
        };
        let i = idf(stats.num_docs, 2);
        assert!((i - 1.6f64.ln()).abs() < 1e-12);
        assert!((term_score(i, 1, 2, stats.avgdl()) - 0.470_003_629).abs() < 1e-8);
        assert!((term_score(i, 2, 3, stats.avgdl()) - 0.566_579_717).abs() < 1e-8);
    }

    #[test]
    fn empty_corpus_does_not_divide_by_zero() {
        assert_eq!(CorpusStats::default().avgdl(), 1.0);
        assert!(idf(0, 0).is_finite());
    }
}
