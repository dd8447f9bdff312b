//! The owners of the files a reconcile applies, resolved against the
//! directory of the repository's account: each entry stores what its
//! `owner` names ([`ResolvedOwner`]) beside the file's text, and under
//! `ROSTER_OWNERS=require` an owner that names nobody (or a renamed or
//! deleted team the file newly names) makes its file invalid.

use sqlx::PgConnection;

use super::check_records::read_only;
use super::RegistryError;
use crate::directory::lookup::directory_of;
use crate::directory::resolve::Resolver;
use crate::directory::{Directory, OwnersMode, Resolution};
use crate::project::owners::owner_notes;
use crate::project::preview::RegisteredEntry;
use crate::project::{OwnerStatus, ProjectFile, ResolvedOwner};
use crate::source::{InstallationId, RepoId};

/// What a reconcile knows of its repository's owners.
pub(super) struct OwnerContext {
    mode: OwnersMode,
    /// The part of the account's directory the files' owners need; `None`
    /// when owners are not checked (`off`, or never read).
    directory: Option<Directory>,
    /// The repository's entries before the files are applied, read once
    /// and only under `require`.
    registered: Option<Vec<RegisteredEntry>>,
}

impl OwnerContext {
    /// Owners not checked: every entry's stays `unchecked`.
    pub fn unchecked() -> Self {
        Self {
            mode: OwnersMode::Off,
            directory: None,
            registered: None,
        }
    }

    /// Reads what resolving `owners` of repository `repo` (of
    /// `installation`, `None` for the local folder) needs, on the
    /// reconcile's transaction.
    pub async fn load(
        conn: &mut PgConnection,
        repo: RepoId,
        installation: Option<InstallationId>,
        mode: OwnersMode,
        owners: &[&str],
    ) -> Result<Self, RegistryError> {
        let mut context = Self::of_account(conn, installation, mode, owners).await?;
        if context.directory.is_some() && mode == OwnersMode::Require {
            context.registered = Some(read_only::snapshot(conn, repo, &[]).await?.entries);
        }
        Ok(context)
    }

    /// Reads what resolving `owners` of the account of `installation`
    /// needs: enough to resolve them, not to judge a file.
    pub async fn of_account(
        conn: &mut PgConnection,
        installation: Option<InstallationId>,
        mode: OwnersMode,
        owners: &[&str],
    ) -> Result<Self, RegistryError> {
        if mode == OwnersMode::Off || owners.is_empty() {
            return Ok(Self::unchecked());
        }
        let directory = directory_of(conn, installation, owners).await?;
        Ok(Self {
            mode,
            directory,
            registered: None,
        })
    }

    /// What each of `owners` names, in order.
    pub fn resolve(&self, owners: &[&str]) -> Vec<ResolvedOwner> {
        match &self.directory {
            None => owners.iter().map(|_| ResolvedOwner::default()).collect(),
            Some(directory) => {
                let resolver = Resolver::new(directory);
                owners
                    .iter()
                    .map(|owner| resolved_owner(&resolver.resolve(owner)))
                    .collect()
            }
        }
    }

    /// The problem lines that make `file` (at `path`, whose text is
    /// `text`) invalid because of its owners: only under `require`.
    pub fn failures(&self, path: &str, file: &ProjectFile, text: &str) -> Vec<String> {
        let (Some(directory), Some(registered)) = (&self.directory, &self.registered) else {
            return Vec::new();
        };
        owner_notes(path, file, text, directory, self.mode, registered)
            .into_iter()
            .filter(|note| note.failure)
            .map(|note| note.problem.to_string())
            .collect()
    }
}

/// How an entry stores what its owner names.
pub(crate) fn resolved_owner(resolution: &Resolution) -> ResolvedOwner {
    let (owner_status, owner_team_id, owner_slug) = match resolution {
        Resolution::Team { id, slug } => (OwnerStatus::Team, Some(*id), Some(slug.clone())),
        Resolution::Member { login } => (OwnerStatus::Member, None, Some(login.clone())),
        // `to` is `@org/slug` when the organisation was renamed: the slug
        // is what follows the last `/`.
        Resolution::Renamed { id, to, .. } => {
            let slug = to.rsplit('/').next().unwrap_or(to);
            (OwnerStatus::Renamed, Some(*id), Some(slug.to_owned()))
        }
        Resolution::Deleted { id, slug } => (OwnerStatus::Deleted, Some(*id), Some(slug.clone())),
        Resolution::Unknown { .. } => (OwnerStatus::Unknown, None, None),
        Resolution::Unchecked => (OwnerStatus::Unchecked, None, None),
    };
    ResolvedOwner {
        owner_status,
        owner_team_id,
        owner_slug,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_resolution_should_store_its_status_team_and_slug() {
        let renamed = Resolution::Renamed {
            id: 7,
            from: "@old/pay".into(),
            to: "@acme/payments".into(),
            secret: false,
        };
        assert_eq!(
            resolved_owner(&renamed),
            ResolvedOwner {
                owner_status: OwnerStatus::Renamed,
                owner_team_id: Some(7),
                owner_slug: Some("payments".into()),
            }
        );
        let member = resolved_owner(&Resolution::Member {
            login: "octocat".into(),
        });
        assert_eq!(member.owner_status, OwnerStatus::Member);
        assert_eq!(member.owner_team_id, None);
        let unknown = resolved_owner(&Resolution::Unknown {
            suggestions: vec!["x".into()],
        });
        assert_eq!(
            unknown,
            ResolvedOwner {
                owner_status: OwnerStatus::Unknown,
                ..ResolvedOwner::default()
            }
        );
        assert_eq!(
            resolved_owner(&Resolution::Unchecked),
            ResolvedOwner::default()
        );
    }
}
