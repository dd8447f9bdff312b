//! Each statement compared with the long way: one repository at a time
//! (`no_file_again`, `first_sight`), and a batch of every case (`batch`).

mod batch;
mod first_sight;
mod no_file_again;

use sqlx::PgPool;

use super::*;

fn info(name: &str) -> RepoInfo {
    crate::testing::github_repo("acme", name, 3)
}

/// What an `installation` webhook's payload says of a repository: no
/// default branch, no address.
fn from_payload(name: &str) -> RepoInfo {
    let mut info = info(name);
    info.default_branch.clear();
    info.html_url = None;
    info
}

fn absent(name: &str, sha: &str) -> Observed {
    Observed::Present {
        repo: info(name),
        file: FileState::Absent {
            sha: Some(sha.to_owned()),
        },
    }
}

fn found(name: &str, sha: &str, description: &str) -> Observed {
    let yaml = format!("name: {name}\nowner: team-{name}\ndescription: {description}\n");
    Observed::Present {
        repo: info(name),
        file: FileState::Found {
            sha: sha.to_owned(),
            bytes: yaml.into_bytes(),
        },
    }
}

/// Runs one of the statements on one repository: whether it applied it.
async fn one(
    pool: &PgPool,
    sql: &str,
    id: RepoId,
    observed: &Observed,
    claim: Option<&Claim<RepoId>>,
    fingerprint: &str,
    message: &str,
) -> Result<bool, sqlx::Error> {
    let Some((row, found)) = Row::of(id, claim, observed, true) else {
        return Ok(false);
    };
    let mut rows = [row];
    let applied = run(pool, sql, &mut rows, |args| match found {
        false => {
            add(args, Status::NoFile.as_str());
            add(args, fingerprint);
            add(args, message);
        }
        true => {
            add(args, Status::Synced.as_str());
            add(args, fingerprint);
            add(args, vec![unchanged_message(rows_sha(observed))]);
            add(args, KEPT - 1);
        }
    })
    .await?;
    Ok(applied.contains(&id))
}

fn rows_sha(observed: &Observed) -> &str {
    match observed {
        Observed::Present {
            file: FileState::Found { sha, .. },
            ..
        } => sha,
        _ => "",
    }
}

/// One repository through `sql`, the statement of no file again
/// (`NO_FILE_AGAIN`) or of no file at first sight (`NO_FILE_FIRST`).
async fn settle(
    pool: &PgPool,
    sql: &str,
    id: RepoId,
    observed: &Observed,
    claim: Option<&Claim<RepoId>>,
    fingerprint: &str,
    message: &str,
) -> Result<bool, sqlx::Error> {
    let sql = absent_only(observed, sql);
    one(pool, sql, id, observed, claim, fingerprint, message).await
}

/// `sql` when `observed` has no file; else a statement that applies
/// nothing, since those statements never see a file.
fn absent_only<'a>(observed: &Observed, sql: &'a str) -> &'a str {
    match observed {
        Observed::Present {
            file: FileState::Absent { .. },
            ..
        } => sql,
        _ => "select 0::bigint where false",
    }
}

/// A file again, for one repository.
async fn settle_file(
    pool: &PgPool,
    id: RepoId,
    observed: &Observed,
    claim: Option<&Claim<RepoId>>,
    fingerprint: &str,
) -> Result<bool, sqlx::Error> {
    match observed {
        Observed::Present {
            file: FileState::Found { .. },
            ..
        } => one(pool, &FILE_AGAIN, id, observed, claim, fingerprint, "").await,
        _ => Ok(false),
    }
}
