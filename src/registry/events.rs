//! The short history of reconciles each repository keeps.

use sqlx::PgConnection;

use crate::source::RepoId;

/// How many events each repository keeps.
pub(crate) const KEPT: i64 = 100;

/// Appends one event and forgets all but the newest [`KEPT`].
pub(crate) async fn record(
    conn: &mut PgConnection,
    id: RepoId,
    kind: &str,
    message: &str,
) -> Result<(), sqlx::Error> {
    // One statement: the delete does not see the row the insert adds (one
    // snapshot), so it keeps the `KEPT - 1` newest it sees.
    sqlx::query(
        "with added as (insert into events (repo_id, kind, message) values ($1, $2, $3))
         delete from events where repo_id = $1 and id <= (
             select id from events where repo_id = $1 order by id desc offset $4 limit 1)",
    )
    .bind(id)
    .bind(kind)
    .bind(message)
    .bind(KEPT - 1)
    .execute(conn)
    .await?;
    Ok(())
}
