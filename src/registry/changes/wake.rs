//! Wakes readers of the change log when changes commit: one `LISTEN`
//! connection per process, fanned out to every waiting reader. Readers
//! never poll the database while they wait: the commit's `NOTIFY` (or the
//! listening connection coming back after a loss) is what wakes them.

use std::time::Duration;

use sqlx::postgres::PgListener;
use sqlx::PgPool;
use tokio::sync::watch;
use tokio::task::AbortHandle;

/// The `LISTEN/NOTIFY` channel that announces committed changes; the
/// payload is the last `seq` of the transaction.
pub const CHANNEL: &str = "roster_changes";

/// Readers that may wait at once when `ROSTER_LONG_POLLS` does not say.
pub const DEFAULT_LONG_POLLS: usize = 1000;

/// What the listener knows of the log; see [`ChangeWaker::now`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Heard {
    /// Counts (re)connections of the listener, and payloads it could not
    /// read: notifications may have been missed when this moves.
    epoch: u64,
    /// The highest `seq` announced since the process started.
    head: i64,
}

/// Tells waiting readers that the log may have grown. Cheap to clone; the
/// listening task stops when the last clone is dropped.
#[derive(Clone)]
pub struct ChangeWaker {
    rx: watch::Receiver<Heard>,
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
        let (tx, rx) = watch::channel(Heard::default());
        let lost = |h: &mut Heard| h.epoch = h.epoch.wrapping_add(1);
        let task = tokio::spawn(async move {
            loop {
                match PgListener::connect_with(&pool).await {
                    Ok(mut listener) => {
                        if let Err(error) = listener.listen(CHANNEL).await {
                            tracing::warn!(%error, "change feed: cannot listen");
                        } else {
                            tx.send_modify(lost);
                            while let Ok(Some(note)) = listener.try_recv().await {
                                match note.payload().parse::<i64>() {
                                    Ok(seq) => tx.send_modify(|h| h.head = h.head.max(seq)),
                                    Err(_) => tx.send_modify(lost),
                                }
                            }
                        }
                    }
                    Err(error) => tracing::warn!(%error, "change feed: cannot connect to listen"),
                }
                tx.send_modify(lost);
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
        let _ = rx.wait_for(|h| h.epoch > 0).await;
    }

    /// What was heard so far: take it *before* reading the log, then
    /// [`ChangeWaker::wait_past`] after finding nothing new, so a change
    /// that commits in between is not missed.
    pub fn now(&self) -> Heard {
        *self.rx.borrow()
    }

    /// Returns `true` once a change after `after` was announced since
    /// `since` (taken before the read that found nothing after `after`), or
    /// the listener reconnected; `false` when `at_most` passed first. Other
    /// changes wake nobody, so readers already past them stay asleep.
    pub async fn wait_past(&self, since: Heard, after: i64, at_most: Duration) -> bool {
        let past = since.head.max(after);
        let mut rx = self.rx.clone();
        let woken = rx.wait_for(|h| h.epoch != since.epoch || h.head > past);
        let woken = matches!(tokio::time::timeout(at_most, woken).await, Ok(Ok(_)));
        woken
    }

    /// A handle to wait on any announcement: take it *before* reading the
    /// log, then [`Waiter::wait`] after finding nothing new, so a change
    /// that commits in between is not missed.
    pub fn waiter(&self) -> Waiter {
        let mut rx = self.rx.clone();
        rx.mark_unchanged();
        Waiter { rx }
    }
}

/// One reader's view of the wake-ups; see [`ChangeWaker::waiter`].
pub struct Waiter {
    rx: watch::Receiver<Heard>,
}

impl Waiter {
    /// Returns when changes may have committed since the waiter was taken
    /// (or since the last wait), or after `at_most`, whichever is first.
    pub async fn wait(&mut self, at_most: Duration) {
        let _ = tokio::time::timeout(at_most, self.rx.changed()).await;
        self.rx.mark_unchanged();
    }
}
