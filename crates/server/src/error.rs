//! The server's error type and its one mapping to HTTP responses.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use memwal_core::ErrorCode;

/// Seconds a client is asked to wait before retrying a 503.
pub const RETRY_AFTER_SECS: u64 = 1;

/// Errors of the server.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An engine error (mapped by its code).
    #[error(transparent)]
    Core(#[from] memwal_core::Error),
    /// The request is malformed (missing parameter, bad JSON, wrong content type).
    #[error("{0}")]
    BadRequest(String),
    /// Missing or wrong API key.
    #[error("invalid or missing API key (send it as the x-api-key header)")]
    Unauthorized,
    /// The table's MemWAL is behind (its flusher has not caught up with the
    /// writes); retry after the given seconds.
    #[error("the table's MemWAL is overloaded (merging buffered rows into the table is behind); retry in {0} s")]
    Busy(u64),
    /// Something could not be made durable; the table refuses writes until
    /// the server restarts (reads still see every acknowledged write).
    #[error("table '{table}' refuses writes until the server restarts: {message}")]
    Poisoned {
        /// The table.
        table: String,
        /// The first failure.
        message: String,
    },
    /// The table cannot serve this request now (a damaged WAL found at
    /// open, a flush that failed, shutdown).
    #[error("table '{table}' is unavailable: {reason}")]
    Unavailable {
        /// The table.
        table: String,
        /// Why.
        reason: String,
    },
    /// Binding or serving failed.
    #[error("server I/O error: {0}")]
    Io(#[from] std::io::Error),
}

/// Result alias for the server.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Error::Core(memwal_core::Error::from(e))
    }
}

impl Error {
    /// As an engine error (for the core traits): engine errors as they
    /// are, the server's own by code and message.
    pub fn into_core(self) -> memwal_core::Error {
        match self {
            Error::Core(e) => e,
            other => memwal_core::Error::Remote {
                code: other.code(),
                message: other.to_string(),
            },
        }
    }

    /// Stable code (as JS sees it through `serve()`).
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::Core(e) => e.code(),
            Error::BadRequest(_) => ErrorCode::InvalidInput,
            Error::Unauthorized => ErrorCode::Auth,
            Error::Busy(_) => ErrorCode::Busy,
            Error::Poisoned { .. } => ErrorCode::Poisoned,
            Error::Unavailable { .. } => ErrorCode::Unavailable,
            Error::Io(_) => ErrorCode::Io,
        }
    }

    /// HTTP status of this error (by its code; a full disk is 507).
    pub fn status(&self) -> StatusCode {
        let no_space = match self {
            Error::Core(memwal_core::Error::Io { source, .. }) | Error::Io(source) => {
                source.raw_os_error() == Some(28)
            }
            _ => false,
        };
        if no_space {
            return StatusCode::INSUFFICIENT_STORAGE;
        }
        status_of(self.code())
    }
}

/// The one mapping of codes to statuses. The official clients read 400 as
/// InvalidInput (with the text), 404 as "table not found", and retry 409
/// (merges), 429, 500, 502, 503 and 504.
pub fn status_of(code: ErrorCode) -> StatusCode {
    match code {
        ErrorCode::InvalidInput | ErrorCode::NotSupported | ErrorCode::TableAlreadyExists => {
            StatusCode::BAD_REQUEST
        }
        ErrorCode::TableNotFound
        | ErrorCode::VersionNotFound
        | ErrorCode::IndexNotFound
        | ErrorCode::NamespaceNotFound
        | ErrorCode::TagNotFound => StatusCode::NOT_FOUND,
        ErrorCode::CommitConflict => StatusCode::CONFLICT,
        ErrorCode::Timeout => StatusCode::GATEWAY_TIMEOUT,
        ErrorCode::Auth => StatusCode::UNAUTHORIZED,
        ErrorCode::Busy | ErrorCode::Poisoned | ErrorCode::Unavailable => {
            StatusCode::SERVICE_UNAVAILABLE
        }
        ErrorCode::Corrupt | ErrorCode::Io | ErrorCode::Internal => {
            StatusCode::INTERNAL_SERVER_ERROR
        }
        ErrorCode::Http | ErrorCode::RetryLimit | ErrorCode::HeaderProvider => {
            StatusCode::BAD_GATEWAY
        }
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

impl IntoResponse for Error {
    fn into_response(self) -> Response {
        let status = self.status();
        if status.is_server_error() {
            tracing::error!(error = %self, "request failed");
        } else {
            tracing::debug!(error = %self, %status, "request rejected");
        }
        let mut resp = (status, self.to_string()).into_response();
        if status == StatusCode::SERVICE_UNAVAILABLE {
            let secs = match self {
                Error::Busy(s) => s,
                _ => RETRY_AFTER_SECS,
            };
            if let Ok(v) = secs.to_string().parse() {
                resp.headers_mut().insert("retry-after", v);
            }
        }
        resp
    }
}
