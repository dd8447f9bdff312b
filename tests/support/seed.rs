//! Seeds a registry the way production writes it: a repository is made
//! known as a listing does, then the registry's own handler reconciles what
//! a source observed (a file, no file, a failed read, a removal), so its
//! status, entries and timeline are the ones a server would show. Queue
//! rows come from the queue itself (enqueue, claim, fail).
//!
//! Only what takes time (a sync minutes ago, a timeline of days, an id
//! waiting in the queue) or what a file's rules refuse goes through the
//! narrow `testing` functions of the tables' owners.

use std::sync::Arc;
use std::time::Duration;

use roster::controller::{Enqueue, Failure, Handler, ListingSchedule, WorkQueue};
use roster::db::queue::{self, PgQueue};
use roster::project::{Link, Project};
use roster::registry::testing::{self as registry, PastEvent};
use roster::registry::{ensure_known, RegistryHandler};
use roster::source::{FileState, Observed, RepoId, RepoInfo};
use sqlx::PgPool;

use crate::registry as registry_parts;

/// The claims the seed takes at once while failing an id (more than any
/// seed queues).
const MAX_CLAIMS: usize = 1000;

/// Writes a database's registry and queue through their owners.
pub struct Seed {
    pool: PgPool,
    queue: Arc<PgQueue>,
    handler: RegistryHandler,
}

impl Seed {
    /// A seed of the database behind `pool`.
    pub fn new(pool: &PgPool) -> Self {
        let queue = registry_parts::queue(pool);
        let handler = registry_parts::handler(pool, queue.clone());
        Self {
            pool: pool.clone(),
            queue,
            handler,
        }
    }

    /// Makes `owner/name` known as repository `id`, `pending` until a
    /// reconcile; its default branch is `main`.
    pub async fn repo(&self, id: i64, owner: &str, name: &str) -> Repo<'_> {
        self.repo_as(id, registry_parts::repo_info(owner, name))
            .await
    }

    /// Makes the repository `info` describes known as `id`, `pending`
    /// until a reconcile (a GitHub one: `registry::github_repo`).
    pub async fn repo_as(&self, id: i64, info: RepoInfo) -> Repo<'_> {
        let id = RepoId(id);
        ensure_known(&self.pool, &[(id, info.clone())])
            .await
            .expect("make the repository known");
        Repo {
            seed: self,
            id,
            info,
        }
    }

    /// Puts `id` in the queue, ready for a worker, as if enqueued `waited` ago.
    pub async fn queued(&self, id: i64, waited: Duration) {
        let id = RepoId(id);
        self.queue
            .enqueue(vec![Enqueue::fresh(id)])
            .await
            .expect("enqueue");
        queue::testing::backdate_enqueued(&self.pool, id, waited)
            .await
            .expect("backdate the enqueue");
    }

    /// Puts `id` in the queue after `attempts` (at least one) failed tries,
    /// each failing with `error`, the next try due in `retry_in`.
    pub async fn retrying(&self, id: i64, attempts: u32, error: &str, retry_in: Duration) {
        assert!(attempts > 0, "a retry follows a failed attempt");
        let id = RepoId(id);
        self.queue
            .enqueue(vec![Enqueue::fresh(id)])
            .await
            .expect("enqueue");
        for attempt in 1..=attempts {
            let delay = if attempt == attempts {
                retry_in
            } else {
                Duration::ZERO
            };
            // Other ready ids may come first: take them all, give them back.
            let claims = self
                .queue
                .claim_many("seed", MAX_CLAIMS)
                .await
                .expect("claim");
            let mut failed = false;
            for claim in claims {
                if claim.key == id {
                    self.queue.fail(&claim, error, delay).await.expect("fail");
                    failed = true;
                } else {
                    self.queue.release(&claim).await.expect("release");
                }
            }
            assert!(failed, "repository {id} was not ready to be claimed");
        }
    }

    /// Runs the periodic listing's bookkeeping: it started `started_ago`
    /// and finished `finished_ago`.
    pub async fn listing_ran(&self, started_ago: Duration, finished_ago: Duration) {
        let taken = self
            .queue
            .take_listing(Duration::ZERO)
            .await
            .expect("take the listing");
        assert!(taken, "the listing is due");
        self.queue
            .listing_finished()
            .await
            .expect("finish the listing");
        queue::testing::backdate_listing(&self.pool, started_ago, finished_ago)
            .await
            .expect("backdate the listing");
    }
}

/// A known repository of a [`Seed`]; each step reconciles or dates it.
pub struct Repo<'a> {
    seed: &'a Seed,
    id: RepoId,
    info: RepoInfo,
}

impl Repo<'_> {
    /// Reconciles `observed`, which must leave the repository `expected`.
    async fn reconcile(self, observed: Observed, expected: &str) -> Self {
        let outcome = self.seed.handler.apply(&self.id, Ok(observed)).await;
        assert_eq!(
            outcome.as_deref().map_err(|f| f.message()),
            Ok(expected),
            "repository {} ({})",
            self.id,
            self.info.full_name()
        );
        self
    }

    fn present(&self, file: FileState) -> Observed {
        Observed::Present {
            repo: self.info.clone(),
            file,
        }
    }

    /// Applies the project file `yaml` at commit `sha`, which must leave
    /// the repository `synced`.
    pub async fn synced(self, sha: &str, yaml: &str) -> Self {
        self.found(sha, yaml, "synced").await
    }

    /// Applies the project file `yaml` at commit `sha`, of which a name is
    /// another repository's: `conflict`.
    pub async fn in_conflict(self, sha: &str, yaml: &str) -> Self {
        self.found(sha, yaml, "conflict").await
    }

    async fn found(self, sha: &str, yaml: &str, expected: &str) -> Self {
        let file = FileState::Found {
            sha: sha.to_owned(),
            bytes: yaml.as_bytes().to_vec(),
        };
        let observed = self.present(file);
        self.reconcile(observed, expected).await
    }

    /// Observes a project file that cannot be used, `message` saying why
    /// (the repository's error, word for word): `invalid`, entries kept.
    pub async fn invalid(self, message: &str) -> Self {
        let file = FileState::Unreadable {
            sha: None,
            message: message.to_owned(),
        };
        let observed = self.present(file);
        self.reconcile(observed, "invalid").await
    }

    /// Observes no project file: `no_file`, entries gone.
    pub async fn no_file(self) -> Self {
        let observed = self.present(FileState::Absent { sha: None });
        self.reconcile(observed, "no_file").await
    }

    /// Observes the repository gone for `reason`: `removed`, entries gone.
    pub async fn removed(self, reason: &str) -> Self {
        let observed = Observed::Removed {
            repo: Some(self.info.clone()),
            reason: reason.to_owned(),
        };
        self.reconcile(observed, "removed").await
    }

    /// A read that failed with `message`: `error`, one attempt more,
    /// entries kept.
    pub async fn failed(self, message: &str) -> Self {
        let outcome = self
            .seed
            .handler
            .apply(&self.id, Err(Failure::scripted(message)))
            .await;
        assert!(outcome.is_err(), "a failure stays a failure: {outcome:?}");
        self
    }

    /// Writes `projects` as its entries at commit `sha` without the file's
    /// rules, for data they refuse; the status stays as it was.
    pub async fn unchecked_entries(self, sha: &str, projects: &[Project]) -> Self {
        registry::write_entries_unchecked(&self.seed.pool, self.id, sha, projects)
            .await
            .expect("write the entries");
        self
    }

    /// Dates its last sync `ago`.
    pub async fn last_synced(self, ago: Duration) -> Self {
        registry::backdate_last_sync(&self.seed.pool, self.id, ago)
            .await
            .expect("backdate the sync");
        self
    }

    /// Dates its entries: created `created_ago`, last changed `updated_ago`.
    pub async fn entries_dated(self, created_ago: Duration, updated_ago: Duration) -> Self {
        registry::backdate_entries(&self.seed.pool, self.id, created_ago, updated_ago)
            .await
            .expect("backdate the entries");
        self
    }

    /// Replaces its timeline with `events`, oldest first.
    pub async fn timeline(self, events: &[PastEvent<'_>]) -> Self {
        registry::replace_events(&self.seed.pool, self.id, events)
            .await
            .expect("write the timeline");
        self
    }
}

/// A single event for [`Repo::timeline`]; set `count` for a repeated one.
pub fn event<'a>(kind: &'a str, message: &'a str, ago: Duration) -> PastEvent<'a> {
    PastEvent {
        kind,
        message,
        count: 1,
        ago,
    }
}

/// A link of a project for [`Repo::unchecked_entries`].
pub fn link(title: &str, url: &str) -> Link {
    Link {
        title: title.to_owned(),
        url: url.to_owned(),
    }
}
