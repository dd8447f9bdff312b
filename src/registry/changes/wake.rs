//! Wakes readers of the change log when changes commit: one `LISTEN`
//! connection per process, fanned out to every waiting reader.

use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// The `LISTEN/NOTIFY` channel that announces committed changes; the
/// payload is the last `seq` of the transaction.
pub const CHANNEL: &str = "roster_changes";

/// How long a reader waits at most before it reads again anyway: the
/// fallback when a notification was missed (a reconnect).
pub const FALLBACK_POLL: Duration = Duration::from_secs(1);

/// Tells waiting readers that the log may have grown. Cheap to clone; the
/// listening task stops when the last clone is dropped.
#[derive(Clone)]
pub struct ChangeWaker {
    rx: watch::Receiver<u64>,
    _task: std::sync::Arc<AbortOnDrop>,
}

struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl ChangeWaker {
    /// Starts listening on `pool`'s database. A lost connection is
    /// reconnected after a second; readers are woken then too, since
    /// notifications may have been missed meanwhile.
    pub fn start(pool: PgPool) -> Self {
        let (tx, rx) = watch::channel(0u64);
        let task = tokio::spawn(async move {
            loop {
                match PgListener::connect_with(&pool).await {
                    Ok(mut listener) => {
                        if let Err(error) = listener.listen(CHANNEL).await {
                            tracing::warn!(%error, "change feed: cannot listen");
                        } else {
                            tx.send_modify(|n| *n = n.wrapping_add(1));
                            while let Ok(Some(_)) = listener.try_recv().await {
                                tx.send_modify(|n| *n = n.wrapping_add(1));
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "change feed: cannot connect to listen"),
                }
                tx.send_modify(|n| *n = n.wrapping_add(1));
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        });
        Self {
            rx,
            _task: std::sync::Arc::new(AbortOnDrop(task.abort_handle())),
        }
    }

    /// Returns once the listening connection was set up the first time
    /// (for tests and benchmarks that measure wake-ups).
    pub async fn listening(&self) {
        let mut rx = self.rx.clone();
        let _ = rx.wait_for(|n| *n > 0).await;
    }

    /// A handle to wait on: take it *before* reading the log, then
    /// [`Waiter::wait`] after finding nothing new, so a change that commits
    /// in between is not missed.
    pub fn waiter(&self) -> Waiter {
        let mut rx = self.rx.clone();
        rx.mark_unchanged();
        Waiter { rx }
    }
}

/// One reader's view of the wake-ups; see [`ChangeWaker::waiter`].
pub struct Waiter {
    rx: watch::Receiver<u64>,
}

impl Waiter {
    /// Returns when changes may have committed since the waiter was taken
    /// (or since the last wait), or after `at_most`, whichever is first.
    pub async fn wait(&mut self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.rx.changed()).await;
        self.rx.mark_unchanged();
    }
}
