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
    sqlx::query("insert into events (repo_id, kind, message) values ($1, $2, $3)")
        .bind(id)
        .bind(kind)
        .bind(message)
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "delete from events where repo_id = $1 and id <= (
             select id from events where repo_id = $1 order by id desc offset $2 limit 1)",
    )
    .bind(id)
    .bind(KEPT)
    .execute(conn)
    .await?;
    Ok(())
}
