//! Per-request headers from the caller: a [`HeaderProvider`] is asked
//! before every try of every request (so a token refreshed between retries
//! is picked up), and what it returns replaces same-named headers.
//! The addon implements it over a JS function; Rust callers implement it
//! directly.

use async_trait::async_trait;

/// Supplies headers for each request (OAuth tokens, tracing ids, ...).
#[async_trait]
pub trait HeaderProvider: Send + Sync + std::fmt::Debug {
    /// The headers to add to the next try. An error fails the request
    /// (it is not retried): its text names what went wrong.
    async fn headers(&self) -> Result<Vec<(String, String)>, String>;
}

/// A provider that always returns the same headers.
#[derive(Debug, Clone, Default)]
pub struct StaticHeaders(pub Vec<(String, String)>);

#[async_trait]
impl HeaderProvider for StaticHeaders {
    async fn headers(&self) -> Result<Vec<(String, String)>, String> {
        Ok(self.0.clone())
    }
}
