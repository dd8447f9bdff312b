//! The short history of reconciles each repository keeps.

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
    let message = clip(message, MAX_EVENT_BYTES);
    let repeated = sqlx::query(
        "update events set at = now(), count = count + 1
         where id = (select id from events where repo_id = $1 order by id desc limit 1)
           and kind = $2 and message = $3",
    )
    .bind(id)
    .bind(kind)
    .bind(message.as_ref())
    .execute(&mut *conn)
    .await?;
    if repeated.rows_affected() > 0 {
        return Ok(());
    }
    // One statement: the delete does not see the row the insert adds (one
    // snapshot), so it keeps the `KEPT - 1` newest it sees.
    sqlx::query(
        "with added as (insert into events (repo_id, kind, message) values ($1, $2, $3))
         delete from events where repo_id = $1 and id <= (
             select id from events where repo_id = $1 order by id desc offset $4 limit 1)",
    )
    .bind(id)
    .bind(kind)
    .bind(message.as_ref())
    .bind(KEPT - 1)
    .execute(conn)
    .await?;
    Ok(())
}
