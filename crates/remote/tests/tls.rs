//! TLS: a server on 127.0.0.1 with a self-signed certificate is reached
//! when `tlsConfig.sslCaCert` names its CA, and refused without it; a
//! certificate for another host name is refused unless
//! `tlsConfig.assertHostname` is false.

use std::sync::Arc;

use memwal_core::Database;
use memwal_remote::{ClientConfig, ConnectOptions, RemoteDatabase, TlsConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio_rustls::rustls::ServerConfig;

/// A one-route HTTPS server with a self-signed certificate for `localhost`;
/// returns its port and the certificate (PEM).
async fn https_server() -> (u16, String) {
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).expect("cert");
    let cert_pem = ck.cert.pem();
    let cert = CertificateDer::from(ck.cert.der().to_vec());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(ck.signing_key.serialize_der()));
    let cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .expect("server config");
    (serve_tls(cfg).await, cert_pem)
}

fn provider() -> Arc<tokio_rustls::rustls::crypto::CryptoProvider> {
    Arc::new(tokio_rustls::rustls::crypto::ring::default_provider())
}

/// Serves every request with a one-table list over TLS; returns the port.
async fn serve_tls(cfg: ServerConfig) -> u16 {
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("addr").port();
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = vec![0u8; 8192];
                let mut got = Vec::new();
                while !got.windows(4).any(|w| w == b"\r\n\r\n") {
                    match tls.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => got.extend_from_slice(&buf[..n]),
                    }
                }
                let body = r#"{"tables": ["secure"]}"#;
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = tls.write_all(resp.as_bytes()).await;
                let _ = tls.shutdown().await;
            });
        }
    });
    port
}

fn connect(port: u16, ca: Option<String>) -> RemoteDatabase {
    connect_to("localhost", port, ca, None)
}

fn connect_to(
    host: &str,
    port: u16,
    ca: Option<String>,
    assert_hostname: Option<bool>,
) -> RemoteDatabase {
    let mut c = ClientConfig::default();
    c.retry_config.connect_retries = 0;
    c.retry_config.read_retries = 0;
    c.tls_config = ca.map(|path| TlsConfig {
        ssl_ca_cert: Some(path),
        assert_hostname,
        ..Default::default()
    });
    RemoteDatabase::connect(
        "db://secure",
        ConnectOptions {
            api_key: Some("k".into()),
            host_override: Some(format!("https://{host}:{port}")),
            client_config: c,
            ..Default::default()
        },
    )
    .expect("connect")
}

#[tokio::test]
async fn self_signed_ca_is_trusted_only_when_configured() {
    let (port, pem) = https_server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pem).expect("write ca");
    let ok = connect(port, Some(ca.to_string_lossy().into_owned()));
    assert_eq!(ok.table_names().await.expect("trusted"), vec!["secure"]);
    let e = connect(port, None)
        .table_names()
        .await
        .expect_err("untrusted");
    assert!(
        e.to_string().contains("Hit retry limit")
            || e.to_string().to_lowercase().contains("certificate"),
        "{e}"
    );
    let e = RemoteDatabase::connect(
        "db://x",
        ConnectOptions {
            api_key: Some("k".into()),
            client_config: ClientConfig {
                tls_config: Some(TlsConfig {
                    ssl_ca_cert: Some("/nonexistent/ca.pem".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        },
    )
    .expect_err("missing file");
    assert!(e.to_string().contains("sslCaCert"), "{e}");
}

#[tokio::test]
async fn assert_hostname_false_accepts_a_certificate_for_another_name() {
    // The certificate names "localhost"; the client dials 127.0.0.1.
    let (port, pem) = https_server().await;
    let dir = tempfile::tempdir().expect("tmp");
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, pem).expect("write ca");
    let ca = ca.to_string_lossy().into_owned();
    let e = connect_to("127.0.0.1", port, Some(ca.clone()), None)
        .table_names()
        .await
        .expect_err("the name does not match");
    assert!(e.to_string().contains("Hit retry limit"), "{e}");
    let ok = connect_to("127.0.0.1", port, Some(ca.clone()), Some(false));
    assert_eq!(
        ok.table_names().await.expect("hostname not checked"),
        vec!["secure"]
    );
    // The chain is still verified: without the CA it fails all the same.
    let e = connect_to("127.0.0.1", port, None, Some(false))
        .table_names()
        .await
        .expect_err("untrusted");
    assert!(e.to_string().contains("Hit retry limit"), "{e}");
}

#[tokio::test]
async fn client_certificate_is_presented_when_configured() {
    use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair};
    use tokio_rustls::rustls::server::WebPkiClientVerifier;
    use tokio_rustls::rustls::RootCertStore;

    // One CA signs the server's certificate and the client's.
    let ca_key = KeyPair::generate().expect("key");
    let mut ca_params = CertificateParams::new(vec![]).expect("params");
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).expect("ca");
    let issuer = Issuer::from_params(&ca_params, &ca_key);
    let srv_key = KeyPair::generate().expect("key");
    let srv = CertificateParams::new(vec!["localhost".to_string()])
        .expect("params")
        .signed_by(&srv_key, &issuer)
        .expect("server cert");
    let cli_key = KeyPair::generate().expect("key");
    let cli = CertificateParams::new(vec!["client".to_string()])
        .expect("params")
        .signed_by(&cli_key, &issuer)
        .expect("client cert");

    let mut roots = RootCertStore::empty();
    roots.add(ca.der().clone()).expect("root");
    let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider())
        .build()
        .expect("verifier");
    let cfg = ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .expect("versions")
        .with_client_cert_verifier(verifier)
        .with_single_cert(
            vec![srv.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(srv_key.serialize_der())),
        )
        .expect("server config");
    let port = serve_tls(cfg).await;

    let dir = tempfile::tempdir().expect("tmp");
    let write = |name: &str, pem: String| {
        let p = dir.path().join(name);
        std::fs::write(&p, pem).expect("write");
        p.to_string_lossy().into_owned()
    };
    let ca_file = write("ca.pem", ca.pem());
    let cert_file = write("client.pem", cli.pem());
    let key_file = write("client.key", cli_key.serialize_pem());
    let db = |with_cert: bool| {
        let mut c = ClientConfig::default();
        c.retry_config.connect_retries = 0;
        c.retry_config.read_retries = 0;
        c.tls_config = Some(TlsConfig {
            ssl_ca_cert: Some(ca_file.clone()),
            cert_file: with_cert.then(|| cert_file.clone()),
            key_file: with_cert.then(|| key_file.clone()),
            ..Default::default()
        });
        RemoteDatabase::connect(
            "db://secure",
            ConnectOptions {
                api_key: Some("k".into()),
                host_override: Some(format!("https://localhost:{port}")),
                client_config: c,
                ..Default::default()
            },
        )
        .expect("connect")
    };
    assert_eq!(
        db(true)
            .table_names()
            .await
            .expect("client certificate accepted"),
        vec!["secure"]
    );
    db(false)
        .table_names()
        .await
        .expect_err("the server requires a client certificate");
}
