//! The analyzer: text to tokens exactly as LanceDB's engine makes them, built from [`FtsParams`]
//! with the `lance-tokenizer` crate LanceDB itself runs (12.0.0, pinned in Cargo.toml). The filter
//! order is Lance's: base tokenizer, drop long tokens, lower case, stem, stop words, ASCII folding.
//! Documents and queries go through the same analyzer (Lance's text tokenizer has one path for
//! both). Talks to `params.rs` only.

use lance_tokenizer::{
    AsciiFoldingFilter, IcuTokenizer, Language, LowerCaser, NgramTokenizer, RawTokenizer,
    RemoveLongFilter, SimpleTokenizer, Stemmer, StopWordFilter, TextAnalyzer, TextAnalyzerBuilder,
    TokenStream, WhitespaceTokenizer,
};

use crate::error::{FtsError, Result};
use crate::params::FtsParams;

/// Most tokens one document (or one query text) may produce; past it the text is refused rather
/// than held in memory (an n-gram tokenizer over a huge text is the way to get there).
pub const MAX_TOKENS_PER_TEXT: usize = 4 << 20;

/// One token: its text and its position in the document (gaps where filters dropped tokens).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The analyzed text.
    pub text: String,
    /// Position as the base tokenizer numbered it.
    pub position: u32,
}

/// A built analyzer; cheap to share, every call works on its own copy of the token pipeline.
#[derive(Clone)]
pub struct Analyzer {
    inner: TextAnalyzer,
    /// The base tokenizer alone: Lance splits a fuzzy query with it and applies no filter (no
    /// lower case, stemming, stop words or folding; measured against LanceDB's engine).
    base: TextAnalyzer,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Analyzer")
    }
}

impl Analyzer {
    /// Builds the pipeline the parameters describe (they are validated first).
    pub fn new(params: &FtsParams) -> Result<Analyzer> {
        params.validate()?;
        let language = language(&params.language)?;
        let base_only = base(params)?.build();
        let mut builder = base(params)?;
        if let Some(max) = params.max_token_length {
            builder = builder.filter_dynamic(RemoveLongFilter::limit(max));
        }
        if params.lower_case {
            builder = builder.filter_dynamic(LowerCaser);
        }
        if params.stem {
            builder = builder.filter_dynamic(Stemmer::new(language));
        }
        if params.remove_stop_words {
            let icu = params.base_tokenizer.starts_with("icu");
            let filter = match &params.custom_stop_words {
                Some(words) => StopWordFilter::remove(words.iter().cloned()),
                // ICU segments text of any script: Lance drops the stop words of every language it
                // has a list for (measured against @lancedb/lancedb 0.39's tokenize).
                None if icu => StopWordFilter::all(),
                None => StopWordFilter::new(language).ok_or_else(|| FtsError::InvalidParam {
                    param: "language",
                    reason: format!("no stop-word list for {}", params.language),
                })?,
            };
            builder = builder.filter_dynamic(filter);
        }
        if params.ascii_folding {
            builder = builder.filter_dynamic(AsciiFoldingFilter);
        }
        Ok(Analyzer {
            inner: builder.build(),
            base: base_only,
        })
    }

    /// Calls `sink(text, position)` for each token of `text`, in order.
    pub fn for_each_token(&self, text: &str, sink: impl FnMut(&str, u32)) -> Result<()> {
        run(&self.inner, text, sink)
    }

    /// Like [`Analyzer::for_each_token`] with the base tokenizer alone (fuzzy query terms).
    pub fn for_each_raw_token(&self, text: &str, sink: impl FnMut(&str, u32)) -> Result<()> {
        run(&self.base, text, sink)
    }

    /// The tokens of `text`.
    pub fn tokens(&self, text: &str) -> Result<Vec<Token>> {
        let mut out = Vec::new();
        self.for_each_token(text, |t, position| {
            out.push(Token {
                text: t.to_string(),
                position,
            })
        })?;
        Ok(out)
    }
}

fn run(analyzer: &TextAnalyzer, text: &str, mut sink: impl FnMut(&str, u32)) -> Result<()> {
    let mut pipeline = analyzer.clone();
    let mut stream = pipeline.token_stream(text);
    let mut count = 0usize;
    while let Some(token) = stream.next() {
        count += 1;
        if count > MAX_TOKENS_PER_TEXT {
            return Err(FtsError::Limit(format!(
                "a text produced more than {MAX_TOKENS_PER_TEXT} tokens"
            )));
        }
        let position = u32::try_from(token.position).unwrap_or(u32::MAX);
        sink(&token.text, position);
    }
    Ok(())
}

fn base(params: &FtsParams) -> Result<TextAnalyzerBuilder> {
    Ok(match params.base_tokenizer.as_str() {
        "simple" => TextAnalyzer::builder(SimpleTokenizer::default()).dynamic(),
        "whitespace" => TextAnalyzer::builder(WhitespaceTokenizer::default()).dynamic(),
        "raw" => TextAnalyzer::builder(RawTokenizer::default()).dynamic(),
        "icu" => IcuTokenizer::default().analyzer_builder(),
        "icu/split" => IcuTokenizer::default()
            .with_simple_split()
            .analyzer_builder(),
        "ngram" => {
            let (lo, hi) = (
                params.min_ngram_length as usize,
                params.max_ngram_length as usize,
            );
            let tokenizer = NgramTokenizer::new(lo, hi, params.prefix_only).map_err(|e| {
                FtsError::InvalidParam {
                    param: "min_ngram_length",
                    reason: e.to_string(),
                }
            })?;
            TextAnalyzer::builder(tokenizer).dynamic()
        }
        other => {
            return Err(FtsError::InvalidParam {
                param: "base_tokenizer",
                reason: format!("{other:?} is not supported"),
            })
        }
    })
}

fn language(name: &str) -> Result<Language> {
    serde_json::from_value(serde_json::Value::String(name.to_string())).map_err(|_| {
        FtsError::InvalidParam {
            param: "language",
            reason: format!("{name:?} is not supported"),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn texts(params: serde_json::Value, text: &str) -> Vec<String> {
        let p = FtsParams::from_json(&params).expect("params");
        let a = Analyzer::new(&p).expect("analyzer");
        a.tokens(text)
            .expect("tokens")
            .into_iter()
            .map(|t| t.text)
            .collect()
    }

    #[test]
    fn default_pipeline_lowercases_stems_drops_stop_words_and_folds() {
        assert_eq!(
            texts(json!({}), "The Running dogs, and CAFÉS!"),
            vec!["run", "dog", "cafe"]
        );
    }

    #[test]
    fn positions_keep_gaps_of_dropped_tokens() {
        let p = FtsParams::default();
        let a = Analyzer::new(&p).expect("analyzer");
        let toks = a.tokens("quick and the fox").expect("tokens");
        let pos: Vec<u32> = toks.iter().map(|t| t.position).collect();
        assert_eq!(pos, vec![0, 3]);
    }

    #[test]
    fn tokens_of_forty_bytes_or_more_are_dropped() {
        let long = "a".repeat(40);
        let ok = "b".repeat(39);
        let raw = json!({"stem": false, "remove_stop_words": false});
        assert_eq!(texts(raw, &format!("{long} {ok}")), vec![ok]);
    }

    #[test]
    fn other_base_tokenizers() {
        let plain =
            json!({"stem": false, "remove_stop_words": false, "base_tokenizer": "whitespace"});
        assert_eq!(texts(plain, "a-b c"), vec!["a-b", "c"]);
        let raw = json!({"stem": false, "remove_stop_words": false, "base_tokenizer": "raw"});
        assert_eq!(texts(raw, "A b"), vec!["a b"]);
        let ngram = json!({"base_tokenizer": "ngram"});
        assert_eq!(texts(ngram, "abcd"), vec!["abc", "bcd"]);
    }

    /// LanceDB's own test (nodejs `tokenizes FTS queries by column or index name`): ICU words.
    #[test]
    fn icu_segments_words_without_spaces() {
        let icu = json!({"base_tokenizer": "icu", "stem": false, "remove_stop_words": false});
        let p = FtsParams::from_json(&icu).expect("params");
        let a = Analyzer::new(&p).expect("analyzer");
        let toks: Vec<(String, u32)> = a
            .tokens("Hello, こんにちは世界!")
            .expect("tokens")
            .into_iter()
            .map(|t| (t.text, t.position))
            .collect();
        let want = [("hello", 0), ("こんにちは", 1), ("世界", 2)];
        assert_eq!(toks, want.map(|(t, p)| (t.to_string(), p)));
        let split =
            json!({"base_tokenizer": "icu/split", "stem": false, "remove_stop_words": false});
        assert_eq!(texts(split, "foo_bar 世界"), vec!["foo", "bar", "世界"]);
        // Every language's stop words go ("dog" is Danish, "the" English), as 0.39's tokenize says.
        assert_eq!(
            texts(json!({"base_tokenizer": "icu"}), "the cat dog bird"),
            vec!["bird"]
        );
    }

    #[test]
    fn odd_text_is_fine() {
        assert!(texts(json!({}), "").is_empty());
        assert_eq!(texts(json!({}), "xx\0qq \u{fffd}"), vec!["xx", "qq"]);
        assert!(texts(json!({}), "the and of").is_empty());
    }
}
