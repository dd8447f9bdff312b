//! What one reconcile decides from an observation (docs/contract.md#repository-statuses): the status,
//! error and message a repository is left with, and the entries it keeps,
//! creates or gives up. The handler writes the decision and commits.

use std::collections::BTreeSet;

use sqlx::PgConnection;

use super::entries::{self, Changes, Desired};
use super::entry_owners::OwnerContext;
use super::entry_relations::{FileRules, RelationContext};
use super::outcome::{invalid, short, Decision};
use super::repos::RepoState;
use super::settled_pushes::blob_id;
use super::{RegistryError, Status};
use crate::source::{FileState, Observed, RepoId, BINARY_MESSAGE};

/// Decides what `observed` does to repository `id`, whose state was `old`;
/// entries are written on `conn` as decided, the rest is left to the caller.
/// `owned`: the names the repository owns, when the caller read them in
/// this transaction already. Owners are resolved under `rules` against
/// the directory of the repository's account, dependencies against the
/// registry.
pub(super) async fn decide_observation(
    conn: &mut PgConnection,
    project_file: &str,
    id: RepoId,
    old: &RepoState,
    observed: Observed,
    owned: Option<BTreeSet<String>>,
    rules: FileRules,
) -> Result<Decision, RegistryError> {
    let file = project_file;
    let installation = match &observed {
        Observed::Present { repo, .. } => repo.installation_id,
        Observed::Removed { .. } => None,
    };
    Ok(match observed {
        Observed::Removed { reason, .. } => {
            let deleted = entries::delete_all(conn, id).await?;
            Decision {
                message: with_deleted(format!("removed: {reason}"), &deleted),
                state: cleared(Status::Removed, Some(reason), None),
                synced: true,
                entries_changed: !deleted.is_empty(),
                released: deleted,
                created: Vec::new(),
            }
        }
        Observed::Present {
            file: FileState::Absent { sha },
            ..
        } => {
            let deleted = entries::delete_all(conn, id).await?;
            Decision {
                message: with_deleted(no_file_message(file), &deleted),
                // The head found without a file: a push from it that
                // touches no project file leaves it as it is.
                state: cleared(Status::NoFile, None, sha),
                synced: true,
                entries_changed: !deleted.is_empty(),
                released: deleted,
                created: Vec::new(),
            }
        }
        Observed::Present {
            file: FileState::Unreadable { sha, message },
            ..
        } => {
            let at = sha
                .as_deref()
                .map(|s| format!(" {}", short(s)))
                .unwrap_or_default();
            invalid(old, format!("invalid{at}: {message}"), message, None)
        }
        Observed::Present {
            file:
                FileState::Binary {
                    sha,
                    blob,
                    confirmed,
                },
            ..
        } => binary(old, &sha, blob, confirmed),
        Observed::Present {
            file: FileState::Files { sha, files },
            ..
        } => {
            let rules = (rules, installation);
            super::file_set::decide_file_set(conn, id, old, &sha, &files, owned, rules).await?
        }
        Observed::Present {
            file: FileState::Touched(touched),
            ..
        } => {
            let rules = (rules, installation);
            super::touched_files::decide_touched_files(conn, id, old, &touched, owned, rules)
                .await?
        }
        Observed::Present {
            file: FileState::Found { sha, bytes },
            ..
        } => {
            let blob = Some(blob_id(&bytes));
            match crate::project::parse(file, &bytes) {
                Err(problems) => {
                    let problems = problems.to_string().trim_end().to_string();
                    invalid(
                        old,
                        format!("invalid {}: {problems}", short(&sha)),
                        problems,
                        blob,
                    )
                }
                Ok(parsed) => {
                    let texts = parsed.owner_texts();
                    let context =
                        OwnerContext::load(conn, id, installation, rules.owners, &texts).await?;
                    let paths = [file.to_owned()];
                    let relations =
                        RelationContext::load(conn, id, &paths, &[&parsed], rules.relations)
                            .await?;
                    let text = String::from_utf8_lossy(&bytes);
                    let mut failures = context.failures(file, &parsed, &text);
                    failures.extend(relations.failures(file, &parsed, &text));
                    if !failures.is_empty() {
                        let problems = failures.join("\n");
                        let message = format!("invalid {}: {problems}", short(&sha));
                        return Ok(invalid(old, message, problems, blob));
                    }
                    let resolved = context.resolve(&texts);
                    let desired: Vec<Desired> = parsed
                        .projects
                        .iter()
                        .zip(resolved)
                        .map(|(p, owner)| Desired::from_project(p, file, owner))
                        .collect();
                    let changes = entries::apply(conn, id, &sha, &desired, &[], owned).await?;
                    applied(&sha, changes, blob)
                }
            }
        }
    })
}

/// A file GitHub calls binary, of blob id `blob`: the registry's judgement
/// of that blob stands when it made one (the listing of an unchanged
/// repository reads nothing); else it is invalid as binary, a judgement
/// kept for the blob only when its bytes were read (`confirmed`).
fn binary(old: &RepoState, sha: &str, blob: String, confirmed: bool) -> Decision {
    let judged = old.status == Status::Invalid && old.file_blob.as_deref() == Some(blob.as_str());
    let error = match (&old.error, judged) {
        (Some(error), true) => error.clone(),
        _ => BINARY_MESSAGE.to_owned(),
    };
    let blob = (judged || confirmed).then_some(blob);
    invalid(old, format!("invalid {}: {error}", short(sha)), error, blob)
}

/// What a reconcile finding no project file records (`file` as messages
/// name the project files).
pub(super) fn no_file_message(file: &str) -> String {
    format!("no {file}")
}

/// The state of a repository whose entries are all gone (`removed`, `no_file`),
/// at commit `sha` when there is one.
fn cleared(status: Status, error: Option<String>, sha: Option<String>) -> RepoState {
    RepoState {
        status,
        error,
        synced_sha: sha,
        attempts: 0,
        conflicts: Vec::new(),
        file_blob: None,
    }
}

/// A valid file (of blob id `blob`) applied: `synced`, or `conflict` when a
/// name was taken.
fn applied(sha: &str, changes: Changes, blob: Option<String>) -> Decision {
    let mut parts = changes.summary();
    let conflict_lines: Vec<String> = changes
        .conflicts
        .iter()
        .map(|c| format!("name \"{}\" is owned by {}", c.name, c.owner_repo))
        .collect();
    parts.extend(conflict_lines.iter().cloned());
    if parts.is_empty() {
        parts.push("unchanged".to_string());
    }
    let status = if conflict_lines.is_empty() {
        Status::Synced
    } else {
        Status::Conflict
    };
    let entries_changed = changes.entries_changed();
    Decision {
        entries_changed,
        message: format!("{status} {}: {}", short(sha), parts.join("; ")),
        state: RepoState {
            status,
            error: (!conflict_lines.is_empty()).then(|| conflict_lines.join("\n")),
            synced_sha: Some(sha.to_string()),
            attempts: 0,
            conflicts: changes.conflicts.into_iter().map(|c| c.name).collect(),
            file_blob: blob,
        },
        synced: true,
        released: changes.deleted,
        created: changes.created,
    }
}

fn with_deleted(message: String, deleted: &[String]) -> String {
    if deleted.is_empty() {
        message
    } else {
        format!("{message}; deleted {}", deleted.join(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use entries::Conflict;

    #[test]
    fn applied_should_summarise_every_change_in_one_line() {
        let changes = Changes {
            created: vec!["checkout-api".into()],
            updated: vec!["checkout-worker".into()],
            deleted: vec!["old-name".into()],
            conflicts: Vec::new(),
        };
        let decision = applied("3f2a1b9c0d", changes, None);
        assert_eq!(
            decision.message,
            "synced 3f2a1b9: created checkout-api; updated checkout-worker; deleted old-name"
        );
        assert_eq!(decision.state.status, "synced");
        assert_eq!(decision.state.error, None);
        assert_eq!(decision.released, vec!["old-name".to_string()]);
    }

    #[test]
    fn applied_should_name_the_owner_of_each_conflict() {
        let changes = Changes {
            conflicts: vec![Conflict {
                name: "checkout-api".into(),
                owner_repo: "local/billing".into(),
            }],
            ..Changes::default()
        };
        let decision = applied("abc", changes, None);
        assert_eq!(decision.state.status, "conflict");
        assert_eq!(
            decision.state.error.as_deref(),
            Some("name \"checkout-api\" is owned by local/billing")
        );
        assert_eq!(decision.state.conflicts, vec!["checkout-api".to_string()]);
        assert_eq!(
            decision.message,
            "conflict abc: name \"checkout-api\" is owned by local/billing"
        );
    }

    #[test]
    fn applied_should_say_unchanged_when_nothing_moved() {
        assert_eq!(
            applied("3f2a1b9c0d", Changes::default(), None).message,
            "synced 3f2a1b9: unchanged"
        );
        // What a settled file records without deciding anything.
        assert_eq!(
            super::super::outcome::unchanged_message("3f2a1b9c0d"),
            "synced 3f2a1b9: unchanged"
        );
    }
}
