//! `Connection`: one database (folder, memory:// or db://) and its tables.

use std::collections::HashMap;
use std::sync::Arc;

use memwal_core::{CreateMode, CreateOptions, Database, NativeDatabase, NativeDb};
use napi::bindgen_prelude::Buffer;
use napi_derive::napi;

use crate::data::decode;
use crate::error;
use crate::headers::{HeaderFn, JsHeaderProvider};
use crate::table::Table;

/// One page of namespace names.
#[napi(object)]
pub struct NamespacePage {
    pub namespaces: Vec<String>,
    pub page_token: Option<String>,
}

/// Options of `connect`: `storage_options` configure an object store (s3://, gs://, az://) and
/// are refused for a folder or memory://; the others are for db:// only.
#[napi(object)]
#[derive(Default)]
pub struct ConnectOptions {
    /// API key for db:// (falls back to LANCEDB_API_KEY).
    pub api_key: Option<String>,
    /// Cloud region (default us-east-1).
    pub region: Option<String>,
    /// Base URL instead of https://{db}.{region}.api.lancedb.com.
    pub host_override: Option<String>,
    /// Key/value options, e.g. `remote_database_mem_wal_enabled`.
    pub storage_options: Option<HashMap<String, String>>,
    /// The REST client's configuration, as JSON (see lib/connection.ts).
    pub client_config_json: Option<String>,
    /// Seconds between a local table's checks for versions other
    /// processes committed (0 or none: every read checks).
    pub read_consistency_interval: Option<f64>,
}

/// A database.
#[napi]
pub struct Connection {
    inner: Arc<dyn Database>,
    uri: String,
}

/// Opens a database. `header_provider` (remote only) is called before
/// every try of every request for headers to add.
#[napi(catch_unwind)]
pub async fn connect(
    uri: String,
    options: Option<ConnectOptions>,
    header_provider: Option<HeaderFn>,
) -> napi::Result<Connection> {
    let options = options.unwrap_or_default();
    let inner: Arc<dyn Database> = if uri.starts_with("db://") {
        let config = match &options.client_config_json {
            Some(json) => memwal_remote::ClientConfig::from_json(json).map_err(error::remote)?,
            None => memwal_remote::ClientConfig::default(),
        };
        let opts = memwal_remote::ConnectOptions {
            api_key: options.api_key,
            region: options.region,
            host_override: options.host_override,
            storage_options: options.storage_options.unwrap_or_default(),
            client_config: config,
            header_provider: header_provider
                .map(|f| Arc::new(JsHeaderProvider(f)) as Arc<dyn memwal_remote::HeaderProvider>),
        };
        Arc::new(memwal_remote::RemoteDatabase::connect(&uri, opts).map_err(error::remote)?)
    } else {
        let storage = options.storage_options.unwrap_or_default();
        let consistency = match options.read_consistency_interval {
            Some(s) if s.is_finite() && s > 0.0 => memwal_core::ReadConsistency::Interval(
                std::time::Duration::try_from_secs_f64(s).map_err(|_| {
                    error::invalid("readConsistencyInterval is too large a number of seconds")
                })?,
            ),
            Some(s) if s.is_nan() || s < 0.0 => {
                return Err(error::invalid(
                    "readConsistencyInterval must be a number of seconds >= 0",
                ))
            }
            _ => memwal_core::ReadConsistency::Strong,
        };
        let db = NativeDatabase::open_with(&uri, &storage).map_err(error::core)?;
        Arc::new(NativeDb(Arc::new(db.with_read_consistency(consistency))))
    };
    Ok(Connection { inner, uri })
}

#[napi]
impl Connection {
    /// The URI it was opened with.
    #[napi(getter, catch_unwind)]
    pub fn uri(&self) -> String {
        self.uri.clone()
    }

    /// Table names, sorted.
    #[napi(catch_unwind)]
    pub async fn table_names(
        &self,
        start_after: Option<String>,
        limit: Option<u32>,
        namespace: Option<Vec<String>>,
    ) -> napi::Result<Vec<String>> {
        self.inner
            .table_names_in(
                &namespace.unwrap_or_default(),
                start_after.as_deref(),
                limit.map(|l| l as usize),
            )
            .await
            .map_err(error::core)
    }

    /// One page of child namespaces of `parent`.
    #[napi(catch_unwind)]
    pub async fn list_namespaces(
        &self,
        parent: Vec<String>,
        page_token: Option<String>,
        limit: Option<u32>,
    ) -> napi::Result<NamespacePage> {
        let (namespaces, page_token) = self
            .inner
            .list_namespaces(&parent, page_token.as_deref(), limit.map(|l| l as usize))
            .await
            .map_err(error::core)?;
        Ok(NamespacePage {
            namespaces,
            page_token,
        })
    }

    /// Creates a namespace.
    #[napi(catch_unwind)]
    pub async fn create_namespace(
        &self,
        path: Vec<String>,
        properties: Option<HashMap<String, String>>,
        exist_ok: bool,
    ) -> napi::Result<()> {
        let props = properties.unwrap_or_default().into_iter().collect();
        self.inner
            .create_namespace(&path, props, exist_ok)
            .await
            .map_err(error::core)
    }

    /// A namespace's properties.
    #[napi(catch_unwind)]
    pub async fn describe_namespace(
        &self,
        path: Vec<String>,
    ) -> napi::Result<HashMap<String, String>> {
        let p = self
            .inner
            .describe_namespace(&path)
            .await
            .map_err(error::core)?;
        Ok(p.into_iter().collect())
    }

    /// Drops a namespace.
    #[napi(catch_unwind)]
    pub async fn drop_namespace(
        &self,
        path: Vec<String>,
        cascade: bool,
        skip_missing: bool,
    ) -> napi::Result<()> {
        self.inner
            .drop_namespace(&path, cascade, skip_missing)
            .await
            .map_err(error::core)
    }

    /// Creates a table from Arrow IPC bytes.
    #[napi(catch_unwind)]
    pub async fn create_table(
        &self,
        name: String,
        data: Buffer,
        mode: Option<String>,
        exist_ok: Option<bool>,
        namespace: Option<Vec<String>>,
    ) -> napi::Result<Table> {
        let mode = match mode.as_deref() {
            None | Some("create") => CreateMode::Create,
            Some("overwrite") => CreateMode::Overwrite,
            Some(other) => {
                return Err(error::invalid(format!(
                    "unknown create mode {other:?}: use \"create\" or \"overwrite\""
                )))
            }
        };
        let data = decode(&data)?;
        let opts = CreateOptions {
            mode,
            exist_ok: exist_ok.unwrap_or(false),
        };
        let t = self
            .inner
            .create_table_in(&namespace.unwrap_or_default(), &name, data, opts)
            .await
            .map_err(error::core)?;
        Ok(Table::new(t))
    }

    /// Opens a table (in a namespace, for remote databases).
    #[napi(catch_unwind)]
    pub async fn open_table(
        &self,
        name: String,
        namespace: Option<Vec<String>>,
    ) -> napi::Result<Table> {
        let t = self
            .inner
            .open_table_in(&namespace.unwrap_or_default(), &name)
            .await
            .map_err(error::core)?;
        Ok(Table::new(t))
    }

    /// Drops a table (in a namespace, for remote databases).
    #[napi(catch_unwind)]
    pub async fn drop_table(
        &self,
        name: String,
        namespace: Option<Vec<String>>,
    ) -> napi::Result<()> {
        self.inner
            .drop_table_in(&namespace.unwrap_or_default(), &name)
            .await
            .map_err(error::core)
    }

    /// Renames a table of `namespace` (default: the root), into
    /// `new_namespace` when given.
    #[napi(catch_unwind)]
    pub async fn rename_table(
        &self,
        cur: String,
        new_name: String,
        namespace: Option<Vec<String>>,
        new_namespace: Option<Vec<String>>,
    ) -> napi::Result<()> {
        self.inner
            .rename_table_in(
                &namespace.unwrap_or_default(),
                &cur,
                new_namespace.as_deref(),
                &new_name,
            )
            .await
            .map_err(error::core)
    }
}
