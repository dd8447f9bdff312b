//! The short history of reconciles each repository keeps.

use std::sync::LazyLock;

use sqlx::PgConnection;

use super::clip::{clip, MAX_EVENT_BYTES};
use crate::source::RepoId;

/// How many events each repository keeps.
pub(crate) const KEPT: i64 = 100;

/// Records one reconcile: when its kind and message (cut to
/// [`MAX_EVENT_BYTES`]) equal those of the repository's newest event, that
/// event takes the new time and counts one more; otherwise a new event is
/// added and all but the newest [`KEPT`] are forgotten.
///
/// The caller holds the repository's row lock, so two reconciles of one
/// repository never record at once.
pub(crate) async fn record(
    conn: &mut PgConnection,
    id: RepoId,
    kind: &str,
    message: &str,
) -> Result<(), sqlx::Error> {
    static ALONE: LazyLock<String> = LazyLock::new(|| format!("with {RECORD}"));
    sqlx::query(&ALONE)
        .bind(id)
        .bind(kind)
        .bind(clip(message, MAX_EVENT_BYTES).as_ref())
        .bind(KEPT - 1)
        .execute(conn)
        .await?;
    Ok(())
}

/// The parts of [`record`]'s statement after its `with`, on `$1` the
/// repository, `$2` the kind, `$3` the message (cut), `$4` `KEPT - 1`:
/// a statement that writes the repository's row too records its event
/// in the same round trip ([`super::repos::write_state`]).
///
/// Its parts share one snapshot, so the delete does not see the row the
/// insert adds, and keeps the `KEPT - 1` newest it sees.
pub(super) const RECORD: &str = "newest as (
             select id, kind = $2 and message = $3 as same
             from events where repo_id = $1 order by id desc limit 1
         ),
         counted as (
             update events set at = now(), count = count + 1
             where id = (select id from newest where same)
         ),
         added as (
             insert into events (repo_id, kind, message)
             select $1, $2, $3 where not exists (select 1 from newest where same)
         )
         delete from events
         where repo_id = $1 and not exists (select 1 from newest where same)
           and id <= (select id from events where repo_id = $1 order by id desc offset $4 limit 1)";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::known;
    use crate::testing;

    #[tokio::test]
    async fn a_repeat_should_count_and_a_new_event_should_keep_the_newest() {
        let (pool, _url) = testing::fresh_database()
            .await
            .expect("a fresh test database");
        let id = RepoId(7);
        let info = testing::github_repo("acme", "app", 3);
        known::ensure_known(&pool, &[(id, info)])
            .await
            .expect("known");
        let mut conn = pool.acquire().await.expect("a connection");
        for n in 0..KEPT + 5 {
            record(&mut conn, id, "synced", &format!("synced {n}"))
                .await
                .expect("recorded");
        }
        record(&mut conn, id, "synced", &format!("synced {}", KEPT + 4))
            .await
            .expect("recorded again");
        let kept: Vec<(String, i64)> =
            sqlx::query_as("select message, count from events where repo_id = $1 order by id")
                .bind(id)
                .fetch_all(&mut *conn)
                .await
                .expect("the events");
        assert_eq!(kept.len() as i64, KEPT);
        assert_eq!(
            kept[0],
            ("synced 5".to_owned(), 1),
            "the oldest 5 forgotten"
        );
        assert_eq!(
            kept.last(),
            Some(&(format!("synced {}", KEPT + 4), 2)),
            "the repeat counted"
        );
    }
}
