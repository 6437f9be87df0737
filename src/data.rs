//! Arrow IPC bytes from JS into the core's [`Data`], for every export that
//! takes rows or a schema.

use memwal_core::{ipc, Data};

use crate::error;

/// Decodes Arrow IPC bytes (stream or file) from JS.
pub fn decode(buf: &[u8]) -> napi::Result<Data> {
    // One copy out of the JS heap; the batches then point into it, and a
    // remote table sends these bytes as they are.
    ipc::decode_bytes(bytes::Bytes::copy_from_slice(buf)).map_err(error::core)
}
