//! A TCP proxy in front of PostgreSQL that a test can cut, to stand for a
//! network that stops carrying one replica's traffic.
//!
//! After [`PgProxy::cut`], the server side of every connection is closed
//! (PostgreSQL ends those backends and rolls their transactions back) while
//! the client side stays open and silent, and new connections are accepted
//! and never answered: the client sees a database that no longer answers,
//! with no error to react to.

use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{JoinHandle, JoinSet};
use url::Url;

/// A listener in front of the server of `database_url`: the listener,
/// the server's address, and the URL that goes through the listener (what
/// every proxy of the kit starts from).
pub(crate) async fn in_front_of(database_url: &str) -> (TcpListener, String, Url) {
    let mut url = Url::parse(database_url).expect("a database URL");
    let upstream = format!(
        "{}:{}",
        url.host_str().unwrap_or("127.0.0.1"),
        url.port().unwrap_or(5432)
    );
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind 127.0.0.1:0");
    let addr = listener.local_addr().expect("local address");
    url.set_host(Some("127.0.0.1")).expect("a host");
    url.set_port(Some(addr.port())).expect("a port");
    (listener, upstream, url)
}

/// A running proxy; stops, closing every connection, when dropped.
pub struct PgProxy {
    url: String,
    cut: watch::Sender<bool>,
    task: JoinHandle<()>,
}

impl Drop for PgProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl PgProxy {
    /// Proxies to the server of `database_url`.
    pub async fn start(database_url: &str) -> PgProxy {
        let (listener, upstream, url) = in_front_of(database_url).await;
        let (cut, cut_rx) = watch::channel(false);
        let task = tokio::spawn(serve(listener, upstream, cut_rx));
        PgProxy {
            url: url.to_string(),
            cut,
            task,
        }
    }

    /// The database URL that goes through the proxy.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// Stops carrying traffic, for good.
    pub fn cut(&self) {
        self.cut.send_replace(true);
    }
}

async fn serve(listener: TcpListener, upstream: String, cut: watch::Receiver<bool>) {
    // Dropped with this task: every connection goes with the proxy.
    let mut connections = JoinSet::new();
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        let (upstream, mut cut) = (upstream.clone(), cut.clone());
        connections.spawn(async move {
            let mut client = client;
            if *cut.borrow() {
                // Accepted, never answered.
                return std::future::pending::<()>().await;
            }
            let Ok(mut server) = TcpStream::connect(&upstream).await else {
                return;
            };
            let was_cut = tokio::select! {
                _ = copy_bidirectional(&mut client, &mut server) => false,
                cut = cut.wait_for(|cut| *cut) => cut.is_ok(),
            };
            if was_cut {
                drop(server);
                // The client keeps a connection that says nothing.
                std::future::pending::<()>().await;
            }
        });
    }
}
