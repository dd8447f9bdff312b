//! Pruning of the delivery log (docs/contract.md#bounds): rows older than
//! `ROSTER_DELIVERY_RETENTION` (default 7 days) go, and so do the oldest
//! past [`MAX_ROWS`], so that deliveries, signed or not, cannot fill the
//! disk.
//!
//! Small batches (a short statement each, rows another replica is deleting
//! skipped), at start and every [`PRUNE_INTERVAL`], on every replica. The
//! `deliveries_newest` index (`at desc, id desc`) finds the oldest rows
//! without a scan of the table.
//!
//! The redelivery of missed deliveries reads rows of the last 3 days (its
//! `WINDOW`): a retention of at least that never removes a row it needs.
//! Only more than [`MAX_ROWS`] deliveries within 3 days can; a missed one
//! whose row went may then be asked for again, which is harmless.

use std::future::Future;
use std::time::Duration;

use sqlx::PgPool;

/// Default of `ROSTER_DELIVERY_RETENTION`.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 24 * 3600);

/// The most rows the delivery log keeps.
pub const MAX_ROWS: i64 = 100_000;

/// Rows one statement deletes at most.
pub const BATCH: i64 = 1_000;

/// How often a replica prunes.
pub const PRUNE_INTERVAL: Duration = Duration::from_secs(60);

/// What the log keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Retention {
    /// Rows older than this go.
    pub max_age: Duration,
    /// Past this many rows, the oldest go.
    pub max_rows: i64,
    /// Rows one statement deletes at most.
    pub batch: i64,
}

impl Retention {
    /// The production bounds with `max_age` (`ROSTER_DELIVERY_RETENTION`).
    pub fn new(max_age: Duration) -> Self {
        Retention {
            max_age,
            max_rows: MAX_ROWS,
            batch: BATCH,
        }
    }
}

/// What one pass deleted.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Pruned {
    pub too_old: u64,
    pub over_the_cap: u64,
}

/// Deletes, in batches, the rows older than `retention.max_age`, then the
/// oldest rows past `retention.max_rows`.
pub async fn prune(pool: &PgPool, retention: &Retention) -> Result<Pruned, sqlx::Error> {
    let batch = retention.batch.max(1);
    let mut pruned = Pruned::default();
    loop {
        let deleted = sqlx::query(
            "delete from deliveries where id in (
                 select id from deliveries
                 where at < now() - make_interval(secs => $1)
                 order by at, id
                 limit $2
                 for update skip locked)",
        )
        .bind(retention.max_age.as_secs_f64())
        .bind(batch)
        .execute(pool)
        .await?
        .rows_affected();
        pruned.too_old += deleted;
        if deleted < batch as u64 {
            break;
        }
    }
    loop {
        // The newest row past the cap; it and every older one go.
        let Some((at, id)) = sqlx::query_as::<_, (chrono::DateTime<chrono::Utc>, String)>(
            "select at, id from deliveries order by at desc, id desc offset $1 limit 1",
        )
        .bind(retention.max_rows.max(0))
        .fetch_optional(pool)
        .await?
        else {
            break;
        };
        let deleted = sqlx::query(
            "delete from deliveries where id in (
                 select id from deliveries
                 where (at, id) <= ($1, $2)
                 order by at, id
                 limit $3
                 for update skip locked)",
        )
        .bind(at)
        .bind(&id)
        .bind(batch)
        .execute(pool)
        .await?
        .rows_affected();
        pruned.over_the_cap += deleted;
        if deleted == 0 {
            // Another replica holds those rows and is deleting them.
            break;
        }
    }
    Ok(pruned)
}

/// Prunes at start and then every `every` until `stop` resolves. Failures
/// are logged and left to the next pass; nothing here ends the process.
pub async fn run_pruning_loop(
    pool: PgPool,
    retention: Retention,
    every: Duration,
    stop: impl Future<Output = ()>,
) {
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return,
            result = prune(&pool, &retention) => match result {
                Ok(pruned) if pruned == Pruned::default() => {}
                Ok(pruned) => tracing::info!(too_old = pruned.too_old,
                    over_the_cap = pruned.over_the_cap, "pruned the delivery log"),
                Err(error) => tracing::warn!(%error, "could not prune the delivery log"),
            },
        }
        tokio::select! {
            () = &mut stop => return,
            () = tokio::time::sleep(every) => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 24 * 3600;

    async fn pool() -> PgPool {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        pool
    }

    /// Inserts rows `prefix-0..n`, the i-th `age_secs(i)` seconds old.
    async fn insert(pool: &PgPool, prefix: &str, n: i64, age_secs: impl Fn(i64) -> i64) {
        let ids: Vec<String> = (0..n).map(|i| format!("{prefix}-{i:06}")).collect();
        let ages: Vec<f64> = (0..n).map(|i| age_secs(i) as f64).collect();
        sqlx::query(
            "insert into deliveries (id, event, outcome, at)
             select id, 'push', 'queued', now() - make_interval(secs => age)
             from unnest($1::text[], $2::float8[]) as t(id, age)",
        )
        .bind(&ids)
        .bind(&ages)
        .execute(pool)
        .await
        .expect("insert deliveries");
    }

    async fn ids(pool: &PgPool) -> Vec<String> {
        sqlx::query_scalar("select id from deliveries order by id")
            .fetch_all(pool)
            .await
            .expect("the deliveries")
    }

    fn small(max_age_days: i64, max_rows: i64) -> Retention {
        Retention {
            max_age: Duration::from_secs((max_age_days * DAY) as u64),
            max_rows,
            batch: 7,
        }
    }

    #[tokio::test]
    async fn rows_older_than_the_retention_should_go_in_batches() {
        let pool = pool().await;
        // 25 rows 8 days old (more than three batches of 7), 5 rows 6 days old.
        insert(&pool, "old", 25, |_| 8 * DAY).await;
        insert(&pool, "kept", 5, |_| 6 * DAY).await;
        let pruned = prune(&pool, &small(7, MAX_ROWS)).await.expect("prune");
        assert_eq!(
            pruned,
            Pruned {
                too_old: 25,
                over_the_cap: 0
            }
        );
        let left = ids(&pool).await;
        assert_eq!(left.len(), 5);
        assert!(left.iter().all(|id| id.starts_with("kept-")), "{left:?}");
    }

    #[tokio::test]
    async fn past_the_row_cap_the_oldest_rows_should_go() {
        let pool = pool().await;
        // 40 rows, row i is 40 - i minutes old: the oldest are the first.
        insert(&pool, "row", 40, |i| (40 - i) * 60).await;
        let pruned = prune(&pool, &small(7, 15)).await.expect("prune");
        assert_eq!(
            pruned,
            Pruned {
                too_old: 0,
                over_the_cap: 25
            }
        );
        let expected: Vec<String> = (25..40).map(|i| format!("row-{i:06}")).collect();
        assert_eq!(ids(&pool).await, expected);
        // A second pass has nothing to do.
        assert_eq!(
            prune(&pool, &small(7, 15)).await.ok(),
            Some(Pruned::default())
        );
    }

    #[tokio::test]
    async fn the_default_retention_should_keep_what_the_redelivery_reads() {
        let pool = pool().await;
        let window = crate::intake::redelivery::WINDOW.as_secs() as i64;
        // Rows just inside the redelivery's window, and one a day older.
        insert(&pool, "window", 3, |i| window - 60 * (i + 1)).await;
        insert(&pool, "older", 1, |_| window + DAY).await;
        let pruned = prune(&pool, &Retention::new(DEFAULT_RETENTION)).await;
        assert_eq!(pruned.ok(), Some(Pruned::default()));
        assert_eq!(ids(&pool).await.len(), 4);
    }

    #[tokio::test]
    async fn the_oldest_rows_should_be_found_through_the_index() {
        let pool = pool().await;
        insert(&pool, "row", 2_000, |i| i * 60).await;
        sqlx::query("analyze deliveries")
            .execute(&pool)
            .await
            .expect("analyze");
        let plan: Vec<String> = sqlx::query_scalar(
            "explain select id from deliveries
             where at < now() - make_interval(secs => 86400)
             order by at, id limit 1000",
        )
        .fetch_all(&pool)
        .await
        .expect("explain");
        let plan = plan.join("\n");
        assert!(plan.contains("deliveries_newest"), "{plan}");
        assert!(!plan.contains("Seq Scan"), "{plan}");
    }

    #[tokio::test]
    async fn the_loop_should_stop_when_told() {
        let pool = pool().await;
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let pruning = tokio::spawn(run_pruning_loop(
            pool,
            Retention::new(DEFAULT_RETENTION),
            Duration::from_secs(3600),
            async move {
                let _ = stopped.await;
            },
        ));
        let _ = stop.send(());
        let ended = tokio::time::timeout(Duration::from_secs(5), pruning).await;
        assert!(matches!(ended, Ok(Ok(()))));
    }
}
