//! What a reader may see of the organisation's private data (docs/contract.md#what-a-reader-without-credentials-sees),
//! one rule for every read route, page and the change feed: with the API
//! token or a signed-in session, everything; without, an entry's owner that
//! names a secret team (by any slug it had), a member or nobody reads
//! `owner_status: "hidden"`, its text, slug and team id withheld. The three
//! read the same, so a file naming a login or a slug cannot probe who is a
//! member or which secret teams exist; owners naming a visible team, and
//! owners that are not checked, are shown as they are.

use std::collections::HashSet;
use std::sync::Arc;

use axum::extract::FromRequestParts;
use axum::http::header::AUTHORIZATION;
use axum::http::request::Parts;

use super::auth::WriteAccess;
use super::error::ApiError;
use super::session::Viewer;
use super::state::AppState;
use crate::directory::{DirectoryDb, Resolution};
use crate::project::{OwnerStatus, ResolvedOwner};
use crate::registry::changes::Change;
use crate::registry::Entry;

/// Which owners the reader may see; see the module doc.
#[derive(Debug, Clone)]
pub struct Privacy {
    /// `None` for a reader with credentials; otherwise the secret teams.
    secret_teams: Option<Arc<HashSet<i64>>>,
    /// The changes were found by their owner's text: a hidden owner is
    /// not found by it either ([`Privacy::finding_by_owner`]).
    by_owner: bool,
}

impl Privacy {
    /// A reader with credentials: nothing is withheld.
    pub fn everything() -> Self {
        Self {
            secret_teams: None,
            by_owner: false,
        }
    }

    /// A reader without credentials, the secret teams read from the
    /// directory.
    pub async fn public(pool: &sqlx::PgPool) -> Result<Self, ApiError> {
        let ids = DirectoryDb::new(pool.clone())
            .secret_team_ids()
            .await
            .map_err(|e| ApiError::unavailable("owners: directory query failed", &e))?;
        Ok(Self {
            secret_teams: Some(Arc::new(ids)),
            by_owner: false,
        })
    }

    /// What a page's reader may see: everything when signed in.
    pub async fn for_viewer(viewer: &Viewer, pool: &sqlx::PgPool) -> Result<Self, ApiError> {
        if viewer.signed_in() {
            Ok(Self::everything())
        } else {
            Self::public(pool).await
        }
    }

    /// Whether the reader sees members and secret teams.
    pub fn privileged(&self) -> bool {
        self.secret_teams.is_none()
    }

    /// A short token that changes whenever what this rule withholds can
    /// (credentials or not, which teams are secret): part of an `ETag`, so a
    /// cached answer is not reused across readers or after a team turns
    /// secret.
    pub fn fingerprint(&self) -> String {
        use sha2::{Digest, Sha256};
        let Some(secret) = &self.secret_teams else {
            return "all".to_owned();
        };
        let mut ids: Vec<i64> = secret.iter().copied().collect();
        ids.sort_unstable();
        let mut digest = Sha256::new();
        for id in ids {
            digest.update(id.to_be_bytes());
        }
        hex::encode(&digest.finalize()[..6])
    }

    fn secret(&self, team: Option<i64>) -> bool {
        match &self.secret_teams {
            None => false,
            // A team's owner without its id cannot be told apart: withheld.
            Some(secret) => team.is_none_or(|id| secret.contains(&id)),
        }
    }

    /// Whether the team of id `team` is withheld from the reader (a secret
    /// team, without credentials).
    pub fn hides_team(&self, team: i64) -> bool {
        self.secret(Some(team))
    }

    /// Whether an owner resolved as `resolved` is withheld from the reader.
    pub fn hides(&self, resolved: &ResolvedOwner) -> bool {
        if self.privileged() {
            return false;
        }
        match resolved.owner_status {
            OwnerStatus::Member | OwnerStatus::Unknown | OwnerStatus::Hidden => true,
            OwnerStatus::Team | OwnerStatus::Renamed | OwnerStatus::Deleted => {
                self.secret(resolved.owner_team_id)
            }
            OwnerStatus::Unchecked => false,
        }
    }

    /// Whether an owner resolving to `resolution` is withheld (the dangling
    /// owners of `/owners` and `/api/v1/owners?status=`).
    pub fn hides_resolution(&self, resolution: &Resolution) -> bool {
        if self.privileged() {
            return false;
        }
        match resolution {
            Resolution::Member { .. } | Resolution::Unknown { .. } => true,
            Resolution::Team { id, .. }
            | Resolution::Renamed { id, .. }
            | Resolution::Deleted { id, .. } => self.secret(Some(*id)),
            Resolution::Unchecked => false,
        }
    }

    /// `entry` as the reader may see it.
    pub fn entry(&self, mut entry: Entry) -> Entry {
        if self.hides(&entry.resolved) {
            entry.fields.owner = String::new();
            entry.resolved = ResolvedOwner {
                owner_status: OwnerStatus::Hidden,
                owner_team_id: None,
                owner_slug: None,
            };
        }
        entry
    }

    /// Each entry as the reader may see it.
    pub fn entries(&self, entries: Vec<Entry>) -> Vec<Entry> {
        entries.into_iter().map(|e| self.entry(e)).collect()
    }

    /// The entries of a page filtered by their owner's text: a hidden
    /// owner is not found by its text either.
    pub fn found_by_owner(&self, entries: Vec<Entry>) -> Vec<Entry> {
        entries
            .into_iter()
            .filter(|e| !self.hides(&e.resolved))
            .collect()
    }

    /// This reader, for changes found by their owner's text (`/changes?owner=`):
    /// a change whose owner is withheld is left out too, so the filter
    /// cannot confirm that a secret slug or a login is in use.
    pub fn finding_by_owner(&self) -> Self {
        Self {
            by_owner: true,
            ..self.clone()
        }
    }

    /// A change with its `before` and `after` as the reader may see them.
    pub fn change(&self, mut change: Change) -> Change {
        change.before = change.before.map(|e| self.entry(e));
        change.after = change.after.map(|e| self.entry(e));
        change
    }

    /// Each change as the reader may see it, leaving out those that, so
    /// seen, change nothing: a secret team's rename moves only withheld
    /// owners, and an empty change would still tell when, and for which
    /// projects, it happened. A reader paging on goes past them by the
    /// last `seq` read, not the last shown.
    pub fn changes(&self, changes: Vec<Change>) -> Vec<Change> {
        changes
            .into_iter()
            .map(|c| self.change(c))
            .filter(|c| self.privileged() || !(changes_nothing(c) || self.found_hidden(c)))
            .collect()
    }

    /// Whether `change`, found by an owner's text, shows a withheld owner.
    fn found_hidden(&self, change: &Change) -> bool {
        let hidden = |e: &Option<Entry>| {
            e.as_ref()
                .is_some_and(|e| e.resolved.owner_status == OwnerStatus::Hidden)
        };
        self.by_owner && (hidden(&change.before) || hidden(&change.after))
    }
}

/// Whether a change, as shown, moves nothing but the time of its writing.
fn changes_nothing(change: &Change) -> bool {
    match (&change.before, &change.after) {
        (Some(before), Some(after)) => {
            before
                == &Entry {
                    updated_at: before.updated_at,
                    ..after.clone()
                }
        }
        _ => false,
    }
}

/// Whether the request may see members and secret teams.
#[derive(Debug, Clone, Copy)]
pub struct Privileged(pub bool);

impl FromRequestParts<AppState> for Privileged {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        // A presented token is checked like the write API's (a wrong one is
        // refused and counted by the failure throttle), never ignored.
        if parts.headers.contains_key(AUTHORIZATION) {
            WriteAccess::from_request_parts(parts, state).await?;
            return Ok(Self(true));
        }
        let viewer = match Viewer::from_request_parts(parts, state).await {
            Ok(viewer) => viewer,
            Err(never) => match never {},
        };
        Ok(Self(viewer.signed_in()))
    }
}

impl FromRequestParts<AppState> for Privacy {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        if Privileged::from_request_parts(parts, state).await?.0 {
            Ok(Self::everything())
        } else {
            Self::public(&state.pool).await
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn public(secret: &[i64]) -> Privacy {
        Privacy {
            secret_teams: Some(Arc::new(secret.iter().copied().collect())),
            by_owner: false,
        }
    }

    fn owner(status: OwnerStatus, team: Option<i64>) -> ResolvedOwner {
        ResolvedOwner {
            owner_status: status,
            owner_team_id: team,
            owner_slug: team.map(|id| format!("team-{id}")),
        }
    }

    fn followed(status: OwnerStatus, team: i64) -> Change {
        let at = chrono::DateTime::from_timestamp(1, 0).unwrap_or_default();
        let entry = |status, later: i64| Entry {
            resolved: owner(status, Some(team)),
            created_at: at,
            updated_at: at + chrono::Duration::seconds(later),
            ..crate::registry::testing::entry("api", "")
        };
        Change {
            seq: 1,
            at,
            kind: crate::registry::changes::ChangeKind::Changed,
            name: "api".into(),
            repo: "acme/app".into(),
            repo_id: crate::source::RepoId(7),
            sha: None,
            cause: "team_renamed".into(),
            before: Some(entry(OwnerStatus::Team, 0)),
            after: Some(entry(status, 5)),
            dependents: None,
        }
    }

    #[test]
    fn a_change_moving_only_hidden_owners_should_be_left_out_without_credentials() {
        let secret = followed(OwnerStatus::Renamed, 7);
        assert!(public(&[7]).changes(vec![secret.clone()]).is_empty());
        assert_eq!(Privacy::everything().changes(vec![secret]).len(), 1);
        let visible = followed(OwnerStatus::Renamed, 8);
        assert_eq!(public(&[7]).changes(vec![visible]).len(), 1);
    }

    #[test]
    fn a_member_a_secret_team_and_nobody_should_read_alike_without_credentials() {
        let reader = public(&[7]);
        for hidden in [
            owner(OwnerStatus::Member, None),
            owner(OwnerStatus::Unknown, None),
            owner(OwnerStatus::Team, Some(7)),
            owner(OwnerStatus::Renamed, Some(7)),
            owner(OwnerStatus::Deleted, Some(7)),
        ] {
            assert!(reader.hides(&hidden), "{hidden:?}");
            assert!(!Privacy::everything().hides(&hidden), "{hidden:?}");
        }
        for shown in [
            owner(OwnerStatus::Team, Some(8)),
            owner(OwnerStatus::Renamed, Some(8)),
            owner(OwnerStatus::Deleted, Some(8)),
            owner(OwnerStatus::Unchecked, None),
        ] {
            assert!(!reader.hides(&shown), "{shown:?}");
        }
    }
}
