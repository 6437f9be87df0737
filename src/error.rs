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

/// Converts an engine error.
pub fn core(e: memwal_core::Error) -> Error {
    coded(e.code(), &e)
}

/// Converts a remote-client error.
pub fn remote(e: memwal_remote::Error) -> Error {
    coded(e.code(), &e)
}

/// Converts a server error.
pub fn server(e: memwal_server::Error) -> Error {
    coded(e.code(), &e)
}

/// An InvalidInput error raised by the bindings themselves.
pub fn invalid(msg: impl std::fmt::Display) -> Error {
    coded(ErrorCode::InvalidInput, &msg)
}

fn coded(code: ErrorCode, e: &dyn std::fmt::Display) -> Error {
    let mut msg = e.to_string();
    // Include the source chain the Display text does not already carry.
    Error::new(Status::GenericFailure, {
        msg.insert_str(0, &format!("{CODE_PREFIX}{code}] "));
        msg
    })
}
