//! The `owner` lines of a valid project file, checked against the
//! organisation's directory for the `Roster` check run (pure: the caller
//! reads the directory).
//!
//! An owner that names nobody (with the nearest slugs), a team renamed
//! since (with its current slug) or a team deleted gets an annotation on
//! its line. Under `ROSTER_OWNERS=warn` each is a `warning` and the
//! conclusion stays what the rest of the file decides; under `require` an
//! unknown owner is a `failure`, and so is a renamed or deleted team that
//! the file newly names (an entry that already named it keeps it: it
//! followed the team by id).

use super::check_notes::{add_notes, CheckNote, NoteSection};
use super::preview::RegisteredEntry;
use super::verdict::Verdict;
use super::{owner_positions, Problem, ProjectFile};
use crate::directory::resolve::Resolver;
use crate::directory::{Directory, OwnersMode, Resolution};

/// One owner to fix, at its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerNote {
    pub problem: Problem,
    /// `unknown`, `renamed` or `deleted`.
    pub status: &'static str,
    /// It breaks the file (under `require`); a warning otherwise.
    pub failure: bool,
}

/// The owners of `file` (whose text is `text`) that name nobody current in
/// `directory`, under `mode`. `registered` are the repository's entries
/// now: an entry that already names a renamed or deleted team keeps it.
pub fn owner_notes(
    project_file: &str,
    file: &ProjectFile,
    text: &str,
    directory: &Directory,
    mode: OwnersMode,
    registered: &[RegisteredEntry],
) -> Vec<OwnerNote> {
    if mode == OwnersMode::Off {
        return Vec::new();
    }
    let resolver = Resolver::new(directory);
    let positions = owner_positions(text);
    let mut notes = Vec::new();
    for (k, project) in file.projects.iter().enumerate() {
        let resolution = resolver.resolve(&project.fields.owner);
        let Some(message) = resolution.problem(project.fields.owner.trim(), &directory.login)
        else {
            continue;
        };
        let listed = format!("projects[{k}].owner");
        let at = positions
            .iter()
            .find(|p| p.field == listed)
            .or_else(|| positions.iter().find(|p| k == 0 && p.field == "owner"));
        let kept = registered.iter().any(|e| {
            e.name == project.name.as_str()
                && e.fields
                    .owner
                    .trim()
                    .eq_ignore_ascii_case(project.fields.owner.trim())
        });
        let failure = mode == OwnersMode::Require
            && match resolution {
                Resolution::Unknown { .. } => true,
                Resolution::Renamed { .. } | Resolution::Deleted { .. } => !kept,
                _ => false,
            };
        notes.push(OwnerNote {
            problem: Problem {
                file: project_file.to_owned(),
                line: at.map(|p| p.line),
                column: at.map(|p| p.column),
                field: at.map_or(listed, |p| p.field.clone()),
                message,
            },
            status: resolution.status(),
            failure,
        });
    }
    notes
}

/// Adds `notes` to what the check run says: one annotation each (on line 1
/// when the owner's line is unknown), a section of the summary, and the
/// conclusion `failure` when one breaks the file.
pub fn annotate(verdict: &mut Verdict, notes: &[OwnerNote], mode: OwnersMode) {
    let heading = format!(
        "**Owners** (checked against the organisation's teams and members, \
         `ROSTER_OWNERS={mode}`)"
    );
    let section = NoteSection {
        heading: &heading,
        when_broken: "an owner that names nobody breaks the file.",
        when_applied:
            "the entries are applied as they are; fix these owners so they name a team or member.",
        counted: ("owner to fix", "owners to fix"),
        default_line: Some(1),
    };
    let notes = notes.iter().map(|n| CheckNote::new(&n.problem, n.failure));
    add_notes(verdict, notes, &section);
}

#[cfg(test)]
mod tests;
