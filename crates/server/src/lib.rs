//! memwal-server: the LanceDB REST protocol over native tables, with the
//! MemWAL write path. [`start`] serves on a socket and returns a handle;
//! the `memwal-server` binary and the addon's `serve()` both use it.
//!
//! Modules: [`http`] (endpoints), [`state`] (the tables and the data
//! folder's layout), [`served`] (the served table: one type, one order of
//! writes), [`memwal`] (WAL, memtables, flush, overlay reads), [`reads`]
//! (the threads queries run on), [`priority`] (theirs and the background
//! work's, below the write path), [`metrics`]
//! (what `GET /metrics` reports), [`error`] (the one HTTP mapping).

pub mod error;
pub mod http;
pub mod memwal;
pub mod metrics;
pub mod namespace;
pub mod priority;
pub mod reads;
pub mod served;
pub mod state;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

pub use error::{Error, Result};
pub use memwal::{MemWalConfig, RecoveryMode};
pub use served::ServedTable;

/// The default [`ServerConfig::read_nice`] and
/// [`MemWalConfig::background_nice`]: under contention the write path gets
/// ~90% of a core against a query or flusher thread (the scheduler's
/// weights for nice 0 and 10); an idle core still goes to them.
pub const DEFAULT_READ_NICE: i32 = 10;

/// Server settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Folder of the tables and WALs.
    pub data_dir: PathBuf,
    /// Address to bind (default 127.0.0.1).
    pub host: String,
    /// Port (0: any free port).
    pub port: u16,
    /// Required `x-api-key` (none: any request is accepted).
    pub api_key: Option<String>,
    /// Largest request body (413 beyond, before any of it is read when the
    /// request declares its length).
    pub max_body_bytes: usize,
    /// Time a request body has to arrive in whole (408 after).
    pub body_timeout: std::time::Duration,
    /// MemWAL tuning.
    pub memwal: MemWalConfig,
    /// The tables' storage (default: the local folder `data_dir`, which
    /// then holds only the WALs and the server's own files): an object
    /// store, or in tests a storage that injects faults.
    pub storage: Option<Arc<dyn memwal_core::storage::Storage>>,
    /// The URI `storage` was opened from, for logs and the database's URI.
    pub data_uri: Option<String>,
    /// Where the WALs live when not under `data_dir`: an object store (one
    /// folder per table), so an acknowledged MemWAL write survives the loss
    /// of this machine and another server can take a table over. `data_dir`
    /// is then not used.
    pub wal_storage: Option<Arc<dyn memwal_core::storage::Storage>>,
    /// How much lower than the write path queries run (a Linux nice
    /// increment, 0-19; 0: the same): searches then take the cores only
    /// when acknowledged upserts do not want them (see [`reads`]).
    pub read_nice: i32,
}

impl ServerConfig {
    /// Defaults for `data_dir`.
    pub fn new(data_dir: impl Into<PathBuf>) -> Self {
        Self {
            data_dir: data_dir.into(),
            host: "127.0.0.1".into(),
            port: 0,
            api_key: None,
            max_body_bytes: 256 << 20,
            body_timeout: std::time::Duration::from_secs(30),
            memwal: MemWalConfig::default(),
            storage: None,
            data_uri: None,
            wal_storage: None,
            read_nice: DEFAULT_READ_NICE,
        }
    }
}

/// A running server.
pub struct ServerHandle {
    /// The bound address.
    pub addr: SocketAddr,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    state: Arc<state::AppState>,
}

impl ServerHandle {
    /// `http://host:port`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Merges every table's buffered MemWAL rows into its table (within
    /// `limit`), and says what it did: for a graceful shutdown.
    pub async fn flush_all(&self, limit: std::time::Duration) -> String {
        let tables = self.state.tables();
        let (mut done, mut failed) = (0, Vec::new());
        for (name, t) in tables {
            match tokio::time::timeout(limit, t.memwal().flush_all()).await {
                Ok(Ok(())) => done += 1,
                Ok(Err(e)) => failed.push(format!("{name}: {e}")),
                Err(_) => failed.push(format!(
                    "{name}: not flushed within {} ms",
                    limit.as_millis()
                )),
            }
        }
        if failed.is_empty() {
            format!("{done} table(s) flushed")
        } else {
            format!(
                "{done} table(s) flushed; not flushed (their WAL keeps every acknowledged row): {}",
                failed.join("; ")
            )
        }
    }

    /// Stops accepting, finishes in-flight requests, stops the MemWAL threads.
    pub async fn close(mut self) {
        if let Some(s) = self.shutdown.take() {
            let _ = s.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
        let st = self.state.clone();
        let _ = tokio::task::spawn_blocking(move || st.shutdown()).await;
    }
}

/// Opens the data folder (replaying WALs) and serves on `host:port`.
pub async fn start(config: ServerConfig) -> Result<ServerHandle> {
    let cfg = config.clone();
    let state = Arc::new(
        tokio::task::spawn_blocking(move || state::AppState::new(cfg))
            .await
            .map_err(|e| Error::Core(memwal_core::Error::internal(e.to_string())))??,
    );
    let listener = tokio::net::TcpListener::bind((config.host.as_str(), config.port)).await?;
    let addr = listener.local_addr()?;
    let app = http::router(state.clone());
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let server = axum::serve(listener, app).with_graceful_shutdown(async {
            let _ = rx.await;
        });
        if let Err(e) = server.await {
            tracing::error!(error = %e, "server stopped");
        }
    });
    let data = config
        .data_uri
        .clone()
        .unwrap_or_else(|| config.data_dir.display().to_string());
    tracing::info!(%addr, %data, wal = %config.data_dir.display(), "memwal-server listening");
    Ok(ServerHandle {
        addr,
        shutdown: Some(tx),
        task: Some(task),
        state,
    })
}
