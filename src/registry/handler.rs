//! The controller's handler: makes the registry match what a source
//! observed about one repository (SPEC §3), in one transaction.

use std::sync::Arc;
use std::time::Duration;

use sqlx::{PgConnection, PgPool};

use super::entries::{self, Changes, Desired};
use super::guard::{DeletionGuard, Removal};
use super::repos::{self, RepoState};
use super::{events, holds, RegistryError, Status};
use crate::checks::default_branch;
use crate::config::MaxRemovals;
use crate::controller::{Claim, Enqueue, Failure, Handler, WorkQueue};
use crate::db::fence::{commit_if_held, ClaimFence};
use crate::db::queue::PgQueue;
use crate::source::{FileState, Observed, RepoId};

pub use super::repos::{ensure_known, ensure_known_with_node_ids, mark_error};

/// Applies observations to the registry; see SPEC §3 for what each
/// observation does to a repository's status and entries.
///
/// Generic over the queue only so it can be driven by any [`WorkQueue`]
/// whose claims its transactions can check ([`ClaimFence`]); the server
/// uses the PostgreSQL queue. Under the controller it commits only while
/// the worker's claim on the id is live (`crate::db::fence`).
pub struct RegistryHandler<Q = PgQueue> {
    pool: PgPool,
    queue: Arc<Q>,
    project_file: String,
    guard: DeletionGuard,
    /// Whether a reconcile stores the default branch's check run.
    checks: bool,
}

/// What one reconcile decided, before it is written.
struct Decision {
    state: RepoState,
    /// Whether the file (or its absence) was applied: moves `last_synced_at`.
    synced: bool,
    message: String,
    /// Names this repository gave up, which others may be waiting for.
    released: Vec<String>,
}

/// How a reconcile's transaction ended.
enum Ended {
    /// Committed: the outcome (the status it left, or `held`) and the
    /// names it released.
    Committed(&'static str, Vec<String>),
    /// Rolled back because the claim was no longer live at the commit.
    LeaseLost,
}

impl<Q> RegistryHandler<Q>
where
    Q: WorkQueue<Key = RepoId> + ClaimFence,
{
    /// `project_file` names the file in messages (`project.yaml`). The
    /// deletion guard starts with its defaults (10 or 10 % per hour).
    pub fn new(pool: PgPool, queue: Arc<Q>, project_file: impl Into<String>) -> Self {
        Self {
            pool,
            queue,
            project_file: project_file.into(),
            guard: DeletionGuard::default(),
            checks: false,
        }
    }

    /// Stores, with each reconcile that applies a new commit (or changes
    /// its status), the intent to post the commit's `Roster` check run.
    pub fn with_default_branch_checks(mut self, on: bool) -> Self {
        self.checks = on;
        self
    }

    /// Sets the deletion guard: at most `max_removals` removals per
    /// partition within `period` (the listing period); further removals are
    /// held (SPEC §3).
    pub fn with_deletion_guard(mut self, max_removals: MaxRemovals, period: Duration) -> Self {
        self.guard = DeletionGuard {
            max_removals,
            period,
        };
        self
    }

    /// Applies one observation in one transaction, which commits only while
    /// `claim` (when given) is live.
    async fn reconcile(
        &self,
        id: RepoId,
        observed: Observed,
        claim: Option<&Claim<RepoId>>,
    ) -> Result<Ended, RegistryError> {
        let mut tx = self.pool.begin().await?;
        let repo = match &observed {
            Observed::Removed { repo, .. } => repo.as_ref(),
            Observed::Present { repo, .. } => Some(repo),
        };
        let mut locked = repos::lock(&mut tx, id).await?;
        if let Some(info) = repo {
            record_name(Some(info.full_name()));
            if !locked.as_ref().is_some_and(|l| l.names_match(info)) {
                // Inserted as `pending`, or its names updated: a rename or
                // transfer keeps the id, hence the entries.
                repos::ensure_known(&mut *tx, &[(id, info.clone())]).await?;
                if locked.is_none() {
                    locked = repos::lock(&mut tx, id).await?;
                }
            }
        }
        let Some(repos::Locked {
            state: old,
            hold_id,
            ..
        }) = locked
        else {
            // Removed, and never known: there is nothing to remove.
            return Ok(Ended::Committed(Status::Removed.as_str(), Vec::new()));
        };
        match &observed {
            Observed::Present { .. } if hold_id.is_none() => {}
            Observed::Present { .. } => {
                // Seen again: whatever held its removal no longer applies.
                let cleared = holds::detach(&mut tx, &[id]).await?;
                for hold in cleared {
                    tracing::info!(repo = %id, hold, "deletion guard: hold {hold} cleared, its repositories came back");
                }
            }
            Observed::Removed { reason, .. } if old.status != Status::Removed.as_str() => {
                if let Removal::Held {
                    hold,
                    created,
                    reason: why,
                } = self.guard.removal(&mut tx, id).await?
                {
                    let message = format!("removal held by hold {hold} ({why}): {reason}");
                    events::record(&mut tx, id, "held", &message).await?;
                    if !commit_if_held(&*self.queue, tx, claim).await? {
                        return Ok(Ended::LeaseLost);
                    }
                    if created {
                        tracing::warn!(
                            repo = %id,
                            hold,
                            "deletion guard: {why}; further removals wait until \
                             POST /api/v1/holds/{hold}/release or the repositories come back",
                        );
                    } else {
                        tracing::info!(repo = %id, hold, "deletion guard: removal held ({why})");
                    }
                    return Ok(Ended::Committed("held", Vec::new()));
                }
            }
            Observed::Removed { .. } => {}
        }
        let check = match self.checks {
            true => {
                let sha = old.synced_sha.as_deref();
                let file = &self.project_file;
                default_branch::preview(&mut tx, id, &observed, file, &old.status, sha).await?
            }
            false => None,
        };
        let decision = self.decide(&mut tx, id, &old, observed).await?;
        let status = decision
            .state
            .status
            .parse::<Status>()
            .map_err(|e| RegistryError::Corrupt(e.to_string()))?;
        repos::write_state(&mut tx, id, &old, &decision.state, decision.synced).await?;
        events::record(&mut tx, id, status.as_str(), &decision.message).await?;
        if let Some(check) = check {
            let error = decision.state.error.as_deref();
            default_branch::record(&mut tx, check, status.as_str(), error).await?;
        }
        if !commit_if_held(&*self.queue, tx, claim).await? {
            return Ok(Ended::LeaseLost);
        }
        Ok(Ended::Committed(status.as_str(), decision.released))
    }

    async fn decide(
        &self,
        conn: &mut PgConnection,
        id: RepoId,
        old: &RepoState,
        observed: Observed,
    ) -> Result<Decision, RegistryError> {
        let file = &self.project_file;
        Ok(match observed {
            Observed::Removed { reason, .. } => {
                let deleted = entries::delete_all(conn, id).await?;
                Decision {
                    message: with_deleted(format!("removed: {reason}"), &deleted),
                    state: cleared(Status::Removed, Some(reason)),
                    synced: true,
                    released: deleted,
                }
            }
            Observed::Present {
                file: FileState::Absent,
                ..
            } => {
                let deleted = entries::delete_all(conn, id).await?;
                Decision {
                    message: with_deleted(format!("no {file}"), &deleted),
                    state: cleared(Status::NoFile, None),
                    synced: true,
                    released: deleted,
                }
            }
            Observed::Present {
                file: FileState::Unreadable { sha, message },
                ..
            } => {
                let at = sha
                    .as_deref()
                    .map(|s| format!(" {}", short(s)))
                    .unwrap_or_default();
                invalid(old, format!("invalid{at}: {message}"), message)
            }
            Observed::Present {
                file: FileState::Found { sha, bytes },
                ..
            } => match crate::project::parse(file, &bytes) {
                Err(problems) => {
                    let problems = problems.to_string().trim_end().to_string();
                    invalid(
                        old,
                        format!("invalid {}: {problems}", short(&sha)),
                        problems,
                    )
                }
                Ok(parsed) => {
                    let desired: Vec<Desired> =
                        parsed.projects.iter().map(Desired::from_project).collect();
                    let changes = entries::apply(conn, id, &sha, &desired).await?;
                    applied(&sha, changes)
                }
            },
        })
    }

    /// Wakes the repositories that wanted a name this one just released.
    async fn wake_waiting(&self, id: RepoId, released: &[String]) {
        if released.is_empty() {
            return;
        }
        let waiting: Result<Vec<RepoId>, sqlx::Error> = sqlx::query_scalar(
            "select id from repositories where conflicts && $1::text[] and id <> $2 order by id",
        )
        .bind(released)
        .bind(id)
        .fetch_all(&self.pool)
        .await;
        let result = match waiting {
            Ok(ids) if ids.is_empty() => return,
            Ok(ids) => self
                .queue
                .enqueue(ids.into_iter().map(Enqueue::fresh).collect())
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(error) = result {
            // The next periodic listing reconciles them anyway.
            tracing::warn!(repo = %id, %error, "could not wake repositories waiting for released names");
        }
    }
}

impl<Q> RegistryHandler<Q>
where
    Q: WorkQueue<Key = RepoId> + ClaimFence,
{
    /// What [`Handler::apply`] and [`Handler::apply_claimed`] share; every
    /// write commits only while `claim` (when given) is live.
    async fn run(
        &self,
        key: RepoId,
        state: Result<Observed, Failure>,
        claim: Option<&Claim<RepoId>>,
    ) -> Result<&'static str, Failure> {
        let observed = match state {
            Ok(observed) => observed,
            Err(failure) if failure.deferred => {
                // Nothing failed: the read waits for GitHub's budget.
                self.record_wait(key, &failure.message, claim).await;
                return Err(failure);
            }
            Err(failure) => {
                self.record_failure(key, &failure.message, claim).await;
                return Err(failure);
            }
        };
        match self.reconcile(key, observed, claim).await {
            Ok(Ended::Committed(outcome, released)) => {
                self.wake_waiting(key, &released).await;
                Ok(outcome)
            }
            Ok(Ended::LeaseLost) => Err(lease_lost(key)),
            Err(error) => {
                let message = error.to_string();
                self.record_failure(key, &message, claim).await;
                Err(Failure::new(message))
            }
        }
    }

    /// Shows a failure on the repository (status `error`), best effort:
    /// the database may be what failed. Like a reconcile, it commits only
    /// while the claim is live.
    async fn record_failure(&self, key: RepoId, message: &str, claim: Option<&Claim<RepoId>>) {
        let recorded = async {
            let mut tx = self.pool.begin().await?;
            let name = repos::record_error(&mut tx, key, message).await?;
            if name.is_none() {
                return Ok(None);
            }
            if !commit_if_held(&*self.queue, tx, claim).await? {
                tracing::warn!(repo = %key, "{}; the failure is not recorded", lease_lost(key));
                return Ok(None);
            }
            Ok::<_, RegistryError>(name)
        };
        match recorded.await {
            Ok(name) => record_name(name),
            Err(error) => tracing::warn!(repo = %key, %error, "could not record a failure"),
        }
    }

    /// Shows that the repository waits for GitHub's budget (status
    /// `pending` with the reset time), best effort, and like a failure only
    /// while the claim is live.
    async fn record_wait(&self, key: RepoId, message: &str, claim: Option<&Claim<RepoId>>) {
        let recorded = async {
            let mut tx = self.pool.begin().await?;
            let name = repos::record_waiting(&mut tx, key, message).await?;
            if name.is_none() {
                return Ok(None);
            }
            if !commit_if_held(&*self.queue, tx, claim).await? {
                tracing::warn!(repo = %key, "{}; the wait is not recorded", lease_lost(key));
                return Ok(None);
            }
            Ok::<_, RegistryError>(name)
        };
        match recorded.await {
            Ok(name) => record_name(name),
            Err(error) => tracing::warn!(repo = %key, %error, "could not record a wait"),
        }
    }
}

impl<Q> Handler for RegistryHandler<Q>
where
    Q: WorkQueue<Key = RepoId> + ClaimFence,
{
    type Key = RepoId;
    type State = Observed;

    /// Applies `state` without a claim to check: for callers that hold the
    /// id by other means (tests, one-off tools).
    async fn apply(
        &self,
        key: &RepoId,
        state: Result<Observed, Failure>,
    ) -> Result<&'static str, Failure> {
        self.run(*key, state, None).await
    }

    async fn apply_claimed(
        &self,
        claim: &Claim<RepoId>,
        state: Result<Observed, Failure>,
    ) -> Result<&'static str, Failure> {
        self.run(claim.key, state, Some(claim)).await
    }
}

/// The failure of an attempt whose claim was gone at its commit.
fn lease_lost(key: RepoId) -> Failure {
    Failure::new(format!(
        "lease on repository {key} lost before the commit; nothing written \
         (another worker may hold it now)"
    ))
}

/// Names the repository in the controller's reconcile span, so its log
/// lines say `owner/name` beside the id.
fn record_name(name: Option<String>) {
    if let Some(name) = name {
        tracing::Span::current().record("full_name", name);
    }
}

/// The state of a repository whose entries are all gone (`removed`, `no_file`).
fn cleared(status: Status, error: Option<String>) -> RepoState {
    RepoState {
        status: status.as_str().to_string(),
        error,
        synced_sha: None,
        attempts: 0,
        conflicts: Vec::new(),
    }
}

/// A file that breaks a rule: entries, `synced_sha` and conflicts are kept
/// as they were, so `synced_sha` still names the commit the entries reflect.
fn invalid(old: &RepoState, message: String, error: String) -> Decision {
    Decision {
        state: RepoState {
            status: Status::Invalid.as_str().to_string(),
            error: Some(error),
            attempts: 0,
            ..old.clone()
        },
        synced: false,
        message,
        released: Vec::new(),
    }
}

/// A valid file applied: `synced`, or `conflict` when a name was taken.
fn applied(sha: &str, changes: Changes) -> Decision {
    let mut parts = Vec::new();
    for (verb, names) in [
        ("created", &changes.created),
        ("updated", &changes.updated),
        ("deleted", &changes.deleted),
    ] {
        if !names.is_empty() {
            parts.push(format!("{verb} {}", names.join(", ")));
        }
    }
    let conflict_lines: Vec<String> = changes
        .conflicts
        .iter()
        .map(|c| format!("name \"{}\" is owned by {}", c.name, c.owner_repo))
        .collect();
    parts.extend(conflict_lines.iter().cloned());
    if parts.is_empty() {
        parts.push("unchanged".to_string());
    }
    let status = if conflict_lines.is_empty() {
        Status::Synced
    } else {
        Status::Conflict
    };
    Decision {
        message: format!("{status} {}: {}", short(sha), parts.join("; ")),
        state: RepoState {
            status: status.as_str().to_string(),
            error: (!conflict_lines.is_empty()).then(|| conflict_lines.join("\n")),
            synced_sha: Some(sha.to_string()),
            attempts: 0,
            conflicts: changes.conflicts.into_iter().map(|c| c.name).collect(),
        },
        synced: true,
        released: changes.deleted,
    }
}

fn with_deleted(message: String, deleted: &[String]) -> String {
    if deleted.is_empty() {
        message
    } else {
        format!("{message}; deleted {}", deleted.join(", "))
    }
}

/// The abbreviated commit people recognise.
fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;
    use entries::Conflict;

    #[test]
    fn applied_should_summarise_every_change_in_one_line() {
        let changes = Changes {
            created: vec!["checkout-api".into()],
            updated: vec!["checkout-worker".into()],
            deleted: vec!["old-name".into()],
            conflicts: Vec::new(),
        };
        let decision = applied("3f2a1b9c0d", changes);
        assert_eq!(
            decision.message,
            "synced 3f2a1b9: created checkout-api; updated checkout-worker; deleted old-name"
        );
        assert_eq!(decision.state.status, "synced");
        assert_eq!(decision.state.error, None);
        assert_eq!(decision.released, vec!["old-name".to_string()]);
    }

    #[test]
    fn applied_should_name_the_owner_of_each_conflict() {
        let changes = Changes {
            conflicts: vec![Conflict {
                name: "checkout-api".into(),
                owner_repo: "local/billing".into(),
            }],
            ..Changes::default()
        };
        let decision = applied("abc", changes);
        assert_eq!(decision.state.status, "conflict");
        assert_eq!(
            decision.state.error.as_deref(),
            Some("name \"checkout-api\" is owned by local/billing")
        );
        assert_eq!(decision.state.conflicts, vec!["checkout-api".to_string()]);
        assert_eq!(
            decision.message,
            "conflict abc: name \"checkout-api\" is owned by local/billing"
        );
    }

    #[test]
    fn applied_should_say_unchanged_when_nothing_moved() {
        assert_eq!(
            applied("3f2a1b9c0d", Changes::default()).message,
            "synced 3f2a1b9: unchanged"
        );
    }
}
