//! The delivery log's writer. A delivery's 202 promises its enqueue
//! (docs/contract.md#webhooks), which commits before the answer; its row in
//! the log is for the dashboard, `GET /api/v1/deliveries` and the recovery
//! of missed deliveries, and is written just after the answer, in batches
//! of what arrived meanwhile. A row costs then about a third of what it
//! cost inside each group's statement (docs/performance.md, "The delivery
//! log off the answer's path"), and a crash loses at most the rows not yet
//! written: their deliveries are enqueued, and the recovery of missed
//! deliveries asks again only for those GitHub's own log shows failed.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use sqlx::PgPool;
use tokio::sync::mpsc;

use super::deliveries::{self, NewDelivery};
use super::event::Accepted;
use crate::shutdown::Shutdown;

/// The most rows one insert writes.
pub const MAX_BATCH: usize = 1_000;

/// Rows waiting to be written at most, so that memory stays bounded. The
/// writer keeps up with tens of thousands of rows a second; the log fills
/// only while its writes fail, and then rows are left out rather than
/// holding up the intake, whose enqueues are what matters.
pub const CAPACITY: usize = 8 * MAX_BATCH;

/// How long the writer lets rows gather before it writes fewer than
/// [`MAX_BATCH`]: a statement's own cost is paid once per batch, so a row
/// written among hundreds costs a third of one written among a dozen
/// (docs/performance.md, "Batches the log lets gather"). The rows are
/// already answered: only the log waits.
pub const GATHER: Duration = Duration::from_millis(50);

/// How often a batch is tried before it is given up (and logged).
const ATTEMPTS: u32 = 5;

/// One delivery's row, owned, on its way to the log.
#[derive(Debug)]
pub struct Logged {
    id: String,
    event: String,
    action: Option<String>,
    repo: Option<String>,
    outcome: &'static str,
}

impl Logged {
    /// The row of `accepted`, answered with `outcome`.
    pub fn of(accepted: Accepted, outcome: &'static str) -> Self {
        Self {
            id: accepted.delivery_id,
            event: accepted.event,
            action: accepted.parsed.action,
            repo: accepted.parsed.repo,
            outcome,
        }
    }

    fn as_new(&self) -> NewDelivery<'_> {
        NewDelivery {
            id: &self.id,
            event: &self.event,
            action: self.action.as_deref(),
            repo: self.repo.as_deref(),
            outcome: self.outcome,
        }
    }
}

/// Where the webhook's writers hand their rows; cloned by each.
#[derive(Debug, Clone)]
pub struct DeliveryLog {
    rows: mpsc::Sender<Logged>,
    /// Whether rows are being left out (said once, until one fits again).
    full: Arc<AtomicBool>,
}

impl DeliveryLog {
    /// The log and its writer on `pool` (its own: the writer closes it at
    /// the end), which runs until every [`DeliveryLog`] is dropped and
    /// what they sent is written. Once `shutdown` is asked, a failed write
    /// is not tried again, so a database that is gone does not hold up the
    /// stop.
    pub fn new(
        pool: PgPool,
        shutdown: Shutdown,
    ) -> (Self, impl std::future::Future<Output = ()> + Send + 'static) {
        let (rows, receiver) = mpsc::channel(CAPACITY);
        let full = Arc::new(AtomicBool::new(false));
        (Self { rows, full }, run(pool, receiver, shutdown))
    }

    /// Queues `rows` for the writer, never waiting: a row that finds the
    /// log full ([`CAPACITY`]) is left out, and said so.
    pub fn record(&self, rows: impl IntoIterator<Item = Logged>) {
        let mut left_out = 0usize;
        for row in rows {
            match self.rows.try_send(row) {
                Ok(()) => {
                    if self.full.swap(false, Ordering::Relaxed) {
                        tracing::info!("the delivery log takes rows again");
                    }
                }
                Err(_) => left_out += 1,
            }
        }
        if left_out > 0 && !self.full.swap(true, Ordering::Relaxed) {
            tracing::error!(
                left_out,
                "the delivery log is full (its writes fail or stopped); \
                deliveries are enqueued but left out of the log until it has room"
            );
        }
    }
}

async fn run(pool: PgPool, mut receiver: mpsc::Receiver<Logged>, shutdown: Shutdown) {
    let mut batch = Vec::with_capacity(MAX_BATCH);
    while receiver.recv_many(&mut batch, MAX_BATCH).await > 0 {
        // Once every sender is gone (the stop), what is left is written at
        // once.
        if batch.len() < MAX_BATCH && !receiver.is_closed() {
            tokio::time::sleep(GATHER).await;
            // The one receiver: rows waiting now are still there below.
            let room = MAX_BATCH - batch.len();
            if !receiver.is_empty() {
                receiver.recv_many(&mut batch, room).await;
            }
        }
        write(&pool, &batch, &shutdown).await;
        batch.clear();
    }
    pool.close().await;
}

/// Writes `batch`, trying again after a failure; a batch that fails
/// [`ATTEMPTS`] times, or once the stop is asked, is left out of the log,
/// and said so.
async fn write(pool: &PgPool, batch: &[Logged], shutdown: &Shutdown) {
    let new: Vec<NewDelivery<'_>> = batch.iter().map(Logged::as_new).collect();
    let mut wait = Duration::from_millis(100);
    for attempt in 1..=ATTEMPTS {
        match deliveries::record_answered(pool, &new).await {
            Ok(()) => return,
            Err(e) if attempt == ATTEMPTS || shutdown.is_stopped() => {
                tracing::error!(deliveries = batch.len(), error = %e,
                    "deliveries not recorded in the log (they were enqueued)");
            }
            Err(e) => {
                tracing::warn!(deliveries = batch.len(), attempt, error = %e,
                    "delivery log write failed; trying again");
                tokio::time::sleep(wait).await;
                wait *= 4;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(id: &str, outcome: &'static str) -> Logged {
        Logged {
            id: id.to_owned(),
            event: "push".to_owned(),
            action: None,
            repo: Some("acme/widgets".to_owned()),
            outcome,
        }
    }

    /// A pool of its own for the writer, which closes it when it ends.
    fn own(pool: &PgPool) -> PgPool {
        sqlx::postgres::PgPoolOptions::new()
            .max_connections(1)
            .connect_lazy_with((*pool.connect_options()).clone())
    }

    /// A fresh database whose log was sent `sent`, once the writer has
    /// ended.
    async fn written(sent: impl IntoIterator<Item = Logged>) -> PgPool {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        write_to(&pool, sent).await;
        pool
    }

    /// Sends `sent` to a writer on `pool`'s database, and waits for it to
    /// end.
    async fn write_to(pool: &PgPool, sent: impl IntoIterator<Item = Logged>) {
        let (log, writing) = DeliveryLog::new(own(pool), crate::shutdown::channel().1);
        let writer = tokio::spawn(writing);
        log.record(sent);
        drop(log);
        writer.await.expect("the writer ended");
    }

    async fn rows(pool: &PgPool) -> Vec<(String, String)> {
        sqlx::query_as("select id, outcome from deliveries order by id")
            .fetch_all(pool)
            .await
            .expect("the rows")
    }

    #[tokio::test]
    async fn every_row_sent_should_be_written_before_the_writer_ends() {
        let many = (0..2 * MAX_BATCH + 1).map(|n| row(&format!("d-{n:05}"), "queued"));
        let pool = written(many).await;
        assert_eq!(rows(&pool).await.len(), 2 * MAX_BATCH + 1);
    }

    #[tokio::test]
    async fn an_id_sent_twice_should_keep_its_last_outcome() {
        let pool = written([row("a", "queued"), row("b", "queued"), row("a", "ignored")]).await;
        assert_eq!(
            rows(&pool).await,
            [
                ("a".into(), "ignored".into()),
                ("b".into(), "queued".into())
            ]
        );
    }

    #[tokio::test]
    async fn a_batch_naming_a_logged_id_should_update_it_and_write_the_rest() {
        let pool = written([row("a", "queued")]).await;
        // A redelivery of `a` in the same batch as a new id: the plain
        // insert fails on `a`, the upsert writes both.
        write_to(&pool, [row("a", "ignored"), row("b", "queued")]).await;
        assert_eq!(
            rows(&pool).await,
            [
                ("a".into(), "ignored".into()),
                ("b".into(), "queued".into())
            ]
        );
    }

    #[tokio::test]
    async fn rows_arriving_while_the_log_gathers_should_be_written_together() {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        let (log, writing) = DeliveryLog::new(own(&pool), crate::shutdown::channel().1);
        let writer = tokio::spawn(writing);
        log.record([row("first", "queued")]);
        // Well within the gathering: the writer has the first row by now,
        // and would have written it alone without the wait.
        tokio::time::sleep(GATHER / 5).await;
        log.record([row("second", "queued")]);
        drop(log);
        writer.await.expect("the writer ended");
        let transactions: Vec<String> =
            sqlx::query_scalar("select distinct xmin::text from deliveries")
                .fetch_all(&pool)
                .await
                .expect("the rows' transactions");
        assert_eq!(rows(&pool).await.len(), 2);
        assert_eq!(transactions.len(), 1, "one statement wrote both rows");
    }

    #[tokio::test]
    async fn a_full_log_should_leave_rows_out_rather_than_hold_up_the_intake() {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        // No writer runs: nothing leaves the log.
        let (log, writing) = DeliveryLog::new(own(&pool), crate::shutdown::channel().1);
        log.record((0..CAPACITY).map(|n| row(&format!("d-{n:05}"), "queued")));
        log.record([row("one-too-many", "queued")]);
        // What fitted is written once the writer runs; the last row is not.
        let writer = tokio::spawn(writing);
        drop(log);
        writer.await.expect("the writer ended");
        let written = rows(&pool).await;
        assert_eq!(written.len(), CAPACITY);
        assert!(written.iter().all(|(id, _)| id != "one-too-many"));
    }

    #[tokio::test]
    async fn once_the_stop_is_asked_a_failed_write_should_not_be_tried_again() {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        sqlx::query("alter table deliveries rename to deliveries_gone")
            .execute(&pool)
            .await
            .expect("the rename");
        let (stop, shutdown) = crate::shutdown::channel();
        stop.stop();
        let (log, writing) = DeliveryLog::new(own(&pool), shutdown);
        let writer = tokio::spawn(writing);
        log.record([row("doomed", "queued")]);
        drop(log);
        // Tried 5 times, the failure would take about 8.5 s.
        tokio::time::timeout(Duration::from_secs(3), writer)
            .await
            .expect("the writer gave up at once")
            .expect("the writer ended");
    }
}
