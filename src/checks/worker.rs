//! The checks loop: evaluates the waiting requests and posts the pending
//! runs, woken by `NOTIFY roster_checks` (the webhook's and the
//! reconcile's commits send it), polling once a second otherwise.
//!
//! Both tables are claimed with `FOR UPDATE SKIP LOCKED` and a lease, so
//! replicas share the work and a crashed replica's claims are taken again
//! after the lease. Each evaluation and each post is bounded in time: a
//! GitHub or database that never answers cannot hold the loop.

use std::future::Future;
use std::time::{Duration, SystemTime};

use futures_util::future::join_all;
use sqlx::postgres::PgListener;
use sqlx::PgPool;

use super::budget::ChecksBudget;
use super::failure::Failure;
use super::mode::ChecksMode;
use super::post::{post, Posted};
use crate::controller::Backoff;
use crate::directory::OwnersMode;
use crate::github::checks_api::{said_binary, ChecksApi};
use crate::github::rate_limit::Resource;
use crate::project::relations::RelationsMode;
use crate::project::verdict::{evaluate, HeadFile, Parsed, Verdict};
use crate::project::ProjectFiles;
use crate::registry::check_records::check_requests::{self, ClaimedRequest};
use crate::registry::check_records::check_runs::{self, CheckIntent};
use crate::registry::check_records::owner_check::OwnerCheck;
use crate::registry::check_records::read_only::RegistryReader;
use crate::registry::check_records::relation_check::{CheckedFile, Reading};
use crate::source::InstallationId;

/// The channel the checks tables' writers notify.
pub const CHANNEL: &str = "roster_checks";

/// Claims taken per pass, per kind.
const BATCH: i64 = 32;
/// How long a claim lasts; also the bound on one evaluation or post.
const LEASE: Duration = Duration::from_secs(60);
const STEP_TIMEOUT: Duration = Duration::from_secs(45);
/// Evaluations of one request before it is given up (about an hour of
/// backoff): a repository GitHub no longer shows cannot be checked.
const MAX_ATTEMPTS: i32 = 20;
/// Polling when no notification arrives.
const POLL: Duration = Duration::from_secs(1);

/// Evaluates and posts check runs; see the module doc.
#[derive(Debug, Clone)]
pub struct ChecksWorker {
    pub pool: PgPool,
    pub api: ChecksApi,
    pub mode: ChecksMode,
    pub backoff: Backoff,
    /// What checks may spend of GitHub's budget.
    pub budget: ChecksBudget,
    /// How the file's owners are checked (`ROSTER_OWNERS`).
    pub owners: OwnersMode,
    /// How the file's dependencies are checked (`ROSTER_RELATIONS`).
    pub relations: RelationsMode,
    /// The project files (`ROSTER_PROJECT_FILES`): with patterns, a pull
    /// request's changed files are listed and each touched one previewed.
    pub files: ProjectFiles,
}

impl ChecksWorker {
    pub fn new(pool: PgPool, api: ChecksApi, mode: ChecksMode) -> Self {
        Self {
            pool,
            api,
            mode,
            backoff: Backoff::default(),
            budget: ChecksBudget::default(),
            owners: OwnersMode::default(),
            relations: RelationsMode::default(),
            files: ProjectFiles::default(),
        }
    }

    /// Previews the files `files` matches (several with patterns).
    pub fn with_files(mut self, files: ProjectFiles) -> Self {
        self.files = files;
        self
    }

    /// Checks the file's owners under `owners` (`ROSTER_OWNERS`).
    pub fn with_owners(mut self, owners: OwnersMode) -> Self {
        self.owners = owners;
        self
    }

    /// Checks the file's dependencies under `relations` (`ROSTER_RELATIONS`).
    pub fn with_relations(mut self, relations: RelationsMode) -> Self {
        self.relations = relations;
        self
    }

    /// Runs until `stop` completes.
    pub async fn run(self, stop: impl Future<Output = ()>) {
        tokio::pin!(stop);
        let mut listener = subscribe(&self.pool).await;
        loop {
            let busy = tokio::select! {
                _ = &mut stop => return,
                busy = self.pass() => busy,
            };
            if busy {
                continue;
            }
            let woken = async {
                match listener.as_mut() {
                    Some(l) => l.recv().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                _ = &mut stop => return,
                ok = woken => if !ok { listener = None; },
                _ = tokio::time::sleep(POLL) => {
                    if listener.is_none() {
                        listener = subscribe(&self.pool).await;
                    }
                }
            }
        }
    }

    /// One pass over both tables; whether it found work (then another
    /// pass follows at once).
    pub async fn pass(&self) -> bool {
        if self.mode == ChecksMode::Off {
            if let Err(error) = check_requests::discard_requests(&self.pool).await {
                tracing::warn!(%error, "could not drop check requests");
            }
            return false;
        }
        let spacing = self.budget.evaluation_spacing;
        let requests = check_requests::claim_requests(&self.pool, BATCH, LEASE, spacing)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "could not claim check requests");
                Vec::new()
            });
        join_all(requests.iter().map(|r| self.evaluate_bounded(r))).await;
        let posts = check_runs::claim_posts(&self.pool, BATCH, LEASE)
            .await
            .unwrap_or_else(|error| {
                tracing::warn!(%error, "could not claim check runs to post");
                Vec::new()
            });
        join_all(posts.iter().map(|due| self.post_bounded(due))).await;
        !(requests.is_empty() && posts.is_empty())
    }

    async fn post_bounded(&self, due: &check_runs::DuePost) {
        if let Some(until) = self.held(due.intent.installation_id, Resource::Core).await {
            let wait = until_then(until);
            if let Err(error) = check_runs::defer_post(&self.pool, due, wait).await {
                tracing::warn!(%error, "could not put a check run's post off");
            }
            return;
        }
        let posted = tokio::time::timeout(
            STEP_TIMEOUT,
            post(&self.pool, &self.api, &self.backoff, &self.budget, due),
        )
        .await;
        match posted {
            Ok(Ok(Posted::Done { .. } | Posted::Denied | Posted::Retry(_))) => {}
            Ok(Err(error)) => tracing::warn!(%error, "could not record a check run's post"),
            Err(_) => tracing::warn!(repo = %due.intent.repo_id, "posting a check run timed out"),
        }
    }

    async fn evaluate_bounded(&self, request: &ClaimedRequest) {
        let result = tokio::time::timeout(STEP_TIMEOUT, self.evaluate(request)).await;
        let failure = match result {
            Ok(Ok(())) => return,
            Ok(Err(failure)) => failure,
            Err(_) => Failure::Other("the evaluation timed out".into()),
        };
        let (message, wait) = match failure {
            Failure::Held(until) => {
                let deferred =
                    check_requests::defer_request(&self.pool, request, until_then(until)).await;
                if let Err(error) = deferred {
                    tracing::warn!(%error, "could not put a check evaluation off");
                }
                return;
            }
            Failure::RateLimited(message, wait) => (message, wait),
            Failure::Other(message) => {
                let attempt = u32::try_from(request.attempts).unwrap_or(0) + 1;
                (message, self.backoff.delay(attempt))
            }
        };
        tracing::warn!(repo = %request.repo_id, key = %request.key, %message, "check evaluation failed");
        let recorded = if request.attempts + 1 >= MAX_ATTEMPTS {
            tracing::warn!(repo = %request.repo_id, key = %request.key, "check evaluation given up");
            check_requests::answer_request(&self.pool, request, None).await
        } else {
            check_requests::request_failed(&self.pool, request, &message, wait).await
        };
        if let Err(error) = recorded {
            tracing::warn!(%error, "could not record a failed check evaluation");
        }
    }

    /// Reads the file at the request's head, evaluates it against a
    /// read-only snapshot of the registry, and stores the intent while
    /// ending the request.
    async fn evaluate(&self, request: &ClaimedRequest) -> Result<(), Failure> {
        if let Some(until) = self.held(request.installation_id, Resource::Graphql).await {
            return Err(Failure::Held(until));
        }
        let verdict = match self.files.single_path() {
            Some(_) => self.evaluate_one(request).await?,
            None => {
                if let Some(until) = self.held(request.installation_id, Resource::Core).await {
                    return Err(Failure::Held(until));
                }
                let several = super::several::Several {
                    api: &self.api,
                    budget: &self.budget,
                    pool: &self.pool,
                    files: &self.files,
                    owners: self.owners,
                    relations: self.relations,
                };
                several.evaluate(request).await?
            }
        };
        self.store(request, verdict).await
    }

    /// The verdict on the one project file at the request's head.
    async fn evaluate_one(&self, request: &ClaimedRequest) -> Result<Verdict, Failure> {
        let (installation, repo) = (request.installation_id, (&*request.owner, &*request.name));
        let mut head = self
            .api
            .file_at(installation, repo.0, repo.1, &request.head_sha)
            .await
            .map_err(Failure::from)?;
        let project_file = self.api.project_file().to_owned();
        if said_binary(&head) {
            // A NUL makes GitHub call the file binary: its bytes tell where.
            if let Some(until) = self.held(installation, Resource::Core).await {
                return Err(Failure::Held(until));
            }
            let sha = &request.head_sha;
            if let Some(bytes) = self
                .api
                .text_at(installation, repo, sha, &project_file)
                .await
            {
                head = HeadFile::Found(bytes);
            }
        }
        let parsed = Parsed::read(&project_file, head);
        let mut reader = RegistryReader::begin(&self.pool)
            .await
            .map_err(Failure::db)?;
        let names = parsed.names();
        let snapshot = if request.public {
            reader.snapshot_for_public(request.repo_id, &names).await
        } else {
            reader.snapshot(request.repo_id, &names).await
        }
        .map_err(Failure::db)?;
        let mut verdict = evaluate(&project_file, &request.head_sha, &parsed, &snapshot);
        let owners = OwnerCheck {
            installation: request.installation_id,
            project_file: &project_file,
            mode: self.owners,
            public_pull_request: request.public,
        };
        reader
            .add_owner_notes(&owners, &parsed, &snapshot.entries, &mut verdict)
            .await
            .map_err(Failure::db)?;
        let paths = [project_file.clone()];
        let reading = Reading {
            repo: request.repo_id,
            paths: &paths,
            public: request.public,
        };
        let files = [CheckedFile {
            path: &project_file,
            parsed: &parsed,
        }];
        let registered = &snapshot.entries;
        let relations = self.relations;
        reader
            .finish_with_relation_notes(relations, &reading, &files, registered, verdict)
            .await
            .map_err(Failure::db)
    }
}

impl ChecksWorker {
    /// Stores the intent of `verdict` while ending the request, then posts
    /// it.
    async fn store(&self, request: &ClaimedRequest, verdict: Verdict) -> Result<(), Failure> {
        let intent = CheckIntent {
            repo_id: request.repo_id,
            sha: request.head_sha.clone(),
            pull_request: request.pull_request,
            installation_id: request.installation_id,
            owner: request.owner.clone(),
            name: request.name.clone(),
            conclusion: verdict.conclusion.to_owned(),
            title: verdict.title,
            summary: verdict.summary,
            annotations: serde_json::Value::Array(verdict.annotations),
        };
        check_requests::answer_request(&self.pool, request, Some(&intent))
            .await
            .map_err(Failure::db)?;
        // Post it now; a post that cannot be claimed (another replica has
        // it, or it waits for a backoff) is left to the passes.
        let due = check_runs::claim_post_of(&self.pool, request.repo_id, &request.head_sha, LEASE)
            .await
            .map_err(Failure::db)?;
        if let Some(due) = due {
            self.post_bounded(&due).await;
        }
        Ok(())
    }
}

impl ChecksWorker {
    /// When checks may spend `resource` of `installation` again, if they
    /// must leave it to the sync now (see [`ChecksBudget::held_until`]).
    pub(super) async fn held(
        &self,
        installation: InstallationId,
        resource: Resource,
    ) -> Option<SystemTime> {
        if !self.budget.reserve {
            return None;
        }
        let repositories = crate::registry::count_of_installation(&self.pool, installation)
            .await
            .unwrap_or(0);
        self.budget
            .held_until(&self.api, installation, resource, repositories)
    }
}

/// Time from now until `at` (at least a second, so a claim is not taken
/// again at once).
fn until_then(at: SystemTime) -> Duration {
    at.duration_since(SystemTime::now())
        .unwrap_or_default()
        .max(Duration::from_secs(1))
}

async fn subscribe(pool: &PgPool) -> Option<PgListener> {
    let subscribed = async {
        let mut listener = PgListener::connect_with(pool).await?;
        listener.listen(CHANNEL).await?;
        Ok::<_, sqlx::Error>(listener)
    };
    match tokio::time::timeout(Duration::from_secs(10), subscribed).await {
        Ok(Ok(listener)) => Some(listener),
        Ok(Err(error)) => {
            tracing::warn!(%error, "checks: cannot listen for notifications; polling");
            None
        }
        Err(_) => None,
    }
}
