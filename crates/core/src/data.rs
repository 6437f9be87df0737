//! [`Data`]: the rows a write hands over (a schema and batches of it), as
//! the napi layer, the server and the remote client pass them around. Its
//! Arrow IPC form is [`crate::ipc`]'s concern.

use arrow::array::RecordBatch;
use arrow_schema::SchemaRef;

/// Rows handed to a write: a schema and zero or more batches of it.
#[derive(Debug, Clone)]
pub struct Data {
    /// Schema of every batch.
    pub schema: SchemaRef,
    /// The rows.
    pub batches: Vec<RecordBatch>,
    /// The Arrow IPC stream the batches were decoded from, when known:
    /// a remote table sends it as it is instead of encoding it again.
    pub ipc: Option<bytes::Bytes>,
}

impl Data {
    /// Data with the batches' own schema (an error if `batches` is empty).
    pub fn new(schema: SchemaRef, batches: Vec<RecordBatch>) -> Self {
        Self {
            schema,
            batches,
            ipc: None,
        }
    }
    /// Total rows.
    pub fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }
}
