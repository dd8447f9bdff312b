//! What webhooks said about one team or one member (`directory_changes`):
//! recorded in the webhook's transaction and written to the directory by
//! the directory loop without a read; a team whose deliveries coalesced or
//! whose payload is not enough stays recorded for its own read
//! (`team_reads.rs`).

use sqlx::{PgConnection, Row};
use std::collections::BTreeSet;

use super::DirectoryDb;
use crate::directory::change::{Said, TeamSaid};

/// How many recorded changes one pass writes.
const APPLY_LIMIT: i64 = 1_000;

/// Records, in the caller's transaction (a webhook's intake), what a
/// payload says about one team or member of `org`. Deliveries about the
/// same one coalesce: the newest payload's data, read once from GitHub
/// afterwards. False when Roster does not know the account.
pub async fn record_in(
    conn: &mut PgConnection,
    org: i64,
    said: &Said,
) -> Result<bool, sqlx::Error> {
    let (kind, id, node_id, slug, name, secret, parent, gone, enough) = match said {
        Said::Team(team) => (
            "team",
            team.id,
            team.node_id.as_deref(),
            team.slug.as_deref(),
            team.name.as_deref(),
            team.secret.unwrap_or(true),
            team.parent,
            team.deleted,
            team.is_enough(),
        ),
        Said::Member(member) => (
            "member",
            member.id,
            None,
            Some(member.login.as_str()),
            None,
            false,
            None,
            member.gone,
            true,
        ),
    };
    let recorded = sqlx::query(
        "insert into directory_changes (org_id, kind, subject_id, node_id, slug, name, secret,
             parent_known, parent_id, gone, needs_read)
         select org_id, $2, $3, $4, $5, $6, $7, $8, $9, $10, not $11
         from directory_orgs where org_id = $1 and not personal
         on conflict (org_id, kind, subject_id) do update set
             node_id = coalesce(excluded.node_id, directory_changes.node_id),
             slug = coalesce(excluded.slug, directory_changes.slug),
             name = coalesce(excluded.name, directory_changes.name),
             secret = excluded.secret,
             parent_known = excluded.parent_known or directory_changes.parent_known,
             parent_id = case when excluded.parent_known then excluded.parent_id
                              else directory_changes.parent_id end,
             gone = excluded.gone or (directory_changes.gone and excluded.kind = 'team'),
             applied = false, needs_read = true, failures = 0,
             requested_at = clock_timestamp()",
    )
    .bind(org)
    .bind(kind)
    .bind(id)
    .bind(node_id)
    .bind(slug)
    .bind(name)
    .bind(secret)
    .bind(parent.is_some())
    .bind(parent.flatten())
    .bind(gone)
    .bind(enough)
    .execute(&mut *conn)
    .await?;
    Ok(recorded.rows_affected() > 0)
}

impl DirectoryDb {
    /// Writes what webhooks said to the directory, in one transaction, no
    /// read of GitHub; how many changes were written. A team still to be
    /// read stays recorded; a member whose deliveries coalesced asks for a
    /// read of the members (their order is not known).
    pub async fn apply_changes(&self) -> Result<usize, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
        let rows = sqlx::query(
            "select org_id, kind, subject_id, slug, name, secret, parent_known, parent_id, gone,
                    needs_read
             from directory_changes where not applied
             order by requested_at limit $1 for update skip locked",
        )
        .bind(APPLY_LIMIT)
        .fetch_all(&mut *tx)
        .await?;
        let mut orgs = BTreeSet::new();
        let mut member_reads = BTreeSet::new();
        for row in &rows {
            let org: i64 = row.try_get("org_id")?;
            let kind: String = row.try_get("kind")?;
            let id: i64 = row.try_get("subject_id")?;
            let slug: Option<String> = row.try_get("slug")?;
            let gone: bool = row.try_get("gone")?;
            let needs_read: bool = row.try_get("needs_read")?;
            orgs.insert(org);
            if kind == "member" {
                write_member(&mut tx, org, id, slug.as_deref(), gone).await?;
                if needs_read {
                    member_reads.insert(org);
                }
                continue;
            }
            let team = TeamSaid {
                id,
                node_id: None,
                name: row.try_get("name")?,
                secret: Some(row.try_get("secret")?),
                parent: if row.try_get("parent_known")? {
                    Some(row.try_get("parent_id")?)
                } else {
                    None
                },
                slug,
                deleted: gone,
            };
            write_team(&mut tx, org, &team).await?;
        }
        // Done: members, deletions and teams whose payload was enough;
        // the rest is applied and waits for its read.
        let (keys_org, keys_kind, keys_id): (Vec<i64>, Vec<String>, Vec<i64>) = {
            let mut orgs = Vec::new();
            let mut kinds = Vec::new();
            let mut ids = Vec::new();
            for row in &rows {
                orgs.push(row.try_get::<i64, _>("org_id")?);
                kinds.push(row.try_get::<String, _>("kind")?);
                ids.push(row.try_get::<i64, _>("subject_id")?);
            }
            (orgs, kinds, ids)
        };
        sqlx::query(
            "with done as (
                 delete from directory_changes c
                 using unnest($1::bigint[], $2::text[], $3::bigint[]) as k(org_id, kind, id)
                 where (c.org_id, c.kind, c.subject_id) = (k.org_id, k.kind, k.id)
                   and (c.kind = 'member' or c.gone or not c.needs_read)
                 returning c.org_id, c.kind, c.subject_id)
             update directory_changes c set applied = true
             from unnest($1::bigint[], $2::text[], $3::bigint[]) as k(org_id, kind, id)
             where (c.org_id, c.kind, c.subject_id) = (k.org_id, k.kind, k.id)
               and not exists (select 1 from done
                               where (done.org_id, done.kind, done.subject_id)
                                     = (c.org_id, c.kind, c.subject_id))",
        )
        .bind(&keys_org)
        .bind(&keys_kind)
        .bind(&keys_id)
        .execute(&mut *tx)
        .await?;
        sqlx::query(
            "update directory_orgs set members_requested_at = clock_timestamp()
             where org_id = any($1) and members_requested_at is null",
        )
        .bind(member_reads.into_iter().collect::<Vec<_>>())
        .execute(&mut *tx)
        .await?;
        changed_in(&mut tx, &orgs.into_iter().collect::<Vec<_>>()).await?;
        tx.commit().await?;
        Ok(rows.len())
    }

    /// How many changes webhooks recorded that are not done yet.
    pub async fn pending_changes(&self) -> Result<i64, sqlx::Error> {
        sqlx::query_scalar("select count(*) from directory_changes")
            .fetch_one(&self.pool)
            .await
    }
}

/// Writes a member as a payload said: joined (or renamed), or gone.
async fn write_member(
    conn: &mut PgConnection,
    org: i64,
    id: i64,
    login: Option<&str>,
    gone: bool,
) -> Result<(), sqlx::Error> {
    match login.filter(|_| !gone) {
        Some(login) => {
            sqlx::query(
                "insert into directory_members (org_id, user_id, login, seen_at)
                 values ($1, $2, $3, clock_timestamp())
                 on conflict (org_id, user_id) do update set login = excluded.login,
                     seen_at = excluded.seen_at",
            )
            .bind(org)
            .bind(id)
            .bind(login)
            .execute(&mut *conn)
            .await?;
        }
        None => {
            sqlx::query("delete from directory_members where org_id = $1 and user_id = $2")
                .bind(org)
                .bind(id)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}

/// Writes a team as a payload said. A deletion is final (GitHub never
/// gives a team's id again), so a late `edited` never brings a deleted
/// team back; a payload that lacks the slug or name is left to the read.
async fn write_team(conn: &mut PgConnection, org: i64, team: &TeamSaid) -> Result<(), sqlx::Error> {
    if team.deleted {
        sqlx::query(
            "update directory_teams set deleted_at = now(), seen_at = clock_timestamp()
             where org_id = $1 and team_id = $2 and deleted_at is null",
        )
        .bind(org)
        .bind(team.id)
        .execute(&mut *conn)
        .await?;
        return Ok(());
    }
    let (Some(slug), Some(name)) = (&team.slug, &team.name) else {
        return Ok(());
    };
    sqlx::query(
        "insert into directory_teams (org_id, team_id, slug, name, parent_id, secret, seen_at)
         values ($1, $2, $3, $4, $5, $6, clock_timestamp())
         on conflict (org_id, team_id) do update set slug = excluded.slug,
             name = excluded.name, secret = excluded.secret,
             parent_id = case when $7 then excluded.parent_id else directory_teams.parent_id end,
             seen_at = excluded.seen_at",
    )
    .bind(org)
    .bind(team.id)
    .bind(slug)
    .bind(name)
    .bind(team.parent.flatten())
    .bind(team.secret.unwrap_or(true))
    .bind(team.parent.is_some())
    .execute(&mut *conn)
    .await?;
    sqlx::query(
        "insert into directory_team_slugs (org_id, slug_lower, team_id) values ($1, lower($2), $3)
         on conflict (org_id, slug_lower) do update set team_id = excluded.team_id",
    )
    .bind(org)
    .bind(slug)
    .bind(team.id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Marks `orgs`' directories changed: their entries' owners are followed.
pub(super) async fn changed_in(conn: &mut PgConnection, orgs: &[i64]) -> Result<(), sqlx::Error> {
    sqlx::query("update directory_orgs set changed_at = clock_timestamp() where org_id = any($1)")
        .bind(orgs)
        .execute(&mut *conn)
        .await?;
    Ok(())
}
