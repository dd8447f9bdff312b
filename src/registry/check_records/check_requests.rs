//! Pull requests (and lone commits) waiting for an evaluation, in
//! PostgreSQL: written by the webhook in its own transaction, so an
//! acknowledged delivery is never lost, and keyed by (repository, pull
//! request), so a flood of pushes to one pull request is evaluated once,
//! at its latest head.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::check_runs::{self, CheckIntent};
use crate::registry::RegistryError;
use crate::source::{InstallationId, RepoId};

/// A request for a check run on one commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckRequest {
    pub repo_id: RepoId,
    /// `None` when a run was asked for again on a commit of no pull request.
    pub pull_request: Option<i32>,
    pub head_sha: String,
    pub installation_id: InstallationId,
    pub owner: String,
    pub name: String,
    /// Whether the repository is public: its checks then name no
    /// repository that is not known to be public too.
    pub public: bool,
}

impl CheckRequest {
    /// The dedup key: the pull request, or the commit itself.
    pub fn key(&self) -> String {
        match self.pull_request {
            Some(number) => format!("pr:{number}"),
            None => format!("sha:{}", self.head_sha),
        }
    }
}

crate::row! {
    /// A request claimed by an evaluator.
    #[derive(Debug, Clone)]
    pub struct ClaimedRequest {
        pub repo_id: RepoId,
        pub key: String,
        pub pull_request: Option<i32>,
        pub head_sha: String,
        pub installation_id: InstallationId,
        pub owner: String,
        pub name: String,
        pub requested_at: DateTime<Utc>,
        pub attempts: i32,
        pub public: bool,
    }
}

/// Stores the requests (the latest head wins) on the caller's transaction,
/// and wakes the evaluators when it commits.
pub async fn request_checks(
    conn: &mut PgConnection,
    requests: &[CheckRequest],
) -> Result<(), RegistryError> {
    if requests.is_empty() {
        return Ok(());
    }
    // One row per key (the last one wins), in key order so that concurrent
    // deliveries lock rows in the same order.
    let mut unique = std::collections::BTreeMap::new();
    for request in requests {
        unique.insert((request.repo_id, request.key()), request);
    }
    let ids: Vec<i64> = unique.keys().map(|(id, _)| id.0).collect();
    let keys: Vec<&str> = unique.keys().map(|(_, key)| key.as_str()).collect();
    let numbers: Vec<Option<i32>> = unique.values().map(|r| r.pull_request).collect();
    let shas: Vec<&str> = unique.values().map(|r| r.head_sha.as_str()).collect();
    let installations: Vec<i64> = unique.values().map(|r| r.installation_id.0).collect();
    let owners: Vec<&str> = unique.values().map(|r| r.owner.as_str()).collect();
    let names: Vec<&str> = unique.values().map(|r| r.name.as_str()).collect();
    let public: Vec<bool> = unique.values().map(|r| r.public).collect();
    sqlx::query(
        "insert into check_requests (repo_id, key, pull_request, head_sha, installation_id, owner,
                                     name, public)
         select * from unnest($1::bigint[], $2::text[], $3::int[], $4::text[], $5::bigint[],
                              $6::text[], $7::text[], $8::bool[])
         order by 1, 2
         on conflict (repo_id, key) do update set
             head_sha = excluded.head_sha, installation_id = excluded.installation_id,
             owner = excluded.owner, name = excluded.name, public = excluded.public,
             requested_at = clock_timestamp(), not_before = now(), attempts = 0, last_error = null",
    )
    .bind(ids)
    .bind(keys)
    .bind(numbers)
    .bind(shas)
    .bind(installations)
    .bind(owners)
    .bind(names)
    .bind(&public)
    .execute(&mut *conn)
    .await?;
    let repos: std::collections::BTreeMap<i64, bool> =
        unique.iter().map(|((id, _), r)| (id.0, r.public)).collect();
    sqlx::query(
        "insert into repo_visibility (repo_id, public)
         select * from unnest($1::bigint[], $2::bool[])
         on conflict (repo_id) do update set public = excluded.public, seen_at = now()",
    )
    .bind(repos.keys().copied().collect::<Vec<_>>())
    .bind(repos.values().copied().collect::<Vec<_>>())
    .execute(&mut *conn)
    .await?;
    sqlx::query("select pg_notify('roster_checks', 'evaluate')")
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// The least time between two evaluations of one pull request (or commit):
/// a flood of pushes to one pull request costs at most one evaluation
/// every 10 seconds, on its newest head, while a fix pushed to a pull
/// request just checked is checked within seconds.
pub const EVALUATION_SPACING: Duration = Duration::from_secs(10);

/// Claims up to `limit` due requests for `lease`, leaving those whose
/// pull request was evaluated less than `spacing` ago.
pub async fn claim_requests(
    pool: &PgPool,
    limit: i64,
    lease: Duration,
    spacing: Duration,
) -> Result<Vec<ClaimedRequest>, RegistryError> {
    Ok(sqlx::query_as(
        "update check_requests c set not_before = now() + make_interval(secs => $2)
         from (select r.repo_id, r.key from check_requests r
               where r.not_before <= now()
                 and not exists (select 1 from check_evaluations e
                                 where e.repo_id = r.repo_id and e.key = r.key
                                   and e.at > now() - make_interval(secs => $3))
               order by r.not_before limit $1 for update of r skip locked) due
         where c.repo_id = due.repo_id and c.key = due.key
         returning c.repo_id, c.key, c.pull_request, c.head_sha, c.installation_id, c.owner,
                   c.name, c.requested_at, c.attempts, c.public",
    )
    .bind(limit)
    .bind(lease.as_secs_f64())
    .bind(spacing.as_secs_f64())
    .fetch_all(pool)
    .await?)
}

/// Writes the evaluation's intent and, in the same transaction, ends the
/// request it answered, unless a newer one arrived meanwhile (then the
/// request stays and the newer head is evaluated next).
pub async fn answer_request(
    pool: &PgPool,
    request: &ClaimedRequest,
    intent: Option<&CheckIntent>,
) -> Result<(), RegistryError> {
    let mut tx = pool.begin().await?;
    if let Some(intent) = intent {
        check_runs::record_intent(&mut tx, intent).await?;
    }
    sqlx::query("delete from check_requests where repo_id = $1 and key = $2 and requested_at = $3")
        .bind(request.repo_id)
        .bind(&request.key)
        .bind(request.requested_at)
        .execute(&mut *tx)
        .await?;
    // Remembered for the spacing of evaluations; the repository's older
    // rows, past any spacing, are dropped on the way.
    sqlx::query(
        "with old as (delete from check_evaluations
                      where repo_id = $1 and key <> $2 and at < now() - interval '1 hour')
         insert into check_evaluations (repo_id, key) values ($1, $2)
         on conflict (repo_id, key) do update set at = now()",
    )
    .bind(request.repo_id)
    .bind(&request.key)
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(())
}

/// Records a failed evaluation; it is tried again after `wait`.
pub async fn request_failed(
    pool: &PgPool,
    request: &ClaimedRequest,
    error: &str,
    wait: Duration,
) -> Result<(), RegistryError> {
    sqlx::query(
        "update check_requests set attempts = attempts + 1, last_error = $3,
                not_before = now() + make_interval(secs => $4)
         where repo_id = $1 and key = $2 and requested_at = $5",
    )
    .bind(request.repo_id)
    .bind(&request.key)
    .bind(crate::registry::clip::clip(error, 2048).into_owned())
    .bind(wait.as_secs_f64())
    .bind(request.requested_at)
    .execute(pool)
    .await?;
    Ok(())
}

/// Puts a request off for `wait` without counting an attempt: the budget
/// it would spend is held for the sync until then.
pub async fn defer_request(
    pool: &PgPool,
    request: &ClaimedRequest,
    wait: Duration,
) -> Result<(), RegistryError> {
    sqlx::query(
        "update check_requests set not_before = now() + make_interval(secs => $3)
         where repo_id = $1 and key = $2",
    )
    .bind(request.repo_id)
    .bind(&request.key)
    .bind(wait.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(())
}

/// Drops every waiting request (checks are turned off).
pub async fn discard_requests(pool: &PgPool) -> Result<u64, RegistryError> {
    let done = sqlx::query("delete from check_requests")
        .execute(pool)
        .await?;
    Ok(done.rows_affected())
}
