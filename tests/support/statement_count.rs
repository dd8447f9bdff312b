//! A TCP proxy in front of PostgreSQL that counts the statements its
//! clients execute, read off the wire: each `Execute` message of the
//! extended protocol (a prepared statement run) and each simple `Query`
//! (`BEGIN`, `COMMIT`) is one. What a piece of code costs the database is
//! then counted, not read from its source.
//!
//! Connect without TLS (`sslmode=disable`, which [`StatementCount::url`]
//! sets): the proxy reads the client's messages as they pass.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;

/// What passed the proxy: statements, and the commits among them.
#[derive(Default)]
struct Counts {
    statements: AtomicU64,
    commits: AtomicU64,
}

/// A running proxy; stops, closing every connection, when dropped.
pub struct StatementCount {
    url: String,
    count: Arc<Counts>,
    task: JoinHandle<()>,
}

impl Drop for StatementCount {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl StatementCount {
    /// Proxies to the server of `database_url`.
    pub async fn start(database_url: &str) -> StatementCount {
        let (listener, upstream, mut url) = crate::pg_proxy::in_front_of(database_url).await;
        url.query_pairs_mut().append_pair("sslmode", "disable");
        let count = Arc::new(Counts::default());
        let task = tokio::spawn(serve(listener, upstream, count.clone()));
        StatementCount {
            url: url.to_string(),
            count,
            task,
        }
    }

    /// A pool of one connection through the proxy that sends no ping
    /// before each use: only the statements of the code under test pass.
    pub async fn pool(&self) -> sqlx::PgPool {
        sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect(&self.url)
            .await
            .expect("a connection through the proxy")
    }

    /// The database URL that goes through the proxy.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Statements executed through the proxy so far.
    pub fn statements(&self) -> u64 {
        self.count.statements.load(Ordering::SeqCst)
    }

    /// Transactions committed through the proxy so far (`COMMIT`): each
    /// one waits for the disk.
    pub fn commits(&self) -> u64 {
        self.count.commits.load(Ordering::SeqCst)
    }
}

async fn serve(listener: TcpListener, upstream: String, count: Arc<Counts>) {
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let (upstream, count) = (upstream.clone(), count.clone());
        connections.spawn(async move {
            let Ok(server) = TcpStream::connect(&upstream).await else {
                return;
            };
            let (mut client_read, mut client_write) = client.into_split();
            let (mut server_read, mut server_write) = server.into_split();
            let answers = tokio::spawn(async move {
                let _ = tokio::io::copy(&mut server_read, &mut client_write).await;
            });
            let _ = relay(&mut client_read, &mut server_write, &count).await;
            answers.abort();
        });
    }
}

/// Passes the client's messages on, counting `Execute` (`E`) and `Query`
/// (`Q`), and the queries that are a `COMMIT`: first the startup message
/// (no type byte), then typed messages.
async fn relay(
    from: &mut (impl AsyncReadExt + Unpin),
    to: &mut (impl AsyncWriteExt + Unpin),
    count: &Counts,
) -> std::io::Result<()> {
    let mut length = [0u8; 4];
    from.read_exact(&mut length).await?;
    let mut startup = vec![0u8; (u32::from_be_bytes(length) as usize).saturating_sub(4)];
    from.read_exact(&mut startup).await?;
    to.write_all(&length).await?;
    to.write_all(&startup).await?;
    loop {
        let mut head = [0u8; 5];
        from.read_exact(&mut head).await?;
        let length = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; length.saturating_sub(4)];
        from.read_exact(&mut body).await?;
        if matches!(head[0], b'E' | b'Q') {
            count.statements.fetch_add(1, Ordering::SeqCst);
        }
        if head[0] == b'Q' && body.len() >= 6 && body[..6].eq_ignore_ascii_case(b"commit") {
            count.commits.fetch_add(1, Ordering::SeqCst);
        }
        to.write_all(&head).await?;
        to.write_all(&body).await?;
    }
}
