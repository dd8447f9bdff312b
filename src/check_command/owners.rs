//! `roster check --teams teams.yaml`: the owners of the checked files
//! resolved against a `teams.yaml` (the `dir:` source's format), the same
//! way the `Roster` check run resolves them against the organisation.
//! Offline there is no other directory to ask, so without `--teams`
//! owners are not checked at all rather than guessed.

use std::path::Path;

use crate::directory::{Directory, KnownTeam, OwnersMode};
use crate::project::owners::{owner_notes, OwnerNote};
use crate::project::ProjectFile;
use crate::source::dir::teams_file;

/// The directory owners are checked against, and how strictly.
#[derive(Debug, Clone)]
pub struct OwnerRules {
    directory: Directory,
    mode: OwnersMode,
}

impl OwnerRules {
    /// Reads `path` as a `teams.yaml`; the message says why it cannot be used.
    pub fn read(path: &Path, mode: OwnersMode) -> Result<Self, String> {
        let label = path.display();
        let bytes = std::fs::read(path).map_err(|e| format!("cannot read {label}: {e}"))?;
        let file = teams_file::parse(&bytes).map_err(|e| format!("{label}: {e}"))?;
        let directory = Directory {
            login: label.to_string(),
            teams: file
                .teams
                .iter()
                .map(|team| KnownTeam {
                    team: team.clone(),
                    deleted: false,
                })
                .collect(),
            slugs: file
                .teams
                .iter()
                .map(|t| (t.slug.to_lowercase(), t.id))
                .collect(),
            members: file.members,
            ..Directory::default()
        };
        Ok(Self { directory, mode })
    }

    /// The owners of `file` (`text`, labelled `label`) that name nobody.
    pub fn notes(&self, label: &str, file: &ProjectFile, text: &str) -> Vec<OwnerNote> {
        owner_notes(label, file, text, &self.directory, self.mode, &[])
    }
}

/// One note as `roster check` prints it: a failure like any problem, a
/// warning marked as one.
pub fn line(note: &OwnerNote) -> String {
    match note.failure {
        true => note.problem.to_string(),
        false => format!("warning: {}", note.problem),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_should_be_resolved_against_the_teams_file() {
        let dir = tempfile::tempdir().unwrap();
        let teams = dir.path().join("teams.yaml");
        std::fs::write(
            &teams,
            "teams:\n  - slug: payments\n    name: Payments\n    members: [alice]\n",
        )
        .unwrap();
        let rules = OwnerRules::read(&teams, OwnersMode::Require).unwrap();
        let text = "projects:\n  - name: a\n    owner: payments\n  - name: b\n    owner: paymnts\n  - name: c\n    owner: '@alice'\n";
        let file = crate::project::parse("project.yaml", text.as_bytes()).unwrap();
        let notes = rules.notes("project.yaml", &file, text);
        assert_eq!(notes.len(), 1);
        assert_eq!(
            line(&notes[0]),
            format!(
                "project.yaml:5:12: projects[1].owner: no team or member \"paymnts\" in {} (did you mean payments?)",
                teams.display()
            )
        );
        let warn = OwnerRules::read(&teams, OwnersMode::Warn).unwrap();
        assert!(line(&warn.notes("project.yaml", &file, text)[0]).starts_with("warning: "));
        assert!(OwnerRules::read(&dir.path().join("missing.yaml"), OwnersMode::Warn).is_err());
    }
}
