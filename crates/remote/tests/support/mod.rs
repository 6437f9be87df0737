//! Helpers shared by the remote client's test binaries.

/// Serves `app` on 127.0.0.1 (a free port) in the background; returns its base URL.
pub async fn serve_on_loopback(app: axum::Router) -> String {
    let l = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", l.local_addr().expect("addr"));
    tokio::spawn(async move {
        let _ = axum::serve(l, app).await;
    });
    url
}
