//! A peer: an axum app built on a third-party crate, served on
//! `127.0.0.1:0` from its own thread and runtime (`common::RefHandle`) so the
//! test can drive the blocking tminus binary against it.

use std::net::SocketAddr;

use axum::Router;

use crate::common::RefHandle;

/// Serves `app` until the handle drops, with the caller's socket address in
/// `ConnectInfo` (which IP-keyed limiters read).
pub fn start(app: Router) -> RefHandle {
    RefHandle::spawn(|url_tx, stop_rx| async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        url_tx.send(format!("http://{addr}")).unwrap();
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .with_graceful_shutdown(async {
            let _ = stop_rx.await;
        })
        .await
        .expect("serve peer");
    })
}
