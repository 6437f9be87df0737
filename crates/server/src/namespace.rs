//! Namespaces: named folders of tables, nested like directories. The root
//! namespace (`$`, or an empty path) is the data folder itself; namespace
//! `a` is `DIR/.namespaces/a/`, its child `b` is `DIR/.namespaces/a/.namespaces/b/`
//! (no table name can start with '.', so neither can collide with a table).
//! A namespace's properties are `.properties.json` in its folder.
//!
//! A table is addressed by its id: the namespace path and its name joined
//! by `$` (`a$b$t`), as the official clients send it. Served tables are
//! keyed by id, and their WALs live under `.memwal/wal/{id}`.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use memwal_core::name::validate_name;
use memwal_core::NativeDatabase;

use crate::error::{Error, Result};

/// The folder holding a namespace's child namespaces.
const CHILDREN: &str = ".namespaces";
/// A namespace's properties.
const PROPERTIES: &str = ".properties.json";
/// Separates the parts of a table id or namespace path on the wire.
pub const DELIMITER: char = '$';

/// Deepest namespace nesting: each level is a folder (`.namespaces/{name}`),
/// so the depth bounds the length of every path under the data folder.
pub const MAX_DEPTH: usize = 8;

/// Longest table id (`a$b$t`, in bytes): a served table's WAL folder is
/// named by its id, and a file name holds at most 255 bytes (an S3 key,
/// 1,024, holds the whole path easily at this bound).
pub const MAX_ID_BYTES: usize = 255;

/// A namespace path and a table name, from a table id (`a$b$t`).
pub fn split_id(id: &str) -> Result<(Vec<String>, String)> {
    if id.len() > MAX_ID_BYTES {
        return Err(bad(&format!(
            "table id of {} bytes is too long: namespace path and table name together take at most {MAX_ID_BYTES}",
            id.len()
        )));
    }
    let mut parts: Vec<String> = id.split(DELIMITER).map(str::to_string).collect();
    let name = parts.pop().unwrap_or_default();
    check_path(&parts)?;
    memwal_core::name::validate_table_name(&name)?;
    Ok((parts, name))
}

/// A namespace path from its wire form (`a$b`; `$` or empty: the root).
pub fn parse_path(ns: &str) -> Result<Vec<String>> {
    if ns.is_empty() || ns == "$" {
        return Ok(Vec::new());
    }
    let parts: Vec<String> = ns.split(DELIMITER).map(str::to_string).collect();
    check_path(&parts)?;
    // Room for `$` and a table name of one character: a namespace that could
    // hold no table is refused when it is created.
    if ns.len() + 2 > MAX_ID_BYTES {
        return Err(bad(&format!(
            "namespace path of {} bytes is too long: its table ids would pass {MAX_ID_BYTES} bytes",
            ns.len()
        )));
    }
    Ok(parts)
}

/// Each name valid, at most [`MAX_DEPTH`] of them.
fn check_path(parts: &[String]) -> Result<()> {
    if parts.len() > MAX_DEPTH {
        return Err(bad(&format!(
            "namespaces nest at most {MAX_DEPTH} deep; this path has {}",
            parts.len()
        )));
    }
    for p in parts {
        validate_name("namespace name", p)?;
    }
    Ok(())
}

/// The namespaces of one data folder, and a database per namespace.
pub struct Namespaces {
    root: PathBuf,
    dbs: Mutex<HashMap<Vec<String>, Arc<NativeDatabase>>>,
    /// Whether the tables live on an object store: child namespaces are local folders, so
    /// they are refused there rather than put on this machine's disk.
    remote: bool,
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

fn not_found(path: &[String]) -> Error {
    Error::Core(memwal_core::Error::NamespaceNotFound {
        name: path.join("$"),
    })
}

impl Namespaces {
    /// The namespaces under `root` (the data folder); `root_db` is the root's.
    pub fn new(root: PathBuf, root_db: Arc<NativeDatabase>, remote: bool) -> Self {
        let dbs = HashMap::from([(Vec::new(), root_db)]);
        Self {
            root,
            dbs: Mutex::new(dbs),
            remote,
        }
    }

    fn dir(&self, path: &[String]) -> PathBuf {
        let mut d = self.root.clone();
        for p in path {
            d = d.join(CHILDREN).join(p);
        }
        d
    }

    /// Whether the namespace exists (the root always does).
    pub fn exists(&self, path: &[String]) -> bool {
        path.is_empty() || self.dir(path).is_dir()
    }

    /// The database of a namespace's tables.
    pub fn db(&self, path: &[String]) -> Result<Arc<NativeDatabase>> {
        let mut dbs = lock(&self.dbs);
        if let Some(db) = dbs.get(path) {
            if self.exists(path) {
                return Ok(db.clone());
            }
        }
        if !self.exists(path) {
            dbs.remove(path);
            return Err(not_found(path));
        }
        let dir = self.dir(path);
        let db = Arc::new(
            NativeDatabase::open(dir.to_str().unwrap_or_default())?
                .with_read_consistency(memwal_core::ReadConsistency::OwnWritesOnly),
        );
        dbs.insert(path.to_vec(), db.clone());
        Ok(db)
    }

    /// Creates a namespace (its parent must exist); `exist_ok`: an existing
    /// one is fine (its properties stay).
    pub fn create(
        &self,
        path: &[String],
        properties: &BTreeMap<String, String>,
        exist_ok: bool,
    ) -> Result<()> {
        let Some((_, parent)) = path.split_last() else {
            return Err(bad("the root namespace always exists"));
        };
        if self.remote {
            return Err(Error::Core(memwal_core::Error::not_supported(
                "child namespaces on an object store are not supported yet: the server's tables live in the root namespace",
            )));
        }
        if !self.exists(parent) {
            return Err(not_found(parent));
        }
        let dir = self.dir(path);
        if dir.is_dir() {
            return if exist_ok {
                Ok(())
            } else {
                Err(bad(&format!(
                    "namespace {:?} already exists",
                    path.join("$")
                )))
            };
        }
        std::fs::create_dir_all(&dir)?;
        let json = serde_json::to_vec(properties).map_err(|e| bad(&e.to_string()))?;
        std::fs::write(dir.join(PROPERTIES), json)?;
        memwal_core::storage::sync_dir(&dir)?;
        if let Some(up) = dir.parent() {
            memwal_core::storage::sync_dir(up)?;
        }
        Ok(())
    }

    /// A namespace's properties.
    pub fn properties(&self, path: &[String]) -> Result<BTreeMap<String, String>> {
        if !self.exists(path) {
            return Err(not_found(path));
        }
        match std::fs::read(self.dir(path).join(PROPERTIES)) {
            Ok(b) => serde_json::from_slice(&b).map_err(|e| {
                Error::Core(memwal_core::Error::Corrupt {
                    path: format!("namespace {:?} {PROPERTIES}", path.join("$")),
                    message: e.to_string(),
                })
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(BTreeMap::new()),
            Err(e) => Err(e.into()),
        }
    }

    /// The child namespaces of `path`, sorted.
    pub fn children(&self, path: &[String]) -> Result<Vec<String>> {
        if !self.exists(path) {
            return Err(not_found(path));
        }
        let mut out = Vec::new();
        match std::fs::read_dir(self.dir(path).join(CHILDREN)) {
            Ok(rd) => {
                for e in rd {
                    let name = e?.file_name().to_string_lossy().to_string();
                    if validate_name("namespace name", &name).is_ok() {
                        out.push(name);
                    }
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e.into()),
        }
        out.sort();
        Ok(out)
    }

    /// Removes an empty namespace's folder (the caller dropped its tables
    /// and children first).
    pub fn remove(&self, path: &[String]) -> Result<()> {
        let dir = self.dir(path);
        lock(&self.dbs).retain(|k, _| !k.starts_with(path));
        std::fs::remove_dir_all(&dir)?;
        if let Some(up) = dir.parent() {
            memwal_core::storage::sync_dir(up)?;
        }
        Ok(())
    }

    /// Every namespace path, the root first (for recovery at start). A
    /// folder that cannot be listed, or lies past the bounds of ids, is
    /// skipped and described in `problems`: one bad folder never stops the
    /// server from starting.
    pub fn all(&self, problems: &mut Vec<String>) -> Vec<Vec<String>> {
        let mut out = vec![Vec::new()];
        let mut i = 0;
        while i < out.len() {
            let p = out[i].clone();
            match self.children(&p) {
                Ok(children) => {
                    for c in children {
                        let mut q = p.clone();
                        q.push(c);
                        match parse_path(&q.join("$")) {
                            Ok(_) => out.push(q),
                            Err(e) => {
                                problems.push(format!("namespace {:?} skipped: {e}", q.join("$")))
                            }
                        }
                    }
                }
                Err(e) => {
                    problems.push(format!("namespace {:?} cannot be listed: {e}", p.join("$")))
                }
            }
            i += 1;
        }
        out
    }
}

fn bad(msg: &str) -> Error {
    Error::Core(memwal_core::Error::invalid(msg.to_string()))
}
