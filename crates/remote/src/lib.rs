//! memwal-remote: a REST client for LanceDB Cloud / Enterprise and the
//! memwal server, implementing the core `Database` and `Table` traits.
//!
//! [`config`] holds ClientConfig and its defaults; [`client`] sends
//! requests (headers, retries, error mapping); [`provider`] supplies
//! per-request headers from the caller; [`table`] maps each table
//! operation to its endpoint.

pub mod client;
pub mod config;
pub mod error;
pub mod provider;
pub mod table;

pub use config::{ClientConfig, ConnectOptions, RetryConfig, TimeoutConfig, TlsConfig};
pub use error::{Error, Result};
pub use provider::{HeaderProvider, StaticHeaders};
pub use table::{RemoteDatabase, RemoteTable};
