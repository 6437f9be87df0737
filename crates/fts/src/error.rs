//! The one error type of `memwal-fts`. Every public function returns [`FtsError`]; the table engine
//! maps the variants to its own codes (`InvalidInput` for the caller's mistakes, `Corrupt` for
//! stored bytes that fail to verify) in one place.

/// What went wrong in the full-text-search engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FtsError {
    /// An index parameter is unusable (an unknown base tokenizer or language, a bad n-gram range).
    #[error("invalid FTS index parameter {param}: {reason}")]
    InvalidParam {
        /// The parameter's name as sent (`base_tokenizer`, `language`, ...).
        param: &'static str,
        /// Why, and what to send instead.
        reason: String,
    },
    /// A full-text query is unusable (bad JSON shape, out-of-range fuzziness, too many terms).
    #[error("invalid full-text query: {0}")]
    InvalidQuery(String),
    /// A phrase query on a column indexed without positions. The text is LanceDB's own.
    #[error("position is not found but required for phrase queries, try recreating the index with position")]
    PositionsRequired,
    /// The query names a column that has no FTS index, or names none while several have one.
    #[error("{0}")]
    Column(String),
    /// A segment was built with the same row id twice.
    #[error("row id {row_id} was given twice to one FTS segment; each row is one document")]
    DuplicateRow {
        /// The repeated row id.
        row_id: u64,
    },
    /// A document or the segment exceeds a hard limit (tokens per document, documents per segment).
    #[error("FTS limit exceeded: {0}")]
    Limit(String),
    /// Serialized segment bytes failed to decode or verify (checksum, bounds, ordering).
    #[error("FTS segment is corrupt: {0}")]
    Corrupt(String),
}

/// The crate's result type.
pub type Result<T, E = FtsError> = std::result::Result<T, E>;

impl FtsError {
    pub(crate) fn query(msg: impl Into<String>) -> Self {
        FtsError::InvalidQuery(msg.into())
    }

    pub(crate) fn corrupt(msg: impl Into<String>) -> Self {
        FtsError::Corrupt(msg.into())
    }
}
