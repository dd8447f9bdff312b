//! What each webhook event does: make the repositories it names known, and
//! enqueue their ids (or ask for a listing). Never more: the reconcile reads
//! GitHub afresh and decides; a webhook never deletes anything by itself.

use std::collections::BTreeSet;

use sqlx::PgConnection;

use super::event::{DirectoryChange, PayloadRepo, RequestedCheck, WebhookEvent};
use super::free_push::FreePushes;
pub use super::plan::{plan, Plan, MAX_ADDED_READ_DIRECTLY, MAX_NAMED_REPOS};
use crate::controller::{Enqueue, QueueError, Trigger};
use crate::db::queue::PgQueue;
use crate::directory::db as directory_db;
use crate::registry::{check_requests, check_runs, settle_free_pushes, FreePushRows};
use crate::registry::{
    ensure_known_with_node_ids, known_ids, record_node_ids, tracked_ids, RegistryError,
};
use crate::source::{Partition, RepoId, RepoInfo};

/// What intake did, for the answer and the delivery log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Intake {
    /// How many ids were enqueued (each once).
    pub enqueued: usize,
    pub listing_requested: bool,
    /// Set when nothing was enqueued and no listing requested.
    pub ignored: Option<String>,
}

impl Intake {
    fn ignored(reason: String) -> Self {
        Self {
            enqueued: 0,
            listing_requested: false,
            ignored: Some(reason),
        }
    }

    /// What an event that enqueues `ids` (and asks for a listing, or
    /// checks) did.
    fn of(ids: &BTreeSet<RepoId>, listing: bool, no_checks: bool) -> Self {
        Self {
            enqueued: ids.len(),
            listing_requested: listing,
            ignored: (ids.is_empty() && !listing && no_checks)
                .then(|| "no repository of this installation is tracked".to_owned()),
        }
    }

    /// `queued` or `ignored`: the delivery's outcome.
    pub fn outcome(&self) -> &'static str {
        if self.ignored.is_some() {
            "ignored"
        } else {
            "queued"
        }
    }
}

/// Why an event could not be persisted; the delivery answers 503 so that
/// GitHub records a failure that a redelivery recovers.
#[derive(Debug, thiserror::Error)]
pub enum IntakeError {
    #[error(transparent)]
    Registry(#[from] RegistryError),
    #[error(transparent)]
    Queue(#[from] QueueError),
    #[error("webhook intake database: {0}")]
    Database(#[from] sqlx::Error),
}

/// Writes what `event` asks for on `conn`, the caller's transaction: the
/// caller adds its own record, commits once, and only then calls
/// [`PgQueue::enqueued`] with `enqueued` so workers wake to rows they can
/// see. A rolled-back transaction leaves nothing enqueued.
pub async fn apply(
    conn: &mut PgConnection,
    queue: &PgQueue,
    event: &WebhookEvent,
) -> Result<Intake, IntakeError> {
    let Batch { mut intakes, .. } = apply_batch(conn, queue, &[event], None).await?;
    Ok(intakes.pop().unwrap_or(Intake {
        enqueued: 0,
        listing_requested: false,
        ignored: None,
    }))
}

/// What a group of deliveries wrote together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch {
    /// One per event, in the order given.
    pub intakes: Vec<Intake>,
    /// Distinct ids enqueued by the whole group (for [`PgQueue::enqueued`]).
    pub enqueued: usize,
}

/// Writes what every event of a group asks for with one statement per kind
/// of write (repositories made known, pushes decided without a read, ids
/// enqueued, a listing requested), on the caller's transaction. Each event
/// still gets its own [`Intake`], as if it had been written alone. With
/// `free`, a repository whose pushes left the project file alone has its
/// recorded commit moved instead of being enqueued, when the registry
/// recorded their `before` ([`FreePushes`]).
pub async fn apply_batch(
    conn: &mut PgConnection,
    queue: &PgQueue,
    events: &[&WebhookEvent],
    free: Option<&FreePushes>,
) -> Result<Batch, IntakeError> {
    let mut known = Vec::new();
    // Every id each event asks for, with its trigger; the enqueue merges
    // an id named twice (the most telling trigger wins).
    let mut to_enqueue: Vec<Enqueue<RepoId>> = Vec::new();
    let mut listing = false;
    // The latest moment a running listing must have started after to have
    // seen every event that asks for one; `None` once one asks regardless.
    let mut seen_after = Some(i64::MIN);
    let mut checks = Vec::new();
    let mut intakes = Vec::with_capacity(events.len());
    for event in events {
        let plan = plan(event);
        if let Some(reason) = plan.ignored {
            intakes.push(Intake::ignored(reason));
            continue;
        }
        let mut ids: BTreeSet<RepoId> = plan.enqueue.into_iter().collect();
        if let Some(installation) = plan.tracked_of_installation {
            let partition = Partition::Installation(installation);
            ids.extend(tracked_ids(&mut *conn, partition).await?);
        }
        if let Some(installation) = plan.permissions_changed {
            check_runs::clear_denied(&mut *conn, installation).await?;
        }
        if let Some(change) = &plan.directory {
            intakes.push(ask_directory(&mut *conn, change).await?);
            continue;
        }
        intakes.push(Intake::of(&ids, plan.listing, plan.checks.is_empty()));
        checks.extend(plan.checks.into_iter().map(check_request));
        known.extend(plan.known);
        let trigger = trigger_of(event);
        to_enqueue.extend(ids.into_iter().map(|id| Enqueue::because(id, trigger)));
        if plan.listing {
            listing = true;
            seen_after = seen_after
                .zip(plan.listing_seen_after)
                .map(|(a, b)| a.max(b));
        }
    }
    make_known(conn, &known).await?;
    if let Some(free) = free {
        let moves = free.moves(events);
        let rows = FreePushRows::new(&moves, free.fingerprint());
        let settled = settle_free_pushes(&mut *conn, &rows).await?;
        to_enqueue.retain(|e| !settled.contains(&e.key));
    }
    let enqueued = queue.enqueue_in(conn, to_enqueue).await?;
    match (listing, seen_after) {
        (false, _) => {}
        (true, Some(since)) => {
            queue
                .request_listing_unless_started_after_in(&mut *conn, since)
                .await?
        }
        (true, None) => queue.request_listing_in(&mut *conn).await?,
    }
    check_requests::request_checks(conn, &checks).await?;
    Ok(Batch {
        intakes,
        enqueued: usize::try_from(enqueued).unwrap_or(usize::MAX),
    })
}

/// A group's writes when none of its events needs a read first (pushes,
/// repository events: their payloads say all a listing would), decided
/// without I/O, so that the group is written in one statement.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Direct {
    /// One per event, as [`apply_batch`] would give.
    pub intakes: Vec<Intake>,
    /// Repositories to make known, each fully described by its payload.
    pub known: Vec<PayloadRepo>,
    pub enqueue: Vec<Enqueue<RepoId>>,
}

/// The writes of `events` when they need no read first; `None` when one
/// does (an installation's tracked repositories, a partial payload, a
/// listing, checks): those go through [`apply_batch`] in a transaction.
pub fn direct(events: &[&WebhookEvent]) -> Option<Direct> {
    let mut direct = Direct {
        intakes: Vec::with_capacity(events.len()),
        known: Vec::new(),
        enqueue: Vec::new(),
    };
    for event in events {
        let plan = plan(event);
        if let Some(reason) = plan.ignored {
            direct.intakes.push(Intake::ignored(reason));
            continue;
        }
        let needs_more = plan.tracked_of_installation.is_some()
            || plan.permissions_changed.is_some()
            || plan.directory.is_some()
            || plan.listing
            || !plan.checks.is_empty()
            || plan
                .known
                .iter()
                .any(|r| !r.info.owner.is_empty() && !is_complete(&r.info));
        if needs_more {
            return None;
        }
        let ids: BTreeSet<RepoId> = plan.enqueue.into_iter().collect();
        direct.intakes.push(Intake::of(&ids, false, true));
        let named = plan.known.into_iter().filter(|r| !r.info.owner.is_empty());
        direct.known.extend(named);
        let trigger = trigger_of(event);
        direct
            .enqueue
            .extend(ids.into_iter().map(|id| Enqueue::because(id, trigger)));
    }
    Some(direct)
}

/// Asks for a re-read of an organisation's directory (after recording its
/// new login, for a rename). An organisation Roster does not know is left
/// to its installation's listing, which reads it whole.
async fn ask_directory(
    conn: &mut PgConnection,
    change: &DirectoryChange,
) -> Result<Intake, IntakeError> {
    let mut known = true;
    if change.renamed {
        known = directory_db::rename_in(&mut *conn, change.org_id, &change.login).await?;
    }
    if known && (change.teams || change.members) {
        known =
            directory_db::request_read_in(&mut *conn, change.org_id, change.teams, change.members)
                .await?;
    }
    Ok(if known {
        Intake {
            enqueued: 0,
            listing_requested: false,
            ignored: None,
        }
    } else {
        Intake::ignored(format!(
            "organisation {} ({}) is not known to Roster: its installation's listing reads its teams",
            change.login, change.org_id
        ))
    })
}

/// A check a payload asks for, as the registry stores it.
fn check_request(check: RequestedCheck) -> check_requests::CheckRequest {
    check_requests::CheckRequest {
        repo_id: check.repo_id,
        pull_request: check.pull_request,
        head_sha: check.head_sha,
        installation_id: check.installation_id,
        owner: check.owner,
        name: check.name,
        public: check.public,
    }
}

/// A push to the default branch is the most telling event trigger.
fn trigger_of(event: &WebhookEvent) -> Trigger {
    match event {
        WebhookEvent::DefaultBranchPush { .. } => Trigger::Push,
        _ => Trigger::Event,
    }
}

/// Makes the repositories visible as `pending` before their reconcile.
///
/// A payload that says all a listing would (push and repository events from
/// an installation) refreshes the stored names too. Installation payloads
/// lack the default branch and URL, so those repositories are only added
/// when unseen: a partial payload must not overwrite what a listing stored.
async fn make_known(conn: &mut PgConnection, repos: &[PayloadRepo]) -> Result<(), IntakeError> {
    let repos: Vec<&PayloadRepo> = repos.iter().filter(|r| !r.info.owner.is_empty()).collect();
    let (complete, partial): (Vec<&PayloadRepo>, Vec<&PayloadRepo>) =
        repos.into_iter().partition(|r| is_complete(&r.info));
    let mut known: Vec<(RepoId, RepoInfo, Option<String>)> = complete
        .iter()
        .map(|r| (r.id, r.info.clone(), r.node_id.clone()))
        .collect();
    let mut seen_node_ids = Vec::new();
    if !partial.is_empty() {
        let ids: Vec<RepoId> = partial.iter().map(|r| r.id).collect();
        let seen = known_ids(&mut *conn, &ids).await?;
        for r in partial {
            match (seen.contains(&r.id), &r.node_id) {
                (false, node_id) => known.push((r.id, r.info.clone(), node_id.clone())),
                // Its names stay as a listing stored them; its node id is
                // news only when the registry lacks it.
                (true, Some(node_id)) => seen_node_ids.push((r.id, node_id.clone())),
                (true, None) => {}
            }
        }
    }
    ensure_known_with_node_ids(&mut *conn, &known).await?;
    record_node_ids(&mut *conn, &seen_node_ids).await?;
    Ok(())
}

fn is_complete(info: &RepoInfo) -> bool {
    info.installation_id.is_some() && !info.default_branch.is_empty() && info.html_url.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::github::webhook::event::parse;

    fn event(file: &str) -> WebhookEvent {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/webhooks")
            .join(file);
        let body = std::fs::read(&path).expect("a webhook fixture");
        let name = file.split('.').next().expect("the event's name");
        parse(name, &body).expect("a valid fixture").event
    }

    #[test]
    fn pushes_and_pings_should_be_written_directly() {
        let (push, ping) = (
            event("push.default-branch-created.json"),
            event("ping.json"),
        );
        let direct = direct(&[&push, &ping, &push]).expect("no read needed");
        assert_eq!(
            direct
                .intakes
                .iter()
                .map(Intake::outcome)
                .collect::<Vec<_>>(),
            ["queued", "ignored", "queued"]
        );
        assert_eq!(direct.known.len(), 2);
        assert_eq!(direct.enqueue.len(), 2);
        assert!(direct.enqueue.iter().all(|e| e.trigger == Trigger::Push));
    }

    #[test]
    fn events_that_need_a_read_first_should_go_through_the_transaction() {
        let push = event("push.default-branch-created.json");
        for file in [
            // The tracked repositories of the installation are read first.
            "installation.deleted.json",
            // A partial payload must not overwrite what a listing stored.
            "installation_repositories.added.json",
            // A listing and checks are written by the transaction only.
            "installation.created.json",
            "pull_request.opened.json",
        ] {
            let other = event(file);
            assert_eq!(direct(&[&push, &other]), None, "{file}");
        }
    }
}
