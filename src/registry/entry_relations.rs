//! The rules a reconcile applies files under beside their own (owners and
//! relations), and the dependencies of those files checked against the
//! registry: under `ROSTER_RELATIONS=require` a dependency on a name no
//! project has (in the registry, or among the repository's files being
//! applied) makes its file invalid, with the nearest names. Under `warn`
//! and `off` nothing is read: a dependency is stored as written and
//! resolved by name whenever it is read, so one declared before its
//! target resolves as soon as the target is applied.

use std::collections::HashMap;

use sqlx::PgConnection;

use super::check_records::relation_check::{registered_for, Reading};
use super::RegistryError;
use crate::directory::OwnersMode;
use crate::project::relations::{declared, dependency_notes, RegisteredRelations, RelationsMode};
use crate::project::ProjectFile;
use crate::source::RepoId;

/// How a reconcile checks what the rules of a file cannot see.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FileRules {
    /// `ROSTER_OWNERS`.
    pub owners: OwnersMode,
    /// `ROSTER_RELATIONS`.
    pub relations: RelationsMode,
}

/// What a reconcile knows of its files' dependencies.
pub(super) struct RelationContext {
    mode: RelationsMode,
    /// The projects the files being applied declare.
    local: HashMap<String, Option<String>>,
    /// `None` when dependencies are not checked (`off`, `warn`).
    registered: Option<RegisteredRelations>,
}

impl RelationContext {
    /// Dependencies not checked: every file's are stored as written.
    #[cfg(test)]
    pub fn unchecked() -> Self {
        Self {
            mode: RelationsMode::Off,
            local: HashMap::new(),
            registered: None,
        }
    }

    /// Reads what checking the dependencies of `files` (at `paths` of
    /// repository `repo`) needs, on the reconcile's transaction: under
    /// `require` only, one indexed statement, and a second that reads the
    /// names to suggest only when a dependency names no project.
    pub async fn load(
        conn: &mut PgConnection,
        repo: RepoId,
        paths: &[String],
        files: &[&ProjectFile],
        mode: RelationsMode,
    ) -> Result<Self, RegistryError> {
        let local = declared(files.iter().copied());
        let depends = files
            .iter()
            .any(|f| f.projects.iter().any(|p| !p.fields.depends_on.is_empty()));
        if mode != RelationsMode::Require || !depends {
            return Ok(Self {
                mode,
                local,
                registered: None,
            });
        }
        let reading = Reading {
            repo,
            paths,
            public: false,
        };
        let registered = registered_for(conn, &reading, files).await?;
        Ok(Self {
            mode,
            local,
            registered: Some(registered),
        })
    }

    /// The problem lines that make `file` (at `path`, whose text is
    /// `text`) invalid because of its dependencies: only under `require`.
    pub fn failures(&self, path: &str, file: &ProjectFile, text: &str) -> Vec<String> {
        let Some(registered) = &self.registered else {
            return Vec::new();
        };
        dependency_notes(path, file, text, &self.local, registered, self.mode)
            .into_iter()
            .filter(|note| note.failure)
            .map(|note| note.problem.to_string())
            .collect()
    }
}
