//! `serve()`: the bundled memwal server in this process.

use std::sync::Mutex;
use std::time::Duration;

use napi_derive::napi;

use crate::error;

/// Options of `serve`.
#[napi(object)]
pub struct ServeOptions {
    pub data_dir: String,
    pub host: Option<String>,
    pub port: Option<u32>,
    pub api_key: Option<String>,
    pub max_body_bytes: Option<f64>,
    pub flush_rows: Option<u32>,
    pub flush_interval_ms: Option<u32>,
    /// Where the tables live when not in `data_dir`: an object store URI
    /// (s3://, gs://, az://); `data_dir` then holds only the WALs.
    pub data: Option<String>,
    /// Options of that object store (LanceDB's keys, e.g. aws_endpoint).
    pub storage_options: Option<std::collections::HashMap<String, String>>,
    /// The WALs on an object store too (needs `data`; same `storageOptions`): an acknowledged
    /// MemWAL write then survives the loss of this machine, and a second server on the same
    /// `data` and `wal` takes the tables over and fences this one.
    pub wal: Option<String>,
}

/// A running server.
#[napi]
pub struct Server {
    url: String,
    port: u32,
    handle: Mutex<Option<memwal_server::ServerHandle>>,
}

/// Starts the server (port 0 picks a free port).
#[napi(catch_unwind)]
pub async fn serve(options: ServeOptions) -> napi::Result<Server> {
    let mut cfg = memwal_server::ServerConfig::new(&options.data_dir);
    let storage = options.storage_options.unwrap_or_default();
    match options.data {
        Some(uri) => {
            let st = memwal_core::storage::open_uri(&uri, &storage).map_err(error::core)?;
            cfg.storage = Some(st);
            cfg.data_uri = Some(uri);
        }
        None if !storage.is_empty() => {
            return Err(error::invalid(
                "storageOptions apply to `data` (an object store); the tables are in dataDir",
            ))
        }
        None => {}
    }
    if let Some(wal) = options.wal {
        if cfg.data_uri.is_none() {
            return Err(error::invalid(
                "wal (an object store for the WALs) needs `data` on an object store too",
            ));
        }
        if cfg.data_uri.as_deref().map(|d| d.trim_end_matches('/'))
            == Some(wal.trim_end_matches('/'))
        {
            return Err(error::invalid(
                "wal is the `data` location: give the WALs a prefix of their own",
            ));
        }
        cfg.wal_storage =
            Some(memwal_core::storage::open_uri(&wal, &storage).map_err(error::core)?);
    }
    if let Some(h) = options.host {
        cfg.host = h;
    }
    cfg.port = u16::try_from(options.port.unwrap_or(0))
        .map_err(|_| error::invalid("port must be at most 65535"))?;
    cfg.api_key = options.api_key;
    if let Some(m) = options.max_body_bytes {
        if !(m.is_finite() && m >= 1.0) {
            return Err(error::invalid("maxBodyBytes must be a positive number"));
        }
        cfg.max_body_bytes = m as usize;
    }
    if let Some(r) = options.flush_rows {
        cfg.memwal.flush_rows = r.max(1) as usize;
    }
    if let Some(ms) = options.flush_interval_ms {
        cfg.memwal.flush_interval = Duration::from_millis(ms.max(1) as u64);
    }
    let h = memwal_server::start(cfg).await.map_err(error::server)?;
    Ok(Server {
        url: h.url(),
        port: h.addr.port() as u32,
        handle: Mutex::new(Some(h)),
    })
}

#[napi]
impl Server {
    /// `http://127.0.0.1:PORT`.
    #[napi(getter, catch_unwind)]
    pub fn url(&self) -> String {
        self.url.clone()
    }

    /// The bound port.
    #[napi(getter, catch_unwind)]
    pub fn port(&self) -> u32 {
        self.port
    }

    /// Stops the server (every acknowledged write is in the WAL).
    #[napi(catch_unwind)]
    pub async fn close(&self) -> napi::Result<()> {
        let h = self.handle.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(h) = h {
            h.close().await;
        }
        Ok(())
    }
}
