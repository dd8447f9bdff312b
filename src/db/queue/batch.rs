//! The statements behind the queue's `_many` methods: one round trip for a
//! whole batch of claims instead of one per id.

use crate::controller::queue::Claim;
use crate::source::RepoId;

/// Up to `$3` ready rows at once, in claim order: `$4` of them from the
/// listing work (trigger 1, `Trigger::Listing`) that has waited longest,
/// the rest from every other trigger first, then listing work. With `$5`,
/// only rows that need a read (no hint).
pub(super) const CLAIM_MANY: &str = concat!(
    "
WITH fair AS (
    SELECT repo_id FROM queue
    WHERE trigger = 1 AND not_before <= now()
      AND (claimed_by IS NULL OR claimed_until <= now())
      AND (hint IS NULL OR NOT $5)
    ORDER BY trigger = 1, not_before
    LIMIT $4
    FOR UPDATE SKIP LOCKED
), ranked AS (
    SELECT repo_id FROM queue
    WHERE not_before <= now() AND (claimed_by IS NULL OR claimed_until <= now())
      AND (hint IS NULL OR NOT $5)
      AND repo_id NOT IN (SELECT repo_id FROM fair)
    ORDER BY trigger = 1, not_before
    LIMIT $3 - (SELECT count(*) FROM fair)
    FOR UPDATE SKIP LOCKED
), picked AS (
    SELECT repo_id FROM fair UNION ALL SELECT repo_id FROM ranked
)
UPDATE queue q SET
    claimed_by = $1,
    claim_token = gen_random_uuid()::text,
    claimed_until = now() + make_interval(secs => $2),
    rerun = false
FROM picked
WHERE q.repo_id = picked.repo_id
AND ",
    no_wait!(),
    "
RETURNING q.repo_id, q.attempts, q.hint, convert_to(q.touched::text, 'UTF8'), q.trigger, q.claim_token"
);

/// The rows of the claims `($1 ids, $2 tokens)` that match `$cond`, locked
/// in id order: statements that touch many rows lock them in one order
/// (the enqueue's too), so two of them never wait for each other in a
/// circle.
macro_rules! claimed_rows {
    ($cond:literal) => {
        concat!(
            "SELECT q.repo_id FROM queue q
             JOIN UNNEST($1::bigint[], $2::text[]) AS c(id, token)
               ON q.repo_id = c.id AND q.claim_token = c.token
             WHERE ",
            $cond,
            " ORDER BY q.repo_id FOR UPDATE OF q"
        )
    };
}

pub(super) const RENEW_MANY: &str = concat!(
    "WITH held AS (",
    claimed_rows!("true"),
    ")
UPDATE queue q SET claimed_until = now() + make_interval(secs => $3)
FROM held WHERE q.repo_id = held.repo_id
RETURNING q.repo_id"
);

/// `done` for many claims, first part: forget the rows not enqueued again.
pub(super) const DONE_MANY_DELETE: &str = concat!(
    "WITH ended AS (",
    claimed_rows!("NOT q.rerun"),
    ")
DELETE FROM queue q USING ended
WHERE q.repo_id = ended.repo_id AND NOT q.rerun AND ",
    no_wait!()
);

/// `done` for many claims, second part: the rows enqueued again are ready.
pub(super) const DONE_MANY_AGAIN: &str = concat!(
    "WITH again AS (",
    claimed_rows!("q.rerun"),
    ")
UPDATE queue q SET
    claimed_by = NULL, claim_token = NULL, claimed_until = NULL, rerun = false,
    attempts = 0, last_error = NULL, not_before = now(), enqueued_at = now()
FROM again WHERE q.repo_id = again.repo_id"
);

/// Ids and tokens of `claims`, as the `_MANY` statements bind them.
pub(super) fn ids_and_tokens(claims: &[Claim<RepoId>]) -> (Vec<i64>, Vec<&str>) {
    claims.iter().map(|c| (c.key.0, c.token.as_str())).unzip()
}
