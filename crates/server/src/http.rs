//! The REST endpoints (the LanceDB Cloud protocol, see shared/PROTOCOL.md):
//! auth, body limits, name validation, request parsing and response shapes.
//! Table work is delegated to [`crate::state::AppState`].

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, MatchedPath, Path, Query, Request, State};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use memwal_core::protocol::{
    self, header, DeleteResponse, IndexEntry, IndexListResponse, IndexStatsResponse,
    MergeInsertResponse, OptimizeResponse, PredicateBody, QueryBody, UpdateBody, UpdateResponse,
    VersionBody, VersionResponse, ARROW_FILE, ARROW_STREAM, PHALANX_VERSION,
};
use memwal_core::table::scan::answer_schema;
use memwal_core::{ipc, json_schema, NativeTable, Table};
use serde::Deserialize;
use serde_json::{json, Value};
use subtle::ConstantTimeEq;

use crate::error::{Error, Result};
use crate::namespace;
use crate::served::ServedTable;
use crate::state::AppState;

/// The router over `state`.
pub fn router(state: Arc<AppState>) -> Router {
    let max = state.config.max_body_bytes;
    Router::new()
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/v1/table/", get(list_tables))
        .route("/v1/namespace/{ns}/table/list", get(list_namespace_tables))
        .route("/v1/namespace/{ns}/list", get(list_namespaces))
        .route("/v1/namespace/{ns}/create", post(create_namespace))
        .route("/v1/namespace/{ns}/describe", post(describe_namespace))
        .route("/v1/namespace/{ns}/drop", post(drop_namespace))
        .route("/v1/table/{name}/create/", post(create_table))
        .route("/v1/table/{name}/drop/", post(drop_table))
        .route("/v1/table/{name}/rename/", post(rename_table))
        .route("/v1/table/{name}/describe/", post(describe))
        .route("/v1/table/{name}/count_rows/", post(count_rows))
        .route("/v1/table/{name}/insert/", post(insert))
        .route(MERGE_INSERT_ROUTE, post(merge_insert))
        .route("/v1/table/{name}/delete/", post(delete))
        .route("/v1/table/{name}/update/", post(update))
        .route("/v1/table/{name}/query/", post(query))
        .route("/v1/table/{name}/explain_plan/", post(explain_plan))
        .route("/v1/table/{name}/analyze_plan/", post(analyze_plan))
        .route("/v1/table/{name}/version/list/", post(list_versions))
        .route("/v1/table/{name}/optimize/", post(optimize))
        .route(
            "/v1/table/{name}/cleanup_old_versions/",
            post(cleanup_old_versions),
        )
        .route("/v1/table/{name}/restore/", post(restore))
        .route("/v1/table/{name}/stats/", post(stats))
        .route("/v1/table/{name}/add_columns/", post(add_columns))
        .route("/v1/table/{name}/alter_columns/", post(alter_columns))
        .route("/v1/table/{name}/drop_columns/", post(drop_columns))
        .route("/v1/table/{name}/get_lsm_stats/", post(get_lsm_stats))
        .route(
            "/v1/table/{name}/set_unenforced_primary_key/",
            post(set_primary_key),
        )
        .route("/v1/table/{name}/set_lsm_write_spec/", post(set_lsm_spec))
        .route("/v1/table/{name}/update_config/", post(update_config))
        .route("/v1/table/{name}/config/", post(table_config))
        .route(
            "/v1/table/{name}/unset_lsm_write_spec/",
            post(unset_lsm_spec),
        )
        .route("/v1/table/{name}/get_lsm_write_spec/", post(get_lsm_spec))
        .route("/v1/table/{name}/tags/list/", post(tags_list))
        .route("/v1/table/{name}/tags/create/", post(tags_create))
        .route("/v1/table/{name}/tags/update/", post(tags_update))
        .route("/v1/table/{name}/tags/delete/", post(tags_delete))
        .route("/v1/table/{name}/tags/version/", post(tags_version))
        .route("/v1/table/{name}/flush_lsm/", post(flush_lsm))
        .route("/v1/table/{name}/flush/", post(flush))
        .route("/v1/table/{name}/create_index/", post(create_index))
        .route("/v1/table/{name}/index/list/", post(list_indices))
        .route("/v1/table/{name}/index/{index}/stats/", post(index_stats))
        .route("/v1/table/{name}/index/{index}/drop/", post(drop_index))
        .fallback(not_implemented)
        .method_not_allowed_fallback(not_implemented)
        .layer(middleware::from_fn_with_state(state.clone(), read_body))
        .layer(middleware::from_fn_with_state(state.clone(), auth))
        .layer(DefaultBodyLimit::max(max))
        .layer(middleware::map_response(advertise))
        .layer(middleware::from_fn_with_state(state.clone(), track))
        .with_state(state)
}

/// The route of upserts (its body read is one of their `/metrics` phases).
const MERGE_INSERT_ROUTE: &str = "/v1/table/{name}/merge_insert/";

/// Counts every request (401s, 413s and unmatched routes included) by its
/// route template, method and status, with its latency.
async fn track(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string())
        .unwrap_or_else(|| crate::metrics::UNMATCHED_ROUTE.to_string());
    let method = req.method().clone();
    let started = Instant::now();
    let r = next.run(req).await;
    state.config.memwal.metrics.request(
        &route,
        method.as_str(),
        r.status().as_u16(),
        started.elapsed(),
    );
    r
}

/// Every answer carries the protocol level clients may use
/// (`phalanx-version`: several query vectors in one request, structured
/// full-text queries).
async fn advertise(mut r: Response) -> Response {
    r.headers_mut().insert(
        header::PHALANX_VERSION,
        axum::http::HeaderValue::from_static(PHALANX_VERSION),
    );
    r
}

async fn auth(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    if let Some(want) = &state.config.api_key {
        // The protocol's header, or a bearer token (what a Prometheus
        // scrape config's `authorization` sends).
        let h = req.headers();
        let got = match h.get("x-api-key") {
            Some(v) => v.as_bytes(),
            None => h
                .get("authorization")
                .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
                .unwrap_or_default(),
        };
        let ok: bool = got.len() == want.len() && bool::from(got.ct_eq(want.as_bytes()));
        if !ok {
            return Error::Unauthorized.into_response();
        }
    }
    next.run(req).await
}

/// Reads the whole body before the handler runs: a declared length over
/// the limit is refused with 413 before anything is read, and a body that
/// does not arrive within `body_timeout` gets 408 (a slow sender cannot
/// hold a connection and its memory for ever).
async fn read_body(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let limit = state.config.max_body_bytes;
    let too_large = |n: String| {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!("request body of {n} bytes is over the server's {limit}-byte limit"),
        )
            .into_response()
    };
    let declared = req
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if let Some(n) = declared.filter(|n| *n > limit as u64) {
        return too_large(n.to_string());
    }
    let (parts, body) = req.into_parts();
    let wait = state.config.body_timeout;
    let started = Instant::now();
    let read = tokio::time::timeout(wait, axum::body::to_bytes(body, limit)).await;
    if parts
        .extensions
        .get::<MatchedPath>()
        .is_some_and(|p| p.as_str() == MERGE_INSERT_ROUTE)
    {
        let m = &state.config.memwal.metrics;
        m.upsert_phase(crate::metrics::Phase::Body, started.elapsed());
    }
    match read {
        Err(_) => (
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the request body did not arrive within {} ms",
                wait.as_millis()
            ),
        )
            .into_response(),
        Ok(Err(e)) if e.to_string().contains("length limit") => too_large("more".into()),
        Ok(Err(e)) => (
            StatusCode::BAD_REQUEST,
            format!("could not read the request body: {e}"),
        )
            .into_response(),
        Ok(Ok(bytes)) => {
            next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
                .await
        }
    }
}

fn arrow_body(headers: &HeaderMap, body: &Bytes) -> Result<memwal_core::Data> {
    let ct = headers
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let base = ct.split(';').next().unwrap_or("").trim();
    if !base.is_empty()
        && base != ARROW_STREAM
        && base != ARROW_FILE
        && base != "application/octet-stream"
    {
        return Err(Error::BadRequest(format!(
            "expected an Arrow IPC body (content-type {ARROW_STREAM}), got content-type {ct:?}"
        )));
    }
    // Zero-copy: the batches point into the request body.
    Ok(ipc::decode_bytes(body.clone())?)
}

fn json_body<T: for<'de> Deserialize<'de> + Default>(body: &Bytes) -> Result<T> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(T::default());
    }
    serde_json::from_slice(body).map_err(|e| Error::BadRequest(format!("malformed JSON body: {e}")))
}

/// Every route we do not serve: 501 naming it (an empty 404 reads as
/// "table not found" in both official clients).
async fn not_implemented(method: axum::http::Method, uri: axum::http::Uri) -> Response {
    (
        StatusCode::NOT_IMPLEMENTED,
        format!(
            "memwal-server does not implement {method} {} (see the README for what it serves)",
            uri.path()
        ),
    )
        .into_response()
}

async fn health(State(state): State<Arc<AppState>>) -> Result<Json<Value>> {
    Ok(Json(json!({
        "status": "ok",
        "tables": state.health(),
        "startup_problems": state.startup_problems,
    })))
}

/// `GET /metrics`: the OpenMetrics text Prometheus scrapes.
async fn metrics(State(state): State<Arc<AppState>>) -> Result<Response> {
    let text = state
        .config
        .memwal
        .metrics
        .render(&state.health())
        .map_err(|e| memwal_core::Error::internal(format!("cannot render the metrics: {e}")))?;
    Ok((
        [(
            axum::http::header::CONTENT_TYPE,
            crate::metrics::CONTENT_TYPE,
        )],
        text,
    )
        .into_response())
}

/// The query of the list routes. Unknown parameters are refused, as the
/// JSON bodies' unknown fields are; `delimiter` (sent by the official
/// clients when a namespace delimiter is not `$`) is honoured only as `$`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ListParams {
    limit: Option<usize>,
    page_token: Option<String>,
    delimiter: Option<String>,
}

impl ListParams {
    /// Refuses a delimiter this server does not read ids by.
    fn check(&self) -> Result<()> {
        match self.delimiter.as_deref() {
            None | Some("$") => Ok(()),
            Some(d) => Err(memwal_core::Error::not_supported(format!(
                "namespace delimiter {d:?}: this server joins namespace ids with '$' only"
            ))
            .into()),
        }
    }
}

async fn list_tables(
    State(state): State<Arc<AppState>>,
    Query(p): Query<ListParams>,
) -> Result<Json<Value>> {
    list_page(&state, &p)
}

/// `GET /v1/namespace/{ns}/table/list` (Python lancedb 0.40's
/// `list_tables()`, 0.39's `tableNames(namespacePath)`): the namespace's
/// tables, paged as `GET /v1/table/`.
async fn list_namespace_tables(
    State(state): State<Arc<AppState>>,
    Path(ns): Path<String>,
    Query(p): Query<ListParams>,
) -> Result<Json<Value>> {
    let db = state.db_of(&namespace::parse_path(&ns)?)?;
    Ok(Json(page("tables", db.table_names_sync()?, &p)?))
}

/// One page of sorted names after `page_token`, at most `limit`.
fn page(key: &str, mut names: Vec<String>, p: &ListParams) -> Result<Value> {
    p.check()?;
    if let Some(t) = &p.page_token {
        names.retain(|n| n > t);
    }
    let limit = p.limit.unwrap_or(usize::MAX);
    let more = names.len() > limit;
    names.truncate(limit);
    let mut out = json!({ key: names });
    if more {
        out["page_token"] = json!(names.last());
    }
    Ok(out)
}

/// One page of the root's table names.
fn list_page(state: &AppState, p: &ListParams) -> Result<Json<Value>> {
    Ok(Json(page("tables", state.db.table_names_sync()?, p)?))
}

/// `GET /v1/namespace/{ns}/list`: the child namespaces, paged.
async fn list_namespaces(
    State(state): State<Arc<AppState>>,
    Path(ns): Path<String>,
    Query(p): Query<ListParams>,
) -> Result<Json<Value>> {
    let path = namespace::parse_path(&ns)?;
    Ok(Json(page(
        "namespaces",
        state.namespaces.children(&path)?,
        &p,
    )?))
}

/// The body of `create` and `drop`: 0.39 sends the modes quoted
/// (`"\"ExistOk\""`), so quotes, case and `_` do not matter.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct NamespaceBody {
    mode: Option<String>,
    behavior: Option<String>,
    properties: Option<std::collections::BTreeMap<String, String>>,
}

/// A two-way choice of a namespace body (`what`: "create mode"): absent or
/// `no` is false, `yes` true; anything else names the two.
fn choice(what: &str, v: &Option<String>, no: &str, yes: &str) -> Result<bool> {
    let norm = |w: &str| w.trim_matches('"').replace('_', "").to_ascii_lowercase();
    match v.as_deref().map(norm) {
        None => Ok(false),
        Some(w) if w == norm(no) => Ok(false),
        Some(w) if w == norm(yes) => Ok(true),
        Some(other) => Err(Error::BadRequest(format!(
            "namespace {what} {other:?}: use {no} or {yes} (others are not supported by memwal yet)"
        ))),
    }
}

async fn create_namespace(
    State(state): State<Arc<AppState>>,
    Path(ns): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: NamespaceBody = json_body(&body)?;
    let path = namespace::parse_path(&ns)?;
    let exist_ok = choice("create mode", &b.mode, "Create", "ExistOk")?;
    if b.behavior.is_some() {
        return Err(Error::BadRequest("`behavior` belongs to drop".into()));
    }
    state.db_of(&[])?;
    state
        .create_namespace(&path, &b.properties.unwrap_or_default(), exist_ok)
        .await?;
    Ok(Json(json!({})))
}

async fn describe_namespace(
    State(state): State<Arc<AppState>>,
    Path(ns): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let _: serde_json::Map<String, Value> = json_body(&body)?;
    let path = namespace::parse_path(&ns)?;
    Ok(Json(
        json!({ "properties": state.namespaces.properties(&path)? }),
    ))
}

async fn drop_namespace(
    State(state): State<Arc<AppState>>,
    Path(ns): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: NamespaceBody = json_body(&body)?;
    let path = namespace::parse_path(&ns)?;
    let skip = choice("drop mode", &b.mode, "Fail", "Skip")?;
    let cascade = choice("drop behavior", &b.behavior, "Restrict", "Cascade")?;
    state.drop_namespace(&path, cascade, skip).await?;
    Ok(Json(json!({})))
}

/// Refuses a query parameter `route` does not take, by name (never ignored).
fn known_params(route: &str, q: &HashMap<String, String>, known: &[&str]) -> Result<()> {
    match q.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(Error::BadRequest(format!(
            "{route} does not know the query parameter {k:?} (it takes: {})",
            known.join(", ")
        ))),
        None => Ok(()),
    }
}

async fn create_table(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<VersionResponse>> {
    known_params("create", &q, &["mode"])?;
    let data = arrow_body(&headers, &body)?;
    let opts = protocol::parse_create_mode(q.get("mode").map(String::as_str))?;
    let version = state.create_table(&name, data, opts).await?;
    Ok(Json(VersionResponse { version }))
}

async fn drop_table(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Value>> {
    state.drop_table(&name).await?;
    Ok(Json(json!({})))
}

async fn rename_table(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: protocol::RenameBody = json_body(&body)?;
    let new = b.new_table_name.ok_or_else(|| {
        Error::BadRequest("rename needs a JSON body {\"new_table_name\": \"...\"}".into())
    })?;
    let new = match b.new_namespace {
        // A namespace given: the new id (the state refuses another one).
        Some(ns) => crate::state::table_id(&ns, &new),
        None => {
            let (ns, _) = namespace::split_id(&name)?;
            crate::state::table_id(&ns, &new)
        }
    };
    state.rename_table(&name, &new).await?;
    Ok(Json(json!({})))
}

/// The base table checked out at `version`: older versions are served
/// from the base alone (MemWAL rows are in no version until flushed).
fn at_version(t: &ServedTable, version: Option<u64>) -> Result<Option<NativeTable>> {
    Ok(version
        .map(|v| t.memwal().base().checkout_sync(Some(v)))
        .transpose()?)
}

async fn describe(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: VersionBody = json_body(&body)?;
    let t = state.table(&name)?;
    let (m, rows) = blocking(move || match at_version(&t, b.version)? {
        Some(old) => Ok((old.manifest()?, old.count_rows_sync(None)?)),
        None => Ok((t.memwal().base().manifest()?, t.memwal().count_rows(None)?)),
    })
    .await?;
    Ok(Json(json!({
        "version": m.version,
        "schema": json_schema::to_json(&m.schema)?,
        "stats": {"num_rows": rows, "num_fragments": m.fragments.len(),
                  "num_deleted_rows": m.fragments.iter().map(|f| f.num_deleted).sum::<u64>()},
    })))
}

async fn count_rows(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<u64>> {
    let b: PredicateBody = json_body(&body)?;
    let t = state.table(&name)?;
    Ok(Json(
        state
            .reads
            .run(move || match at_version(&t, b.version)? {
                Some(old) => Ok(old.count_rows_sync(b.predicate.as_deref())?),
                None => t.memwal().count_rows(b.predicate.as_deref()),
            })
            .await?,
    ))
}

async fn insert(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<VersionResponse>> {
    known_params("insert", &q, &["mode"])?;
    let data = arrow_body(&headers, &body)?;
    let mode = protocol::parse_insert_mode(q.get("mode").map(String::as_str))?;
    let version = state.table(&name)?.add_rows(data, mode).await?;
    Ok(Json(VersionResponse { version }))
}

async fn merge_insert(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    Query(q): Query<Vec<(String, String)>>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Json<MergeInsertResponse>> {
    let header = |h: &str| {
        headers
            .get(h)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let p = protocol::parse_merge(&q, header)?.validate()?;
    let mut data = arrow_body(&headers, &body)?;
    // The WAL logs the body as received (no re-encoding).
    data.ipc = Some(body);
    let r = state.table(&name)?.merge(p, data).await?;
    Ok(Json(MergeInsertResponse::from(&r)))
}

async fn delete(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<DeleteResponse>> {
    let b: PredicateBody = json_body(&body)?;
    let pred = b.predicate.ok_or_else(|| {
        Error::BadRequest("delete needs a JSON body {\"predicate\": \"...\"}".into())
    })?;
    let r = state.table(&name)?.delete_rows(pred).await?;
    Ok(Json(DeleteResponse {
        num_deleted_rows: r.num_deleted_rows,
        version: r.version,
    }))
}

async fn update(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<UpdateResponse>> {
    let b: UpdateBody = json_body(&body)?;
    let r = state
        .table(&name)?
        .update_rows(b.predicate, b.updates)
        .await?;
    Ok(Json(UpdateResponse {
        rows_updated: r.rows_updated,
        version: r.version,
    }))
}

/// The table a query body reads: the served table, or the base at the
/// body's version.
async fn query_target(
    state: &AppState,
    name: &str,
    version: Option<u64>,
) -> Result<Arc<dyn Table>> {
    let t = state.table(name)?;
    Ok(
        match blocking(move || Ok((at_version(&t, version)?, t))).await? {
            (Some(old), _) => Arc::new(old),
            (None, t) => Arc::new(t),
        },
    )
}

/// `{"query": {...}, "verbose": bool}` -> the plan as a JSON string.
async fn explain_plan(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<String>> {
    let b: protocol::ExplainBody = json_body(&body)?;
    let q = b.query.unwrap_or_default();
    let req = q.to_request()?;
    let t = query_target(&state, &name, q.version).await?;
    Ok(Json(t.explain_plan(req, b.verbose == Some(true)).await?))
}

/// The query body of `query/` -> its plan and what running it took.
async fn analyze_plan(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<String>> {
    let q: QueryBody = json_body(&body)?;
    let req = q.to_request()?;
    let t = query_target(&state, &name, q.version).await?;
    Ok(Json(t.analyze_plan(req).await?))
}

async fn query(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Response> {
    let b: QueryBody = json_body(&body)?;
    let req = b.to_request()?;
    let t = state.table(&name)?;
    let (schema, batches) = state
        .reads
        .run(move || {
            let batches = match at_version(&t, b.version)? {
                Some(old) => old.query_sync(&req)?,
                // use_lsm=false: the base table only, as LanceDB reads it.
                None if req.base_only => t.memwal().base().query_sync(&req)?,
                None => t.memwal().query(&req)?,
            };
            let schema = match batches.first() {
                Some(b) => b.schema(),
                None => answer_schema(&*t.memwal().base().schema_sync()?, &req)?,
            };
            Ok((schema, batches))
        })
        .await?;
    let bytes = ipc::encode_file(&schema, &batches)?;
    Ok(([("content-type", ARROW_FILE)], bytes).into_response())
}

async fn list_versions(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Value>> {
    let t = state.table(&name)?;
    let v = t.memwal().base().list_versions_sync()?;
    Ok(Json(json!({"versions": v.iter().map(|v| json!({
        "version": v.version, "timestamp": rfc3339(v.timestamp_ms), "operation": v.operation, "metadata": v.metadata,
    })).collect::<Vec<_>>()})))
}

/// `{"version": v}`: a new version equal to `v` (version required).
async fn restore(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: VersionBody = json_body(&body)?;
    let v = b
        .version
        .ok_or_else(|| Error::BadRequest("restore needs {\"version\": N}".into()))?;
    let version = state.table(&name)?.restore_version(v).await?;
    Ok(Json(json!({ "version": version })))
}

async fn add_columns(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<VersionResponse>> {
    let b: protocol::AddColumnsBody = json_body(&body)?;
    let cols = b.to_new_columns()?;
    let version = Table::add_columns(&state.table(&name)?, cols).await?;
    Ok(Json(VersionResponse { version }))
}

async fn alter_columns(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<VersionResponse>> {
    let b: protocol::AlterColumnsBody = json_body(&body)?;
    let alts = b.to_alterations()?;
    let version = Table::alter_columns(&state.table(&name)?, alts).await?;
    Ok(Json(VersionResponse { version }))
}

async fn drop_columns(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<VersionResponse>> {
    let b: protocol::DropColumnsBody = json_body(&body)?;
    let version = Table::drop_columns(&state.table(&name)?, b.columns).await?;
    Ok(Json(VersionResponse { version }))
}

/// LanceDB's table statistics (snake_case).
async fn stats(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<memwal_core::TableStats>> {
    let _: serde_json::Map<String, Value> = json_body(&body)?;
    Ok(Json(state.table(&name)?.table_stats().await?))
}

/// `{"include_generation_rows": bool}` -> `{"lsm_stats": {...}}` (every
/// served table has a MemWAL; it has no on-disk generations to count).
async fn get_lsm_stats(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let _: LsmStatsBody = json_body(&body)?;
    let t = state.table(&name)?;
    let s = t.memwal().lsm_stats()?;
    Ok(Json(json!({ "lsm_stats": s })))
}

/// Merges every buffered row into the table (a seal and a merge: there is
/// no separate on-disk generation), returning once it is.
async fn flush_lsm(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Value>> {
    state.table(&name)?.memwal().flush_all().await?;
    Ok(Json(json!({})))
}

/// The body of the `tags/*` routes.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct TagBody {
    tag: Option<String>,
    version: Option<u64>,
}

impl TagBody {
    fn tag(&self) -> Result<&str> {
        self.tag
            .as_deref()
            .ok_or_else(|| Error::BadRequest("the body needs \"tag\"".into()))
    }
    fn version(&self) -> Result<u64> {
        self.version
            .ok_or_else(|| Error::BadRequest("the body needs \"version\"".into()))
    }
}

/// `{tag: {"version", "manifestSize"}}` (the official clients' form).
async fn tags_list(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Value>> {
    let tags = Table::tags(&state.table(&name)?).await?;
    let out: serde_json::Map<String, Value> = tags
        .into_iter()
        .map(|(k, t)| {
            (
                k,
                json!({"version": t.version, "manifestSize": t.manifest_size}),
            )
        })
        .collect();
    Ok(Json(Value::Object(out)))
}

async fn tags_create(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: TagBody = json_body(&body)?;
    Table::set_tag(&state.table(&name)?, b.tag()?, b.version()?, false).await?;
    Ok(Json(json!({})))
}

async fn tags_update(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: TagBody = json_body(&body)?;
    Table::set_tag(&state.table(&name)?, b.tag()?, b.version()?, true).await?;
    Ok(Json(json!({})))
}

async fn tags_delete(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: TagBody = json_body(&body)?;
    Table::delete_tag(&state.table(&name)?, b.tag()?).await?;
    Ok(Json(json!({})))
}

async fn tags_version(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: TagBody = json_body(&body)?;
    let v = Table::tag_version(&state.table(&name)?, b.tag()?).await?;
    Ok(Json(json!({ "version": v })))
}

/// The body of `set_unenforced_primary_key/` (memwal's route: LanceDB
/// Cloud has none, and 0.39's remote table refuses the call).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct PrimaryKeyBody {
    columns: Vec<String>,
}

async fn set_primary_key(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: PrimaryKeyBody = json_body(&body)?;
    Table::set_unenforced_primary_key(&state.table(&name)?, b.columns).await?;
    Ok(Json(json!({})))
}

/// The body of `update_config/` (memwal's route, as Lance's
/// `update_config`: entries to set, keys to remove).
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateConfigBody {
    #[serde(default)]
    upsert: std::collections::BTreeMap<String, String>,
    #[serde(default)]
    delete: Vec<String>,
}

async fn update_config(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let b: UpdateConfigBody = json_body(&body)?;
    Table::update_config(&state.table(&name)?, b.upsert, b.delete).await?;
    Ok(Json(json!({})))
}

async fn table_config(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<Json<Value>> {
    let config = Table::config(&state.table(&name)?).await?;
    Ok(Json(json!({ "config": config })))
}

/// `{"sharding": {"mode", ...}, "maintained_indexes", "writer_config_defaults"}`
/// as LanceDB's remote table sends it.
async fn set_lsm_spec(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let spec: memwal_core::LsmWriteSpec = serde_json::from_slice(&body)
        .map_err(|e| Error::BadRequest(format!("malformed LSM write spec: {e}")))?;
    let table = state.table(&name)?;
    Table::set_lsm_write_spec(&table, Some(spec)).await?;
    let recorded = Table::lsm_write_spec(&table).await?;
    let maintained = recorded
        .and_then(|s| s.maintained_indexes)
        .unwrap_or_default();
    Ok(Json(json!({ "maintained_indexes": maintained })))
}

async fn unset_lsm_spec(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let _: serde_json::Map<String, Value> = json_body(&body)?;
    Table::set_lsm_write_spec(&state.table(&name)?, None).await?;
    Ok(Json(json!({})))
}

/// `{"lsm_write_spec": spec | null}`.
async fn get_lsm_spec(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let _: serde_json::Map<String, Value> = json_body(&body)?;
    let spec = Table::lsm_write_spec(&state.table(&name)?).await?;
    Ok(Json(json!({ "lsm_write_spec": spec })))
}

/// The body of `get_lsm_stats/`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct LsmStatsBody {
    #[allow(dead_code)]
    include_generation_rows: Option<bool>,
}

async fn optimize(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<OptimizeResponse>> {
    let b: memwal_core::protocol::OptimizeBody = json_body(&body)?;
    let options = b.options();
    options.validate()?;
    let s = state.table(&name)?.compact(options).await?;
    Ok(Json(OptimizeResponse {
        version: s.version,
        fragments_removed: s.fragments_removed,
        fragments_added: s.fragments_added,
        deleted_rows_purged: s.deleted_rows_purged,
    }))
}

async fn cleanup_old_versions(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<memwal_core::protocol::CleanupResponse>> {
    let b: memwal_core::protocol::CleanupBody = json_body(&body)?;
    let older = std::time::Duration::from_millis(
        b.older_than_ms
            .unwrap_or(memwal_core::protocol::DEFAULT_CLEANUP_OLDER_THAN_MS),
    );
    let s =
        memwal_core::Table::cleanup_old_versions(&state.table(&name)?, older, b.delete_unverified)
            .await?;
    Ok(Json(memwal_core::protocol::CleanupResponse {
        bytes_removed: s.bytes_removed,
        old_versions_removed: s.old_versions_removed,
    }))
}

async fn flush(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
) -> Result<(StatusCode, Json<Value>)> {
    state.table(&name)?.memwal().flush_all().await?;
    Ok((StatusCode::OK, Json(json!({}))))
}

async fn create_index(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<Value>> {
    let v: Value = json_body(&body)?;
    let req = memwal_core::protocol::create_index_request(&v)?;
    state.table(&name)?.build_index(req).await?;
    Ok(Json(json!({})))
}

/// The indexes of the latest version (memtable rows counted unindexed) or
/// of an older one.
async fn indices_at(
    state: &AppState,
    name: &str,
    body: &Bytes,
) -> Result<Vec<memwal_core::IndexInfo>> {
    let b: VersionBody = json_body(body)?;
    let t = state.table(name)?;
    match b.version {
        None => t.indices().await,
        Some(v) => {
            blocking(move || {
                Ok(t.memwal()
                    .base()
                    .checkout_sync(Some(v))?
                    .list_indices_sync()?)
            })
            .await
        }
    }
}

async fn list_indices(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    body: Bytes,
) -> Result<Json<IndexListResponse>> {
    let list = indices_at(&state, &name, &body).await?;
    Ok(Json(IndexListResponse {
        indexes: list.iter().map(IndexEntry::from).collect(),
    }))
}

async fn index_stats(
    State(state): State<Arc<AppState>>,
    Path((name, index)): Path<(String, String)>,
    body: Bytes,
) -> Result<Json<IndexStatsResponse>> {
    // One index's counts, without listing every index's file sizes (`waitForIndex` polls this route).
    let b: VersionBody = json_body(&body)?;
    let t = state.table(&name)?;
    let info = match b.version {
        None => t.index_stats_of(index).await?,
        Some(v) => {
            blocking(move || {
                Ok(t.memwal()
                    .base()
                    .checkout_sync(Some(v))?
                    .index_stats_sync(&index)?)
            })
            .await?
        }
    };
    Ok(Json(IndexStatsResponse::from(&info)))
}

async fn drop_index(
    State(state): State<Arc<AppState>>,
    Path((name, index)): Path<(String, String)>,
) -> Result<Json<Value>> {
    let t = state.table(&name)?;
    Table::drop_index(&t, &index).await?;
    Ok(Json(json!({})))
}

async fn blocking<T: Send + 'static>(f: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::Core(memwal_core::Error::internal(e.to_string())))?
}

/// Version timestamps go out as RFC 3339 (what the official clients parse).
fn rfc3339(ms: u64) -> String {
    chrono::DateTime::from_timestamp_millis(ms as i64)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}
