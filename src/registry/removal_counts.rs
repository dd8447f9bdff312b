//! The rows of `repositories` the deletion guard reads and writes: which
//! partition a repository is in, how many of a partition were removed
//! lately, and when a counted removal happened.

use std::time::Duration;

use sqlx::PgConnection;

use crate::source::{InstallationId, Partition, RepoId};

/// The partition a known repository belongs to.
pub(crate) async fn partition_of(
    conn: &mut PgConnection,
    id: RepoId,
) -> Result<Partition, sqlx::Error> {
    let installation: Option<InstallationId> =
        sqlx::query_scalar("select installation_id from repositories where id = $1")
            .bind(id)
            .fetch_one(conn)
            .await?;
    Ok(Partition::of(installation))
}

/// Of a partition's repositories: how many were removed within `period`,
/// and how many there are counting those (the base of a bound in percent).
pub(crate) async fn removal_counts(
    conn: &mut PgConnection,
    partition: Partition,
    period: Duration,
) -> Result<(usize, usize), sqlx::Error> {
    let (removed, total): (i64, i64) = sqlx::query_as(
        "select count(*) filter (where status = 'removed'
                                   and removed_at > now() - make_interval(secs => $2)),
                count(*) filter (where status <> 'removed'
                                   or removed_at > now() - make_interval(secs => $2))
         from repositories where installation_id is not distinct from $1",
    )
    .bind(partition.installation())
    .bind(period.as_secs_f64())
    .fetch_one(conn)
    .await?;
    Ok((
        usize::try_from(removed).unwrap_or(0),
        usize::try_from(total).unwrap_or(0),
    ))
}

/// Records when a counted removal happened; an uncounted one clears it.
pub(crate) async fn set_removed_at(
    conn: &mut PgConnection,
    id: RepoId,
    counted: bool,
) -> Result<(), sqlx::Error> {
    sqlx::query("update repositories set removed_at = case when $2 then now() end where id = $1")
        .bind(id)
        .bind(counted)
        .execute(conn)
        .await?;
    Ok(())
}
