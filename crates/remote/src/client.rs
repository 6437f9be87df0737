//! The HTTP layer: headers on every request, retries with backoff and
//! jitter (honouring retry-after), one request id across retries, and the
//! mapping of statuses to errors.

use std::time::Duration;

use std::sync::Arc;

use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, RequestBuilder, Response, StatusCode};

use crate::config::{ClientConfig, ConnectOptions};
use crate::error::{Error, Result};
use crate::HeaderProvider;
use memwal_core::ErrorCode;

/// A configured client for one database.
#[derive(Debug, Clone)]
pub struct RestClient {
    http: reqwest::Client,
    base: String,
    api_key: String,
    db: String,
    pub(crate) config: ClientConfig,
    header_provider: Option<Arc<dyn HeaderProvider>>,
}

impl RestClient {
    /// Builds the client for `db://{db}`.
    pub fn new(db: &str, opts: &ConnectOptions) -> Result<Self> {
        let api_key = opts
            .api_key
            .clone()
            .or_else(|| std::env::var("LANCEDB_API_KEY").ok())
            .filter(|k| !k.is_empty())
            .ok_or_else(|| {
                Error::Config(
                    "an API key is required for db:// URIs: pass apiKey or set LANCEDB_API_KEY"
                        .into(),
                )
            })?;
        let region = opts.region.clone().unwrap_or_else(|| "us-east-1".into());
        let base = match &opts.host_override {
            Some(h) => h.trim_end_matches('/').to_string(),
            None => format!("https://{db}.{region}.api.lancedb.com"),
        };
        let mut config = opts.client_config.clone();
        if let Some(v) = opts.storage_options.get("remote_database_mem_wal_enabled") {
            config.mem_wal_enabled = config.mem_wal_enabled || v.eq_ignore_ascii_case("true");
        }
        let t = &config.timeout_config;
        let mut b = reqwest::Client::builder()
            .user_agent(config.user_agent.clone())
            .pool_idle_timeout(ClientConfig::secs(t.pool_idle_timeout, Some(300)));
        if let Some(d) = ClientConfig::secs(t.connect_timeout, Some(120)) {
            b = b.connect_timeout(d);
        }
        if let Some(d) = ClientConfig::secs(t.read_timeout, Some(300)) {
            b = b.read_timeout(d);
        }
        if let Some(d) = ClientConfig::secs(t.timeout, None) {
            b = b.timeout(d);
        }
        if let Some(tls) = &config.tls_config {
            if tls.assert_hostname == Some(false) {
                b = b.danger_accept_invalid_hostnames(true);
            }
            if let Some(ca) = &tls.ssl_ca_cert {
                let pem = std::fs::read(ca)
                    .map_err(|e| Error::Config(format!("cannot read sslCaCert {ca}: {e}")))?;
                let cert = reqwest::Certificate::from_pem(&pem)
                    .map_err(|e| Error::Config(format!("bad sslCaCert {ca}: {e}")))?;
                b = b.add_root_certificate(cert);
            }
            if let (Some(c), Some(k)) = (&tls.cert_file, &tls.key_file) {
                let mut pem = std::fs::read(c)
                    .map_err(|e| Error::Config(format!("cannot read certFile {c}: {e}")))?;
                pem.extend(
                    std::fs::read(k)
                        .map_err(|e| Error::Config(format!("cannot read keyFile {k}: {e}")))?,
                );
                let id = reqwest::Identity::from_pem(&pem)
                    .map_err(|e| Error::Config(format!("bad client certificate: {e}")))?;
                b = b.identity(id);
            }
        }
        let http = b
            .build()
            .map_err(|e| Error::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            http,
            base,
            api_key,
            db: db.to_string(),
            config,
            header_provider: opts.header_provider.clone(),
        })
    }

    /// `/v1/table/{id}/...` path for a table id (namespaced ids joined by the delimiter).
    pub fn table_path(&self, name: &str, op: &str) -> String {
        format!("/v1/table/{}/{op}", urlencode(name))
    }

    fn request(&self, method: Method, path: &str, request_id: &str) -> RequestBuilder {
        let mut r = self
            .http
            .request(method, format!("{}{path}", self.base))
            .header("x-api-key", &self.api_key)
            .header("x-request-id", request_id)
            .header("x-lancedb-database", &self.db);
        if let Some(d) = &self.config.id_delimiter {
            if d != "$" {
                r = r.query(&[("delimiter", d)]);
            }
        }
        if let Some(u) = &self.config.user_id {
            r = r.header("x-lancedb-user-id", u);
        }
        for (k, v) in &self.config.extra_headers {
            r = r.header(k, v);
        }
        if self.config.mem_wal_enabled {
            r = r.header("x-lancedb-mem-wal-enabled", "true");
        }
        r
    }

    /// Sends with retries; `build` adds the body and per-call headers and is
    /// called again for every try. Returns the response and the tries made.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        retry_409: bool,
        build: impl Fn(RequestBuilder) -> RequestBuilder,
    ) -> Result<(Response, String, u32)> {
        let rc = &self.config.retry_config;
        let request_id = uuid::Uuid::new_v4().to_string();
        let (mut req_f, mut conn_f, mut read_f) = (0u32, 0u32, 0u32);
        let mut tries = 0u32;
        loop {
            tries += 1;
            let mut req = build(self.request(method.clone(), path, &request_id));
            if let Some(p) = &self.header_provider {
                req = req.headers(provided_headers(p.as_ref(), &request_id).await?);
            }
            let sent = req.send().await;
            let (last, retry_after) = match sent {
                Ok(resp) => {
                    let s = resp.status();
                    let retryable = rc.statuses.contains(&s.as_u16())
                        && (s != StatusCode::CONFLICT || retry_409);
                    if !retryable {
                        return Ok((resp, request_id, tries));
                    }
                    req_f += 1;
                    let ra = resp
                        .headers()
                        .get("retry-after")
                        .and_then(|v| v.to_str().ok())
                        .and_then(|v| v.trim().parse::<f64>().ok());
                    let body = resp.text().await.unwrap_or_default();
                    if req_f > rc.retries {
                        return Err(self.limit(
                            &request_id,
                            req_f,
                            conn_f,
                            read_f,
                            format!("{}: {body}", s.as_u16()),
                        ));
                    }
                    (format!("{}: {body}", s.as_u16()), ra)
                }
                Err(e) if e.is_timeout() && !e.is_connect() => {
                    return Err(Error::Timeout {
                        message: e.to_string(),
                        request_id,
                    });
                }
                Err(e) if e.is_connect() => {
                    conn_f += 1;
                    if conn_f > rc.connect_retries {
                        return Err(self.limit(&request_id, req_f, conn_f, read_f, e.to_string()));
                    }
                    (e.to_string(), None)
                }
                Err(e) => {
                    read_f += 1;
                    if read_f > rc.read_retries {
                        return Err(self.limit(&request_id, req_f, conn_f, read_f, e.to_string()));
                    }
                    (e.to_string(), None)
                }
            };
            let n = req_f + conn_f + read_f;
            let backoff =
                rc.backoff_factor * 2f64.powi(n as i32) + rand::random::<f64>() * rc.backoff_jitter;
            let wait = retry_after.map(|r| r.max(0.0)).unwrap_or(backoff);
            let _ = last;
            tokio::time::sleep(Duration::from_secs_f64(wait.min(60.0))).await;
        }
    }

    fn limit(&self, request_id: &str, r: u32, c: u32, rd: u32, last: String) -> Error {
        let rc = &self.config.retry_config;
        Error::RetryLimit {
            request_id: request_id.to_string(),
            request_failures: r,
            max_request_failures: rc.retries,
            connect_failures: c,
            max_connect_failures: rc.connect_retries,
            read_failures: rd,
            max_read_failures: rc.read_retries,
            last,
        }
    }

    /// Maps a non-success response to an error (`table` names 404s).
    pub async fn check(
        &self,
        resp: Response,
        request_id: &str,
        table: Option<&str>,
    ) -> Result<Response> {
        let s = resp.status();
        if s.is_success() {
            return Ok(resp);
        }
        let body = resp.text().await.unwrap_or_default();
        let request_id = request_id.to_string();
        // Our server names what is missing; a tag or namespace is not the table.
        let missing = |code| {
            Error::Core(memwal_core::Error::Remote {
                code,
                message: format!("{body} (request_id={request_id})"),
            })
        };
        Err(match s.as_u16() {
            404 if body.contains("has no tag '") => missing(ErrorCode::TagNotFound),
            404 if body.starts_with("namespace ") && body.contains("does not exist") => {
                missing(ErrorCode::NamespaceNotFound)
            }
            404 if table.is_some() => Error::TableNotFound {
                name: table.unwrap_or_default().to_string(),
                request_id,
            },
            400 if body.contains("already exists") && table.is_some() => {
                Error::TableAlreadyExists {
                    name: table.unwrap_or_default().to_string(),
                    request_id,
                }
            }
            400 => Error::InvalidInput {
                message: body,
                request_id,
            },
            401 | 403 => Error::Auth {
                status: s.as_u16(),
                body,
                request_id,
            },
            code => Error::Http {
                status: code,
                body,
                request_id,
            },
        })
    }
}

/// Asks the provider for this try's headers (they replace same-named ones).
async fn provided_headers(p: &dyn HeaderProvider, request_id: &str) -> Result<HeaderMap> {
    let fail = |message: String| Error::HeaderProvider {
        message,
        request_id: request_id.to_string(),
    };
    let mut map = HeaderMap::new();
    for (k, v) in p.headers().await.map_err(fail)? {
        let name = HeaderName::from_bytes(k.as_bytes())
            .map_err(|e| fail(format!("bad header name {k:?}: {e}")))?;
        let value = HeaderValue::from_str(&v)
            .map_err(|e| fail(format!("bad value for header {k}: {e}")))?;
        map.insert(name, value);
    }
    Ok(map)
}

/// Percent-encodes a path segment.
pub fn urlencode(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'$') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
