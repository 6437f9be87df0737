//! `memwal-server`: the LanceDB REST protocol with the MemWAL write path, as
//! operators run it. Every option has an environment-variable fallback
//! (`MEMWAL_DATA`, `MEMWAL_API_KEY`, ...: a key on the command line shows in
//! `ps`); `--help` lists them. Prints `memwal-server listening on
//! http://HOST:PORT` once it accepts; on SIGTERM or Ctrl-C it stops
//! accepting, merges every table's buffered rows into the table, reports
//! and exits (a SIGKILL loses nothing acknowledged either: the WAL replays).

use std::time::Duration;

use clap::{Parser, ValueEnum};
use memwal_server::memwal::{PersistMode, BACKGROUND_DELETIONS_THRESHOLD, BACKGROUND_TARGET_ROWS};
use memwal_server::{start, RecoveryMode, ServerConfig};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Persist {
    /// fdatasync the WAL before acknowledging (the default).
    Sync,
    /// Acknowledge before the WAL is synced (measurements only: a crash loses writes).
    Buffer,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Recovery {
    /// Cut only a torn tail of a WAL's last segment; any other damage or a gap fails the table
    /// (503 naming segment and offset) and keeps the files.
    Strict,
    /// Cut a damaged WAL at its first bad record (later records are lost; later segments are
    /// renamed *.wal.cut).
    Cut,
}

/// The LanceDB REST protocol over local tables, with the MemWAL write path.
#[derive(Debug, Parser)]
#[command(
    name = "memwal-server",
    version,
    about,
    after_help = "Log level: MEMWAL_LOG (e.g. info, debug; default info)."
)]
struct Args {
    /// Where the tables live: a folder (which also holds their WALs), or an object store
    /// (`s3://bucket/prefix`, `gs://...`, `az://...`, configured by the service's usual
    /// environment variables and `--storage-option` / `MEMWAL_STORAGE_*`; needs `--wal`).
    #[arg(long, env = "MEMWAL_DATA")]
    data: String,
    /// Where the WALs go when `--data` is an object store (default: inside the `--data` folder):
    /// a local folder, or an object store (`s3://bucket/wal-prefix`, same options as `--data`) so
    /// that an acknowledged write survives the loss of this machine and a second server started
    /// on the same `--data` and `--wal` takes the tables over, fencing this one.
    #[arg(long, env = "MEMWAL_WAL")]
    wal: Option<String>,
    /// An object-store option KEY=VALUE (repeatable), e.g. aws_region=eu-west-1 or
    /// aws_endpoint=http://127.0.0.1:9000; also read from MEMWAL_STORAGE_<KEY> variables. Secrets
    /// (keys, tokens) are refused here: a command line shows in `ps`; use the variables.
    #[arg(long = "storage-option", value_name = "KEY=VALUE")]
    storage_options: Vec<String>,
    /// Address to listen on.
    #[arg(long, env = "MEMWAL_HOST", default_value = "127.0.0.1")]
    host: String,
    /// Port (0: any free port).
    #[arg(long, env = "MEMWAL_PORT", default_value_t = 0)]
    port: u16,
    /// The x-api-key every request must carry (none: any request is accepted). Prefer the
    /// environment variable: a key on the command line shows in `ps`.
    #[arg(long, env = "MEMWAL_API_KEY", hide_env_values = true)]
    api_key: Option<String>,
    /// Largest request body in bytes (413 beyond, before it is read when its length is declared).
    #[arg(long, env = "MEMWAL_MAX_BODY_BYTES", default_value_t = 256 << 20)]
    max_body_bytes: usize,
    /// Time a request body has to arrive in whole, in ms (408 after).
    #[arg(long, env = "MEMWAL_BODY_TIMEOUT_MS", default_value_t = 30_000)]
    body_timeout_ms: u64,
    /// Freeze a table's active memtable (and merge it into the table) at this many rows.
    #[arg(long, env = "MEMWAL_FLUSH_ROWS", default_value_t = 50_000)]
    flush_rows: usize,
    /// ... or at this many bytes of upserts.
    #[arg(long, env = "MEMWAL_FLUSH_BYTES", default_value_t = 64 << 20)]
    flush_bytes: usize,
    /// ... or when its oldest row is this old, in ms.
    #[arg(long, env = "MEMWAL_FLUSH_INTERVAL_MS", default_value_t = 2_000)]
    flush_interval_ms: u64,
    /// Durability of WAL appends.
    #[arg(long, env = "MEMWAL_PERSIST", value_enum, default_value = "sync")]
    persist: Persist,
    /// What recovery does with a damaged WAL.
    #[arg(long, env = "MEMWAL_RECOVERY", value_enum, default_value = "strict")]
    recovery: Recovery,
    /// Versions of a table older than this many seconds are removed in the background, with the files only
    /// they name (the latest and tagged versions stay); LanceDB's default is 7 days.
    #[arg(long, env = "MEMWAL_RETENTION_SECS", default_value_t = 7 * 24 * 3600)]
    retention_secs: u64,
    /// Least time between two background cleanups of one table, in seconds.
    #[arg(long, env = "MEMWAL_CLEANUP_EVERY_SECS", default_value_t = 60)]
    cleanup_every_secs: u64,
    /// Most data one background compaction run rewrites, in MiB (of live rows in memory): a run is bounded
    /// in time, so a flush never waits long behind it; a bigger budget makes fewer, bigger fragments.
    #[arg(long, env = "MEMWAL_COMPACTION_RUN_MB", default_value_t = 64)]
    compaction_run_mb: u64,
    /// Background compaction rewrites a fragment whose deleted share is above this (Lance's
    /// `materialize_deletions_threshold` is 0.1; a higher one rewrites less of an update-heavy stream's
    /// table and keeps more deleted rows on disk).
    #[arg(long, env = "MEMWAL_COMPACTION_DELETIONS_THRESHOLD", default_value_t = BACKGROUND_DELETIONS_THRESHOLD)]
    compaction_deletions_threshold: f64,
    /// Background compaction merges fragments of fewer rows than this (up to this many in one, and up to
    /// `--compaction-run-mb` of them); bigger ones are left as they are (Lance's `target_rows_per_fragment`,
    /// 1,048,576 as Lance's default: a smaller target makes more fragments, each merged fewer times).
    #[arg(long, env = "MEMWAL_COMPACTION_TARGET_ROWS", default_value_t = BACKGROUND_TARGET_ROWS)]
    compaction_target_rows: u64,
    /// How much lower queries run than the write path: a Linux nice increment for the query threads
    /// (0-19; 0: the same priority). Under contention the scheduler gives the acknowledged upserts the
    /// cores first; idle cores still go to queries.
    #[arg(long, env = "MEMWAL_READ_NICE", default_value_t = memwal_server::DEFAULT_READ_NICE,
          value_parser = clap::value_parser!(i32).range(0..=19))]
    read_nice: i32,
    /// The same for each table's background work (flushes into the table, compaction, index folds,
    /// cleanup): a nice increment for its flusher thread (0-19; 0: the same priority).
    #[arg(long, env = "MEMWAL_BACKGROUND_NICE", default_value_t = memwal_server::DEFAULT_READ_NICE,
          value_parser = clap::value_parser!(i32).range(0..=19))]
    background_nice: i32,
    /// On SIGTERM, time allowed to merge buffered rows before exiting, in ms.
    #[arg(long, env = "MEMWAL_SHUTDOWN_FLUSH_MS", default_value_t = 30_000)]
    shutdown_flush_ms: u64,
}

impl Args {
    fn config(&self) -> Result<ServerConfig, String> {
        let mut cfg = self.place()?;
        cfg.host = self.host.clone();
        cfg.port = self.port;
        cfg.api_key = self.api_key.clone();
        cfg.max_body_bytes = self.max_body_bytes;
        cfg.body_timeout = Duration::from_millis(self.body_timeout_ms);
        cfg.read_nice = self.read_nice;
        cfg.memwal.background_nice = self.background_nice;
        if !memwal_server::priority::SUPPORTED && (self.read_nice > 0 || self.background_nice > 0) {
            tracing::warn!("--read-nice and --background-nice are not applied: per-thread priorities are Linux only");
        }
        cfg.memwal.flush_rows = self.flush_rows.max(1);
        cfg.memwal.flush_bytes = self.flush_bytes.max(1);
        cfg.memwal.flush_interval = Duration::from_millis(self.flush_interval_ms.max(1));
        cfg.memwal.retention = Duration::from_secs(self.retention_secs);
        cfg.memwal.cleanup_every = Duration::from_secs(self.cleanup_every_secs.max(1));
        cfg.memwal.compaction.max_bytes_per_run =
            self.compaction_run_mb.max(1).saturating_mul(1 << 20);
        cfg.memwal.compaction.materialize_deletions_threshold = self.compaction_deletions_threshold;
        cfg.memwal.compaction.target_rows_per_fragment = self.compaction_target_rows;
        cfg.memwal.compaction.validate().map_err(|e| {
            format!("--compaction-deletions-threshold / --compaction-target-rows: {e}")
        })?;
        cfg.memwal.persist = match self.persist {
            Persist::Sync => PersistMode::SyncData,
            Persist::Buffer => PersistMode::Buffer,
        };
        cfg.memwal.recovery = match self.recovery {
            Recovery::Strict => RecoveryMode::Strict,
            Recovery::Cut => RecoveryMode::CutAtFirstBad,
        };
        Ok(cfg)
    }

    /// Where the tables and the WALs go (see `--data` and `--wal`).
    fn place(&self) -> Result<ServerConfig, String> {
        let remote = is_object_store(&self.data);
        if !remote {
            if self.wal.is_some() || !self.storage_options.is_empty() {
                return Err("--wal and --storage-option apply only when --data is an object store (s3://, gs://, az://)".into());
            }
            return Ok(ServerConfig::new(self.data.trim_start_matches("file://")));
        }
        let Some(wal) = &self.wal else {
            return Err(format!(
                "--data {:?} is an object store: give --wal, a local folder or an object store for the WALs",
                self.data
            ));
        };
        let options = storage_options(&self.storage_options)?;
        let open = |uri: &str| {
            memwal_core::storage::open_uri(uri, &options).map_err(|e| format!("{uri:?}: {e}"))
        };
        let storage = open(&self.data)?;
        let mut cfg = if is_object_store(wal) {
            if wal.trim_end_matches('/') == self.data.trim_end_matches('/') {
                return Err(format!(
                    "--wal {wal:?} is the --data location: give the WALs a prefix of their own"
                ));
            }
            let mut cfg = ServerConfig::new(wal);
            cfg.wal_storage = Some(open(wal)?);
            cfg
        } else {
            ServerConfig::new(wal.trim_start_matches("file://"))
        };
        cfg.storage = Some(storage);
        cfg.data_uri = Some(self.data.clone());
        Ok(cfg)
    }
}

/// Whether `uri` names an object store rather than a local folder.
fn is_object_store(uri: &str) -> bool {
    uri.contains("://") && !uri.starts_with("file://")
}

/// The object-store options: `MEMWAL_STORAGE_<KEY>` variables, then `--storage-option` flags
/// (which refuse secrets).
fn storage_options(flags: &[String]) -> Result<memwal_core::storage::StorageOptions, String> {
    let mut out = memwal_core::storage::StorageOptions::new();
    for (k, v) in std::env::vars() {
        if let Some(key) = k.strip_prefix("MEMWAL_STORAGE_") {
            out.insert(key.to_ascii_lowercase(), v);
        }
    }
    for f in flags {
        let Some((k, v)) = f.split_once('=') else {
            return Err(format!("--storage-option {f:?}: expected KEY=VALUE"));
        };
        let key = k.trim().to_ascii_lowercase();
        let secret = ["secret", "token", "password", "sas", "credential"]
            .iter()
            .any(|s| key.contains(s))
            || (key.contains("access_key") && !key.ends_with("_id"));
        if secret {
            return Err(format!(
                "--storage-option {key}: a secret on the command line shows in `ps`; set MEMWAL_STORAGE_{} instead",
                key.to_ascii_uppercase()
            ));
        }
        out.insert(key, v.to_string());
    }
    Ok(out)
}

/// Resolves on Ctrl-C or SIGTERM.
async fn stop_signal() {
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term => {}
    }
}

#[tokio::main]
async fn main() {
    let filter = tracing_subscriber::EnvFilter::try_from_env("MEMWAL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = match args.config() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("memwal-server: {e}");
            std::process::exit(2);
        }
    };
    let handle = match start(config).await {
        Ok(h) => h,
        Err(e) => {
            eprintln!("memwal-server: {e}");
            std::process::exit(1);
        }
    };
    println!("memwal-server listening on {}", handle.url());
    stop_signal().await;
    let report = handle
        .flush_all(Duration::from_millis(args.shutdown_flush_ms))
        .await;
    eprintln!("memwal-server: shutting down; {report}");
    handle.close().await;
}
