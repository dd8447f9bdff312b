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
/// Each statement only ever sees its own case (a file again for
/// `FILE_AGAIN`, no file for `NO_FILE_AGAIN` and `NO_FILE_FIRST`), so any
/// other observation applies nothing.
async fn settle(
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
    if found != (sql == FILE_AGAIN.as_str()) {
        return Ok(false);
    }
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

/// A file again, for one repository.
async fn settle_file(
    pool: &PgPool,
    id: RepoId,
    observed: &Observed,
    claim: Option<&Claim<RepoId>>,
    fingerprint: &str,
) -> Result<bool, sqlx::Error> {
    settle(pool, &FILE_AGAIN, id, observed, claim, fingerprint, "").await
}
