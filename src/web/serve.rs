//! Serves the router over TCP with two limits `axum::serve` does not offer:
//! a deadline for reading a request's header, so a client that trickles its
//! header a byte at a time (slow loris) is cut off instead of holding a
//! connection for ever, and a bound on how long shutdown waits for open
//! connections, so such clients cannot hold up a SIGTERM either.

use std::future::Future;
use std::net::IpAddr;
use std::time::Duration;

use axum::http::Request;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tower::ServiceExt;

/// A client must send a whole request header within this long; an idle
/// keep-alive connection is closed after it too. Hyper's own default, which
/// `axum::serve` leaves without the timer it needs to take effect.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(30);

/// How long shutdown waits for open connections to finish their requests
/// before closing them.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The address of the client at the other end of the connection, in every
/// request's extensions. It is the peer of the TCP connection, never a
/// forwarded-for header a client could write itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr(pub IpAddr);

/// Pause after a failed `accept` (e.g. out of file descriptors), so the
/// loop does not spin while the condition lasts.
const ACCEPT_ERROR_PAUSE: Duration = Duration::from_millis(100);

/// Serves `app` on `listener` until `shutdown` resolves, then stops
/// accepting, lets the open connections finish within [`SHUTDOWN_GRACE`],
/// closes those still open and returns once every connection's task has
/// ended.
pub async fn serve(listener: TcpListener, app: Router, shutdown: impl Future<Output = ()>) {
    let mut builder = http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT);
    // Every connection is a task of this set, told to close by `stop`.
    let (stop, stopping) = crate::shutdown::channel();
    let mut open = JoinSet::new();
    tokio::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "cannot accept a connection");
                    tokio::time::sleep(ACCEPT_ERROR_PAUSE).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let client = ClientAddr(peer.ip());
        let service = app
            .clone()
            .map_request(move |mut request: Request<Incoming>| {
                request.extensions_mut().insert(client);
                request
            });
        let connection = builder
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service))
            .with_upgrades();
        let stopping = stopping.wait();
        // Ended connections are reaped as new ones come.
        while open.try_join_next().is_some() {}
        open.spawn(async move {
            tokio::pin!(connection);
            let result = tokio::select! {
                result = connection.as_mut() => result,
                () = stopping => {
                    // Finish the request in flight, then close.
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = result {
                // Timeouts and clients going away: nothing to act on.
                tracing::debug!(%error, "connection ended with an error");
            }
        });
    }
    drop(listener);
    stop.stop();
    let all_closed = async { while open.join_next().await.is_some() {} };
    if tokio::time::timeout(SHUTDOWN_GRACE, all_closed)
        .await
        .is_err()
    {
        tracing::warn!(
            "connections still open {}s after shutdown began; closing them",
            SHUTDOWN_GRACE.as_secs()
        );
        open.shutdown().await;
    }
}
