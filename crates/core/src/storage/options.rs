//! Which storage a database URI names, and its options.
//!
//! `memory://` is [`MemoryStorage`]; `s3://`, `s3a://`, `gs://`, `az://`,
//! `abfs://`, `abfss://` are [`ObjectStorage`] over the `object_store`
//! crate's client for that service, configured from the environment (the
//! usual `AWS_*`, `GOOGLE_*`, `AZURE_*` variables) and then from the options,
//! with LanceDB's keys (`aws_access_key_id`, `aws_secret_access_key`,
//! `aws_region`, `aws_endpoint`, `allow_http`, `timeout`, ... and Lance's
//! `client_max_retries` / `client_retry_timeout`); a plain path or
//! `file://` is [`LocalStorage`]. A key the chosen service does not read is
//! refused by name rather than ignored.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, AmazonS3ConfigKey};
use object_store::azure::{AzureConfigKey, MicrosoftAzureBuilder};
use object_store::gcp::{GoogleCloudStorageBuilder, GoogleConfigKey};
use object_store::path::Path as ObjPath;
use object_store::{ObjectStore, RetryConfig};

use super::{LocalStorage, MemoryStorage, ObjectStorage, Storage};
use crate::error::{Error, Result};

/// Options of a database's storage (`storageOptions` in the TS API).
pub type StorageOptions = HashMap<String, String>;

/// The object stores a URI can name, by scheme.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Service {
    S3,
    Gcs,
    Azure,
}

impl Service {
    fn of(scheme: &str) -> Option<Self> {
        match scheme {
            "s3" | "s3a" => Some(Self::S3),
            "gs" => Some(Self::Gcs),
            "az" | "abfs" | "abfss" | "azure" => Some(Self::Azure),
            _ => None,
        }
    }
}

/// Opens the storage `uri` names (see the module doc).
pub fn open_uri(uri: &str, options: &StorageOptions) -> Result<Arc<dyn Storage>> {
    if uri.starts_with("memory://") || uri == ":memory:" {
        refuse_any(options, "a memory:// database")?;
        return Ok(Arc::new(MemoryStorage::default()));
    }
    if let Some((scheme, _)) = uri.split_once("://") {
        if let Some(service) = Service::of(&scheme.to_ascii_lowercase()) {
            return open_object(uri, service, options);
        }
        if scheme != "file" {
            return Err(Error::invalid(format!(
                "unsupported database URI {uri:?}: use a folder path, file://, memory://, s3://, gs://, az:// or db://"
            )));
        }
    }
    let path = uri.strip_prefix("file://").unwrap_or(uri);
    if path.is_empty() {
        return Err(Error::invalid("database path is empty"));
    }
    refuse_any(options, "a database on local disk")?;
    Ok(Arc::new(LocalStorage::new(path)?))
}

/// Options are for object stores; anywhere else they would be ignored.
fn refuse_any(options: &StorageOptions, what: &str) -> Result<()> {
    let mut keys: Vec<&str> = options.keys().map(String::as_str).collect();
    if keys.is_empty() {
        return Ok(());
    }
    keys.sort_unstable();
    Err(Error::invalid(format!(
        "storage options {keys:?} do not apply to {what}: they configure s3://, gs:// and az:// databases"
    )))
}

fn open_object(uri: &str, service: Service, options: &StorageOptions) -> Result<Arc<dyn Storage>> {
    let url = url::Url::parse(uri)
        .map_err(|e| Error::invalid(format!("database URI {uri:?} is not a valid URL: {e}")))?;
    if url.host_str().is_none_or(str::is_empty) {
        return Err(Error::invalid(format!(
            "database URI {uri:?} names no bucket or container"
        )));
    }
    let root = ObjPath::from_url_path(url.path())
        .map_err(|e| Error::invalid(format!("database URI {uri:?} has an invalid path: {e}")))?;
    let label = format!(
        "{}://{}{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.path().trim_end_matches('/')
    );
    let mut retry = RetryConfig::default();
    let mut rest = Vec::new();
    for (k, v) in options {
        match k.to_ascii_lowercase().as_str() {
            "client_max_retries" => retry.max_retries = parse_num(k, v)? as usize,
            "client_retry_timeout" => retry.retry_timeout = Duration::from_secs(parse_num(k, v)?),
            key => rest.push((key.to_string(), v.clone())),
        }
    }
    let store = build(uri, service, &rest, retry)?;
    Ok(Arc::new(ObjectStorage::new(store, root, label)))
}

fn parse_num(key: &str, v: &str) -> Result<u64> {
    v.trim().parse().map_err(|_| {
        Error::invalid(format!(
            "storage option {key:?} must be a whole number, got {v:?}"
        ))
    })
}

fn unknown(key: &str, service: &str) -> Error {
    Error::invalid(format!(
        "unknown storage option {key:?} for {service} (see the object_store crate's {service} keys, e.g. aws_region, google_service_account, azure_storage_account_name)"
    ))
}

fn build(
    uri: &str,
    service: Service,
    options: &[(String, String)],
    retry: RetryConfig,
) -> Result<Arc<dyn ObjectStore>> {
    let built: object_store::Result<Arc<dyn ObjectStore>> = match service {
        Service::S3 => {
            let mut b = AmazonS3Builder::from_env().with_url(uri).with_retry(retry);
            for (k, v) in options {
                let key = AmazonS3ConfigKey::from_str(k).map_err(|_| unknown(k, "S3"))?;
                b = b.with_config(key, v);
            }
            b.build().map(|s| Arc::new(s) as _)
        }
        Service::Gcs => {
            let mut b = GoogleCloudStorageBuilder::from_env()
                .with_url(uri)
                .with_retry(retry);
            for (k, v) in options {
                let key = GoogleConfigKey::from_str(k).map_err(|_| unknown(k, "GCS"))?;
                b = b.with_config(key, v);
            }
            b.build().map(|s| Arc::new(s) as _)
        }
        Service::Azure => {
            let mut b = MicrosoftAzureBuilder::from_env()
                .with_url(uri)
                .with_retry(retry);
            for (k, v) in options {
                let key = AzureConfigKey::from_str(k).map_err(|_| unknown(k, "Azure"))?;
                b = b.with_config(key, v);
            }
            b.build().map(|s| Arc::new(s) as _)
        }
    };
    built.map_err(|e| Error::invalid(format!("cannot open {uri:?}: {e}")))
}
