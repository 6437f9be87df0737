//! Client configuration, with the official client's defaults.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::Deserialize;

use crate::error::{Error, Result};

/// Retries (defaults: 3 each, factor 0.25 s, jitter 0.25 s, statuses 409/429/5xx).
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct RetryConfig {
    pub retries: u32,
    pub connect_retries: u32,
    pub read_retries: u32,
    pub backoff_factor: f64,
    pub backoff_jitter: f64,
    pub statuses: Vec<u16>,
}

impl Default for RetryConfig {
    fn default() -> Self {
        Self {
            retries: 3,
            connect_retries: 3,
            read_retries: 3,
            backoff_factor: 0.25,
            backoff_jitter: 0.25,
            statuses: vec![409, 429, 500, 502, 503, 504],
        }
    }
}

/// Timeouts in seconds (defaults: none overall, connect 120, read 300, pool idle 300).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct TimeoutConfig {
    pub timeout: Option<f64>,
    pub connect_timeout: Option<f64>,
    pub read_timeout: Option<f64>,
    pub pool_idle_timeout: Option<f64>,
}

/// TLS files (PEM). `assertHostname: false` accepts a server certificate
/// whose names do not include the host (the chain is still verified).
#[derive(Debug, Clone, Deserialize, Default)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct TlsConfig {
    pub cert_file: Option<String>,
    pub key_file: Option<String>,
    pub ssl_ca_cert: Option<String>,
    pub assert_hostname: Option<bool>,
}

/// Everything about how requests are made.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase", default, deny_unknown_fields)]
pub struct ClientConfig {
    pub user_agent: String,
    pub retry_config: RetryConfig,
    pub timeout_config: TimeoutConfig,
    pub extra_headers: BTreeMap<String, String>,
    pub id_delimiter: Option<String>,
    pub tls_config: Option<TlsConfig>,
    pub user_id: Option<String>,
    pub mem_wal_enabled: bool,
}

impl Default for ClientConfig {
    fn default() -> Self {
        Self {
            user_agent: format!("memwal/{}", env!("CARGO_PKG_VERSION")),
            retry_config: RetryConfig::default(),
            timeout_config: TimeoutConfig::default(),
            extra_headers: BTreeMap::new(),
            id_delimiter: None,
            tls_config: None,
            user_id: None,
            mem_wal_enabled: false,
        }
    }
}

impl ClientConfig {
    /// Parses the camelCase JSON the TypeScript layer sends.
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::Config(format!("invalid clientConfig: {e}")))
    }

    pub(crate) fn secs(v: Option<f64>, default: Option<u64>) -> Option<Duration> {
        match v {
            Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
            _ => default.map(Duration::from_secs),
        }
    }
}

/// Options of `connect("db://...")`.
#[derive(Debug, Clone, Default)]
pub struct ConnectOptions {
    pub api_key: Option<String>,
    pub region: Option<String>,
    pub host_override: Option<String>,
    pub storage_options: std::collections::HashMap<String, String>,
    pub client_config: ClientConfig,
    /// Called before every try of every request; its headers win over ours.
    pub header_provider: Option<std::sync::Arc<dyn crate::HeaderProvider>>,
}
