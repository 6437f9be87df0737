//! Server state: the native database, the served tables, and where the
//! server keeps its own files. Internals live under `DIR/.memwal/`, which
//! no valid table name can reach (names never start with '.'); a data
//! folder of the first layout (`DIR/_wal/{table}`) is moved there at start.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use memwal_core::name::validate_table_name;
use memwal_core::{AddMode, CreateMode, CreateOptions, Data, NativeDatabase};

use crate::error::{Error, Result};
use crate::memwal::{Health, MemWalTable, Turn};
use crate::served::ServedTable;
use crate::ServerConfig;

/// The server's own folder inside the data folder.
pub const INTERNAL_DIR: &str = ".memwal";

/// Shared by every request.
pub struct AppState {
    /// The tables' folder.
    pub db: NativeDatabase,
    /// Settings.
    pub config: ServerConfig,
    tables: Mutex<HashMap<String, ServedTable>>,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// `DIR/.memwal/wal`: one folder of segments per table.
pub fn wal_root(data_dir: &Path) -> PathBuf {
    data_dir.join(INTERNAL_DIR).join("wal")
}

/// Moves WAL folders of the first layout (`DIR/_wal/{table}`) under
/// [`wal_root`]. A table named `_wal` of that layout shares the folder:
/// only subfolders holding `.wal` segments are WALs.
fn upgrade_layout(data_dir: &Path) -> std::io::Result<()> {
    let old = data_dir.join("_wal");
    let Ok(entries) = std::fs::read_dir(&old) else {
        return Ok(());
    };
    let root = wal_root(data_dir);
    std::fs::create_dir_all(&root)?;
    for e in entries {
        let e = e?;
        let path = e.path();
        let is_wal = std::fs::read_dir(&path)
            .map(|rd| {
                rd.flatten()
                    .any(|f| f.file_name().to_string_lossy().ends_with(".wal"))
            })
            .unwrap_or(false);
        if is_wal && !root.join(e.file_name()).exists() {
            tracing::info!(from = %path.display(), "moving a WAL folder of the first layout");
            std::fs::rename(&path, root.join(e.file_name()))?;
        }
    }
    // Remove `_wal` itself unless it is a table (or holds anything else).
    let _ = std::fs::remove_dir(&old);
    memwal_core::storage::sync_dir(data_dir).map_err(|e| std::io::Error::other(e.to_string()))?;
    Ok(())
}

impl AppState {
    /// Opens the data folder.
    pub fn new(config: ServerConfig) -> Result<Self> {
        std::fs::create_dir_all(&config.data_dir)?;
        upgrade_layout(&config.data_dir)?;
        let uri = config.data_dir.to_str().unwrap_or_default();
        let db = match &config.storage {
            Some(s) => NativeDatabase::with_storage(uri, s.clone()),
            None => NativeDatabase::open(uri)?,
        };
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

    fn wal_dir(&self, name: &str) -> PathBuf {
        wal_root(&self.config.data_dir).join(name)
    }

    /// The served table `name` (opening its MemWAL on first use).
    pub fn table(&self, name: &str) -> Result<ServedTable> {
        validate_table_name(name)?;
        let mut tables = lock(&self.tables);
        if let Some(t) = tables.get(name) {
            return Ok(t.clone());
        }
        let base = self.db.open_table_sync(name)?;
        let t = ServedTable::new(MemWalTable::open(
            name,
            base,
            self.wal_dir(name),
            self.config.memwal.clone(),
        )?);
        tables.insert(name.to_string(), t.clone());
        Ok(t)
    }

    /// Creates a table; an overwrite of an existing one takes its turn
    /// in the table's order of writes (buffered upserts are replaced too).
    pub async fn create_table(
        self: &Arc<Self>,
        name: &str,
        data: Data,
        opts: CreateOptions,
    ) -> Result<u64> {
        validate_table_name(name)?;
        if opts.mode == CreateMode::Overwrite {
            match self.table(name) {
                Ok(t) => return t.add_rows(data, AddMode::Overwrite).await,
                Err(Error::Core(memwal_core::Error::TableNotFound { .. })) => {}
                Err(e) => return Err(e),
            }
        }
        let me = self.clone();
        let name = name.to_string();
        blocking(move || {
            let fresh = !me.db.table_names_sync()?.contains(&name);
            if fresh {
                // A WAL left by a drop that crashed half-way belongs to no table.
                remove_dir(&me.wal_dir(&name))?;
            }
            let t = me.db.create_table_sync(&name, data, opts)?;
            Ok(t.version_sync()?)
        })
        .await
    }

    /// Drops a table, its WAL and its memtables, in the table's order of
    /// writes: upserts acknowledged before it are gone with it, and later
    /// requests find no table.
    pub async fn drop_table(self: &Arc<Self>, name: &str) -> Result<()> {
        let t = self.table(name)?;
        let me = self.clone();
        let n = name.to_string();
        let mem = t.memwal().clone();
        let drop_files = move || -> Result<()> {
            // The WAL first: a crash in between leaves a table without
            // buffered rows, never buffered rows for a table to come.
            remove_dir(&me.wal_dir(&n))?;
            me.db.drop_table_sync(&n)?;
            let mut tables = lock(&me.tables);
            if tables
                .get(&n)
                .is_some_and(|cur| Arc::ptr_eq(cur.memwal(), &mem))
            {
                tables.remove(&n);
            }
            Ok(())
        };
        if t.memwal().failed().is_some() {
            blocking(drop_files).await?;
        } else {
            t.memwal().direct(Turn::Drop, move |_| drop_files()).await?;
        }
        let mem = t.memwal().clone();
        blocking(move || {
            mem.shutdown();
            Ok(())
        })
        .await
    }

    /// Renames a table in its order of writes: the buffered MemWAL rows
    /// are merged into it first (its WAL is then redundant and removed),
    /// then its folder moves. Requests queued behind it, and later ones
    /// on the old name, find no table.
    pub async fn rename_table(self: &Arc<Self>, cur: &str, new: &str) -> Result<()> {
        validate_table_name(new)?;
        let t = self.table(cur)?;
        if self.db.table_names_sync()?.iter().any(|n| n == new) {
            return Err(memwal_core::Error::TableAlreadyExists { name: new.into() }.into());
        }
        let me = self.clone();
        let (c, n) = (cur.to_string(), new.to_string());
        let mem = t.memwal().clone();
        t.memwal()
            .direct(Turn::Retire, move |_| {
                // A WAL left under the new name (a drop that crashed
                // half-way) must not be replayed into the renamed table.
                remove_dir(&me.wal_dir(&n))?;
                me.db.rename_table_sync(&c, &n)?;
                // Every record is merged: the old WAL is redundant (and one
                // left by a crash here is removed when the name is reused).
                if let Err(e) = remove_dir(&me.wal_dir(&c)) {
                    tracing::warn!(table = %c, error = %e, "could not remove the WAL of a renamed table");
                }
                let mut tables = lock(&me.tables);
                if tables
                    .get(&c)
                    .is_some_and(|cur| Arc::ptr_eq(cur.memwal(), &mem))
                {
                    tables.remove(&c);
                }
                Ok(())
            })
            .await?;
        let mem = t.memwal().clone();
        blocking(move || {
            mem.shutdown();
            Ok(())
        })
        .await
    }

    /// Per-table MemWAL figures.
    pub fn health(&self) -> BTreeMap<String, Health> {
        lock(&self.tables)
            .iter()
            .map(|(k, v)| (k.clone(), v.memwal().health()))
            .collect()
    }

    /// The open tables.
    pub fn tables(&self) -> Vec<(String, ServedTable)> {
        lock(&self.tables)
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }

    /// Stops every table's MemWAL threads.
    pub fn shutdown(&self) {
        for (_, t) in lock(&self.tables).drain() {
            t.memwal().shutdown();
        }
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Core(memwal_core::Error::internal(e.to_string())))?
}

fn remove_dir(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e.into()),
    }
}
