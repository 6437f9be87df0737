//! A native database: a folder (or `memory://`) holding one folder per
//! table, `{name}.lance` as Lance names it (tables an earlier memwal created
//! keep their `{name}` folder and open as before; a rename moves one to
//! `{new}.lance`), and the folders of its namespaces ([`crate::namespace`]).
//! Handles to the same table share one cached state and key index.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::api::{page, AddMode, CreateMode, CreateOptions, Database, Table};
use crate::data::Data;
use crate::error::{Error, Result};
use crate::manifest::latest_version;
use crate::name::validate_table_name;
use crate::schema::{align_new_rows, validate_new_schema};
use crate::storage::{open_uri, Storage, StorageOptions};
use crate::table::{lock, Inner, NativeTable, ReadConsistency};

/// What a table's folder name adds to its name.
pub const TABLE_SUFFIX: &str = ".lance";

/// Tables in one folder or in memory.
#[derive(Debug)]
pub struct NativeDatabase {
    uri: String,
    storage: Arc<dyn Storage>,
    tables: Mutex<HashMap<String, Arc<Inner>>>,
    consistency: ReadConsistency,
    /// The databases of child namespaces' tables, by namespace path.
    children: Mutex<HashMap<Vec<String>, Arc<NativeDatabase>>>,
}

impl NativeDatabase {
    /// Opens `uri`: `memory://` (anything after it is ignored), `file://PATH`
    /// or a plain folder path (created if missing), or an object store
    /// (`s3://bucket/prefix`, `gs://`, `az://`) configured from the
    /// environment.
    pub fn open(uri: &str) -> Result<Self> {
        Self::open_with(uri, &StorageOptions::new())
    }

    /// As [`NativeDatabase::open`], with storage options (object-store
    /// credentials, endpoint, ...; see [`crate::storage::open_uri`]).
    pub fn open_with(uri: &str, options: &StorageOptions) -> Result<Self> {
        Ok(Self::with_storage(uri, open_uri(uri, options)?))
    }

    /// A database over any storage (tests use [`crate::storage::FaultyStorage`]).
    pub fn with_storage(uri: &str, storage: Arc<dyn Storage>) -> Self {
        Self {
            uri: uri.to_string(),
            storage,
            tables: Mutex::new(HashMap::new()),
            consistency: ReadConsistency::default(),
            children: Mutex::new(HashMap::new()),
        }
    }

    /// The database of the tables in `folder` (a namespace's), over
    /// `storage` (that folder of this one's), reading as this one reads.
    pub(crate) fn child(&self, folder: &str, storage: Arc<dyn Storage>) -> Self {
        Self {
            uri: format!("{}/{folder}", self.uri.trim_end_matches('/')),
            consistency: self.consistency,
            ..Self::with_storage("", storage)
        }
    }

    /// The child namespaces' databases opened so far.
    pub(crate) fn children(&self) -> &Mutex<HashMap<Vec<String>, Arc<NativeDatabase>>> {
        &self.children
    }

    /// The same database with reads checking for other writers' versions
    /// as `c` says (set before any table is opened).
    pub fn with_read_consistency(mut self, c: ReadConsistency) -> Self {
        self.consistency = c;
        self
    }

    /// The URI it was opened with.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// The underlying storage.
    pub fn storage(&self) -> &Arc<dyn Storage> {
        &self.storage
    }

    /// The folder of table `name` when it exists: `{name}.lance`, else the `{name}` of a table an
    /// earlier memwal created. A name ending in `.lance` has no such fallback: its `{name}` folder is
    /// the `.lance` folder of another table, which must not answer to a second name.
    fn folder_of(&self, name: &str) -> Result<Option<String>> {
        let st = self.storage.as_ref();
        let new = format!("{name}{TABLE_SUFFIX}");
        if latest_version(st, &new, 0)?.is_some() {
            return Ok(Some(new));
        }
        if name.ends_with(TABLE_SUFFIX) {
            return Ok(None);
        }
        Ok(latest_version(st, name, 0)?.map(|_| name.to_string()))
    }

    fn exists(&self, name: &str) -> Result<bool> {
        Ok(self.folder_of(name)?.is_some())
    }

    /// A handle of table `name`, in its folder (`{name}.lance` for a new table). A cached handle
    /// whose folder is no longer the table's (dropped and created again by another process) is
    /// replaced.
    fn handle(&self, name: &str) -> Result<NativeTable> {
        let dir = self
            .folder_of(name)?
            .unwrap_or_else(|| format!("{name}{TABLE_SUFFIX}"));
        let mut tables = lock(&self.tables);
        let fresh = || NativeTable::new_inner(name, &dir, self.storage.clone(), self.consistency);
        let inner = tables.entry(name.to_string()).or_insert_with(fresh);
        if inner.dir != dir {
            *inner = fresh();
        }
        Ok(NativeTable::from_inner(inner.clone()))
    }

    /// Table names, sorted: folders `{name}.lance`, and the `{name}` folders of tables an earlier
    /// memwal created.
    pub fn table_names_sync(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        for dir in self.storage.list("")? {
            let name = dir.strip_suffix(TABLE_SUFFIX).unwrap_or(&dir);
            if validate_table_name(name).is_ok()
                && latest_version(self.storage.as_ref(), &dir, 0)?.is_some()
            {
                out.push(name.to_string());
            }
        }
        out.sort();
        out.dedup();
        Ok(out)
    }

    /// Opens a table.
    pub fn open_table_sync(&self, name: &str) -> Result<NativeTable> {
        validate_table_name(name)?;
        if !self.exists(name)? {
            return Err(Error::TableNotFound {
                name: name.to_string(),
            });
        }
        self.handle(name)
    }

    /// Creates a table.
    pub fn create_table_sync(
        &self,
        name: &str,
        data: Data,
        opts: CreateOptions,
    ) -> Result<NativeTable> {
        validate_table_name(name)?;
        let schema = validate_new_schema(&data.schema)?;
        if self.exists(name)? {
            return match (opts.mode, opts.exist_ok) {
                (CreateMode::Overwrite, _) => {
                    let t = self.handle(name)?;
                    t.add_sync(data, AddMode::Overwrite)?;
                    Ok(t)
                }
                (CreateMode::Create, true) => self.open_table_sync(name),
                (CreateMode::Create, false) => Err(Error::TableAlreadyExists {
                    name: name.to_string(),
                }),
            };
        }
        let rows = align_new_rows(&data.batches, &schema)?;
        let t = self.handle(name)?;
        if t.commit_first_version(&schema, rows)? {
            return Ok(t);
        }
        if opts.exist_ok {
            return self.open_table_sync(name);
        }
        Err(Error::TableAlreadyExists {
            name: name.to_string(),
        })
    }

    /// Renames a table: its folder moves in one step, with every version,
    /// index and tag. Writers of this process holding a handle are held
    /// off for the move and then find no table (handles do not follow a
    /// rename; open the new name). Another process writing the table at
    /// the same moment is not fenced: rename tables nobody else writes.
    pub fn rename_table_sync(&self, cur: &str, new: &str) -> Result<()> {
        validate_table_name(cur)?;
        validate_table_name(new)?;
        let Some(from) = self.folder_of(cur)? else {
            return Err(Error::TableNotFound {
                name: cur.to_string(),
            });
        };
        let to = format!("{new}{TABLE_SUFFIX}");
        if cur == new || self.exists(new)? || !self.storage.list(&to)?.is_empty() {
            return Err(Error::TableAlreadyExists {
                name: new.to_string(),
            });
        }
        // No handle of either name is made during the move (the map stays
        // locked), and a commit of the old handle finishes first.
        let mut tables = lock(&self.tables);
        let inner = tables.remove(cur);
        let _writer = inner.as_ref().map(|i| lock(&i.write_lock));
        tables.remove(new);
        self.storage.rename_dir(&from, &to)
    }

    /// Drops a table and its files.
    pub fn drop_table_sync(&self, name: &str) -> Result<()> {
        validate_table_name(name)?;
        let Some(dir) = self.folder_of(name)? else {
            return Err(Error::TableNotFound {
                name: name.to_string(),
            });
        };
        lock(&self.tables).remove(name);
        self.storage.delete_dir(&dir)
    }
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::internal(format!("database task failed: {e}")))?
}

/// Shared handle used by the async trait impl.
#[derive(Debug, Clone)]
pub struct NativeDb(pub Arc<NativeDatabase>);

impl NativeDb {
    /// Opens `uri` (see [`NativeDatabase::open`]).
    pub fn open(uri: &str) -> Result<Self> {
        Ok(Self(Arc::new(NativeDatabase::open(uri)?)))
    }

    /// Opens `uri` with storage options (see [`NativeDatabase::open_with`]).
    pub fn open_with(uri: &str, options: &StorageOptions) -> Result<Self> {
        Ok(Self(Arc::new(NativeDatabase::open_with(uri, options)?)))
    }
}

#[async_trait]
impl Database for NativeDb {
    async fn table_names(&self) -> Result<Vec<String>> {
        let db = self.0.clone();
        blocking(move || db.table_names_sync()).await
    }
    async fn create_table(
        &self,
        name: &str,
        data: Data,
        options: CreateOptions,
    ) -> Result<Arc<dyn Table>> {
        let (db, name) = (self.0.clone(), name.to_string());
        let t = blocking(move || db.create_table_sync(&name, data, options)).await?;
        Ok(Arc::new(t))
    }
    async fn open_table(&self, name: &str) -> Result<Arc<dyn Table>> {
        let (db, name) = (self.0.clone(), name.to_string());
        let t = blocking(move || db.open_table_sync(&name)).await?;
        Ok(Arc::new(t))
    }
    async fn drop_table(&self, name: &str) -> Result<()> {
        let (db, name) = (self.0.clone(), name.to_string());
        blocking(move || db.drop_table_sync(&name)).await
    }
    async fn rename_table(&self, cur: &str, new: &str) -> Result<()> {
        let (db, cur, new) = (self.0.clone(), cur.to_string(), new.to_string());
        blocking(move || db.rename_table_sync(&cur, &new)).await
    }
    async fn open_table_in(&self, namespace: &[String], name: &str) -> Result<Arc<dyn Table>> {
        let (db, ns, name) = (self.0.clone(), namespace.to_vec(), name.to_string());
        let t = blocking(move || db.in_namespace(&ns, |d| d.open_table_sync(&name))).await?;
        Ok(Arc::new(t))
    }
    async fn create_table_in(
        &self,
        namespace: &[String],
        name: &str,
        data: Data,
        options: CreateOptions,
    ) -> Result<Arc<dyn Table>> {
        let (db, ns, name) = (self.0.clone(), namespace.to_vec(), name.to_string());
        let t =
            blocking(move || db.in_namespace(&ns, |d| d.create_table_sync(&name, data, options)))
                .await?;
        Ok(Arc::new(t))
    }
    async fn table_names_in(
        &self,
        namespace: &[String],
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> Result<Vec<String>> {
        let (db, ns) = (self.0.clone(), namespace.to_vec());
        let mut names = blocking(move || db.in_namespace(&ns, |d| d.table_names_sync())).await?;
        page(&mut names, start_after, limit);
        Ok(names)
    }
    async fn rename_table_in(
        &self,
        namespace: &[String],
        cur: &str,
        new_namespace: Option<&[String]>,
        new: &str,
    ) -> Result<()> {
        // An empty new namespace means "not given", as 0.39's clients read it.
        if new_namespace.is_some_and(|n| !n.is_empty() && n != namespace) {
            return Err(Error::not_supported(format!(
                "renameTable from namespace {namespace:?} to {new_namespace:?}: moving a table across namespaces is not supported by memwal yet (rename it within its namespace)"
            )));
        }
        let (db, ns) = (self.0.clone(), namespace.to_vec());
        let (cur, new) = (cur.to_string(), new.to_string());
        blocking(move || db.in_namespace(&ns, |d| d.rename_table_sync(&cur, &new))).await
    }
    async fn drop_table_in(&self, namespace: &[String], name: &str) -> Result<()> {
        let (db, ns, name) = (self.0.clone(), namespace.to_vec(), name.to_string());
        blocking(move || db.in_namespace(&ns, |d| d.drop_table_sync(&name))).await
    }
    async fn list_namespaces(
        &self,
        parent: &[String],
        page_token: Option<&str>,
        limit: Option<usize>,
    ) -> Result<(Vec<String>, Option<String>)> {
        let (db, parent) = (self.0.clone(), parent.to_vec());
        let mut names = blocking(move || db.list_namespaces_sync(&parent)).await?;
        let more = page(&mut names, page_token, limit);
        let next = more.then(|| names.last().cloned()).flatten();
        Ok((names, next))
    }
    async fn create_namespace(
        &self,
        path: &[String],
        properties: BTreeMap<String, String>,
        exist_ok: bool,
    ) -> Result<()> {
        let (db, path) = (self.0.clone(), path.to_vec());
        blocking(move || db.create_namespace_sync(&path, &properties, exist_ok)).await
    }
    async fn describe_namespace(&self, path: &[String]) -> Result<BTreeMap<String, String>> {
        let (db, path) = (self.0.clone(), path.to_vec());
        blocking(move || db.describe_namespace_sync(&path)).await
    }
    async fn drop_namespace(
        &self,
        path: &[String],
        cascade: bool,
        skip_missing: bool,
    ) -> Result<()> {
        let (db, path) = (self.0.clone(), path.to_vec());
        blocking(move || db.drop_namespace_sync(&path, cascade, skip_missing)).await
    }
}
