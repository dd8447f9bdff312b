//! A TCP proxy in front of PostgreSQL that can stop passing bytes while
//! keeping every connection open: a database that hangs in the middle of a
//! query, as behind a dead network path or a frozen machine. No error ever
//! reaches the client; its queries simply never get an answer.
//!
//! It freezes when told to, or by itself when a client sends a given byte
//! string (a value only one query carries), so a test can stop the database
//! exactly in the middle of the work it cares about.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};

/// The proxy; its connections end when it is dropped.
pub struct StallProxy {
    pub addr: SocketAddr,
    frozen: watch::Sender<bool>,
    held: Arc<AtomicUsize>,
    task: JoinHandle<()>,
}

impl StallProxy {
    /// Listens on a free local port and forwards every connection to
    /// `target`; freezes when a client sends `marker`, if one is given.
    pub async fn start(target: SocketAddr, marker: Option<Vec<u8>>) -> StallProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let addr = listener.local_addr().expect("proxy address");
        let (frozen, _) = watch::channel(false);
        let held = Arc::new(AtomicUsize::new(0));
        let (tx, counter) = (frozen.clone(), Arc::clone(&held));
        let marker = marker.map(Arc::new);
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            while let Ok((client, _)) = listener.accept().await {
                let Ok(server) = TcpStream::connect(target).await else {
                    continue;
                };
                let (client_read, client_write) = client.into_split();
                let (server_read, server_write) = server.into_split();
                let up = Upstream {
                    held: counter.clone(),
                    marker: marker.clone(),
                };
                let up = pump(client_read, server_write, tx.clone(), Some(up));
                let down = pump(server_read, client_write, tx.clone(), None);
                connections.spawn(up);
                connections.spawn(down);
            }
        });
        StallProxy {
            addr,
            frozen,
            held,
            task,
        }
    }

    /// From now on no byte passes, in either direction, on any connection.
    pub fn freeze(&self) {
        self.frozen.send_replace(true);
    }

    /// Requests sent by clients since the freeze, waiting for ever.
    pub fn held(&self) -> usize {
        self.held.load(Ordering::SeqCst)
    }
}

impl Drop for StallProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// What the client-to-server direction watches for.
struct Upstream {
    held: Arc<AtomicUsize>,
    marker: Option<Arc<Vec<u8>>>,
}

async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    frozen: watch::Sender<bool>,
    upstream: Option<Upstream>,
) {
    let mut buf = vec![0u8; 16 * 1024];
    // The end of the previous chunk, so a marker split across reads is seen.
    let mut window: Vec<u8> = Vec::new();
    loop {
        let n = match from.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        if let Some(Upstream {
            marker: Some(marker),
            ..
        }) = &upstream
        {
            window.extend_from_slice(&buf[..n]);
            if window.windows(marker.len()).any(|w| w == marker.as_slice()) {
                frozen.send_replace(true);
            }
            let keep = window.len().saturating_sub(marker.len());
            window.drain(..keep);
        }
        if *frozen.borrow() {
            if let Some(upstream) = &upstream {
                upstream.held.fetch_add(1, Ordering::SeqCst);
            }
            std::future::pending::<()>().await;
        }
        if to.write_all(&buf[..n]).await.is_err() {
            break;
        }
    }
    let _ = to.shutdown().await;
}
