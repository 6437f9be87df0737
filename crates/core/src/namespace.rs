//! Namespaces of a native database: named folders of tables, nested like
//! directories, on any storage (a local folder, `memory://`, an object
//! store). The root namespace is the database's own folder; namespace `a` is
//! `.namespaces/a/`, its child `b` is `.namespaces/a/.namespaces/b/` (no table
//! or namespace name starts with '.', so nothing collides), the layout of
//! memwal-server's data folder. A namespace exists while its properties file
//! (`.properties.json`, a JSON object of strings) does: it is published
//! create-only, so of two racing creators one wins and the other is told the
//! namespace exists (on an object store two racing creates with the same
//! properties may both succeed: its create-only put cannot tell them apart). A namespace's tables are a [`NativeDatabase`] over its
//! folder ([`Prefixed`] storage).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::db::NativeDatabase;
use crate::error::{Error, Result};
use crate::name::validate_name;
use crate::storage::{Prefixed, PutNew};
use crate::table::lock;

/// The folder holding a namespace's child namespaces.
pub const CHILDREN: &str = ".namespaces";
/// A namespace's properties, and the mark that it exists.
pub const PROPERTIES: &str = ".properties.json";
/// Deepest nesting: each level is a folder, so the depth bounds the length
/// of every path under the database's folder.
pub const MAX_DEPTH: usize = 8;

/// The folder of namespace `path` in the database's storage (`""`: the root).
pub fn folder(path: &[String]) -> String {
    path.iter()
        .map(|p| format!("{CHILDREN}/{p}"))
        .collect::<Vec<_>>()
        .join("/")
}

/// A path inside the folder of namespace `path`.
fn inside(path: &[String], name: &str) -> String {
    match folder(path) {
        f if f.is_empty() => name.to_string(),
        f => format!("{f}/{name}"),
    }
}

/// Each name valid, at most [`MAX_DEPTH`] of them.
pub fn check_path(path: &[String]) -> Result<()> {
    if path.len() > MAX_DEPTH {
        return Err(Error::invalid(format!(
            "namespaces nest at most {MAX_DEPTH} deep; this path has {}",
            path.len()
        )));
    }
    path.iter()
        .try_for_each(|p| validate_name("namespace name", p))
}

fn not_found(path: &[String]) -> Error {
    Error::NamespaceNotFound {
        name: path.join("$"),
    }
}

impl NativeDatabase {
    /// Whether namespace `path` exists (the root always does).
    fn namespace_exists(&self, path: &[String]) -> Result<bool> {
        Ok(path.is_empty() || self.storage().exists(&inside(path, PROPERTIES))?)
    }

    /// Runs `f` on the database of namespace `path`'s tables.
    pub fn in_namespace<T>(
        &self,
        path: &[String],
        f: impl FnOnce(&NativeDatabase) -> Result<T>,
    ) -> Result<T> {
        if path.is_empty() {
            return f(self);
        }
        let db = self.namespace_db(path)?;
        f(&db)
    }

    /// The database of a child namespace's tables (kept, so that handles
    /// to one table share their state).
    fn namespace_db(&self, path: &[String]) -> Result<Arc<NativeDatabase>> {
        check_path(path)?;
        if !self.namespace_exists(path)? {
            lock(self.children()).remove(path);
            return Err(not_found(path));
        }
        let mut children = lock(self.children());
        let db = children.entry(path.to_vec()).or_insert_with(|| {
            let storage = Arc::new(Prefixed::new(self.storage().clone(), &folder(path)));
            Arc::new(self.child(&folder(path), storage))
        });
        Ok(db.clone())
    }

    /// Creates namespace `path` (its parent must exist) with `properties`;
    /// `exist_ok`: an existing one is fine (its properties stay).
    pub fn create_namespace_sync(
        &self,
        path: &[String],
        properties: &BTreeMap<String, String>,
        exist_ok: bool,
    ) -> Result<()> {
        check_path(path)?;
        let Some((_, parent)) = path.split_last() else {
            return Err(Error::invalid("the root namespace always exists"));
        };
        if !self.namespace_exists(parent)? {
            return Err(not_found(parent));
        }
        let json = serde_json::to_vec(properties).map_err(|e| Error::invalid(e.to_string()))?;
        let file = inside(path, PROPERTIES);
        // Looked for first: an object store's create-only put takes an
        // existing object with the same bytes for its own lost answer.
        let made = !self.storage().exists(&file)?
            && self.storage().put_new(&file, &json)? == PutNew::Created;
        match made {
            true => Ok(()),
            false if exist_ok => Ok(()),
            false => Err(Error::invalid(format!(
                "namespace {:?} already exists",
                path.join("$")
            ))),
        }
    }

    /// Namespace `path`'s properties.
    pub fn describe_namespace_sync(&self, path: &[String]) -> Result<BTreeMap<String, String>> {
        check_path(path)?;
        if path.is_empty() {
            return Ok(BTreeMap::new());
        }
        let file = inside(path, PROPERTIES);
        let bytes = self.storage().get(&file)?.ok_or_else(|| not_found(path))?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path: file,
            message: format!("namespace properties: {e}"),
        })
    }

    /// The child namespaces of `parent`, sorted.
    pub fn list_namespaces_sync(&self, parent: &[String]) -> Result<Vec<String>> {
        check_path(parent)?;
        if !self.namespace_exists(parent)? {
            return Err(not_found(parent));
        }
        let mut out = Vec::new();
        for name in self.storage().list(&inside(parent, CHILDREN))? {
            let mut p = parent.to_vec();
            p.push(name.clone());
            if validate_name("namespace name", &name).is_ok() && self.namespace_exists(&p)? {
                out.push(name);
            }
        }
        Ok(out)
    }

    /// Drops namespace `path`: with `cascade` its tables and child
    /// namespaces go with it, without it one that holds any is refused
    /// (nothing removed); `skip_missing`: a missing one is fine. Its tables
    /// go first, then the mark that it exists, then its folder, so a drop
    /// cut short leaves a namespace that can be dropped again.
    pub fn drop_namespace_sync(
        &self,
        path: &[String],
        cascade: bool,
        skip_missing: bool,
    ) -> Result<()> {
        check_path(path)?;
        if path.is_empty() {
            return Err(Error::invalid("the root namespace cannot be dropped"));
        }
        if !self.namespace_exists(path)? {
            return if skip_missing {
                Ok(())
            } else {
                Err(not_found(path))
            };
        }
        let children = self.list_namespaces_sync(path)?;
        let db = self.namespace_db(path)?;
        let tables = db.table_names_sync()?;
        if !cascade && (!children.is_empty() || !tables.is_empty()) {
            return Err(Error::invalid(format!(
                "namespace {:?} is not empty: it holds {} tables and {} namespaces (drop them first, or drop it with behavior \"cascade\")",
                path.join("$"),
                tables.len(),
                children.len()
            )));
        }
        for c in children {
            let mut p = path.to_vec();
            p.push(c);
            self.drop_namespace_sync(&p, true, true)?;
        }
        for t in tables {
            db.drop_table_sync(&t)?;
        }
        self.storage().delete(&inside(path, PROPERTIES))?;
        lock(self.children()).retain(|k, _| !k.starts_with(path));
        self.storage().delete_dir(&folder(path))
    }
}
