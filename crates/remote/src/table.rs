//! RemoteDatabase and RemoteTable: the core traits over the REST protocol.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use arrow::array::RecordBatch;
use arrow_schema::SchemaRef;
use async_trait::async_trait;
use memwal_core::{
    ipc, json_schema, AddMode, CreateOptions, Data, Database, DeleteResult, IndexInfo,
    IndexRequest, IndexType, MergeInsert, MergeResult, OptimizeStats, QueryRequest, Table,
    UpdateResult, VersionInfo,
};
use reqwest::Method;
use serde_json::{json, Value};

use crate::client::RestClient;
use crate::config::ConnectOptions;
use crate::error::{Error, Result};
use memwal_core::{ColumnAlteration, NewColumns};

use memwal_core::protocol::{
    self, header, DeleteResponse, IndexListResponse, IndexStatsResponse, MergeInsertResponse,
    OptimizeResponse, UpdateBody, UpdateResponse, VersionResponse, ARROW_STREAM,
};

/// A database on LanceDB Cloud / Enterprise / a memwal server.
#[derive(Debug, Clone)]
pub struct RemoteDatabase {
    client: Arc<RestClient>,
}

impl RemoteDatabase {
    /// Connects to `db://name`.
    pub fn connect(uri: &str, opts: ConnectOptions) -> Result<Self> {
        let db = uri
            .strip_prefix("db://")
            .map(|s| s.trim_end_matches('/'))
            .filter(|s| !s.is_empty())
            .ok_or_else(|| {
                Error::Config(format!("remote URIs look like db://name, got {uri:?}"))
            })?;
        Ok(Self {
            client: Arc::new(RestClient::new(db, &opts)?),
        })
    }

    /// The table id of `name` in `namespace`: the parts joined by the id
    /// delimiter (`$` unless configured), each part a valid name.
    fn id(&self, namespace: &[String], name: &str) -> memwal_core::Result<String> {
        for part in namespace.iter().map(String::as_str).chain([name]) {
            memwal_core::name::validate_table_name(part)?;
        }
        let delim = self.client.config.id_delimiter.as_deref().unwrap_or("$");
        let mut parts = namespace.to_vec();
        parts.push(name.to_string());
        Ok(parts.join(delim))
    }

    fn table(&self, name: &str) -> RemoteTable {
        RemoteTable {
            client: self.client.clone(),
            name: name.to_string(),
            version: None,
            min_version: Arc::new(AtomicU64::new(0)),
        }
    }
}

async fn json_of(resp: reqwest::Response, request_id: &str) -> Result<Value> {
    let text = resp.text().await.map_err(|e| Error::Response {
        message: e.to_string(),
        request_id: request_id.into(),
    })?;
    if text.trim().is_empty() {
        return Ok(json!({}));
    }
    serde_json::from_str(&text).map_err(|e| Error::Response {
        message: format!("not JSON ({e}): {text}"),
        request_id: request_id.into(),
    })
}

/// A version timestamp: RFC 3339 (the protocol) or epoch milliseconds.
fn timestamp_ms(v: Option<&Value>) -> u64 {
    match v {
        Some(Value::String(s)) => chrono::DateTime::parse_from_rfc3339(s)
            .map(|d| d.timestamp_millis().max(0) as u64)
            .unwrap_or(0),
        Some(n) => n.as_u64().unwrap_or(0),
        None => 0,
    }
}

fn u(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

/// A JSON answer read as one of the protocol's response structs (absent
/// fields read as zeros; a field of the wrong type is an error).
fn answer<T: serde::de::DeserializeOwned>(v: Value) -> Result<T> {
    serde_json::from_value(v).map_err(|e| Error::Response {
        message: format!("unexpected answer shape: {e}"),
        request_id: String::new(),
    })
}

impl RemoteDatabase {
    /// The table names of the list at `path` after `start_after`, at most
    /// `limit`, page by page (`send_limit`: ask the server for at most what
    /// is still wanted).
    async fn all_pages(
        &self,
        path: &str,
        start_after: Option<&str>,
        limit: Option<usize>,
        send_limit: bool,
    ) -> memwal_core::Result<Vec<String>> {
        let mut out = Vec::new();
        let mut token = start_after.map(str::to_string);
        loop {
            let want = limit
                .map(|l| l.saturating_sub(out.len()))
                .filter(|_| send_limit);
            let (names, next) = self.page_of(path, "tables", token.as_deref(), want).await?;
            out.extend(names);
            token = next;
            if token.is_none() || limit.is_some_and(|l| out.len() >= l) {
                break;
            }
        }
        out.truncate(limit.unwrap_or(usize::MAX));
        Ok(out)
    }

    /// One page of the list at `path` (its names under `key`).
    async fn page_of(
        &self,
        path: &str,
        key: &str,
        token: Option<&str>,
        limit: Option<usize>,
    ) -> memwal_core::Result<(Vec<String>, Option<String>)> {
        let mut q: Vec<(&str, String)> = Vec::new();
        if let Some(l) = limit {
            q.push(("limit", l.to_string()));
        }
        if let Some(t) = token {
            q.push(("page_token", t.to_string()));
        }
        let (resp, rid, _) = self
            .client
            .send(Method::GET, path, false, |r| r.query(&q))
            .await?;
        let resp = self.client.check(resp, &rid, None).await?;
        let v = json_of(resp, &rid).await?;
        let names: Vec<String> = v
            .get(key)
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        let next = v
            .get("page_token")
            .and_then(Value::as_str)
            .map(str::to_string)
            .filter(|_| !names.is_empty());
        Ok((names, next))
    }

    /// `/v1/namespace/{path}/{op}` (the root is `$`).
    fn namespace_path(&self, ns: &[String], op: &str) -> memwal_core::Result<String> {
        for p in ns {
            memwal_core::name::validate_name("namespace name", p)?;
        }
        let delim = self.client.config.id_delimiter.as_deref().unwrap_or("$");
        let id = if ns.is_empty() {
            delim.to_string()
        } else {
            ns.join(delim)
        };
        Ok(format!(
            "/v1/namespace/{}/{op}",
            crate::client::urlencode(&id)
        ))
    }

    /// POSTs a JSON body to a namespace route.
    async fn namespace_post(
        &self,
        ns: &[String],
        op: &str,
        body: Value,
    ) -> memwal_core::Result<Value> {
        let path = self.namespace_path(ns, op)?;
        let bytes = serde_json::to_vec(&body).map_err(|e| Error::Config(e.to_string()))?;
        let (resp, rid, _) = self
            .client
            .send(Method::POST, &path, false, |r| {
                r.header("content-type", "application/json")
                    .body(bytes.clone())
            })
            .await?;
        let resp = self.client.check(resp, &rid, None).await?;
        Ok(json_of(resp, &rid).await?)
    }
}

#[async_trait]
impl Database for RemoteDatabase {
    async fn table_names(&self) -> memwal_core::Result<Vec<String>> {
        self.table_names_page(None, None).await
    }

    async fn table_names_page(
        &self,
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> memwal_core::Result<Vec<String>> {
        self.all_pages("/v1/table/", start_after, limit, true).await
    }

    async fn create_table(
        &self,
        name: &str,
        data: Data,
        options: CreateOptions,
    ) -> memwal_core::Result<Arc<dyn Table>> {
        self.create_table_in(&[], name, data, options).await
    }

    async fn open_table(&self, name: &str) -> memwal_core::Result<Arc<dyn Table>> {
        self.open_table_in(&[], name).await
    }

    async fn drop_table(&self, name: &str) -> memwal_core::Result<()> {
        self.drop_table_in(&[], name).await
    }

    async fn table_names_in(
        &self,
        namespace: &[String],
        start_after: Option<&str>,
        limit: Option<usize>,
    ) -> memwal_core::Result<Vec<String>> {
        if namespace.is_empty() {
            return self.table_names_page(start_after, limit).await;
        }
        // 0.39 sends no limit here (`tableNames(ns, { limit })` is cut
        // locally); neither do we.
        let path = self.namespace_path(namespace, "table/list")?;
        self.all_pages(&path, start_after, limit, false).await
    }

    async fn list_namespaces(
        &self,
        parent: &[String],
        page_token: Option<&str>,
        limit: Option<usize>,
    ) -> memwal_core::Result<(Vec<String>, Option<String>)> {
        let path = self.namespace_path(parent, "list")?;
        self.page_of(&path, "namespaces", page_token, limit).await
    }

    async fn create_namespace(
        &self,
        path: &[String],
        properties: std::collections::BTreeMap<String, String>,
        exist_ok: bool,
    ) -> memwal_core::Result<()> {
        // 0.39 sends the mode's Debug form, quotes included; so do we.
        let mode = if exist_ok {
            "\"ExistOk\""
        } else {
            "\"Create\""
        };
        self.namespace_post(
            path,
            "create",
            json!({"mode": mode, "properties": properties}),
        )
        .await
        .map(|_| ())
    }

    async fn describe_namespace(
        &self,
        path: &[String],
    ) -> memwal_core::Result<std::collections::BTreeMap<String, String>> {
        let v = self.namespace_post(path, "describe", json!({})).await?;
        match v.get("properties") {
            None | Some(Value::Null) => Ok(Default::default()),
            Some(p) => Ok(answer(p.clone())?),
        }
    }

    async fn drop_namespace(
        &self,
        path: &[String],
        cascade: bool,
        skip_missing: bool,
    ) -> memwal_core::Result<()> {
        // As 0.39: the defaults (Fail, Restrict) left out, the rest quoted.
        let mut body = json!({});
        if skip_missing {
            body["mode"] = json!("\"Skip\"");
        }
        if cascade {
            body["behavior"] = json!("\"Cascade\"");
        }
        self.namespace_post(path, "drop", body).await.map(|_| ())
    }

    /// `POST /v1/table/{cur}/rename/` `{"new_table_name"}`, as the
    /// official clients send it.
    async fn rename_table(&self, cur: &str, new: &str) -> memwal_core::Result<()> {
        let new_id = self.id(&[], new)?;
        let t = self.table(&self.id(&[], cur)?);
        match t
            .post_json("rename/", json!({ "new_table_name": new_id }))
            .await
        {
            Err(Error::TableAlreadyExists { request_id, .. }) => Err(Error::TableAlreadyExists {
                name: new_id,
                request_id,
            }
            .into()),
            other => other.map(|_| ()).map_err(Into::into),
        }
    }

    /// `POST /v1/table/{ns$cur}/rename/` `{"new_table_name", "new_namespace"?}`
    /// as the official clients send it: the new name alone, and the new
    /// namespace only when one is given and not empty.
    async fn rename_table_in(
        &self,
        namespace: &[String],
        cur: &str,
        new_namespace: Option<&[String]>,
        new: &str,
    ) -> memwal_core::Result<()> {
        let new_ns = new_namespace.unwrap_or(namespace);
        let new_id = self.id(new_ns, new)?;
        let mut body = json!({ "new_table_name": new });
        if let Some(ns) = new_namespace.filter(|n| !n.is_empty()) {
            body["new_namespace"] = json!(ns);
        }
        let t = self.table(&self.id(namespace, cur)?);
        match t.post_json("rename/", body).await {
            Err(Error::TableAlreadyExists { request_id, .. }) => Err(Error::TableAlreadyExists {
                name: new_id,
                request_id,
            }
            .into()),
            other => other.map(|_| ()).map_err(Into::into),
        }
    }

    async fn create_table_in(
        &self,
        namespace: &[String],
        name: &str,
        data: Data,
        options: CreateOptions,
    ) -> memwal_core::Result<Arc<dyn Table>> {
        let name = &self.id(namespace, name)?;
        let body = memwal_core::ipc::stream_of(&data)?;
        let mode = protocol::create_mode(options).unwrap_or("create");
        self.table(name)
            .post_arrow("create/", Some(mode), body)
            .await?;
        Ok(Arc::new(self.table(name)))
    }

    async fn open_table_in(
        &self,
        namespace: &[String],
        name: &str,
    ) -> memwal_core::Result<Arc<dyn Table>> {
        let t = self.table(&self.id(namespace, name)?);
        let (resp, rid) = t.send_json("describe/", None).await?;
        json_of(resp, &rid).await?;
        Ok(Arc::new(t))
    }

    async fn drop_table_in(&self, namespace: &[String], name: &str) -> memwal_core::Result<()> {
        let id = self.id(namespace, name)?;
        let path = self.client.table_path(&id, "drop/");
        let (resp, rid, _) = self.client.send(Method::POST, &path, false, |r| r).await?;
        self.client.check(resp, &rid, Some(&id)).await?;
        Ok(())
    }
}

/// A table behind the REST protocol.
#[derive(Debug, Clone)]
pub struct RemoteTable {
    client: Arc<RestClient>,
    name: String,
    /// The checked-out version (read-only), or None for the latest.
    version: Option<u64>,
    /// The newest version this handle wrote: reads ask the server for at
    /// least it (`x-lancedb-min-version`), as the official client does.
    min_version: Arc<AtomicU64>,
}

impl RemoteTable {
    /// Remembers the version a write produced.
    fn wrote(&self, version: u64) -> u64 {
        self.min_version.fetch_max(version, Ordering::Relaxed);
        version
    }

    /// Refuses writes on a checked-out version, as native tables do.
    fn ensure_writable(&self) -> memwal_core::Result<()> {
        match self.version {
            Some(v) => Err(memwal_core::Error::checked_out(&self.name, v)),
            None => Ok(()),
        }
    }

    /// `x-lancedb-min-version` for requests on the latest version (reads,
    /// and writes too, as 0.39 sends it).
    fn read_headers(&self, r: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        let v = self.min_version.load(Ordering::Relaxed);
        if v > 0 && self.version.is_none() {
            r.header("x-lancedb-min-version", v.to_string())
        } else {
            r
        }
    }

    /// POSTs an Arrow IPC stream (with `?mode=` if given); returns the JSON answer.
    async fn post_arrow(&self, op: &str, mode: Option<&str>, body: bytes::Bytes) -> Result<Value> {
        let path = self.client.table_path(&self.name, op);
        let (resp, rid, _) = self
            .client
            .send(Method::POST, &path, false, |r| {
                let r = self.read_headers(r);
                let r = match mode {
                    Some(m) => r.query(&[("mode", m)]),
                    None => r,
                };
                r.header("content-type", ARROW_STREAM).body(body.clone())
            })
            .await?;
        let resp = self.client.check(resp, &rid, Some(&self.name)).await?;
        json_of(resp, &rid).await
    }

    /// POSTs a JSON body (or nothing, for `None`); returns the checked
    /// response and its request id.
    async fn send_json(
        &self,
        op: &str,
        body: Option<&Value>,
    ) -> Result<(reqwest::Response, String)> {
        let path = self.client.table_path(&self.name, op);
        let bytes = body
            .map(serde_json::to_vec)
            .transpose()
            .map_err(|e| Error::Config(e.to_string()))?;
        let (resp, rid, _) = self
            .client
            .send(Method::POST, &path, false, |r| {
                let r = self.read_headers(r);
                match &bytes {
                    Some(b) => r.header("content-type", "application/json").body(b.clone()),
                    None => r,
                }
            })
            .await?;
        let resp = self.client.check(resp, &rid, Some(&self.name)).await?;
        Ok((resp, rid))
    }

    async fn post_json(&self, op: &str, body: Value) -> Result<Value> {
        let (resp, rid) = self.send_json(op, Some(&body)).await?;
        json_of(resp, &rid).await
    }

    /// A schema change: `{"version": N}` back (remembered for reads).
    async fn evolve(&self, op: &str, body: serde_json::Result<Value>) -> memwal_core::Result<u64> {
        self.ensure_writable()?;
        let body = body.map_err(|e| Error::Config(e.to_string()))?;
        let r: VersionResponse = answer(self.post_json(op, body).await?)?;
        Ok(self.wrote(r.version))
    }

    /// `r`, a 404 read as "no version `v`" when the table is there (the
    /// routes naming a version answer 404 for either).
    async fn version_404(&self, r: Result<Value>, v: u64) -> memwal_core::Result<Value> {
        match r {
            Err(Error::TableNotFound { .. }) if self.latest().describe().await.is_ok() => {
                Err(memwal_core::Error::VersionNotFound {
                    table: self.name.clone(),
                    version: v,
                    hint: String::new(),
                })
            }
            other => Ok(other?),
        }
    }

    /// This table at its latest version.
    fn latest(&self) -> RemoteTable {
        RemoteTable {
            version: None,
            ..self.clone()
        }
    }

    /// `describe/` with `{"version": N | null}` (openTable sends no body).
    async fn describe(&self) -> Result<Value> {
        self.post_json("describe/", json!({ "version": self.version }))
            .await
    }
}

#[async_trait]
impl Table for RemoteTable {
    fn name(&self) -> &str {
        &self.name
    }
    async fn schema(&self) -> memwal_core::Result<SchemaRef> {
        let d = self.describe().await?;
        let s = d
            .get("schema")
            .ok_or_else(|| memwal_core::Error::invalid("describe answered without a schema"))?;
        Ok(Arc::new(json_schema::from_json(s)?))
    }
    async fn version(&self) -> memwal_core::Result<u64> {
        Ok(u(&self.describe().await?, "version"))
    }
    async fn list_versions(&self) -> memwal_core::Result<Vec<VersionInfo>> {
        let (resp, rid) = self.send_json("version/list/", None).await?;
        let v = json_of(resp, &rid).await?;
        Ok(v.get("versions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|x| VersionInfo {
                        version: u(x, "version"),
                        timestamp_ms: timestamp_ms(x.get("timestamp")),
                        operation: x
                            .get("operation")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .to_string(),
                        metadata: x
                            .get("metadata")
                            .and_then(Value::as_object)
                            .map(|m| {
                                m.iter()
                                    .map(|(k, v)| {
                                        (k.clone(), v.as_str().unwrap_or_default().to_string())
                                    })
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }
    async fn checkout(&self, version: Option<u64>) -> memwal_core::Result<Arc<dyn Table>> {
        let t = RemoteTable {
            version,
            ..self.clone()
        };
        if version.is_some() {
            // As the official client: describe that version (a 404 if there is none).
            let not_found = || memwal_core::Error::VersionNotFound {
                table: self.name.clone(),
                version: version.unwrap_or_default(),
                hint: String::new(),
            };
            let d = match t.describe().await {
                Err(Error::TableNotFound { .. }) => return Err(not_found()),
                other => other?,
            };
            if let (Some(want), Some(got)) = (version, d.get("version").and_then(Value::as_u64)) {
                if want != got {
                    return Err(not_found());
                }
            }
        }
        Ok(Arc::new(t))
    }
    async fn count_rows(&self, filter: Option<String>) -> memwal_core::Result<u64> {
        let mut body = json!({ "version": self.version });
        if let Some(f) = filter {
            body["predicate"] = json!(f);
        }
        let v = self.post_json("count_rows/", body).await?;
        v.as_u64().ok_or_else(|| {
            memwal_core::Error::invalid(format!("count_rows answered {v}, not a number"))
        })
    }
    async fn add(&self, data: Data, mode: AddMode) -> memwal_core::Result<u64> {
        self.ensure_writable()?;
        let body = memwal_core::ipc::stream_of(&data)?;
        // An append sends no mode (as the official client).
        let r: VersionResponse = answer(
            self.post_arrow("insert/", protocol::insert_mode(mode), body)
                .await?,
        )?;
        Ok(self.wrote(r.version))
    }
    async fn delete(&self, predicate: &str) -> memwal_core::Result<DeleteResult> {
        self.ensure_writable()?;
        let v = self
            .post_json("delete/", json!({ "predicate": predicate }))
            .await?;
        let r: DeleteResponse = answer(v)?;
        Ok(DeleteResult {
            version: self.wrote(r.version),
            num_deleted_rows: r.num_deleted_rows,
        })
    }
    async fn update(
        &self,
        predicate: Option<String>,
        values: Vec<(String, String)>,
    ) -> memwal_core::Result<UpdateResult> {
        self.ensure_writable()?;
        let body = UpdateBody {
            predicate,
            updates: values,
        };
        let v = self.post_json("update/", json!(body)).await?;
        let r: UpdateResponse = answer(v)?;
        Ok(UpdateResult {
            version: self.wrote(r.version),
            rows_updated: r.rows_updated,
        })
    }
    async fn query(&self, request: QueryRequest) -> memwal_core::Result<Vec<RecordBatch>> {
        let body = memwal_core::protocol::query_body(&request, self.version);
        let (resp, rid) = self.send_json("query/", Some(&body)).await?;
        let raw = resp.bytes().await.map_err(|e| Error::Response {
            message: e.to_string(),
            request_id: rid.clone(),
        })?;
        Ok(ipc::decode_bytes(raw)?.batches)
    }
    async fn optimize(
        &self,
        options: memwal_core::CompactOptions,
    ) -> memwal_core::Result<OptimizeStats> {
        self.ensure_writable()?;
        options.validate()?;
        let body = memwal_core::protocol::OptimizeBody::of(&options);
        let r: OptimizeResponse = answer(self.post_json("optimize/", json!(body)).await?)?;
        Ok(OptimizeStats {
            version: self.wrote(r.version),
            fragments_removed: r.fragments_removed,
            fragments_added: r.fragments_added,
            deleted_rows_purged: r.deleted_rows_purged,
        })
    }
    async fn cleanup_old_versions(
        &self,
        older_than: std::time::Duration,
        delete_unverified: bool,
    ) -> memwal_core::Result<memwal_core::PruneStats> {
        self.ensure_writable()?;
        let body = json!({
            "older_than_ms": u64::try_from(older_than.as_millis()).unwrap_or(u64::MAX),
            "delete_unverified": delete_unverified,
        });
        let r: memwal_core::protocol::CleanupResponse =
            answer(self.post_json("cleanup_old_versions/", body).await?)?;
        Ok(memwal_core::PruneStats {
            bytes_removed: r.bytes_removed,
            old_versions_removed: r.old_versions_removed,
        })
    }
    async fn merge_insert(&self, p: MergeInsert, data: Data) -> memwal_core::Result<MergeResult> {
        self.ensure_writable()?;
        let body = memwal_core::ipc::stream_of(&data)?;
        let q = protocol::merge_query(&p);
        let path = self.client.table_path(&self.name, "merge_insert/");
        let timeout = p.timeout.map(|t| t.as_millis().to_string());
        let (resp, rid, tries) = self
            .client
            .send(Method::POST, &path, true, |r| {
                let mut r = self
                    .read_headers(r)
                    .query(&q)
                    .header("content-type", ARROW_STREAM)
                    .body(body.clone());
                if let Some(t) = &timeout {
                    r = r.header(header::REQUEST_TIMEOUT_MS, t);
                }
                if p.mem_wal == Some(true) {
                    r = r
                        .header(header::MEM_WAL_ENABLED, "true")
                        .header(header::USE_WAL, "true");
                }
                r
            })
            .await?;
        let resp = self.client.check(resp, &rid, Some(&self.name)).await?;
        let r: MergeInsertResponse = answer(json_of(resp, &rid).await?)?;
        Ok(MergeResult {
            version: self.wrote(r.version),
            num_inserted_rows: r.num_inserted_rows,
            num_updated_rows: r.num_updated_rows,
            num_deleted_rows: r.num_deleted_rows,
            num_attempts: r.num_attempts.unwrap_or(0).max(tries),
            num_rows: r
                .num_rows
                .unwrap_or(r.num_inserted_rows + r.num_updated_rows),
        })
    }
    async fn create_index(&self, request: IndexRequest) -> memwal_core::Result<()> {
        self.ensure_writable()?;
        let mut request = request;
        if request.index_type.is_none() {
            // The column's default, as the official clients pick it: IVF_PQ
            // for a vector column (IVF_FLAT for binary vectors), BTREE otherwise.
            use memwal_core::vector::plan::{vector_type, Element};
            let schema = self.schema().await?;
            let element = schema
                .field_with_name(&request.column)
                .ok()
                .and_then(|f| vector_type(f.data_type()))
                .map(|(el, _)| el);
            request.index_type = Some(match element {
                Some(Element::U8) => IndexType::IvfFlat,
                Some(_) => IndexType::IvfPq,
                None => IndexType::BTree,
            });
            if element == Some(Element::U8) && request.distance_type.is_none() {
                request.distance_type = Some(memwal_core::DistanceType::Hamming);
            }
        }
        let body = protocol::create_index_body(&request);
        self.post_json("create_index/", body).await?;
        Ok(())
    }
    async fn list_indices(&self) -> memwal_core::Result<Vec<IndexInfo>> {
        let body = json!({ "version": self.version });
        let list: IndexListResponse = answer(self.post_json("index/list/", body).await?)?;
        let mut out = Vec::with_capacity(list.indexes.len());
        for e in list.indexes {
            // One request when the list carries the type and counts (as the
            // official client reads it); otherwise ask each index's stats.
            match e.to_info() {
                Some(i) => out.push(i),
                None => out.push(self.stats_of(&e.index_name, e.columns).await?),
            }
        }
        Ok(out)
    }
    async fn index_stats(&self, name: &str) -> memwal_core::Result<IndexInfo> {
        // One request, as the official client makes (the stats route does
        // not name the columns).
        self.stats_of(name, Vec::new()).await
    }
    async fn restore(&self, version: Option<u64>) -> memwal_core::Result<u64> {
        // As the official client: a checked-out handle restores its version.
        let v = version.or(self.version).ok_or_else(|| {
            memwal_core::Error::invalid(
                "restore needs a version: check out the version to restore first, or pass it",
            )
        })?;
        let r = self.post_json("restore/", json!({ "version": v })).await;
        let a = self.version_404(r, v).await?;
        // Our server answers the new version; LanceDB Cloud may not.
        match a.get("version").and_then(Value::as_u64) {
            Some(n) => Ok(n),
            None => Ok(self.latest().version().await?),
        }
    }
    async fn lsm_stats(&self, rows: bool) -> memwal_core::Result<Option<memwal_core::LsmStats>> {
        let v = self
            .post_json("get_lsm_stats/", json!({ "include_generation_rows": rows }))
            .await?;
        Ok(answer(v.get("lsm_stats").cloned().unwrap_or(Value::Null))?)
    }
    async fn flush_lsm(&self) -> memwal_core::Result<()> {
        self.send_json("flush_lsm/", None).await?;
        Ok(())
    }
    async fn tags(
        &self,
    ) -> memwal_core::Result<std::collections::BTreeMap<String, memwal_core::TagInfo>> {
        // The official wire form: {"tag": {"version": N, "manifestSize": M}}.
        let (resp, rid) = self.send_json("tags/list/", None).await?;
        Ok(answer(json_of(resp, &rid).await?)?)
    }
    async fn set_tag(&self, tag: &str, version: u64, replace: bool) -> memwal_core::Result<()> {
        let op = if replace {
            "tags/update/"
        } else {
            "tags/create/"
        };
        let r = self
            .post_json(op, json!({ "tag": tag, "version": version }))
            .await;
        self.version_404(r, version).await?;
        Ok(())
    }
    async fn delete_tag(&self, tag: &str) -> memwal_core::Result<()> {
        self.post_json("tags/delete/", json!({ "tag": tag }))
            .await?;
        Ok(())
    }
    async fn tag_version(&self, tag: &str) -> memwal_core::Result<u64> {
        let v = self
            .post_json("tags/version/", json!({ "tag": tag }))
            .await?;
        v.get("version").and_then(Value::as_u64).ok_or_else(|| {
            memwal_core::Error::from(Error::Response {
                message: format!("tags/version/ answered without a version: {v}"),
                request_id: String::new(),
            })
        })
    }
    async fn stats(&self) -> memwal_core::Result<memwal_core::TableStats> {
        let (resp, rid) = self.send_json("stats/", None).await?;
        Ok(answer(json_of(resp, &rid).await?)?)
    }
    /// `explain_plan/` `{"query": <the query body>, "verbose"}`: a string.
    async fn explain_plan(
        &self,
        request: QueryRequest,
        verbose: bool,
    ) -> memwal_core::Result<String> {
        let body =
            json!({"query": protocol::query_body(&request, self.version), "verbose": verbose});
        let v = self.post_json("explain_plan/", body).await?;
        Ok(answer(v)?)
    }
    /// `analyze_plan/` with the query body: a string.
    async fn analyze_plan(&self, request: QueryRequest) -> memwal_core::Result<String> {
        let v = self
            .post_json(
                "analyze_plan/",
                protocol::query_body(&request, self.version),
            )
            .await?;
        Ok(answer(v)?)
    }
    async fn add_columns(&self, columns: NewColumns) -> memwal_core::Result<u64> {
        let body = protocol::AddColumnsBody::from_new_columns(&columns)?;
        self.evolve("add_columns/", serde_json::to_value(body))
            .await
    }
    async fn alter_columns(&self, alterations: Vec<ColumnAlteration>) -> memwal_core::Result<u64> {
        let body = protocol::AlterColumnsBody::from_alterations(&alterations)?;
        self.evolve("alter_columns/", serde_json::to_value(body))
            .await
    }
    async fn drop_columns(&self, columns: Vec<String>) -> memwal_core::Result<u64> {
        let body = protocol::DropColumnsBody { columns };
        self.evolve("drop_columns/", serde_json::to_value(body))
            .await
    }
    /// `set_unenforced_primary_key/` `{"columns"}`: memwal's server route
    /// (LanceDB Cloud has none; 0.39's remote table refuses the call).
    async fn set_unenforced_primary_key(&self, columns: Vec<String>) -> memwal_core::Result<()> {
        self.ensure_writable()?;
        self.post_json("set_unenforced_primary_key/", json!({ "columns": columns }))
            .await?;
        Ok(())
    }
    /// `set_lsm_write_spec/` with the spec as LanceDB sends it, or
    /// `unset_lsm_write_spec/`.
    async fn set_lsm_write_spec(
        &self,
        spec: Option<memwal_core::LsmWriteSpec>,
    ) -> memwal_core::Result<()> {
        self.ensure_writable()?;
        match spec {
            Some(s) => {
                let body = serde_json::to_value(&s).map_err(|e| {
                    memwal_core::Error::internal(format!("an LSM write spec as JSON: {e}"))
                })?;
                self.post_json("set_lsm_write_spec/", body).await?
            }
            None => self.post_json("unset_lsm_write_spec/", json!({})).await?,
        };
        Ok(())
    }
    /// `get_lsm_write_spec/`: `{"lsm_write_spec": spec | null}`.
    async fn lsm_write_spec(&self) -> memwal_core::Result<Option<memwal_core::LsmWriteSpec>> {
        let v = self.post_json("get_lsm_write_spec/", json!({})).await?;
        Ok(answer(
            v.get("lsm_write_spec").cloned().unwrap_or(Value::Null),
        )?)
    }
    /// `update_config/` `{"upsert", "delete"}`: memwal's server route
    /// (LanceDB Cloud has none).
    async fn update_config(
        &self,
        upsert: std::collections::BTreeMap<String, String>,
        delete: Vec<String>,
    ) -> memwal_core::Result<()> {
        self.ensure_writable()?;
        self.post_json(
            "update_config/",
            json!({ "upsert": upsert, "delete": delete }),
        )
        .await?;
        Ok(())
    }
    /// `config/`: memwal's server route, answering `{"config": {...}}`.
    async fn config(&self) -> memwal_core::Result<std::collections::BTreeMap<String, String>> {
        let v = self.post_json("config/", json!({})).await?;
        Ok(answer(v.get("config").cloned().unwrap_or(Value::Null))?)
    }
    async fn drop_index(&self, name: &str) -> memwal_core::Result<()> {
        self.ensure_writable()?;
        let op = format!("index/{}/drop/", crate::client::urlencode(name));
        match self.send_json(&op, None).await {
            Err(Error::TableNotFound { .. }) => Err(self.no_index(name)),
            Err(e) => Err(e.into()),
            Ok(_) => Ok(()),
        }
    }
}

impl RemoteTable {
    fn no_index(&self, name: &str) -> memwal_core::Error {
        memwal_core::Error::IndexNotFound {
            table: self.name.clone(),
            name: name.to_string(),
        }
    }

    /// `index/{name}/stats/` (a 404 is "no such index").
    async fn stats_of(&self, name: &str, columns: Vec<String>) -> memwal_core::Result<IndexInfo> {
        let op = format!("index/{}/stats/", crate::client::urlencode(name));
        let v = match self
            .post_json(&op, json!({ "version": self.version }))
            .await
        {
            Err(Error::TableNotFound { .. }) => return Err(self.no_index(name)),
            other => other?,
        };
        let r: IndexStatsResponse = answer(v)?;
        Ok(r.into_info(name, columns))
    }
}
