//! The enqueue's upsert as a [`Part`]: the queue's own writes run it alone,
//! a webhook group in one statement with its other writes.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::Arguments;

use crate::controller::queue::{Enqueue, Trigger};
use crate::db::one_statement::Part;
use crate::source::RepoId;

/// Ids to enqueue, each once: the batch's own repeats merged first (a
/// statement may not touch a row twice), sorted so that concurrent
/// enqueues lock rows in one order.
pub struct EnqueueRows {
    ids: Vec<i64>,
    hints: Vec<Option<Vec<u8>>>,
    triggers: Vec<i16>,
    /// What a push touched, by id as `ids` (JSON, see
    /// [`EnqueueRows::touched`]); empty when no push of the batch says.
    touched: Vec<Option<String>>,
    /// Leave out the ids an earlier part of the statement settled.
    except_settled: bool,
}

/// The name by which a part that runs before a group's enqueue returns the
/// `id`s that need no run (a push decided without a read, its recorded
/// commit moved in the same statement): [`EnqueueRows::except_settled`]
/// leaves them out, and enqueues the others as any push.
pub const SETTLED: &str = "settled";

/// [`ENQUEUE`] leaving out the ids the part named [`SETTLED`] returned,
/// unless a worker holds one: it may have read the repository before the
/// push and would write that older state over the push's commit, so it
/// runs again once done (the run reads afresh).
static ENQUEUE_EXCEPT_SETTLED: LazyLock<String> = LazyLock::new(|| {
    ENQUEUE.replacen(
        "IS NOT TRUE\nON CONFLICT",
        "IS NOT TRUE\n    AND (batch.id NOT IN (SELECT id FROM settled)\n         OR EXISTS (SELECT 1 FROM queue c WHERE c.repo_id = batch.id AND c.claimed_by IS NOT NULL))\nON CONFLICT",
        1,
    )
});

impl EnqueueRows {
    /// An id given twice keeps the most telling trigger, and a hint only
    /// when both had one (the later wins), as a second enqueue would.
    pub fn new(items: Vec<Enqueue<RepoId>>) -> Self {
        let mut merged: BTreeMap<i64, (Option<Vec<u8>>, Trigger)> = BTreeMap::new();
        for Enqueue { key, hint, trigger } in items {
            let row = match merged.remove(&key.0) {
                Some((pending, was)) => (merge_hint(pending, hint), was.merge(trigger)),
                None => (hint, trigger),
            };
            merged.insert(key.0, row);
        }
        let mut rows = Self {
            ids: Vec::with_capacity(merged.len()),
            hints: Vec::with_capacity(merged.len()),
            triggers: Vec::with_capacity(merged.len()),
            touched: Vec::new(),
            except_settled: false,
        };
        for (id, (hint, trigger)) in merged {
            rows.ids.push(id);
            rows.hints.push(hint);
            rows.triggers.push(trigger.code());
        }
        rows
    }

    /// Adds what pushes touched (`{"before", "after", "paths"}` as JSON) to
    /// their ids' rows: the run reads only those paths while no trigger
    /// asking for a full read, or a push that does not follow, joins it.
    /// An id not enqueued here is left out.
    pub fn touched(mut self, touched: &BTreeMap<RepoId, String>) -> Self {
        if !touched.is_empty() {
            self.touched = self
                .ids
                .iter()
                .map(|id| touched.get(&RepoId(*id)).cloned())
                .collect();
        }
        self
    }

    /// Leaves out the ids that the part named [`SETTLED`], earlier in the
    /// same statement, returns.
    pub fn except_settled(mut self) -> Self {
        self.except_settled = true;
        self
    }

    /// How many distinct ids: what [`super::PgQueue::enqueued`] counts.
    pub fn added(&self) -> u64 {
        self.ids.len() as u64
    }
}

fn merge_hint(pending: Option<Vec<u8>>, new: Option<Vec<u8>>) -> Option<Vec<u8>> {
    match (pending, new) {
        (Some(_), Some(new)) => Some(new),
        _ => None,
    }
}

impl Part for EnqueueRows {
    /// A claimed row is marked to run again; a waiting row becomes ready now.
    fn sql(&self) -> &'static str {
        if self.except_settled {
            &ENQUEUE_EXCEPT_SETTLED
        } else {
            ENQUEUE
        }
    }

    fn add_to(&self, args: &mut PgArguments) -> Result<(), BoxDynError> {
        args.add(&self.ids)?;
        args.add(&self.hints)?;
        args.add(&self.triggers)?;
        args.add(&self.touched)?;
        Ok(())
    }
}

/// One upsert per id. A claimed row is marked to run again (its trigger
/// and hint belong to the next run: a hint steers it while no trigger
/// without one arrived since the claim); a waiting row keeps the most telling trigger
/// (`Trigger::merge`: the larger code, except that a listing's, 1, yields
/// to any other) and becomes ready now. A row the upsert would leave as it is (ready, or
/// claimed and already marked to run again, with a trigger as telling and
/// no hint) is skipped before the upsert, which would lock it: a burst of
/// pushes to one repository costs an index lookup each, and concurrent
/// groups do not queue behind each other's lock on it. Skipping is safe
/// because the run it waits for starts after this statement's snapshot,
/// so after the push that asked. What pushes touched (`touched`, shorter
/// than the ids or empty: the rest are null) is kept like a hint, except
/// that two pushes join (`touched_then`) when the second follows the
/// first; a row that holds it is never skipped.
const ENQUEUE: &str = "
INSERT INTO queue AS q (repo_id, hint, trigger, touched)
SELECT id, hint, trigger, touched::jsonb
FROM UNNEST($1::bigint[], $2::bytea[], $3::smallint[], $4::text[])
    AS batch(id, hint, trigger, touched)
WHERE (SELECT w.hint IS NULL AND w.touched IS NULL
              AND (batch.trigger = 1 OR (w.trigger <> 1 AND w.trigger >= batch.trigger))
              AND CASE WHEN w.claimed_by IS NULL THEN w.not_before <= now() ELSE w.rerun END
       FROM queue w WHERE w.repo_id = batch.id) IS NOT TRUE
ON CONFLICT (repo_id) DO UPDATE SET
    trigger = CASE
        WHEN q.claimed_by IS NOT NULL AND NOT q.rerun THEN EXCLUDED.trigger
        WHEN q.trigger = 1 THEN EXCLUDED.trigger
        WHEN EXCLUDED.trigger = 1 THEN q.trigger
        ELSE GREATEST(q.trigger, EXCLUDED.trigger)
    END,
    hint = CASE
        WHEN q.claimed_by IS NOT NULL AND NOT q.rerun THEN EXCLUDED.hint
        WHEN q.hint IS NOT NULL AND EXCLUDED.hint IS NOT NULL THEN EXCLUDED.hint
    END,
    touched = CASE
        WHEN q.claimed_by IS NOT NULL AND NOT q.rerun THEN EXCLUDED.touched
        ELSE touched_then(q.touched, EXCLUDED.touched)
    END,
    not_before = CASE
        WHEN q.claimed_by IS NULL THEN LEAST(q.not_before, now())
        ELSE q.not_before
    END,
    rerun = q.claimed_by IS NOT NULL";

#[cfg(test)]
mod tests {

    use super::*;
    use crate::controller::WorkQueue;
    use crate::db::queue::PgQueue;

    /// The row's version (`xmin`) and lock mark (`xmax`): both stay as they
    /// are only when no statement wrote or locked the row.
    async fn version(pool: &sqlx::PgPool, id: i64) -> (String, String) {
        sqlx::query_as("select xmin::text, xmax::text from queue where repo_id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .expect("the row")
    }

    async fn trigger(pool: &sqlx::PgPool, id: i64) -> i16 {
        sqlx::query_scalar("select trigger from queue where repo_id = $1")
            .bind(id)
            .fetch_one(pool)
            .await
            .expect("the row")
    }

    async fn fresh_queue() -> (PgQueue, sqlx::PgPool) {
        let (pool, _url) = crate::db::testing::fresh_database()
            .await
            .expect("a fresh test database");
        (
            crate::testing::queue_with(&pool, crate::testing::LEASE),
            pool,
        )
    }

    async fn enqueue(queue: &PgQueue, pool: &sqlx::PgPool, id: i64, why: Trigger) {
        let mut conn = pool.acquire().await.expect("a connection");
        queue
            .enqueue_in(&mut conn, vec![Enqueue::because(RepoId(id), why)])
            .await
            .expect("the enqueue");
    }

    #[test]
    fn the_enqueue_except_settled_should_leave_out_the_settled_ids() {
        assert_ne!(ENQUEUE_EXCEPT_SETTLED.as_str(), ENQUEUE);
        assert!(ENQUEUE_EXCEPT_SETTLED.contains(&format!("FROM {SETTLED})")));
    }

    #[tokio::test]
    async fn an_id_already_waiting_as_asked_should_be_left_unwritten_and_unlocked() {
        let (queue, pool) = fresh_queue().await;
        enqueue(&queue, &pool, 1, Trigger::Push).await;
        let waiting = version(&pool, 1).await;

        // The same trigger again, or a less telling one: nothing to change.
        enqueue(&queue, &pool, 1, Trigger::Push).await;
        enqueue(&queue, &pool, 1, Trigger::Listing).await;
        assert_eq!(version(&pool, 1).await, waiting);
        assert_eq!(trigger(&pool, 1).await, Trigger::Push.code());

        // A more telling one is written.
        enqueue(&queue, &pool, 2, Trigger::Listing).await;
        enqueue(&queue, &pool, 2, Trigger::Push).await;
        assert_eq!(trigger(&pool, 2).await, Trigger::Push.code());
    }

    #[tokio::test]
    async fn an_id_claimed_and_already_marked_to_run_again_should_be_left_unwritten_and_unlocked() {
        let (queue, pool) = fresh_queue().await;
        enqueue(&queue, &pool, 1, Trigger::Push).await;
        let claim = queue
            .claim("worker")
            .await
            .expect("a claim")
            .expect("the id");
        // Enqueued while claimed: marked to run again (written).
        enqueue(&queue, &pool, 1, Trigger::Push).await;
        let marked = version(&pool, 1).await;
        enqueue(&queue, &pool, 1, Trigger::Push).await;
        assert_eq!(version(&pool, 1).await, marked);

        // The mark still makes the id run again once the claim ends.
        queue.done(&claim).await.expect("done");
        let again = queue.claim("worker").await.expect("a claim");
        assert_eq!(again.map(|c| c.key), Some(RepoId(1)));
    }
}
