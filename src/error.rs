//! The one place engine, remote and server errors become JS errors.
//!
//! napi's async bridge only carries its own `Status`, so the stable error
//! code travels as a `[memwal:Code] ` prefix of the reason; `lib/errors.ts`
//! strips it into `err.code` (and a subclass per code) in one place too.

use memwal_core::ErrorCode;
use napi::{Error, Status};
use napi_derive::napi;

/// Every error code, as `lib/errors.ts` must list them (a jest test checks).
#[napi(catch_unwind)]
pub fn error_codes() -> Vec<String> {
    ErrorCode::ALL
        .iter()
        .map(|c| c.as_str().to_string())
        .collect()
}

/// Prefix marker parsed by lib/errors.ts.
pub const CODE_PREFIX: &str = "[memwal:";

/// Marker before each error of the source chain, parsed by lib/errors.ts
/// into `err.cause` (outermost first).
pub const CAUSE_MARKER: &str = "\n[memwal:cause] ";

/// Converts an engine error.
pub fn core(e: memwal_core::Error) -> Error {
    coded(e.code(), &e.to_string(), std::error::Error::source(&e))
}

/// Converts a remote-client error.
pub fn remote(e: memwal_remote::Error) -> Error {
    coded(e.code(), &e.to_string(), std::error::Error::source(&e))
}

/// Converts a server error.
pub fn server(e: memwal_server::Error) -> Error {
    coded(e.code(), &e.to_string(), std::error::Error::source(&e))
}

/// An InvalidInput error raised by the bindings themselves.
pub fn invalid(msg: impl std::fmt::Display) -> Error {
    coded(ErrorCode::InvalidInput, &msg.to_string(), None)
}

/// `[memwal:Code] message`, then each error of the source chain after a
/// [`CAUSE_MARKER`] (a chain is cut at 16 links).
fn coded(
    code: ErrorCode,
    message: &str,
    mut source: Option<&(dyn std::error::Error + 'static)>,
) -> Error {
    let mut msg = format!("{CODE_PREFIX}{code}] {message}");
    let mut links = 0;
    while let Some(s) = source {
        if links == 16 {
            break;
        }
        msg.push_str(CAUSE_MARKER);
        msg.push_str(&s.to_string());
        source = s.source();
        links += 1;
    }
    Error::new(Status::GenericFailure, msg)
}
