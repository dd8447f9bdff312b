//! The owner lines of a check run: the part of the installation's
//! directory a file's owners need is read (on the caller's connection,
//! the reconcile's transaction for the default branch), and each owner
//! that names nobody current is added to the verdict
//! ([`crate::project::owners`]).

use sqlx::PgConnection;

use crate::directory::lookup::directory_for;
use crate::directory::resolve::{Resolution, Resolver};
use crate::directory::{KnownTeam, OwnersMode};
use crate::project::owners::{annotate, owner_notes};
use crate::project::preview::RegisteredEntry;
use crate::project::verdict::{Parsed, Verdict};
use crate::registry::RegistryError;
use crate::source::InstallationId;

/// Whose owners are checked, and how.
#[derive(Debug, Clone, Copy)]
pub struct OwnerCheck<'a> {
    /// The installation whose account's directory names the owners.
    pub installation: InstallationId,
    /// The project file's path, for the annotations.
    pub project_file: &'a str,
    pub mode: OwnersMode,
    /// A pull request's check on a public repository: anyone may open one
    /// and read its check, so it must not tell who belongs to the
    /// organisation ([`PRIVATE_OWNERS_LATER`]).
    pub public_pull_request: bool,
}

/// What a public repository's pull-request check says instead of judging
/// owners that name no visible team: whether `@login` is a member, or a
/// slug a secret team, is the organisation's private data (docs/checks.md#owners), and
/// "unknown" for one name but not another would tell it.
pub const PRIVATE_OWNERS_LATER: &str = "Owners that name no visible team are checked when the \
     file is merged: the check of a public repository's pull request does not tell who \
     belongs to the organisation.";

/// Adds the owner annotations of `parsed` to `verdict`. `registered` are
/// the repository's entries before the file is applied. Nothing is added
/// when owners are not checked (`off`, an installation whose directory was
/// never read or cannot be) or the file breaks rules of its own.
pub async fn add_owner_notes(
    conn: &mut PgConnection,
    check: &OwnerCheck<'_>,
    parsed: &Parsed,
    registered: &[RegisteredEntry],
    verdict: &mut Verdict,
) -> Result<(), RegistryError> {
    let Parsed::Valid { file, text } = parsed else {
        return Ok(());
    };
    if check.mode == OwnersMode::Off {
        return Ok(());
    }
    let owners = file.owner_texts();
    let Some(directory) = directory_for(conn, check.installation, &owners).await? else {
        return Ok(());
    };
    let (file_name, mode) = (check.project_file, check.mode);
    let mut notes = owner_notes(file_name, file, text, &directory, mode, registered);
    if check.public_pull_request {
        let resolver = Resolver::new(&directory);
        // Members, secret teams and nobody are told apart only by the
        // directory's private part: none of them is judged here.
        let private = owners.iter().any(|owner| match resolver.resolve(owner) {
            Resolution::Member { .. } | Resolution::Unknown { .. } => true,
            Resolution::Team { id, .. } => {
                let secret = |t: &&KnownTeam| t.team.id == id && t.team.secret;
                directory.teams.iter().any(|t| secret(&t))
            }
            _ => false,
        });
        notes.retain(|note| note.status != "unknown");
        if private {
            verdict.summary = format!("{}\n{PRIVATE_OWNERS_LATER}\n", verdict.summary);
        }
    }
    annotate(verdict, &notes, mode);
    Ok(())
}
