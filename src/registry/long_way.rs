//! The long way: one observation applied statement by statement, in a
//! transaction its caller owns and commits (alone, or with the rest of a
//! controller batch, [`super::long_way_together`]).

use sqlx::PgConnection;

use super::changes::record::{self, Cause, Pending};
use super::check_records::default_branch_check as default_branch;
use super::check_records::default_branch_files::preview_files;
use super::decide::decide_observation;
use super::guard::Removal;
use super::handler::RegistryHandler;
use super::{events, holds, known, repos, touched_files, Entry, RegistryError, Status};
use crate::controller::{Claim, WorkQueue};
use crate::db::fence::ClaimFence;
use crate::source::{FileState, Observed, RepoId};

/// What one observation wrote, waiting for its transaction's commit.
pub(super) struct Applied {
    /// The status it left, or `held`.
    pub outcome: &'static str,
    /// What people call the repository, for its log lines.
    pub name: Option<String>,
    /// The names it released, whose waiting repositories to wake.
    pub released: Vec<String>,
    /// The names it created, whose waiting dependents to wake.
    pub created: Vec<String>,
    /// The changes to append to the log, last before the commit.
    pub changes: Vec<Pending>,
    /// A removal held by the deletion guard, said once committed.
    pub held: Option<HeldRemoval>,
}

/// A removal the deletion guard held.
pub(super) struct HeldRemoval {
    hold: i64,
    created: bool,
    why: String,
}

impl Applied {
    fn nothing(outcome: &'static str, name: Option<String>) -> Self {
        Self {
            outcome,
            name,
            released: Vec::new(),
            created: Vec::new(),
            changes: Vec::new(),
            held: None,
        }
    }

    /// Says, once committed, what the deletion guard did.
    pub(super) fn log_held(&self, id: RepoId) {
        let Some(HeldRemoval { hold, created, why }) = &self.held else {
            return;
        };
        if *created {
            tracing::warn!(
                repo = %id,
                hold,
                "deletion guard: {why}; further removals wait until \
                 POST /api/v1/holds/{hold}/release or the repositories come back",
            );
        } else {
            tracing::info!(repo = %id, hold, "deletion guard: removal held ({why})");
        }
    }
}

impl<Q> RegistryHandler<Q>
where
    Q: WorkQueue<Key = RepoId> + ClaimFence,
{
    /// Applies `observed` to repository `id` in `tx`, which the caller
    /// commits only while `claim` (when given) is live, appending the
    /// returned changes last.
    pub(super) async fn long_way(
        &self,
        tx: &mut PgConnection,
        id: RepoId,
        observed: Observed,
        claim: Option<&Claim<RepoId>>,
    ) -> Result<Applied, RegistryError> {
        let repo = match &observed {
            Observed::Removed { repo, .. } => repo.as_ref(),
            Observed::Present { repo, .. } => Some(repo),
        };
        let name = repo.map(|r| r.full_name());
        let mut locked = repos::lock(tx, id).await?;
        // Made known by this transaction: it owns no entry yet.
        let mut fresh = false;
        if let Some(info) = repo {
            if locked.is_none() {
                // Inserted as `pending`, locked by the insert.
                locked = known::insert_locked(tx, id, info).await?;
                fresh = locked.is_some();
            }
            if !locked.as_ref().is_some_and(|l| l.names_match(info)) {
                // Its names updated: a rename or transfer keeps the id,
                // hence the entries. Or made known meanwhile by another.
                known::ensure_known(&mut *tx, &[(id, info.clone())]).await?;
                if locked.is_none() {
                    locked = repos::lock(tx, id).await?;
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
            return Ok(Applied::nothing(Status::Removed.as_str(), name));
        };
        match &observed {
            Observed::Present { .. } if hold_id.is_none() => {}
            Observed::Present { .. } => {
                // Seen again: whatever held its removal no longer applies.
                let cleared = holds::detach(tx, &[id]).await?;
                for hold in cleared {
                    tracing::info!(repo = %id, hold, "deletion guard: hold {hold} cleared, its repositories came back");
                }
            }
            Observed::Removed { reason, .. } if old.status != Status::Removed => {
                if let Removal::Held {
                    hold,
                    created,
                    reason: why,
                } = self.guard.removal(tx, id).await?
                {
                    let message = format!("removal held by hold {hold} ({why}): {reason}");
                    events::record(tx, id, "held", &message).await?;
                    let mut applied = Applied::nothing("held", name);
                    applied.held = Some(HeldRemoval { hold, created, why });
                    return Ok(applied);
                }
            }
            Observed::Removed { .. } => {}
        }
        let fingerprint = self.fingerprint.as_str();
        let observed = touched_files::complete(tx, id, &old, fingerprint, observed).await?;
        let (cause, sha) = Cause::of(&observed, hold_id.is_some(), claim);
        let mut before = if self.change_log && !fresh {
            record::snapshot(tx, id).await?
        } else {
            record::Snapshot::new()
        };
        let renamed = self.change_log && record::as_logged(tx, id, &mut before).await?;
        // What the entries were, when read (or none to read).
        let read = self.change_log || fresh;
        let owned = read.then(|| before.keys().cloned().collect());
        let registered: Option<Vec<_>> =
            read.then(|| before.values().map(Entry::registered).collect());
        let check = match self.checks {
            true => {
                let before = default_branch::Before {
                    status: old.status.as_str(),
                    sha: old.synced_sha.as_deref(),
                    blob: old.file_blob.as_deref(),
                    entries: registered.as_deref(),
                };
                let rules = self.rules();
                match &observed {
                    Observed::Present {
                        file: FileState::Files { .. } | FileState::Touched(_),
                        ..
                    } => preview_files(tx, id, &observed, before, rules).await?,
                    _ => {
                        let file = &self.project_file;
                        default_branch::preview(tx, id, &observed, file, before, rules).await?
                    }
                }
            }
            false => None,
        };
        let file = &self.project_file;
        let rules = self.rules();
        let decision = decide_observation(tx, file, id, &old, observed, owned, rules).await?;
        let changes = if (decision.entries_changed || renamed) && self.change_log {
            let after = record::snapshot(tx, id).await?;
            let mut changes = record::diff(&before, &after, id, sha.as_deref(), cause);
            record::add_dependents(tx, &mut changes).await?;
            changes
        } else {
            Vec::new()
        };
        let status = decision.state.status;
        let written = repos::Written {
            state: &decision.state,
            synced: decision.synced,
            fingerprint: Some(self.fingerprint.as_str()),
            observation: repos::Observation::of(claim),
            event: &decision.message,
        };
        repos::write_state(tx, id, &old, written).await?;
        if let Some(check) = check {
            let error = decision.state.error.as_deref();
            default_branch::record(tx, check, status.as_str(), error).await?;
        }
        Ok(Applied {
            outcome: status.as_str(),
            name,
            released: decision.released,
            created: decision.created,
            changes,
            held: None,
        })
    }
}
