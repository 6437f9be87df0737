//! `tokenize()`: the tokens an FTS index with given parameters makes of a
//! text (0.39's `tokenize` and `Table.tokenize`), by the same analyzer the
//! index and its queries use.

use napi_derive::napi;

use crate::error;

/// One token: its text after every filter and its position.
#[napi(object)]
pub struct FtsToken {
    pub text: String,
    pub position: u32,
}

/// The tokens of `text` under the FTS parameters `params_json` (the wire's
/// `create_index` names; Lance's defaults for what is absent).
#[napi]
pub fn tokenize(text: String, params_json: String) -> napi::Result<Vec<FtsToken>> {
    let v: serde_json::Value = serde_json::from_str(&params_json)
        .map_err(|e| error::invalid(format!("tokenize options are not JSON: {e}")))?;
    let params = memwal_fts::FtsParams::from_json(&v)
        .map_err(|e| error::invalid(format!("tokenize: {e}")))?;
    let analyzer =
        memwal_fts::Analyzer::new(&params).map_err(|e| error::invalid(format!("tokenize: {e}")))?;
    let tokens = analyzer
        .tokens(&text)
        .map_err(|e| error::invalid(format!("tokenize: {e}")))?;
    // 0.39 numbers positions from the first token kept (tokens a filter drops
    // before it leave no gap; those between keep theirs), measured against
    // its `tokenize`. Only the numbering differs: gaps, and so phrase
    // matching, are the index's.
    let first = tokens.first().map_or(0, |t| t.position);
    Ok(tokens
        .into_iter()
        .map(|t| FtsToken {
            text: t.text,
            position: t.position.saturating_sub(first),
        })
        .collect())
}
