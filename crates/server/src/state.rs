//! Server state: the native database and, per table, its MemWAL.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use memwal_core::name::validate_table_name;
use memwal_core::NativeDatabase;

use crate::error::Result;
use crate::memwal::{Health, MemWalTable};
use crate::ServerConfig;

/// Shared by every request.
pub struct AppState {
    /// The tables' folder.
    pub db: NativeDatabase,
    /// Settings.
    pub config: ServerConfig,
    tables: Mutex<HashMap<String, Arc<MemWalTable>>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

impl MemWalTable {
    /// Merges every memtable into the base before a direct write, so that
    /// direct writes and MemWAL upserts apply in the order they were acknowledged.
    pub fn drain(&self) -> Result<()> {
        self.flush_all(Duration::from_secs(120))
    }
}

impl AppState {
    /// Opens the data folder.
    pub fn new(config: ServerConfig) -> Result<Self> {
        let db = NativeDatabase::open(config.data_dir.to_str().unwrap_or_default())?;
        let state = Self {
            db,
            config,
            tables: Mutex::new(HashMap::new()),
        };
        // Recover every table's WAL at start, not at first use: acknowledged
        // writes must be readable (and flushing) right after a restart.
        for name in state.db.table_names_sync()? {
            if let Err(e) = state.table(&name) {
                tracing::error!(table = %name, error = %e, "cannot open table at start");
            }
        }
        Ok(state)
    }

    /// The served table `name` (opening its MemWAL on first use).
    pub fn table(&self, name: &str) -> Result<Arc<MemWalTable>> {
        validate_table_name(name)?;
        let mut tables = lock(&self.tables);
        if let Some(t) = tables.get(name) {
            return Ok(t.clone());
        }
        let base = self.db.open_table_sync(name)?;
        let wal_dir = self.config.data_dir.join("_wal").join(name);
        let t = MemWalTable::open(name, base, wal_dir, self.config.memwal.clone())?;
        tables.insert(name.to_string(), t.clone());
        Ok(t)
    }

    /// Drops a table, its WAL and its memtables.
    pub fn drop_table(&self, name: &str) -> Result<()> {
        validate_table_name(name)?;
        if let Some(t) = lock(&self.tables).remove(name) {
            t.shutdown();
        }
        self.db.drop_table_sync(name)?;
        let wal_dir = self.config.data_dir.join("_wal").join(name);
        match std::fs::remove_dir_all(&wal_dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Per-table MemWAL figures.
    pub fn health(&self) -> BTreeMap<String, Health> {
        lock(&self.tables)
            .iter()
            .map(|(k, v)| (k.clone(), v.health()))
            .collect()
    }

    /// Stops every table's MemWAL threads.
    pub fn shutdown(&self) {
        for (_, t) in lock(&self.tables).drain() {
            t.shutdown();
        }
    }
}
