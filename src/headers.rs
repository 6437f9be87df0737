//! The JS header provider: a JS function returning (a promise of) headers,
//! called on the JS thread before every try of every remote request.

use std::collections::HashMap;

use async_trait::async_trait;
use napi::bindgen_prelude::Promise;
use napi::threadsafe_function::ThreadsafeFunction;
use napi::Status;

/// `() => Promise<Record<string, string>>`, weak so that it never keeps
/// the process alive on its own; JS throws come back as errors.
pub type HeaderFn =
    ThreadsafeFunction<(), Promise<HashMap<String, String>>, (), Status, false, true>;

/// Adapts a JS function to the remote client's `HeaderProvider`.
pub struct JsHeaderProvider(pub HeaderFn);

impl std::fmt::Debug for JsHeaderProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("JsHeaderProvider")
    }
}

#[async_trait]
impl memwal_remote::HeaderProvider for JsHeaderProvider {
    async fn headers(&self) -> Result<Vec<(String, String)>, String> {
        let promise = self.0.call_async_catch(()).await.map_err(|e| e.reason)?;
        let map = promise.await.map_err(|e| e.reason)?;
        Ok(map.into_iter().collect())
    }
}
