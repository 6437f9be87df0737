//! Errors of the REST client; every message carries the request id.

/// Errors of the remote client.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// Bad configuration or arguments (no API key, bad URI, bad JSON config).
    #[error("{0}")]
    Config(String),
    /// The server said 400.
    #[error("{message} (request_id={request_id})")]
    InvalidInput {
        /// The server's message.
        message: String,
        /// The request id.
        request_id: String,
    },
    /// 401/403.
    #[error("authentication failed: {status}: {body} (request_id={request_id})")]
    Auth {
        /// Status.
        status: u16,
        /// Body.
        body: String,
        /// The request id.
        request_id: String,
    },
    /// 404 on a table.
    #[error("Table '{name}' was not found (request_id={request_id})")]
    TableNotFound {
        /// The table.
        name: String,
        /// The request id.
        request_id: String,
    },
    /// A create that found the name taken.
    #[error("Table '{name}' already exists (request_id={request_id})")]
    TableAlreadyExists {
        /// The table.
        name: String,
        /// The request id.
        request_id: String,
    },
    /// Any other non-success status.
    #[error("{status}: {body} (request_id={request_id})")]
    Http {
        /// Status.
        status: u16,
        /// Body.
        body: String,
        /// The request id.
        request_id: String,
    },
    /// Every retry failed.
    #[error("Hit retry limit for request_id={request_id} (request_failures={request_failures}/{max_request_failures}, connect_failures={connect_failures}/{max_connect_failures}, read_failures={read_failures}/{max_read_failures}): {last}")]
    RetryLimit {
        /// The request id.
        request_id: String,
        /// Status failures so far.
        request_failures: u32,
        /// Allowed.
        max_request_failures: u32,
        /// Connection failures so far.
        connect_failures: u32,
        /// Allowed.
        max_connect_failures: u32,
        /// Read failures so far.
        read_failures: u32,
        /// Allowed.
        max_read_failures: u32,
        /// The last failure.
        last: String,
    },
    /// The request timed out.
    #[error("request timed out: {message} (request_id={request_id})")]
    Timeout {
        /// What timed out.
        message: String,
        /// The request id.
        request_id: String,
    },
    /// The response could not be read as expected.
    #[error("bad response: {message} (request_id={request_id})")]
    Response {
        /// What was wrong.
        message: String,
        /// The request id.
        request_id: String,
    },
    /// The caller's header provider failed; the request was not sent.
    #[error("the header provider failed: {message} (request_id={request_id})")]
    HeaderProvider {
        /// What it said.
        message: String,
        /// The request id.
        request_id: String,
    },
    /// A local (engine-side) error: encoding, validation.
    #[error(transparent)]
    Core(#[from] memwal_core::Error),
}

use memwal_core::ErrorCode;

impl Error {
    /// Stable code.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Config(_) | Error::InvalidInput { .. } => ErrorCode::InvalidInput,
            Error::HeaderProvider { .. } => ErrorCode::HeaderProvider,
            Error::Auth { .. } => ErrorCode::Auth,
            Error::TableNotFound { .. } => ErrorCode::TableNotFound,
            Error::TableAlreadyExists { .. } => ErrorCode::TableAlreadyExists,
            Error::Http { .. } | Error::Response { .. } => ErrorCode::Http,
            Error::RetryLimit { .. } => ErrorCode::RetryLimit,
            Error::Timeout { .. } => ErrorCode::Timeout,
            Error::Core(e) => e.code(),
        }
    }
}

impl From<Error> for memwal_core::Error {
    fn from(e: Error) -> Self {
        match e {
            Error::Core(e) => e,
            Error::InvalidInput {
                message,
                request_id,
            } => memwal_core::Error::invalid(format!("{message} (request_id={request_id})")),
            Error::Config(m) => memwal_core::Error::invalid(m),
            other => memwal_core::Error::Remote {
                code: other.code(),
                message: other.to_string(),
            },
        }
    }
}

/// Result alias.
pub type Result<T, E = Error> = std::result::Result<T, E>;
