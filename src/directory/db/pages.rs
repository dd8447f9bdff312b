//! A read of an account's teams or members, written page by page
//! (`directory_teams`, `directory_team_slugs`, `directory_members`): each
//! page stamped with the read's start, and only a read that finished marks
//! what it did not see (a team as deleted, a member as gone), so a read that
//! stopped part-way loses nothing, and 10,000 teams never sit in memory at
//! once. A team or member a webhook wrote after the read started keeps
//! what the webhook said: the page may have been fetched before it.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::DirectoryDb;
use crate::directory::{Member, Part, Rows, Team};

impl DirectoryDb {
    /// The start of a read: what it did not see is older than this.
    pub async fn read_started(&self) -> Result<DateTime<Utc>, sqlx::Error> {
        sqlx::query_scalar("select clock_timestamp()")
            .fetch_one(&self.pool)
            .await
    }

    /// Writes one page of a read of `org`'s teams or members.
    pub async fn put(
        &self,
        org: i64,
        rows: Rows<'_>,
        started: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        put_in(&mut *self.pool.acquire().await?, org, rows, started).await
    }

    /// Counts teams a read saw but could not write (their name holds a
    /// NUL) as seen, so that the read finishing does not flag them deleted.
    pub async fn touch_teams(
        &self,
        org: i64,
        ids: &[i64],
        started: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        if ids.is_empty() {
            return Ok(());
        }
        sqlx::query(
            "update directory_teams set seen_at = $3 where org_id = $1 and team_id = any($2)",
        )
        .bind(org)
        .bind(ids)
        .bind(started)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// A read of one part of `org`'s directory finished: teams it did not
    /// see are deleted (kept, flagged) and owner checking is on again;
    /// members it did not see are gone.
    pub async fn finish(
        &self,
        org: i64,
        part: Part,
        started: DateTime<Utc>,
    ) -> Result<(), sqlx::Error> {
        finish_in(&mut *self.pool.acquire().await?, org, part, started).await
    }
}

/// Writes one page on `conn`: a pooled connection, or the transaction of
/// a whole load (the local folder) or of a team's own read.
pub(super) async fn put_in(
    conn: &mut PgConnection,
    org: i64,
    rows: Rows<'_>,
    started: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    match rows {
        Rows::Teams(teams) => put_teams_in(conn, org, teams, started).await,
        Rows::Members(members) => put_members_in(conn, org, members, started).await,
    }
}

/// Forgets what a finished read of `part` did not see, then records the
/// read: each statement takes the organisation and the read's start.
pub(super) async fn finish_in(
    conn: &mut PgConnection,
    org: i64,
    part: Part,
    started: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    let statements = match part {
        Part::Teams => [
            "update directory_teams set deleted_at = now()
             where org_id = $1 and seen_at < $2 and deleted_at is null",
            "update directory_orgs set teams_read_at = now(), off_reason = null, off_since = null,
                 read_error = null,
                 teams_requested_at = case when teams_requested_at <= $2 then null
                                           else teams_requested_at end
             where org_id = $1",
        ],
        Part::Members => [
            "delete from directory_members where org_id = $1 and seen_at < $2",
            "update directory_orgs set members_read_at = now(),
                 members_requested_at = case when members_requested_at <= $2 then null
                                             else members_requested_at end
             where org_id = $1",
        ],
    };
    for sql in statements {
        sqlx::query(sql)
            .bind(org)
            .bind(started)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

async fn put_teams_in(
    conn: &mut PgConnection,
    org: i64,
    teams: &[Team],
    started: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if teams.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = teams.iter().map(|t| t.id).collect();
    let slugs: Vec<&str> = teams.iter().map(|t| t.slug.as_str()).collect();
    let names: Vec<&str> = teams.iter().map(|t| t.name.as_str()).collect();
    let parents: Vec<Option<i64>> = teams.iter().map(|t| t.parent_id).collect();
    let secret: Vec<bool> = teams.iter().map(|t| t.secret).collect();
    sqlx::query(
        "insert into directory_teams (org_id, team_id, slug, name, parent_id, secret, seen_at)
         select $1, id, slug, name, parent, secret, $7
         from unnest($2::bigint[], $3::text[], $4::text[], $5::bigint[], $6::bool[])
              as t(id, slug, name, parent, secret)
         on conflict (org_id, team_id) do update set slug = excluded.slug, name = excluded.name,
             parent_id = excluded.parent_id, secret = excluded.secret,
             seen_at = excluded.seen_at, deleted_at = null
         where directory_teams.seen_at <= excluded.seen_at",
    )
    .bind(org)
    .bind(&ids)
    .bind(&slugs)
    .bind(&names)
    .bind(&parents)
    .bind(&secret)
    .bind(started)
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "insert into directory_team_slugs (org_id, slug_lower, team_id)
         select $1, lower(slug), id from unnest($2::text[], $3::bigint[]) as t(slug, id)
         on conflict (org_id, slug_lower) do update set team_id = excluded.team_id",
    )
    .bind(org)
    .bind(&slugs)
    .bind(&ids)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn put_members_in(
    conn: &mut PgConnection,
    org: i64,
    members: &[Member],
    started: DateTime<Utc>,
) -> Result<(), sqlx::Error> {
    if members.is_empty() {
        return Ok(());
    }
    let ids: Vec<i64> = members.iter().map(|m| m.id).collect();
    let logins: Vec<&str> = members.iter().map(|m| m.login.as_str()).collect();
    sqlx::query(
        "insert into directory_members (org_id, user_id, login, seen_at)
         select $1, id, login, $4 from unnest($2::bigint[], $3::text[]) as m(id, login)
         on conflict (org_id, user_id) do update set login = excluded.login,
             seen_at = excluded.seen_at
         where directory_members.seen_at <= excluded.seen_at",
    )
    .bind(org)
    .bind(&ids)
    .bind(&logins)
    .bind(started)
    .execute(&mut *conn)
    .await?;
    Ok(())
}
