//! What resolving a file's few owners needs of an installation's
//! directory, read without loading all of it: the account, the teams that
//! have or had the slugs the owners name, and the members they name. Only
//! when an owner names nobody are the account's visible teams read, to
//! suggest the nearest slugs.
//!
//! A check on a file of three owners thus costs a few indexed reads, not a
//! read of 10,000 teams, while resolving exactly as the whole directory
//! would ([`super::resolve`]).

use sqlx::{FromRow, PgConnection, Row};

use crate::installation_id::InstallationId;

use super::resolve::{Resolution, Resolver};
use super::{Directory, KnownTeam, Member, Unchecked};

/// The part of the directory of `installation`'s account that resolving
/// `owners` needs; `None` when Roster keeps no directory for it (never
/// read: owners there are not checked).
pub async fn directory_for(
    conn: &mut PgConnection,
    installation: InstallationId,
    owners: &[&str],
) -> Result<Option<Directory>, sqlx::Error> {
    directory_of(conn, Some(installation), owners).await
}

/// [`directory_for`] the account of `installation`, or of the local folder
/// when there is none (its repositories have no installation).
pub async fn directory_of(
    conn: &mut PgConnection,
    installation: Option<InstallationId>,
    owners: &[&str],
) -> Result<Option<Directory>, sqlx::Error> {
    let Some(row) = sqlx::query(
        "select org_id, login, personal, off_reason,
                array(select login_lower from directory_org_logins l
                      where l.org_id = o.org_id order by login_lower) as former_logins
         from directory_orgs o
         where case when $1::bigint is null then org_id = $2 else installation_id = $1 end
         order by org_id limit 1",
    )
    .bind(installation)
    .bind(super::LOCAL_ORG_ID)
    .fetch_optional(&mut *conn)
    .await?
    else {
        return Ok(None);
    };
    let org: i64 = row.try_get("org_id")?;
    let personal: bool = row.try_get("personal")?;
    let off: Option<String> = row.try_get("off_reason")?;
    let mut directory = Directory {
        org_id: org,
        login: row.try_get("login")?,
        unchecked: match (personal, off) {
            (true, _) => Some(Unchecked::Personal),
            (false, Some(reason)) => Some(Unchecked::Off(reason)),
            (false, None) => None,
        },
        ..Directory::default()
    };
    if directory.unchecked.is_some() {
        return Ok(Some(directory));
    }
    directory.former_logins = row.try_get("former_logins")?;
    let (slugs, logins) = wanted(owners);
    // The slugs with their teams in one read: a team that had several of
    // them is kept once.
    let named = sqlx::query(
        "select s.slug_lower, s.team_id as id, t.team_id is not null as known,
                t.slug, t.name, t.parent_id, t.secret, t.deleted_at is not null as deleted
         from directory_team_slugs s
         left join directory_teams t on t.org_id = s.org_id and t.team_id = s.team_id
         where s.org_id = $1 and s.slug_lower = any($2) order by s.slug_lower",
    )
    .bind(org)
    .bind(&slugs)
    .fetch_all(&mut *conn)
    .await?;
    for row in &named {
        let id: i64 = row.try_get("id")?;
        directory.slugs.push((row.try_get("slug_lower")?, id));
        let known: bool = row.try_get("known")?;
        if known && !directory.teams.iter().any(|t| t.team.id == id) {
            directory.teams.push(KnownTeam::from_row(row)?);
        }
    }
    directory.teams.sort_by_key(|t| t.team.id);
    let members: Vec<(i64, String)> = sqlx::query_as(
        "select user_id, login from directory_members
         where org_id = $1 and lower(login) = any($2) order by user_id",
    )
    .bind(org)
    .bind(&logins)
    .fetch_all(&mut *conn)
    .await?;
    directory.members = members
        .into_iter()
        .map(|(id, login)| Member { id, login })
        .collect();
    let resolver = Resolver::new(&directory);
    let unknown = owners
        .iter()
        .any(|o| matches!(resolver.resolve(o), Resolution::Unknown { .. }));
    if unknown {
        // Suggestions are drawn from the current, visible teams.
        let visible = teams(conn, org, "deleted_at is null and not secret").await?;
        for known in visible {
            if !directory.teams.iter().any(|t| t.team.id == known.team.id) {
                directory
                    .slugs
                    .push((known.team.slug.to_lowercase(), known.team.id));
                directory.teams.push(known);
            }
        }
    }
    Ok(Some(directory))
}

/// The slugs (lower case) and member logins (lower case) `owners` may name.
fn wanted(owners: &[&str]) -> (Vec<String>, Vec<String>) {
    let mut slugs = Vec::new();
    let mut logins = Vec::new();
    for owner in owners {
        let owner = owner.trim().to_lowercase();
        match owner.strip_prefix('@') {
            Some(handle) => match handle.split_once('/') {
                Some((_, slug)) => slugs.push(slug.to_owned()),
                None => logins.push(handle.to_owned()),
            },
            None => slugs.push(owner),
        }
    }
    (slugs, logins)
}

/// The teams of `org` that `filter` (on `directory_teams`) keeps, deleted
/// ones included, by id.
pub(crate) async fn teams(
    conn: &mut PgConnection,
    org: i64,
    filter: &'static str,
) -> Result<Vec<KnownTeam>, sqlx::Error> {
    let sql = format!(
        "select team_id as id, slug, name, parent_id, secret, deleted_at is not null as deleted
         from directory_teams where org_id = $1 and {filter} order by team_id"
    );
    sqlx::query_as(&sql).bind(org).fetch_all(&mut *conn).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_form_of_owner_should_ask_for_its_slug_or_login() {
        let (slugs, logins) = wanted(&["Payments", "@acme/Platform", "@Octocat", " @x/y/z "]);
        assert_eq!(slugs, vec!["payments", "platform", "y/z"]);
        assert_eq!(logins, vec!["octocat"]);
    }
}
