//! The one error type of the engine. Every public function of `memwal-core`
//! returns [`Error`]; the napi layer maps each variant to a stable JS `code`
//! and the server maps each to an HTTP status, both in one place.

/// Errors raised by the table engine.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The caller passed something unusable (bad name, schema, filter, data).
    #[error("{message}")]
    InvalidInput {
        /// What is wrong and, where possible, what to do instead.
        message: String,
    },
    /// The operation exists but not for this kind of table.
    #[error("{message}")]
    NotSupported {
        /// Why, and where the operation is supported.
        message: String,
    },
    /// No table of that name exists in the database.
    #[error("Table '{name}' was not found")]
    TableNotFound {
        /// The name that was looked up.
        name: String,
    },
    /// A table of that name exists already (create without `exist_ok`).
    #[error("Table '{name}' already exists")]
    TableAlreadyExists {
        /// The name that was taken.
        name: String,
    },
    /// The requested version is not in the table's history.
    #[error("Version {version} of table '{table}' does not exist")]
    VersionNotFound {
        /// The table.
        table: String,
        /// The version asked for.
        version: u64,
    },
    /// Another writer committed first every time we retried.
    #[error("commit conflict on table '{table}' after {attempts} attempts; retry the operation")]
    CommitConflict {
        /// The table.
        table: String,
        /// How many times the commit was tried.
        attempts: u32,
    },
    /// The operation ran past its deadline; nothing was committed.
    #[error("operation timed out after {elapsed_ms} ms; nothing was committed")]
    Timeout {
        /// Milliseconds spent before giving up.
        elapsed_ms: u64,
    },
    /// Stored data could not be read back as written (checksum, format).
    #[error("corrupt table data at '{path}': {message}")]
    Corrupt {
        /// The file.
        path: String,
        /// What failed to decode.
        message: String,
    },
    /// The operating system refused a read or write.
    #[error("I/O error on '{path}': {source}")]
    Io {
        /// The file or folder.
        path: String,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// An Arrow kernel failed (usually a type the operation cannot handle).
    #[error("arrow error: {0}")]
    Arrow(#[from] arrow_schema::ArrowError),
    /// A remote table's server or transport failed (code from the client).
    #[error("{message}")]
    Remote {
        /// The remote client's error code (Http, Auth, RetryLimit, ...).
        code: &'static str,
        /// The full message, request id included.
        message: String,
    },
    /// A bug or an invariant broken inside the engine.
    #[error("internal error: {message}")]
    Internal {
        /// What went wrong.
        message: String,
    },
}

/// Result alias for the engine.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An [`Error::InvalidInput`] with the given message.
    pub fn invalid(message: impl Into<String>) -> Self {
        Error::InvalidInput {
            message: message.into(),
        }
    }
    /// An [`Error::NotSupported`] with the given message.
    pub fn not_supported(message: impl Into<String>) -> Self {
        Error::NotSupported {
            message: message.into(),
        }
    }
    /// An [`Error::Internal`] with the given message.
    pub fn internal(message: impl Into<String>) -> Self {
        Error::Internal {
            message: message.into(),
        }
    }
    /// An [`Error::Io`] for `path`.
    pub fn io(path: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
    /// The stable code of this variant, as JS (`err.code`) and HTTP see it.
    pub fn code(&self) -> &'static str {
        match self {
            Error::InvalidInput { .. } | Error::Arrow(_) => "InvalidInput",
            Error::NotSupported { .. } => "NotSupported",
            Error::TableNotFound { .. } => "TableNotFound",
            Error::TableAlreadyExists { .. } => "TableAlreadyExists",
            Error::VersionNotFound { .. } => "VersionNotFound",
            Error::CommitConflict { .. } => "CommitConflict",
            Error::Timeout { .. } => "Timeout",
            Error::Corrupt { .. } => "Corrupt",
            Error::Io { .. } => "Io",
            Error::Internal { .. } => "Internal",
            Error::Remote { code, .. } => code,
        }
    }
}
