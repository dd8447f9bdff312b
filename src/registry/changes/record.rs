//! Writing the change log from inside a reconcile: the entries before and
//! after and what differs (the append that takes the `seq`s last thing
//! before the commit is in `append.rs`).

use std::collections::BTreeMap;

use serde_json::Value;
use sqlx::PgConnection;

use super::{ChangeKind, RemovedDependents};
use crate::controller::{Claim, Trigger};
use crate::registry::check_records::relation_check::{dependents, Reading};
use crate::registry::read_models::query::entries_of;
use crate::registry::Entry;
use crate::source::{FileState, Observed, RepoId};

/// Why a change was made, as the change log and the feed say it.
///
/// A removal says what removed it: the source reported the repository gone
/// (`repo_removed`), or an operator released the hold it waited on
/// (`hold_released`). Anything else says what asked for the run (the
/// queue's [`Trigger`]): a `push`, a `resync`, a `listing`, another
/// `webhook` (a rename, an installation change); `reconcile` when nothing
/// more telling asked (a name released by another entry, a folder changed
/// on disk). A change the organisation's directory made to an entry's
/// owner says `team_renamed` or `team_deleted` (`reconcile` for others, a
/// team created or a member gone).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    Push,
    Resync,
    Listing,
    Webhook,
    HoldReleased,
    RepoRemoved,
    Reconcile,
    /// The entry's owner team was renamed: the entry follows it by id.
    TeamRenamed,
    /// The entry's owner team was deleted: the entry is flagged, kept.
    TeamDeleted,
}

impl Cause {
    /// Every cause, in the order a filter offers them.
    pub const ALL: [Cause; 9] = [
        Cause::Push,
        Cause::Listing,
        Cause::Resync,
        Cause::Webhook,
        Cause::Reconcile,
        Cause::RepoRemoved,
        Cause::HoldReleased,
        Cause::TeamRenamed,
        Cause::TeamDeleted,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Cause::Push => "push",
            Cause::Resync => "resync",
            Cause::Listing => "listing",
            Cause::Webhook => "webhook",
            Cause::HoldReleased => "hold_released",
            Cause::RepoRemoved => "repo_removed",
            Cause::Reconcile => "reconcile",
            Cause::TeamRenamed => "team_renamed",
            Cause::TeamDeleted => "team_deleted",
        }
    }

    /// The cause of a change the directory made to an entry's resolved
    /// owner, from the entry after it (`None`: removed).
    pub(crate) fn of_owner(after: Option<&Value>) -> Self {
        match after
            .and_then(|a| a.get("owner_status"))
            .and_then(Value::as_str)
        {
            Some("renamed") => Cause::TeamRenamed,
            Some("deleted") => Cause::TeamDeleted,
            _ => Cause::Reconcile,
        }
    }

    /// The cause of a run asked for by `trigger`.
    fn of_trigger(trigger: Trigger) -> Self {
        match trigger {
            Trigger::Push => Cause::Push,
            Trigger::Resync => Cause::Resync,
            Trigger::Event => Cause::Webhook,
            Trigger::Listing => Cause::Listing,
            Trigger::Other => Cause::Reconcile,
        }
    }

    /// The cause of a reconcile of `observed` (`held`: the repository
    /// waited on a hold, which was released since, or its removal would
    /// still be held), and the commit it applies, if any.
    pub(crate) fn of(
        observed: &Observed,
        held: bool,
        claim: Option<&Claim<RepoId>>,
    ) -> (Self, Option<String>) {
        let cause = match (observed, claim) {
            (Observed::Removed { .. }, _) if held => Cause::HoldReleased,
            (Observed::Removed { .. }, _) => Cause::RepoRemoved,
            (Observed::Present { .. }, Some(claim)) if claim.hint.is_some() => Cause::Listing,
            (Observed::Present { .. }, Some(claim)) => Cause::of_trigger(claim.trigger),
            (Observed::Present { .. }, None) => Cause::Reconcile,
        };
        let sha = match observed {
            Observed::Present {
                file: FileState::Found { sha, .. } | FileState::Files { sha, .. },
                ..
            } => Some(sha.clone()),
            Observed::Present {
                file: FileState::Touched(touched),
                ..
            } => Some(touched.sha.clone()),
            _ => None,
        };
        (cause, sha)
    }
}

/// One change, before it has its `seq`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Pending {
    pub kind: ChangeKind,
    pub name: String,
    pub repo: String,
    pub repo_id: RepoId,
    pub sha: Option<String>,
    pub cause: Cause,
    pub before: Option<Value>,
    pub after: Option<Value>,
    /// Who depended on a removed entry at that moment.
    pub dependents: Option<RemovedDependents>,
}

/// The dependents a removal records: at most this many by name, then a
/// count (docs/contract.md#relations).
pub const MAX_LOGGED_DEPENDENTS: usize = 1000;

/// Records in each removal of `changes` who depends on the removed name
/// now (after the reconcile's writes, in its transaction): one statement,
/// and none when nothing was removed. A removal never touches a
/// dependent: it stays as it is, its dependency unknown until the name
/// comes back.
pub(crate) async fn add_dependents(
    conn: &mut PgConnection,
    changes: &mut [Pending],
) -> Result<(), sqlx::Error> {
    let removed: Vec<String> = changes
        .iter()
        .filter(|c| c.kind == ChangeKind::Removed)
        .map(|c| c.name.clone())
        .collect();
    if removed.is_empty() {
        return Ok(());
    }
    let anyone = Reading {
        repo: RepoId(0),
        paths: &[],
        public: false,
    };
    let mut found = dependents(conn, &anyone, &removed, MAX_LOGGED_DEPENDENTS).await?;
    for change in changes.iter_mut() {
        if change.kind == ChangeKind::Removed {
            let of = found.remove(&change.name).unwrap_or_default();
            change.dependents = Some(RemovedDependents {
                names: of.named,
                total: of.total,
            });
        }
    }
    Ok(())
}

/// A repository's entries by name, as the change log stores them.
pub(crate) type Snapshot = BTreeMap<String, Entry>;

/// The repository's entries now, read in the caller's transaction (which
/// holds the repository's row lock, so they cannot move under it).
pub(crate) async fn snapshot(conn: &mut PgConnection, id: RepoId) -> Result<Snapshot, sqlx::Error> {
    Ok(entries_of(conn, id)
        .await?
        .into_iter()
        .map(|e| (e.name.clone(), e))
        .collect())
}

/// SQL that is true when the log last recorded repository `id` (an SQL
/// expression) under a name other than `full_name` (another): the
/// rename [`as_logged`] would find, for statements that settle a
/// repository without reading its entries.
pub(crate) fn logged_under_another_name(id: &str, full_name: &str) -> String {
    format!(
        "coalesce((select c.repo <> {full_name} from changes c
                   where c.repo_id = {id} order by c.seq desc limit 1), false)"
    )
}

/// Puts back in `before` the repository's name as the log last recorded
/// it, and says whether it differs from the current one.
///
/// A rename is stored where it is learnt (a webhook, a listing), outside
/// any reconcile, so the entries a reconcile finds already carry the new
/// name; against the logged name, the reconcile that follows the rename
/// logs it as a change of each entry's `repo`. A name whose changes were
/// all pruned past retention is taken as logged.
pub(crate) async fn as_logged(
    conn: &mut PgConnection,
    id: RepoId,
    before: &mut Snapshot,
) -> Result<bool, sqlx::Error> {
    let Some(current) = before.values().next().map(|e| e.repo.clone()) else {
        return Ok(false);
    };
    let logged: Option<String> =
        sqlx::query_scalar("select repo from changes where repo_id = $1 order by seq desc limit 1")
            .bind(id)
            .fetch_optional(conn)
            .await?;
    match logged {
        Some(name) if name != current => {
            for entry in before.values_mut() {
                entry.repo.clone_from(&name);
            }
            Ok(true)
        }
        _ => Ok(false),
    }
}

/// What differs between two snapshots of one repository, in name order:
/// one change per entry created, changed or removed; nothing when equal.
pub(crate) fn diff(
    before: &Snapshot,
    after: &Snapshot,
    repo_id: RepoId,
    sha: Option<&str>,
    cause: Cause,
) -> Vec<Pending> {
    let names: std::collections::BTreeSet<&String> = before.keys().chain(after.keys()).collect();
    let mut changes = Vec::new();
    for name in names {
        let (old, new) = (before.get(name), after.get(name));
        let kind = match (old, new) {
            (None, Some(_)) => ChangeKind::Created,
            (Some(_), None) => ChangeKind::Removed,
            (Some(a), Some(b)) if a != b => ChangeKind::Changed,
            _ => continue,
        };
        let repo = new.or(old).map(|e| e.repo.clone()).unwrap_or_default();
        changes.push(Pending {
            kind,
            name: name.clone(),
            repo,
            repo_id,
            sha: sha.map(str::to_owned),
            cause,
            before: old.map(to_value),
            after: new.map(to_value),
            dependents: None,
        });
    }
    changes
}

fn to_value(entry: &Entry) -> Value {
    serde_json::to_value(entry).unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::testing::entry;

    fn snap(entries: &[Entry]) -> Snapshot {
        entries
            .iter()
            .map(|e| (e.name.clone(), e.clone()))
            .collect()
    }

    #[test]
    fn diff_should_name_each_created_changed_and_removed_entry() {
        let before = snap(&[entry("a", "x"), entry("b", "x"), entry("c", "x")]);
        let after = snap(&[entry("b", "y"), entry("c", "x"), entry("d", "x")]);
        let changes = diff(&before, &after, RepoId(7), Some("sha1"), Cause::Listing);
        let kinds: Vec<(&str, ChangeKind)> =
            changes.iter().map(|c| (c.name.as_str(), c.kind)).collect();
        assert_eq!(
            kinds,
            vec![
                ("a", ChangeKind::Removed),
                ("b", ChangeKind::Changed),
                ("d", ChangeKind::Created)
            ]
        );
        assert!(changes[0].after.is_none() && changes[0].before.is_some());
        assert_eq!(
            changes[1].after.as_ref().map(|v| &v["owner"]),
            Some(&Value::from("y"))
        );
        assert!(changes.iter().all(|c| c.sha.as_deref() == Some("sha1")));
    }

    #[test]
    fn diff_should_find_nothing_when_the_entries_are_equal() {
        let same = snap(&[entry("a", "x")]);
        assert!(diff(&same, &same, RepoId(7), None, Cause::Reconcile).is_empty());
    }
}
