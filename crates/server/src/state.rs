//! Server state: the native database, the served tables, and where the
//! server keeps its own files. Internals live under `DIR/.memwal/`, which
//! no valid table name can reach (names never start with '.'); a data
//! folder of the first layout (`DIR/_wal/{table}`) is moved there at start.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use memwal_core::{AddMode, CreateMode, CreateOptions, Data, NativeDatabase, ReadConsistency};

use crate::error::{Error, Result};
use crate::memwal::log::Wal;
use crate::memwal::{Health, MemWalTable, Turn};
use crate::namespace::{split_id, Namespaces};
use crate::served::ServedTable;
use crate::ServerConfig;

/// The server's own folder inside the data folder.
pub const INTERNAL_DIR: &str = ".memwal";

/// Shared by every request.
pub struct AppState {
    /// The tables' folder (the root namespace).
    pub db: Arc<NativeDatabase>,
    /// Namespaces and their databases.
    pub namespaces: Namespaces,
    /// Settings.
    pub config: ServerConfig,
    tables: Mutex<HashMap<String, ServedTable>>,
    /// What could not be opened at start (skipped, served without), for `/health`.
    pub startup_problems: Vec<String>,
    /// Orders namespace drops against what creates inside a namespace: a
    /// table or namespace created in a namespace holds it shared, a drop
    /// holds it alone, so either the creation lands before the drop (and is
    /// dropped with it) or after (and finds no namespace), never between.
    ns_gate: tokio::sync::RwLock<()>,
    /// The threads queries run on, below the write path's priority.
    pub reads: Arc<crate::reads::ReadPool>,
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
        if config.wal_storage.is_none() {
            std::fs::create_dir_all(&config.data_dir)?;
            upgrade_layout(&config.data_dir)?;
        }
        let uri = match &config.data_uri {
            Some(u) => u.as_str(),
            None => config.data_dir.to_str().unwrap_or_default(),
        };
        // The server owns its tables: reads need not look for other writers' versions
        // (a HEAD per read on an object store); its own commits are seen at once.
        let db = Arc::new(
            match &config.storage {
                Some(s) => NativeDatabase::with_storage(uri, s.clone()),
                None => NativeDatabase::open(uri)?,
            }
            .with_read_consistency(ReadConsistency::OwnWritesOnly),
        );
        // Twice the cores, at least 8: a query waiting on an object store holds its
        // thread, and a cheap one (a count) should not queue behind a few long ones.
        let cores = std::thread::available_parallelism().map_or(2, |n| n.get());
        let threads = (2 * cores).max(8);
        let reads = crate::reads::ReadPool::new(threads, config.read_nice.clamp(0, 19))?;
        let mut state = Self {
            reads,
            namespaces: Namespaces::new(
                config.data_dir.clone(),
                db.clone(),
                config.storage.is_some(),
            ),
            db,
            config,
            tables: Mutex::new(HashMap::new()),
            startup_problems: Vec::new(),
            ns_gate: tokio::sync::RwLock::new(()),
        };
        state.startup_problems = state.open_all();
        for p in &state.startup_problems {
            tracing::error!(problem = %p, "skipped at start");
        }
        Ok(state)
    }

    /// Recovers every table's WAL at start, not at first use: acknowledged
    /// writes must be readable (and flushing) right after a restart. What
    /// cannot be opened is skipped and returned (never stops the start).
    fn open_all(&self) -> Vec<String> {
        let mut problems = Vec::new();
        for ns in self.namespaces.all(&mut problems) {
            let names = self
                .namespaces
                .db(&ns)
                .and_then(|db| Ok(db.table_names_sync()?));
            let names = match names {
                Ok(n) => n,
                Err(e) => {
                    problems.push(format!(
                        "namespace {:?} cannot be opened: {e}",
                        ns.join("$")
                    ));
                    continue;
                }
            };
            for name in names {
                let id = table_id(&ns, &name);
                if let Err(e) = self.table(&id) {
                    problems.push(format!("table {id:?} cannot be opened: {e}"));
                }
            }
        }
        problems
    }

    /// The database of a namespace (only the root with a custom storage).
    pub fn db_of(&self, ns: &[String]) -> Result<Arc<NativeDatabase>> {
        if !ns.is_empty() && self.config.storage.is_some() {
            return Err(memwal_core::Error::not_supported(
                "namespaces on a server with a custom storage are not supported by memwal yet",
            )
            .into());
        }
        self.namespaces.db(ns)
    }

    /// A table id's database and table name.
    fn locate(&self, id: &str) -> Result<(Arc<NativeDatabase>, String)> {
        let (ns, name) = split_id(id)?;
        Ok((self.db_of(&ns)?, name))
    }

    /// The WAL of table id `name`.
    fn wal_of(&self, name: &str) -> Wal {
        match &self.config.wal_storage {
            Some(store) => Wal::object(store.clone(), name),
            None => Wal::Local {
                dir: wal_root(&self.config.data_dir).join(name),
                io: self.config.memwal.io.clone(),
            },
        }
    }

    /// The served table `name` (a table id: `ns$t` in a namespace),
    /// opening its MemWAL on first use.
    pub fn table(&self, name: &str) -> Result<ServedTable> {
        let (db, short) = self.locate(name)?;
        let mut tables = lock(&self.tables);
        if let Some(t) = tables.get(name) {
            return Ok(t.clone());
        }
        let base = db.open_table_sync(&short)?;
        let t = ServedTable::new(MemWalTable::open(
            name,
            base,
            self.wal_of(name),
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
        let _gate = self.ns_gate.read().await;
        let (db, short) = self.locate(name)?;
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
            let fresh = !db.table_names_sync()?.contains(&short);
            if fresh {
                // A WAL left by a drop that crashed half-way belongs to no table.
                remove_wal(&me.wal_of(&name))?;
            }
            let t = db.create_table_sync(&short, data, opts)?;
            Ok(t.version_sync()?)
        })
        .await
    }

    /// Drops a table, its WAL and its memtables, in the table's order of
    /// writes: upserts acknowledged before it are gone with it, and later
    /// requests find no table.
    pub async fn drop_table(self: &Arc<Self>, name: &str) -> Result<()> {
        let t = self.table(name)?;
        let (db, short) = self.locate(name)?;
        let me = self.clone();
        let n = name.to_string();
        let mem = t.memwal().clone();
        let drop_files = move || -> Result<()> {
            // The WAL first: a crash in between leaves a table without
            // buffered rows, never buffered rows for a table to come.
            remove_wal(&me.wal_of(&n))?;
            db.drop_table_sync(&short)?;
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
    /// `new` is the new id, in the same namespace.
    pub async fn rename_table(self: &Arc<Self>, cur: &str, new: &str) -> Result<()> {
        let (ns, short) = split_id(cur)?;
        let (new_ns, new_short) = split_id(new)?;
        if new_ns != ns {
            return Err(memwal_core::Error::not_supported(
                "renaming a table into another namespace is not supported by memwal yet",
            )
            .into());
        }
        let _gate = self.ns_gate.read().await;
        let db = self.db_of(&ns)?;
        let t = self.table(cur)?;
        if db.table_names_sync()?.contains(&new_short) {
            return Err(memwal_core::Error::TableAlreadyExists { name: new.into() }.into());
        }
        let me = self.clone();
        let (c, n) = (cur.to_string(), table_id(&ns, &new_short));
        let (cs, ns_) = (short, new_short);
        let mem = t.memwal().clone();
        t.memwal()
            .direct(Turn::Retire, move |_| {
                // A WAL left under the new name (a drop that crashed
                // half-way) must not be replayed into the renamed table.
                remove_wal(&me.wal_of(&n))?;
                db.rename_table_sync(&cs, &ns_)?;
                // Every record is merged: the old WAL is redundant (and one
                // left by a crash here is removed when the name is reused).
                if let Err(e) = remove_wal(&me.wal_of(&c)) {
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

    /// Creates a namespace (see [`Namespaces::create`]), ordered against
    /// drops (see `ns_gate`).
    pub async fn create_namespace(
        self: &Arc<Self>,
        path: &[String],
        properties: &BTreeMap<String, String>,
        exist_ok: bool,
    ) -> Result<()> {
        let _gate = self.ns_gate.read().await;
        self.namespaces.create(path, properties, exist_ok)
    }

    /// Drops a namespace: an empty one, or (`cascade`) with its tables
    /// (each dropped as `drop_table` drops it) and child namespaces. A
    /// missing one is an error unless `skip_missing`. Nothing is created
    /// in any namespace while it runs (see `ns_gate`).
    pub async fn drop_namespace(
        self: &Arc<Self>,
        path: &[String],
        cascade: bool,
        skip_missing: bool,
    ) -> Result<()> {
        let _gate = self.ns_gate.write().await;
        self.drop_namespace_gated(path, cascade, skip_missing).await
    }

    async fn drop_namespace_gated(
        self: &Arc<Self>,
        path: &[String],
        cascade: bool,
        skip_missing: bool,
    ) -> Result<()> {
        if path.is_empty() {
            return Err(memwal_core::Error::invalid("the root namespace cannot be dropped").into());
        }
        if !self.namespaces.exists(path) {
            return match skip_missing {
                true => Ok(()),
                false => Err(memwal_core::Error::NamespaceNotFound {
                    name: path.join("$"),
                }
                .into()),
            };
        }
        let tables = self.db_of(path)?.table_names_sync()?;
        let children = self.namespaces.children(path)?;
        let empty = tables.is_empty() && children.is_empty();
        if !cascade && !empty {
            return Err(memwal_core::Error::invalid(format!(
                "namespace {:?} is not empty ({} table(s), {} namespace(s)); drop them first or drop with behavior Cascade",
                path.join("$"),
                tables.len(),
                children.len()
            ))
            .into());
        }
        for c in children {
            let mut child = path.to_vec();
            child.push(c);
            Box::pin(self.drop_namespace_gated(&child, true, true)).await?;
        }
        for t in tables {
            self.drop_table(&table_id(path, &t)).await?;
        }
        let me = self.clone();
        let p = path.to_vec();
        blocking(move || me.namespaces.remove(&p)).await
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

/// The id of table `name` in namespace `ns` (`a$b$t`; the root: `t`).
pub fn table_id(ns: &[String], name: &str) -> String {
    let mut parts = ns.to_vec();
    parts.push(name.to_string());
    parts.join("$")
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Core(memwal_core::Error::internal(e.to_string())))?
}

fn remove_wal(wal: &Wal) -> Result<()> {
    Ok(wal.remove_all()?)
}
