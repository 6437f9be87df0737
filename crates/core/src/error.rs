//! The one error type of the engine. Every public function of `memwal-core`
//! returns [`Error`]; the napi layer maps each variant to a stable JS `code`
//! and the server maps each to an HTTP status, both in one place.

/// The stable code of an error, as JS sees it (`err.code`, a `MemwalError`
/// subclass per code in `lib/errors.ts`) and as the server maps it to an
/// HTTP status. One list for the engine, the remote client and the server;
/// a jest test keeps the TypeScript list equal to [`ErrorCode::ALL`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// The caller passed something unusable.
    InvalidInput,
    /// The operation does not exist for this kind of table (or not yet).
    NotSupported,
    /// No such table.
    TableNotFound,
    /// The table name is taken.
    TableAlreadyExists,
    /// No such version.
    VersionNotFound,
    /// No index of that name.
    IndexNotFound,
    /// No namespace of that path.
    NamespaceNotFound,
    /// No tag of that name.
    TagNotFound,
    /// Another writer won every commit race.
    CommitConflict,
    /// Past the deadline; nothing committed.
    Timeout,
    /// Stored data failed to decode or verify.
    Corrupt,
    /// The operating system refused a read or write.
    Io,
    /// The remote server answered an unexpected status.
    Http,
    /// Missing or wrong API key.
    Auth,
    /// The remote client gave up retrying.
    RetryLimit,
    /// The header provider failed.
    HeaderProvider,
    /// The server's MemWAL for the table is behind: retry later.
    Busy,
    /// The table refuses writes after a failure to persist.
    Poisoned,
    /// The table cannot serve now (a damaged WAL, a failing flush, shutdown).
    Unavailable,
    /// A bug.
    Internal,
}

impl ErrorCode {
    /// Every code, in declaration order.
    pub const ALL: &'static [ErrorCode] = &[
        ErrorCode::InvalidInput,
        ErrorCode::NotSupported,
        ErrorCode::TableNotFound,
        ErrorCode::TableAlreadyExists,
        ErrorCode::VersionNotFound,
        ErrorCode::IndexNotFound,
        ErrorCode::NamespaceNotFound,
        ErrorCode::TagNotFound,
        ErrorCode::CommitConflict,
        ErrorCode::Timeout,
        ErrorCode::Corrupt,
        ErrorCode::Io,
        ErrorCode::Http,
        ErrorCode::Auth,
        ErrorCode::RetryLimit,
        ErrorCode::HeaderProvider,
        ErrorCode::Busy,
        ErrorCode::Poisoned,
        ErrorCode::Unavailable,
        ErrorCode::Internal,
    ];

    /// The code's name (`"InvalidInput"`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidInput => "InvalidInput",
            ErrorCode::NotSupported => "NotSupported",
            ErrorCode::TableNotFound => "TableNotFound",
            ErrorCode::TableAlreadyExists => "TableAlreadyExists",
            ErrorCode::VersionNotFound => "VersionNotFound",
            ErrorCode::IndexNotFound => "IndexNotFound",
            ErrorCode::NamespaceNotFound => "NamespaceNotFound",
            ErrorCode::TagNotFound => "TagNotFound",
            ErrorCode::CommitConflict => "CommitConflict",
            ErrorCode::Timeout => "Timeout",
            ErrorCode::Corrupt => "Corrupt",
            ErrorCode::Io => "Io",
            ErrorCode::Http => "Http",
            ErrorCode::Auth => "Auth",
            ErrorCode::RetryLimit => "RetryLimit",
            ErrorCode::HeaderProvider => "HeaderProvider",
            ErrorCode::Busy => "Busy",
            ErrorCode::Poisoned => "Poisoned",
            ErrorCode::Unavailable => "Unavailable",
            ErrorCode::Internal => "Internal",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<&str> for ErrorCode {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

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
    #[error("Version {version} of table '{table}' does not exist{hint}")]
    VersionNotFound {
        /// The table.
        table: String,
        /// The version asked for.
        version: u64,
        /// More about it (empty, or e.g. which versions cleanup kept).
        hint: String,
    },
    /// The table has no index of that name.
    #[error("Index '{name}' of table '{table}' does not exist")]
    IndexNotFound {
        /// The table.
        table: String,
        /// The index name asked for.
        name: String,
    },
    /// The namespace path names no namespace.
    #[error("namespace {name:?} does not exist (not found)")]
    NamespaceNotFound {
        /// The path, joined by `$`.
        name: String,
    },
    /// The table has no tag of that name.
    #[error("table '{table}' has no tag '{tag}'")]
    TagNotFound {
        /// The table.
        table: String,
        /// The tag asked for.
        tag: String,
    },
    /// Another writer committed first every time we retried.
    #[error("commit conflict on table '{table}' after {attempts} attempts; retry the operation")]
    CommitConflict {
        /// The table.
        table: String,
        /// How many times the commit was tried.
        attempts: u32,
    },
    /// A newer writer owns the table's write path (its MemWAL); this
    /// writer's commit was refused and nothing was committed.
    #[error("table '{table}' was taken over by another writer: {message}")]
    Fenced {
        /// The table.
        table: String,
        /// What showed it.
        message: String,
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
        code: ErrorCode,
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
    /// The refusal of a write on a handle checked out at `version`, in
    /// @lancedb/lancedb 0.39's words (its callers match on them).
    pub fn checked_out(table: &str, version: u64) -> Self {
        Error::invalid(format!(
            "table cannot be modified when a specific version is checked out \
             (table '{table}' is at version {version}; call checkoutLatest() to write)"
        ))
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
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidInput { .. } | Error::Arrow(_) => ErrorCode::InvalidInput,
            Error::NotSupported { .. } => ErrorCode::NotSupported,
            Error::TableNotFound { .. } => ErrorCode::TableNotFound,
            Error::TableAlreadyExists { .. } => ErrorCode::TableAlreadyExists,
            Error::VersionNotFound { .. } => ErrorCode::VersionNotFound,
            Error::IndexNotFound { .. } => ErrorCode::IndexNotFound,
            Error::NamespaceNotFound { .. } => ErrorCode::NamespaceNotFound,
            Error::TagNotFound { .. } => ErrorCode::TagNotFound,
            Error::CommitConflict { .. } => ErrorCode::CommitConflict,
            Error::Fenced { .. } => ErrorCode::Unavailable,
            Error::Timeout { .. } => ErrorCode::Timeout,
            Error::Corrupt { .. } => ErrorCode::Corrupt,
            Error::Io { .. } => ErrorCode::Io,
            Error::Internal { .. } => ErrorCode::Internal,
            Error::Remote { code, .. } => *code,
        }
    }
}
