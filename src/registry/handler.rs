//! The controller's handler: makes the registry match what a source
//! observed about one repository (docs/contract.md#repository-statuses), in one transaction.

use std::sync::Arc;

use sqlx::PgPool;

use super::changes::append;
use super::decide::no_file_message;
use super::entry_relations::FileRules;
use super::guard::DeletionGuard;
use super::settled_pushes::Fingerprint;
use super::RegistryError;
use super::{repos, unchanged};
use crate::controller::{AppliedTogether, Claim, Enqueue, Failure, Handler, WorkQueue};
use crate::db::fence::ClaimFence;
use crate::db::queue::PgQueue;
use crate::directory::OwnersMode;
use crate::project::relations::RelationsMode;
use crate::project::ProjectFiles;
use crate::source::{Observed, RepoId};

/// Applies observations to the registry; see docs/contract.md#repository-statuses for what each
/// observation does to a repository's status and entries.
///
/// Generic over the queue only so it can be driven by any [`WorkQueue`]
/// whose claims its transactions can check ([`ClaimFence`]); the server
/// uses the PostgreSQL queue. Under the controller it commits only while
/// the worker's claim on the id is live (`crate::db::fence`).
pub struct RegistryHandler<Q = PgQueue> {
    pub(super) pool: PgPool,
    pub(super) queue: Arc<Q>,
    pub(super) project_file: String,
    /// The project file patterns, as the fingerprint names them.
    patterns: Vec<String>,
    /// What decides a state under these settings, recorded with it.
    pub(super) fingerprint: Fingerprint,
    pub(super) guard: DeletionGuard,
    /// Whether reconciles record their changes (always, but in the
    /// benchmark that measures what the log costs).
    pub(super) change_log: bool,
    /// Whether a reconcile stores the default branch's check run.
    pub(super) checks: bool,
    /// How the file's owners are checked (`ROSTER_OWNERS`).
    pub(super) owners: OwnersMode,
    /// How the file's dependencies are checked (`ROSTER_RELATIONS`).
    pub(super) relations: RelationsMode,
    /// Whether a read that changes nothing, or a first read without a
    /// file, is written in one statement (always, but in the tests that
    /// compare those statements with the long way).
    fast_paths: bool,
}

/// How a reconcile's transaction ended.
enum Ended {
    /// Committed: the outcome (the status it left, or `held`) and the
    /// names it released and created.
    Committed(&'static str, Vec<String>, Vec<String>),
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
        let project_file = project_file.into();
        Self {
            pool,
            queue,
            fingerprint: Fingerprint::new(&[&project_file]).with_owners(OwnersMode::default()),
            patterns: vec![project_file.clone()],
            project_file,
            guard: DeletionGuard::default(),
            change_log: true,
            checks: false,
            owners: OwnersMode::default(),
            relations: RelationsMode::default(),
            fast_paths: true,
        }
    }

    /// Reconciles every observation the long way, the reference the
    /// one-statement paths are compared with.
    #[cfg(test)]
    pub(super) fn the_long_way(mut self) -> Self {
        self.fast_paths = false;
        self
    }

    /// Checks owners under `owners`, which the recorded fingerprint names
    /// too: a change of the setting reads every repository again.
    pub fn with_owners(mut self, owners: OwnersMode) -> Self {
        self.owners = owners;
        self.fingerprint = self.fingerprint_now();
        self
    }

    /// Checks dependencies under `relations`; under `require` the
    /// recorded fingerprint names it too.
    pub fn with_relations(mut self, relations: RelationsMode) -> Self {
        self.relations = relations;
        self.fingerprint = self.fingerprint_now();
        self
    }

    /// Reads the files `files` matches: one path is named in messages as
    /// it is, and the patterns are part of the recorded fingerprint (the
    /// same as the free pushes' under the same settings).
    pub fn with_project_files(mut self, files: &ProjectFiles) -> Self {
        self.project_file = match files.single_path() {
            Some(path) => path.to_owned(),
            None => files.to_string(),
        };
        self.patterns = files.patterns().map(str::to_owned).collect();
        self.fingerprint = self.fingerprint_now();
        self
    }

    /// The rules files are applied under beside their own.
    pub(super) fn rules(&self) -> FileRules {
        FileRules {
            owners: self.owners,
            relations: self.relations,
        }
    }

    /// What the one-statement writes record (`unchanged`), `no_file` the
    /// message of a reconcile finding no file.
    fn recorded<'a>(&'a self, no_file: &'a str) -> unchanged::Recorded<'a> {
        unchanged::Recorded {
            fingerprint: self.fingerprint.as_str(),
            no_file,
            files: self.owners != OwnersMode::Require && self.relations != RelationsMode::Require,
        }
    }

    fn fingerprint_now(&self) -> Fingerprint {
        let patterns: Vec<&str> = self.patterns.iter().map(String::as_str).collect();
        Fingerprint::new(&patterns)
            .with_owners(self.owners)
            .with_relations(self.relations)
    }

    /// Stores, with each reconcile that applies a new commit (or changes
    /// its status), the intent to post the commit's `Roster` check run
    /// (docs/checks.md).
    pub fn with_default_branch_checks(mut self, on: bool) -> Self {
        self.checks = on;
        self
    }

    /// Sets the deletion guard, the one the sweep shares: past its bound
    /// per partition and period, removals are held (docs/contract.md#repository-statuses).
    pub fn with_guard(mut self, guard: DeletionGuard) -> Self {
        self.guard = guard;
        self
    }

    /// Stops recording changes. Only for the benchmark that measures what
    /// the change log adds to a reconcile: without it, the feed, history
    /// and notifications miss every change this handler makes.
    pub fn without_change_log(mut self) -> Self {
        self.change_log = false;
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
        // With a claim, the controller's batch tried this already
        // (`apply_together`).
        if self.fast_paths && claim.is_none() {
            let no_file = no_file_message(&self.project_file);
            let recorded = self.recorded(&no_file);
            let pool = &self.pool;
            if let Some(outcome) =
                unchanged::apply_one(pool, id, claim, &observed, recorded).await?
            {
                if let Observed::Present { repo, .. } = &observed {
                    record_name(Some(repo.full_name()));
                }
                return Ok(Ended::Committed(outcome, Vec::new(), Vec::new()));
            }
        }
        let mut tx = self.pool.begin().await?;
        let applied = self.long_way(&mut tx, id, observed, claim).await?;
        record_name(applied.name.clone());
        if !append::commit_with_changes(&*self.queue, tx, claim, &applied.changes).await? {
            return Ok(Ended::LeaseLost);
        }
        applied.log_held(id);
        Ok(Ended::Committed(
            applied.outcome,
            applied.released,
            applied.created,
        ))
    }

    /// Wakes the repositories left invalid for want of a project this one
    /// just created (under `ROSTER_RELATIONS=require`); their next push or
    /// listing reads them anyway.
    pub(super) async fn wake_dependents(&self, id: RepoId, created: &[String]) {
        if created.is_empty() {
            return;
        }
        let waiting = repos::waiting_for_projects(&self.pool, created, id).await;
        self.wake(id, waiting, "created projects").await;
    }

    /// Wakes the repositories that wanted a name this one just released;
    /// the next periodic listing reconciles them anyway.
    pub(super) async fn wake_waiting(&self, id: RepoId, released: &[String]) {
        if released.is_empty() {
            return;
        }
        let waiting = repos::waiting_for(&self.pool, released, id).await;
        self.wake(id, waiting, "released names").await;
    }

    /// Enqueues `waiting`, best effort: a failure is logged, naming `what`
    /// they wait for.
    async fn wake(&self, id: RepoId, waiting: Result<Vec<RepoId>, sqlx::Error>, what: &str) {
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
            tracing::warn!(repo = %id, %error, "could not wake repositories waiting for {what}");
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
                self.record_wait(key, &failure.message(), claim).await;
                return Err(failure);
            }
            Err(failure) => {
                self.record_failure(key, &failure.message(), claim).await;
                return Err(failure);
            }
        };
        match self.reconcile(key, observed, claim).await {
            Ok(Ended::Committed(outcome, released, created)) => {
                self.wake_waiting(key, &released).await;
                if self.relations == RelationsMode::Require {
                    self.wake_dependents(key, &created).await;
                }
                Ok(outcome)
            }
            Ok(Ended::LeaseLost) => Err(lease_lost(key)),
            Err(RegistryError::ReadAgain) => self.read_again(key).await,
            Err(error) => {
                self.record_failure(key, &error.to_string(), claim).await;
                Err(Failure::new(error))
            }
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

    /// The batch's reads that change nothing but times, and its first
    /// reads without a file, in a few statements (`unchanged_many`); the
    /// keys left take the long way, without trying those again.
    async fn apply_together(
        &self,
        claims: &[Claim<RepoId>],
        states: &[Result<Observed, Failure>],
    ) -> Vec<Option<AppliedTogether>> {
        if !self.fast_paths {
            return vec![None; claims.len()];
        }
        let no_file = no_file_message(&self.project_file);
        let mut together =
            unchanged::apply(&self.pool, claims, states, self.recorded(&no_file)).await;
        self.long_way_together(claims, states, &mut together).await;
        together
    }
}

/// The failure of an attempt whose claim was gone at its commit.
pub(super) fn lease_lost(key: RepoId) -> Failure {
    Failure::new(RegistryError::LeaseLost(key))
}

/// Names the repository in the controller's reconcile span, so its log
/// lines say `owner/name` beside the id.
pub(super) fn record_name(name: Option<String>) {
    if let Some(name) = name {
        tracing::Span::current().record("full_name", name);
    }
}
