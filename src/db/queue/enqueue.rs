//! The enqueue's upsert as a [`Part`]: the queue's own writes run it alone,
//! a webhook group in one statement with its other writes.

use std::collections::BTreeMap;

use sqlx::error::BoxDynError;
use sqlx::postgres::PgArguments;
use sqlx::Arguments;

use crate::controller::queue::{Enqueue, Trigger};
use crate::db::together::Part;
use crate::source::RepoId;

/// Ids to enqueue, each once: the batch's own repeats merged first (a
/// statement may not touch a row twice), sorted so that concurrent
/// enqueues lock rows in one order.
pub struct EnqueueRows {
    ids: Vec<i64>,
    hints: Vec<Option<Vec<u8>>>,
    triggers: Vec<i16>,
}

impl EnqueueRows {
    /// An id given twice keeps the most telling trigger, and a hint only
    /// when both had one (the later wins), as a second enqueue would.
    pub fn new(items: Vec<Enqueue<RepoId>>) -> Self {
        let mut merged: BTreeMap<i64, (Option<Vec<u8>>, Trigger)> = BTreeMap::new();
        for Enqueue { key, hint, trigger } in items {
            let row = match merged.remove(&key.0) {
                Some((pending, was)) => (merge_hint(pending, hint), was.max(trigger)),
                None => (hint, trigger),
            };
            merged.insert(key.0, row);
        }
        let mut rows = Self {
            ids: Vec::with_capacity(merged.len()),
            hints: Vec::with_capacity(merged.len()),
            triggers: Vec::with_capacity(merged.len()),
        };
        for (id, (hint, trigger)) in merged {
            rows.ids.push(id);
            rows.hints.push(hint);
            rows.triggers.push(trigger.code());
        }
        rows
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
        ENQUEUE
    }

    fn add_to(&self, args: &mut PgArguments) -> Result<(), BoxDynError> {
        args.add(&self.ids)?;
        args.add(&self.hints)?;
        args.add(&self.triggers)?;
        Ok(())
    }
}

/// One upsert per id. A claimed row is marked to run again (its trigger
/// belongs to the next run); a waiting row keeps the most telling trigger
/// and becomes ready now.
const ENQUEUE: &str = "
INSERT INTO queue AS q (repo_id, hint, trigger)
SELECT id, hint, trigger FROM UNNEST($1::bigint[], $2::bytea[], $3::smallint[])
    AS batch(id, hint, trigger)
ON CONFLICT (repo_id) DO UPDATE SET
    trigger = CASE
        WHEN q.claimed_by IS NOT NULL AND NOT q.rerun THEN EXCLUDED.trigger
        ELSE GREATEST(q.trigger, EXCLUDED.trigger)
    END,
    hint = CASE
        WHEN q.claimed_by IS NOT NULL THEN NULL
        WHEN q.hint IS NOT NULL AND EXCLUDED.hint IS NOT NULL THEN EXCLUDED.hint
    END,
    not_before = CASE
        WHEN q.claimed_by IS NULL THEN LEAST(q.not_before, now())
        ELSE q.not_before
    END,
    rerun = q.claimed_by IS NOT NULL";
