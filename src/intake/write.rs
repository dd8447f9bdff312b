//! The one intake path: what a group of verified deliveries implies,
//! written and committed together, whichever events the group holds (their
//! records in the delivery log follow the answers: [`super::delivery_writer`]).
//! A webhook never does more than make the repositories it names known and
//! enqueue their ids (or ask for a listing, or checks): the reconcile reads
//! GitHub afresh and decides; nothing is deleted here.
//!
//! [`write`] plans each event ([`plan`], pure), then writes the group with
//! one statement ([`together`]): pushes decided without a read
//! ([`FreePushes`]), repositories made known, ids enqueued. A group of
//! pushes and repository events (the common case: their payloads say all
//! that is needed) is that statement alone, which commits by itself in one
//! round trip. A group with an event that needs more (an installation's
//! tracked repositories, a payload naming repositories partially, a
//! directory, a listing, checks) runs the same statement inside a
//! transaction, between that event's reads and its requests. Workers hear
//! of the ids with the commit.

use std::collections::BTreeSet;

use sqlx::pool::PoolConnection;
use sqlx::{PgConnection, PgPool, Postgres, Transaction};

use super::event::Accepted;
use super::event::{DirectoryChange, PayloadRepo, WebhookEvent};
use super::free_push::FreePushes;
pub use super::plan::{plan, Plan, MAX_ADDED_READ_DIRECTLY, MAX_NAMED_REPOS};
use crate::controller::{Enqueue, Trigger};
use crate::db::one_statement::{self, Part};
use crate::db::queue::{EnqueueRows, PgQueue, QueueError, Seen, CHANNEL};
use crate::directory::db as directory_db;
use crate::registry::check_records::{check_requests, check_runs};
use crate::registry::{known_ids, record_node_ids, tracked_ids, RegistryError};
use crate::registry::{FreePushRows, KnownRows};
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

/// Why a group could not be persisted; its deliveries answer 503 so that
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

/// Writes what every delivery of `group` implies, on `pool`, committed
/// before it returns (their rows in the delivery log come after their
/// answers: [`super::delivery_writer`]); then wakes the workers (here and,
/// by the statement's `NOTIFY`, in the other replicas) when an id became
/// claimable. One [`Intake`] per delivery, in order, as if each had been
/// written alone. With `free`, a repository whose pushes left the project
/// file alone has its recorded commit moved instead of being enqueued,
/// when the registry recorded their `before` ([`FreePushes`]).
///
/// The group's writes are one statement: free pushes settled, repositories
/// made known and ids enqueued (those the settle moved left out of both),
/// and the `NOTIFY` when the enqueue changed a row. A group with an event
/// that needs more ([`needs_transaction`]) runs it in a transaction, after
/// that event's reads and before its requests.
pub async fn write(
    pool: &PgPool,
    queue: &PgQueue,
    free: Option<&FreePushes>,
    group: &[&Accepted],
) -> Result<Vec<Intake>, IntakeError> {
    let events: Vec<&WebhookEvent> = group.iter().map(|a| &a.parsed.event).collect();
    let plans: Vec<Plan> = events.iter().map(|e| plan(e)).collect();
    // What the group's other events name is read, never settled as a push.
    let named: BTreeSet<RepoId> = events
        .iter()
        .zip(&plans)
        .filter(|(e, _)| !matches!(e, WebhookEvent::DefaultBranchPush { .. }))
        .flat_map(|(_, p)| p.named())
        .collect();
    let mut tx: Option<Transaction<'_, Postgres>> = None;
    let mut own: Option<PoolConnection<Postgres>> = None;
    let conn: &mut PgConnection = if plans.iter().any(needs_transaction) {
        tx.insert(pool.begin().await?)
    } else {
        own.insert(pool.acquire().await?)
    };
    let mut known: Vec<PayloadRepo> = Vec::new();
    // Every id each event asks for, with its trigger; the enqueue merges
    // an id named twice (the most telling trigger wins).
    let mut to_enqueue: Vec<Enqueue<RepoId>> = Vec::new();
    let mut listing = false;
    // What a listing must have done to have seen every event that asks
    // for one; `None` once one asks regardless.
    let mut seen: Option<Vec<Seen>> = Some(Vec::new());
    let mut checks = Vec::new();
    let mut intakes = Vec::with_capacity(events.len());
    for (event, plan) in events.iter().zip(plans) {
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
        checks.extend(plan.checks);
        known.extend(plan.known.into_iter().filter(|r| !r.info.owner.is_empty()));
        let trigger = trigger_of(event);
        to_enqueue.extend(ids.into_iter().map(|id| Enqueue::because(id, trigger)));
        if plan.listing {
            listing = true;
            seen = seen.zip(plan.listing_seen).map(|(mut all, one)| {
                all.push(Seen {
                    partition: Partition::Installation(one.installation).to_string(),
                    created_at: one.created_at,
                });
                all
            });
        }
    }
    let known = unseen_or_complete(&mut *conn, known).await?;
    let repos: Vec<_> = known
        .iter()
        .map(|r| (r.id, &r.info, r.node_id.as_deref()))
        .collect();
    let mut known = KnownRows::new(&repos);
    let pushes = free.map(|f| f.split(&events, &named)).unwrap_or_default();
    let mut enqueue = EnqueueRows::new(to_enqueue).touched(&pushes.touched);
    let moves = pushes.free;
    let settle = free.filter(|_| !moves.is_empty()).map(|free| {
        FreePushRows::new(&moves, free.fingerprint()).locking(repos.iter().map(|r| r.0))
    });
    if settle.is_some() {
        known = known.except_settled();
        enqueue = enqueue.except_settled();
    }
    let mut parts: Vec<&dyn Part> = Vec::with_capacity(3);
    if let Some(settle) = &settle {
        parts.push(settle);
    }
    parts.push(&known);
    let enqueue_part = parts.len();
    parts.push(&enqueue);
    let woke = one_statement::execute_and_notify(&mut *conn, &parts, CHANNEL, enqueue_part).await?;
    match (listing, seen) {
        (false, _) => {}
        (true, Some(seen)) => {
            queue
                .request_listing_unless_seen_in(&mut *conn, &seen)
                .await?
        }
        (true, None) => queue.request_listing_in(&mut *conn).await?,
    }
    check_requests::request_checks(conn, &checks).await?;
    if let Some(tx) = tx {
        tx.commit().await?;
    }
    queue.enqueued_and_notified(enqueue.added(), woke);
    if listing {
        queue.listing_requested();
    }
    Ok(intakes)
}

/// Whether an event's plan needs more than the group's one statement: a
/// read before it or a request after it, so a transaction around them.
fn needs_transaction(plan: &Plan) -> bool {
    plan.tracked_of_installation.is_some()
        || plan.permissions_changed.is_some()
        || plan.directory.is_some()
        || plan.listing
        || !plan.checks.is_empty()
        || plan.known.iter().any(is_partial)
}

/// The repositories to upsert: those a payload describes fully (push and
/// repository events: their stored names are refreshed), and those an
/// installation payload lists partially (no default branch, no URL) only
/// when unseen, so that a partial payload never overwrites what a listing
/// stored; a seen one only gets the node id the registry lacks.
async fn unseen_or_complete(
    conn: &mut PgConnection,
    known: Vec<PayloadRepo>,
) -> Result<Vec<PayloadRepo>, IntakeError> {
    if !known.iter().any(is_partial) {
        return Ok(known);
    }
    let (mut upsert, partial): (Vec<PayloadRepo>, Vec<PayloadRepo>) =
        known.into_iter().partition(|r| !is_partial(r));
    let ids: Vec<RepoId> = partial.iter().map(|r| r.id).collect();
    let seen = known_ids(&mut *conn, &ids).await?;
    let mut seen_node_ids = Vec::new();
    for r in partial {
        match (seen.contains(&r.id), r.node_id) {
            (false, node_id) => upsert.push(PayloadRepo { node_id, ..r }),
            // Its names stay as a listing stored them; its node id is
            // news only when the registry lacks it.
            (true, Some(node_id)) => seen_node_ids.push((r.id, node_id)),
            (true, None) => {}
        }
    }
    record_node_ids(&mut *conn, &seen_node_ids).await?;
    Ok(upsert)
}

/// Records what the payload says about one team or member of an
/// organisation (after its new login, for a rename): the directory loop
/// writes it, no read of the organisation. An organisation Roster does
/// not know is left to its installation's listing, which reads it whole.
async fn ask_directory(
    conn: &mut PgConnection,
    change: &DirectoryChange,
) -> Result<Intake, IntakeError> {
    let mut known = true;
    if change.renamed {
        known = directory_db::rename_in(&mut *conn, change.org_id, &change.login).await?;
    }
    if let (true, Some(said)) = (known, &change.said) {
        known = directory_db::record_in(&mut *conn, change.org_id, said).await?;
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

/// A push to the default branch is the most telling event trigger.
fn trigger_of(event: &WebhookEvent) -> Trigger {
    match event {
        WebhookEvent::DefaultBranchPush { .. } => Trigger::Push,
        _ => Trigger::Event,
    }
}

/// A repository an installation payload names without its default branch
/// or URL (one with no owner is never made known).
fn is_partial(repo: &PayloadRepo) -> bool {
    !repo.info.owner.is_empty() && !is_complete(&repo.info)
}

fn is_complete(info: &RepoInfo) -> bool {
    info.installation_id.is_some() && !info.default_branch.is_empty() && info.html_url.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intake::event::parse;

    fn event(file: &str) -> WebhookEvent {
        let body = crate::testing::webhook_fixture(file);
        let name = file.split('.').next().expect("the event's name");
        parse(name, &body).expect("a valid fixture").event
    }

    #[test]
    fn pushes_and_pings_should_need_no_transaction() {
        for file in ["push.default-branch-created.json", "ping.json"] {
            assert!(!needs_transaction(&plan(&event(file))), "{file}");
        }
    }

    #[test]
    fn events_that_need_a_read_or_a_request_should_need_a_transaction() {
        for file in [
            // The tracked repositories of the installation are read first.
            "installation.deleted.json",
            // A partial payload must not overwrite what a listing stored.
            "installation_repositories.added.json",
            // A listing and checks are requested after the statement.
            "installation.created.json",
            "pull_request.opened.json",
        ] {
            assert!(needs_transaction(&plan(&event(file))), "{file}");
        }
    }
}
