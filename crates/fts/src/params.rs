//! The FTS index parameters (`create_index` with `index_type: "FTS"`, Lance's `InvertedIndexParams`
//! flattened into the body), read the way Lance reads them: every field optional with Lance's
//! default, unknown fields ignored (they are other index types' or newer Lance's), and what we cannot
//! honour refused by name. [`FtsParams`] is the resolved form an index stores and the analyzer
//! (`analyzer.rs`) is built from. Talks to nothing.

use serde::{Deserialize, Serialize};

use crate::error::{FtsError, Result};

/// The base tokenizers we implement, as Lance names them (`icu`: ICU dictionary word segmentation,
/// for text without spaces between words; `icu/split`: its segments split again like `simple`).
pub const BASE_TOKENIZERS: &[&str] = &["simple", "whitespace", "raw", "ngram", "icu", "icu/split"];

/// The languages the stemmer and stop-word lists of lance-tokenizer 12 know, as Lance names them.
pub const LANGUAGES: &[&str] = &[
    "Arabic",
    "Danish",
    "Dutch",
    "English",
    "Finnish",
    "French",
    "German",
    "Greek",
    "Hungarian",
    "Italian",
    "Norwegian",
    "Portuguese",
    "Romanian",
    "Russian",
    "Spanish",
    "Swedish",
    "Tamil",
    "Turkish",
];

/// Resolved FTS index parameters (Lance's defaults filled in, names checked).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FtsParams {
    /// `simple` (split on non-alphanumerics, the default), `whitespace`, `raw`, `ngram`, `icu` or
    /// `icu/split`.
    pub base_tokenizer: String,
    /// Stemmer and stop-word language, one of [`LANGUAGES`] (default `English`).
    pub language: String,
    /// Store token positions (needed by phrase queries). Default false.
    pub with_position: bool,
    /// Tokens longer than this (bytes) are dropped; `None` keeps every token. Default 40.
    pub max_token_length: Option<usize>,
    /// Lower-case tokens. Default true.
    pub lower_case: bool,
    /// Stem tokens in `language`. Default true (false for `ngram`).
    pub stem: bool,
    /// Drop stop words. Default true (false for `ngram`).
    pub remove_stop_words: bool,
    /// Stop words replacing the language's list when `remove_stop_words`.
    pub custom_stop_words: Option<Vec<String>>,
    /// Fold non-ASCII letters to ASCII (`é` -> `e`). Default true.
    pub ascii_folding: bool,
    /// Shortest n-gram (`ngram` only). Default 3.
    pub min_ngram_length: u32,
    /// Longest n-gram (`ngram` only). Default 3.
    pub max_ngram_length: u32,
    /// Only n-grams that start a word (`ngram` only). Default false.
    pub prefix_only: bool,
    /// Documents per posting block (Lance's `block_size`, 128 or 256; default 128): the unit of
    /// block-max pruning (`blocks.rs`). Lance's 256 is its experimental FTS format V3.
    #[serde(default = "default_block_size")]
    pub block_size: u32,
}

/// The posting block sizes Lance takes.
pub const BLOCK_SIZES: [u32; 2] = [128, 256];

fn default_block_size() -> u32 {
    crate::blocks::DEFAULT_BLOCK_SIZE as u32
}

impl FtsParams {
    /// Lance's version of an FTS index of these parameters: 3 with 256-document blocks, else 2.
    pub fn index_version(&self) -> u32 {
        if self.block_size == 256 {
            3
        } else {
            2
        }
    }
}

impl Default for FtsParams {
    fn default() -> Self {
        FtsParams {
            base_tokenizer: "simple".into(),
            language: "English".into(),
            with_position: false,
            max_token_length: Some(40),
            lower_case: true,
            stem: true,
            remove_stop_words: true,
            custom_stop_words: None,
            ascii_folding: true,
            min_ngram_length: 3,
            max_ngram_length: 3,
            prefix_only: false,
            block_size: default_block_size(),
        }
    }
}

/// The body as sent: every field optional. Unknown fields are ignored, as Lance ignores them.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct RawParams {
    analyzer: Option<String>,
    lance_tokenizer: Option<String>,
    base_tokenizer: Option<String>,
    language: Option<String>,
    with_position: Option<bool>,
    #[serde(deserialize_with = "explicit_option")]
    max_token_length: Option<Option<usize>>,
    lower_case: Option<bool>,
    stem: Option<bool>,
    remove_stop_words: Option<bool>,
    custom_stop_words: Option<Vec<String>>,
    ascii_folding: Option<bool>,
    min_ngram_length: Option<u32>,
    max_ngram_length: Option<u32>,
    prefix_only: Option<bool>,
    block_size: Option<u32>,
    split_identifiers: Option<bool>,
    split_on_numerics: Option<bool>,
    preserve_original: Option<bool>,
    index_operators: Option<bool>,
}

/// `"max_token_length": null` means "no limit", which differs from the field being absent.
fn explicit_option<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<Option<usize>>, D::Error> {
    Option::<usize>::deserialize(d).map(Some)
}

impl FtsParams {
    /// Reads the parameters from a `create_index` body (or any JSON object holding them).
    pub fn from_json(body: &serde_json::Value) -> Result<FtsParams> {
        if !body.is_object() {
            return Err(invalid(
                "params",
                "FTS index parameters must be a JSON object".into(),
            ));
        }
        let raw: RawParams =
            serde_json::from_value(body.clone()).map_err(|e| invalid("params", format!("{e}")))?;
        raw.resolve()
    }

    /// Checks names and ranges (also for parameters read back from a stored index).
    pub fn validate(&self) -> Result<()> {
        if !BASE_TOKENIZERS.contains(&self.base_tokenizer.as_str()) {
            return Err(invalid(
                "base_tokenizer",
                format!(
                    "{:?} is not supported; use one of {}",
                    self.base_tokenizer,
                    BASE_TOKENIZERS.join(", ")
                ),
            ));
        }
        if !LANGUAGES.contains(&self.language.as_str()) {
            return Err(invalid(
                "language",
                format!(
                    "{:?} is not supported; use one of {}",
                    self.language,
                    LANGUAGES.join(", ")
                ),
            ));
        }
        if !BLOCK_SIZES.contains(&self.block_size) {
            return Err(invalid(
                "block_size",
                format!(
                    "FTS inverted index block_size must be one of 128 or 256, got {}",
                    self.block_size
                ),
            ));
        }
        if self.base_tokenizer == "ngram" {
            let (lo, hi) = (self.min_ngram_length, self.max_ngram_length);
            if lo == 0 || lo > hi || hi > 255 {
                return Err(invalid(
                    "min_ngram_length",
                    format!("n-gram lengths must satisfy 0 < min <= max <= 255, got {lo}..{hi}"),
                ));
            }
        }
        Ok(())
    }
}

impl RawParams {
    fn resolve(self) -> Result<FtsParams> {
        self.refuse_unsupported()?;
        let mut p = FtsParams::default();
        if let Some(base) = self.base_tokenizer {
            if base == "ngram" {
                // Lance: n-grams keep every substring searchable, so no stemming or stop words
                // unless asked for explicitly.
                p.stem = false;
                p.remove_stop_words = false;
            }
            p.base_tokenizer = base;
        }
        if let Some(language) = self.language {
            p.language = canonical_language(&language).unwrap_or(language);
        }
        set(&mut p.with_position, self.with_position);
        if let Some(max) = self.max_token_length {
            p.max_token_length = max;
        }
        set(&mut p.lower_case, self.lower_case);
        set(&mut p.stem, self.stem);
        set(&mut p.remove_stop_words, self.remove_stop_words);
        p.custom_stop_words = self.custom_stop_words;
        set(&mut p.ascii_folding, self.ascii_folding);
        set(&mut p.min_ngram_length, self.min_ngram_length);
        set(&mut p.max_ngram_length, self.max_ngram_length);
        set(&mut p.prefix_only, self.prefix_only);
        set(&mut p.block_size, self.block_size);
        p.validate()?;
        Ok(p)
    }

    /// Lance features whose tokens we do not produce: refused by name rather than indexed wrongly.
    fn refuse_unsupported(&self) -> Result<()> {
        if let Some(a) = self.analyzer.as_deref().filter(|a| *a != "text") {
            return Err(invalid(
                "analyzer",
                format!("{a:?} is not supported; use \"text\""),
            ));
        }
        if let Some(t) = self.lance_tokenizer.as_deref().filter(|t| *t != "text") {
            return Err(invalid(
                "lance_tokenizer",
                format!("{t:?} is not supported; use \"text\""),
            ));
        }
        let code_flags = [
            ("split_identifiers", self.split_identifiers),
            ("split_on_numerics", self.split_on_numerics),
            ("preserve_original", self.preserve_original),
            ("index_operators", self.index_operators),
        ];
        if let Some((name, _)) = code_flags.iter().find(|(_, v)| *v == Some(true)) {
            return Err(invalid(
                name,
                "code analyzer flags require analyzer='code', which is not supported".into(),
            ));
        }
        Ok(())
    }
}

fn set<T>(slot: &mut T, value: Option<T>) {
    if let Some(v) = value {
        *slot = v;
    }
}

/// `english` -> `English` (Lance's names are capitalised; we accept any case).
fn canonical_language(name: &str) -> Option<String> {
    LANGUAGES
        .iter()
        .find(|l| l.eq_ignore_ascii_case(name))
        .map(|l| (*l).to_string())
}

fn invalid(param: &'static str, reason: String) -> FtsError {
    FtsError::InvalidParam { param, reason }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn empty_body_gives_lance_defaults() {
        let p = FtsParams::from_json(&json!({})).expect("defaults");
        assert_eq!(p, FtsParams::default());
        assert_eq!(p.max_token_length, Some(40));
    }

    #[test]
    fn unknown_fields_are_ignored_and_known_ones_read() {
        let body = json!({"column": "text", "index_type": "FTS", "block_size": 256, "num_workers": 2,
            "with_position": true, "language": "french", "stem": false, "max_token_length": null});
        let p = FtsParams::from_json(&body).expect("lenient");
        assert!(p.with_position && !p.stem);
        assert_eq!(p.language, "French");
        assert_eq!(p.max_token_length, None);
        assert_eq!((p.block_size, p.index_version()), (256, 3));
        assert_eq!(FtsParams::default().index_version(), 2);
    }

    #[test]
    fn ngram_defaults_drop_stemming_and_stop_words() {
        let p = FtsParams::from_json(&json!({"base_tokenizer": "ngram"})).expect("ngram");
        assert!(!p.stem && !p.remove_stop_words);
        let p =
            FtsParams::from_json(&json!({"base_tokenizer": "ngram", "stem": true})).expect("ngram");
        assert!(p.stem);
    }

    #[test]
    fn unsupported_names_are_refused_by_name() {
        for (body, name) in [
            (json!({"base_tokenizer": "jieba/default"}), "base_tokenizer"),
            (
                json!({"base_tokenizer": "lindera/ipadic"}),
                "base_tokenizer",
            ),
            (json!({"language": "Klingon"}), "language"),
            (json!({"analyzer": "code"}), "analyzer"),
            (json!({"lance_tokenizer": "json"}), "lance_tokenizer"),
            (json!({"split_identifiers": true}), "split_identifiers"),
            (json!({"block_size": 129}), "128 or 256"),
            (json!({"block_size": 0}), "block_size"),
            (
                json!({"base_tokenizer": "ngram", "min_ngram_length": 4, "max_ngram_length": 2}),
                "min_ngram_length",
            ),
        ] {
            let err = FtsParams::from_json(&body).expect_err("refused");
            assert!(err.to_string().contains(name), "{err} should name {name}");
        }
        assert!(FtsParams::from_json(&json!({"stem": "yes"})).is_err());
        assert!(FtsParams::from_json(&json!([1])).is_err());
    }
}
