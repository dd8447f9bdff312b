//! The owner lines of a check run: the part of the installation's
//! directory a file's owners need is read (on the caller's connection,
//! the reconcile's transaction for the default branch), and each owner
//! that names nobody current is added to the verdict
//! ([`crate::project::owners`]).

use sqlx::PgConnection;

use super::RegistryError;
use crate::directory::lookup::directory_for;
use crate::directory::OwnersMode;
use crate::project::owners::{annotate, owner_notes};
use crate::project::preview::RegisteredEntry;
use crate::project::verdict::{Parsed, Verdict};
use crate::source::InstallationId;

/// Whose owners are checked, and how.
#[derive(Debug, Clone, Copy)]
pub struct OwnerCheck<'a> {
    /// The installation whose account's directory names the owners.
    pub installation: InstallationId,
    /// The project file's path, for the annotations.
    pub project_file: &'a str,
    pub mode: OwnersMode,
}

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
    let owners: Vec<&str> = file
        .projects
        .iter()
        .map(|p| p.fields.owner.as_str())
        .collect();
    let Some(directory) = directory_for(conn, check.installation, &owners).await? else {
        return Ok(());
    };
    let (file_name, mode) = (check.project_file, check.mode);
    let notes = owner_notes(file_name, file, text, &directory, mode, registered);
    annotate(verdict, &notes, mode);
    Ok(())
}
