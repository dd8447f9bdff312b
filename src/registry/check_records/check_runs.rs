//! The `Roster` check runs in PostgreSQL: the intent to post one (an
//! outbox row per repository and commit), its posting state, and the
//! installations that refused the checks permission.
//!
//! An intent is written in the transaction of the evaluation that decided
//! it (the reconcile's, for the default branch), so a crash before the post
//! loses nothing: the row stays `pending` until GitHub has it.

use std::time::Duration;

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgExecutor, PgPool};

use crate::registry::RegistryError;
use crate::source::{InstallationId, RepoId};

crate::row! {
    /// What an evaluation says about one commit, to be shown on GitHub.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct CheckIntent {
        pub repo_id: RepoId,
        pub sha: String,
        pub pull_request: Option<i32>,
        pub installation_id: InstallationId,
        pub owner: String,
        pub name: String,
        /// `success`, `failure` or `neutral`.
        pub conclusion: String,
        pub title: String,
        pub summary: String,
        /// GitHub's annotation objects, all of them (the poster sends 50 at a time).
        pub annotations: serde_json::Value as json,
    }
}

crate::row! {
    /// An intent claimed for posting, with what is known of its run.
    #[derive(Debug, Clone)]
    pub struct DuePost {
        pub intent: CheckIntent as flatten,
        pub version: i32,
        pub run_id: Option<i64>,
        pub create_sent: bool,
        pub attempts: i32,
    }
}

/// Runs kept per repository once posted: the newest are what people look at.
const KEPT_PER_REPO: i64 = 50;

/// Writes (or updates) the intent for `(repo, sha)`. Unchanged content is
/// left as it is (nothing to post again); changed content is posted again,
/// updating the run GitHub already has. Returns whether a post is due.
pub async fn record_intent(
    conn: &mut PgConnection,
    intent: &CheckIntent,
) -> Result<bool, RegistryError> {
    let changed = sqlx::query(
        "insert into check_runs (repo_id, sha, pull_request, installation_id, owner, name,
                                 conclusion, title, summary, annotations)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
         on conflict (repo_id, sha) do update set
             pull_request = coalesce(excluded.pull_request, check_runs.pull_request),
             installation_id = excluded.installation_id,
             owner = excluded.owner, name = excluded.name,
             conclusion = excluded.conclusion, title = excluded.title,
             summary = excluded.summary, annotations = excluded.annotations,
             evaluated_at = now(), version = check_runs.version + 1,
             pending = true, attempts = 0, not_before = now(), last_error = null
         where (check_runs.conclusion, check_runs.title, check_runs.summary, check_runs.annotations)
               is distinct from (excluded.conclusion, excluded.title, excluded.summary, excluded.annotations)",
    )
    .bind(intent.repo_id)
    .bind(&intent.sha)
    .bind(intent.pull_request)
    .bind(intent.installation_id)
    .bind(&intent.owner)
    .bind(&intent.name)
    .bind(&intent.conclusion)
    .bind(&intent.title)
    .bind(&intent.summary)
    .bind(&intent.annotations)
    .execute(&mut *conn)
    .await?;
    if changed.rows_affected() == 0 {
        return Ok(false);
    }
    sqlx::query(
        "delete from check_runs where repo_id = $1 and not pending and sha not in
             (select sha from check_runs where repo_id = $1 order by evaluated_at desc limit $2)",
    )
    .bind(intent.repo_id)
    .bind(KEPT_PER_REPO)
    .execute(&mut *conn)
    .await?;
    sqlx::query("select pg_notify('roster_checks', 'post')")
        .execute(&mut *conn)
        .await?;
    Ok(true)
}

/// Claims up to `limit` due posts for `lease` (another replica takes them
/// after it), skipping installations that refused the permission.
pub async fn claim_posts(
    pool: &PgPool,
    limit: i64,
    lease: Duration,
) -> Result<Vec<DuePost>, RegistryError> {
    let rows = sqlx::query_as(
        "update check_runs c set not_before = now() + make_interval(secs => $2)
         from (select repo_id, sha from check_runs
               where pending and not_before <= now()
                 and installation_id not in (select installation_id from check_permissions)
               order by not_before limit $1 for update skip locked) due
         where c.repo_id = due.repo_id and c.sha = due.sha
         returning c.repo_id, c.sha, c.pull_request, c.installation_id, c.owner, c.name, c.conclusion, c.title,
                   c.summary, c.annotations, c.version, c.run_id, c.create_sent, c.attempts",
    )
    .bind(limit)
    .bind(lease.as_secs_f64())
    .fetch_all(pool)
    .await?;
    Ok(rows)
}

/// Claims the post of `(repo, sha)` when it is due: an evaluation posts
/// what it decided at once instead of waiting for the next pass.
pub async fn claim_post_of(
    pool: &PgPool,
    repo: RepoId,
    sha: &str,
    lease: Duration,
) -> Result<Option<DuePost>, RegistryError> {
    Ok(sqlx::query_as(
        "update check_runs c set not_before = now() + make_interval(secs => $3)
         from (select repo_id, sha from check_runs
               where repo_id = $1 and sha = $2 and pending and not_before <= now()
                 and installation_id not in (select installation_id from check_permissions)
               for update skip locked) due
         where c.repo_id = due.repo_id and c.sha = due.sha
         returning c.repo_id, c.sha, c.pull_request, c.installation_id, c.owner, c.name, c.conclusion, c.title,
                   c.summary, c.annotations, c.version, c.run_id, c.create_sent, c.attempts",
    )
    .bind(repo)
    .bind(sha)
    .bind(lease.as_secs_f64())
    .fetch_optional(pool)
    .await?)
}

/// Notes that a create is about to be sent (see the table's comment).
pub async fn mark_create_sent(pool: &PgPool, repo: RepoId, sha: &str) -> Result<(), RegistryError> {
    sqlx::query("update check_runs set create_sent = true where repo_id = $1 and sha = $2")
        .bind(repo)
        .bind(sha)
        .execute(pool)
        .await?;
    Ok(())
}

/// Records GitHub's run id and, when `version` is still the latest, that
/// the run says what was decided (no longer pending).
pub async fn mark_posted(
    pool: &PgPool,
    repo: RepoId,
    sha: &str,
    version: i32,
    run_id: i64,
) -> Result<(), RegistryError> {
    sqlx::query(
        "update check_runs set run_id = $4, posted_at = now(), attempts = 0, last_error = null,
                pending = (version <> $3), not_before = now()
         where repo_id = $1 and sha = $2",
    )
    .bind(repo)
    .bind(sha)
    .bind(version)
    .bind(run_id)
    .execute(pool)
    .await?;
    Ok(())
}

/// Records a failed post; it is tried again after `wait`.
pub async fn mark_failed(
    pool: &PgPool,
    repo: RepoId,
    sha: &str,
    run_id: Option<i64>,
    error: &str,
    wait: Duration,
) -> Result<(), RegistryError> {
    sqlx::query(
        "update check_runs set attempts = attempts + 1, last_error = $3,
                run_id = coalesce($5, run_id),
                not_before = now() + make_interval(secs => $4)
         where repo_id = $1 and sha = $2",
    )
    .bind(repo)
    .bind(sha)
    .bind(crate::registry::clip::clip(error, 2048).into_owned())
    .bind(wait.as_secs_f64())
    .bind(run_id)
    .execute(pool)
    .await?;
    Ok(())
}

/// Puts a post off for `wait` without counting an attempt (the budget is
/// held for the sync, or the installation's turn to write is far away).
pub async fn defer_post(pool: &PgPool, due: &DuePost, wait: Duration) -> Result<(), RegistryError> {
    sqlx::query(
        "update check_runs set not_before = now() + make_interval(secs => $3)
         where repo_id = $1 and sha = $2",
    )
    .bind(due.intent.repo_id)
    .bind(&due.intent.sha)
    .bind(wait.as_secs_f64())
    .execute(pool)
    .await?;
    Ok(())
}

/// Records that GitHub refused the run for good (422): it is not tried
/// again unless a later evaluation changes what it says.
pub async fn mark_refused(
    pool: &PgPool,
    repo: RepoId,
    sha: &str,
    version: i32,
    error: &str,
) -> Result<(), RegistryError> {
    sqlx::query(
        "update check_runs set attempts = attempts + 1, last_error = $4,
                pending = (version <> $3), not_before = now()
         where repo_id = $1 and sha = $2",
    )
    .bind(repo)
    .bind(sha)
    .bind(version)
    .bind(crate::registry::clip::clip(error, 2048).into_owned())
    .execute(pool)
    .await?;
    Ok(())
}

/// Records that `installation` refused to let the App post checks.
/// Returns `true` the first time (the caller says so in the log, once).
pub async fn record_denied(
    pool: &PgPool,
    installation: InstallationId,
    message: &str,
) -> Result<bool, RegistryError> {
    let inserted = sqlx::query(
        "insert into check_permissions (installation_id, message) values ($1, $2)
         on conflict (installation_id) do nothing",
    )
    .bind(installation)
    .bind(crate::registry::clip::clip(message, 2048).into_owned())
    .execute(pool)
    .await?;
    Ok(inserted.rows_affected() > 0)
}

/// Forgets a refusal: the App's permissions changed, posting resumes.
/// Runs in the webhook's transaction.
pub async fn clear_denied<'e, E: PgExecutor<'e>>(
    executor: E,
    installation: InstallationId,
) -> Result<(), RegistryError> {
    sqlx::query(
        "with gone as (delete from check_permissions where installation_id = $1 returning 1)
         select pg_notify('roster_checks', 'post') from gone",
    )
    .bind(installation)
    .execute(executor)
    .await?;
    Ok(())
}

crate::row! {
    /// An installation that refused the checks permission, for the dashboard.
    #[derive(Debug, Clone)]
    pub struct ChecksDenied {
        pub installation_id: InstallationId,
        pub denied_at: DateTime<Utc>,
        pub message: String,
    }
}

/// Every installation that refused the checks permission.
pub async fn denied_installations(pool: &PgPool) -> Result<Vec<ChecksDenied>, RegistryError> {
    Ok(sqlx::query_as(
        "select installation_id, denied_at, message from check_permissions order by installation_id",
    )
    .fetch_all(pool)
    .await?)
}

crate::row! {
    /// One recent evaluation of a commit and what became of its post.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct RecentCheck {
        pub sha: String,
        pub pull_request: Option<i32>,
        /// The conclusion GitHub shows: `None` until GitHub has accepted the
        /// run, so a run it refused is never reported as what it refused.
        pub conclusion: Option<String>,
        /// What Roster decided, posted or not.
        pub decided: String,
        pub title: String,
        pub at: DateTime<Utc>,
        /// Whether GitHub has accepted what this evaluation says: false while
        /// the post waits, and when GitHub refused it (then `post_error` says
        /// why).
        pub posted: bool,
        pub post_error: Option<String>,
    }
}

/// Most checks shown with a repository.
pub const RECENT_CHECKS: i64 = 20;

/// The repository's checks, newest first, at most [`RECENT_CHECKS`].
pub async fn recent_checks(pool: &PgPool, repo: RepoId) -> Result<Vec<RecentCheck>, RegistryError> {
    Ok(sqlx::query_as(
        "select sha, pull_request,
                case when not pending and last_error is null then conclusion end as conclusion,
                conclusion as decided, title, evaluated_at as at,
                (not pending and last_error is null) as posted, last_error as post_error
         from check_runs
         where repo_id = $1 order by evaluated_at desc, sha limit $2",
    )
    .bind(repo)
    .bind(RECENT_CHECKS)
    .fetch_all(pool)
    .await?)
}
