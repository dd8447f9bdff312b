//! The relations of a valid project file, checked against what the
//! registry holds (docs/contract.md#relations); pure: the caller reads the
//! registry.
//!
//! - A dependency on a name no project has (in the registry, or among the
//!   projects the repository's files declare) gets the nearest names: a
//!   `failure` under `ROSTER_RELATIONS=require`, a `warning` under `warn`.
//! - A `production` project depending on a `deprecated` one gets a
//!   `warning`, never more.
//! - A project the files stop declaring (removed or renamed) that others
//!   depend on gets the count and names of its dependents on its `name`
//!   line: a `warning`, a `failure` under `require`. Only the pull
//!   request's check says this: a removal never breaks a dependent's sync.

mod mode;

use std::collections::{BTreeMap, HashMap};

use super::check_notes::{add_notes, CheckNote, NoteSection};
use super::preview::plural;
use super::verdict::Verdict;
use super::{dependency_positions, name_positions, Problem, ProjectFile};
use crate::directory::resolve::nearest;

pub use mode::RelationsMode;

/// Unknown dependencies of one file that get suggestions; past them, the
/// name alone (each suggestion compares a name with the whole registry).
pub const MAX_SUGGESTED: usize = 10;

/// Dependents a removal's note names; past them, a count.
pub const MAX_NAMED_DEPENDENTS: usize = 20;

/// What the registry holds of the names a file's relations touch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RegisteredRelations {
    /// Names depended on that are entries outside the files being read,
    /// with their `lifecycle`.
    pub found: HashMap<String, Option<String>>,
    /// Names a reader of the check may see, nearest first candidates for
    /// an unknown dependency.
    pub candidates: Vec<String>,
    /// Who depends on each name the files stop declaring.
    pub dependents: BTreeMap<String, Dependents>,
}

/// Who depends on one project, as a check may show it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Dependents {
    /// Those the check may name (in public repositories when the check is
    /// public), by name.
    pub named: Vec<String>,
    /// How many depend on it in all.
    pub total: usize,
}

/// One relation to look at, at its line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelationNote {
    pub problem: Problem,
    /// It breaks the file (under `require`); a warning otherwise.
    pub failure: bool,
}

/// The projects the files being read declare, by name, with their
/// `lifecycle`: a dependency on one of them resolves within the files.
pub fn declared<'f>(
    files: impl IntoIterator<Item = &'f ProjectFile>,
) -> HashMap<String, Option<String>> {
    files
        .into_iter()
        .flat_map(|file| &file.projects)
        .map(|p| (p.name.as_str().to_owned(), p.fields.lifecycle.clone()))
        .collect()
}

/// Every name `files` depend on, each once.
pub fn dependency_names<'f>(files: impl IntoIterator<Item = &'f ProjectFile>) -> Vec<String> {
    let mut names: Vec<String> = files
        .into_iter()
        .flat_map(|file| &file.projects)
        .flat_map(|p| p.fields.depends_on.iter().cloned())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The dependencies of `file` (at `project_file`, whose text is `text`)
/// that name no project, and those of a `production` project on a
/// `deprecated` one, under `mode`. `local` is what the repository's files
/// declare ([`declared`]).
pub fn dependency_notes(
    project_file: &str,
    file: &ProjectFile,
    text: &str,
    local: &HashMap<String, Option<String>>,
    registered: &RegisteredRelations,
    mode: RelationsMode,
) -> Vec<RelationNote> {
    if mode == RelationsMode::Off || file.projects.iter().all(|p| p.fields.depends_on.is_empty()) {
        return Vec::new();
    }
    let positions = dependency_positions(text);
    let one = file.projects.len() == 1 && !text_has_projects(&positions);
    let mut notes = Vec::new();
    let mut suggested = 0;
    for (k, project) in file.projects.iter().enumerate() {
        let production = project.fields.lifecycle.as_deref() == Some("production");
        for (i, dependency) in project.fields.depends_on.iter().enumerate() {
            let field = if one {
                format!("depends_on[{i}]")
            } else {
                format!("projects[{k}].depends_on[{i}]")
            };
            let lifecycle = local
                .get(dependency)
                .or_else(|| registered.found.get(dependency));
            let (message, failure) = match lifecycle {
                None => {
                    let suggestions = if suggested < MAX_SUGGESTED {
                        suggested += 1;
                        let known = registered
                            .candidates
                            .iter()
                            .chain(local.keys())
                            .map(String::as_str);
                        nearest(dependency, known)
                    } else {
                        Vec::new()
                    };
                    (
                        unknown_message(dependency, &suggestions),
                        mode == RelationsMode::Require,
                    )
                }
                Some(Some(lifecycle)) if production && lifecycle == "deprecated" => (
                    format!(
                        "{:?} is deprecated; {} is in production and depends on it",
                        dependency,
                        project.name.as_str()
                    ),
                    false,
                ),
                Some(_) => continue,
            };
            let at = positions.iter().find(|p| p.field == field);
            notes.push(RelationNote {
                problem: Problem {
                    file: project_file.to_owned(),
                    line: at.map(|p| p.line),
                    column: at.map(|p| p.column),
                    field,
                    message,
                },
                failure,
            });
        }
    }
    notes
}

/// Whether the dependencies were written in the several-projects shape.
fn text_has_projects(positions: &[super::NamePosition]) -> bool {
    positions.iter().any(|p| p.field.starts_with("projects["))
}

/// `no project "x"`, with the nearest names when there are some.
fn unknown_message(name: &str, suggestions: &[String]) -> String {
    if suggestions.is_empty() {
        format!("no project {name:?}")
    } else {
        format!(
            "no project {name:?} (did you mean {}?)",
            suggestions.join(", ")
        )
    }
}

/// The projects of `project_file` that the pull request stops declaring
/// (`removed`) and others depend on, each on the `name` line of the
/// project that replaced it (a rename), else on the file's first line.
/// `head` is the file at the head, with its text, when it is there (a
/// removed file gets its notes in the summary only). `kept` are the names
/// the file declared before that it still declares.
pub fn removal_notes(
    project_file: &str,
    head: Option<(&ProjectFile, &str)>,
    removed: &[String],
    kept: &[String],
    registered: &RegisteredRelations,
    mode: RelationsMode,
) -> Vec<RelationNote> {
    if mode == RelationsMode::Off {
        return Vec::new();
    }
    // A name the head declares that the file did not before took the
    // place of a removed one: the removed one's note goes on its line.
    let mut new_names = head
        .map(|(_, text)| name_positions(text))
        .unwrap_or_default()
        .into_iter()
        .filter(|p| !kept.contains(&p.name));
    let mut notes = Vec::new();
    for name in removed {
        let place = new_names.next();
        let Some(dependents) = registered.dependents.get(name).filter(|d| d.total > 0) else {
            continue;
        };
        let (line, column, field) = match (place, head) {
            (Some(p), _) => (Some(p.line), Some(p.column), p.field),
            (None, Some(_)) => (Some(1), None, "name".to_owned()),
            (None, None) => (None, None, "name".to_owned()),
        };
        notes.push(RelationNote {
            problem: Problem {
                file: project_file.to_owned(),
                line,
                column,
                field,
                message: dependents_message(name, dependents),
            },
            failure: mode == RelationsMode::Require,
        });
    }
    notes
}

/// `3 projects depend on checkout-api: cart-api, orders-api and 1 project
/// in other repositories`.
pub fn dependents_message(name: &str, dependents: &Dependents) -> String {
    let total = dependents.total;
    let verb = if total == 1 { "depends" } else { "depend" };
    let named: Vec<&str> = dependents
        .named
        .iter()
        .take(MAX_NAMED_DEPENDENTS)
        .map(String::as_str)
        .collect();
    let unnamed_elsewhere = total.saturating_sub(dependents.named.len());
    let more_named = dependents.named.len() - named.len();
    let mut listed = named.join(", ");
    let mut tail = Vec::new();
    if more_named > 0 {
        tail.push(format!("{more_named} more"));
    }
    if unnamed_elsewhere > 0 {
        tail.push(format!(
            "{unnamed_elsewhere} {} in other repositories",
            plural(unnamed_elsewhere, "project", "projects")
        ));
    }
    for (k, part) in tail.into_iter().enumerate() {
        if listed.is_empty() && k == 0 {
            listed = part;
        } else {
            listed = format!("{listed} and {part}");
        }
    }
    format!(
        "{total} {} {verb} on {name}: {listed}",
        plural(total, "project", "projects")
    )
}

/// Adds `notes` to what the check run says: one annotation each that has
/// a line, a section of the summary, and the conclusion `failure` when
/// one breaks the file.
pub fn annotate(verdict: &mut Verdict, notes: &[RelationNote], mode: RelationsMode) {
    let heading = format!(
        "**Relations** (dependencies checked against the registry, \
         `ROSTER_RELATIONS={mode}`)"
    );
    let section = NoteSection {
        heading: &heading,
        when_broken: "a dependency on no project, or a removal others depend on, breaks the check.",
        when_applied: "the entries are applied as they are; look at these dependencies.",
        counted: ("dependency to look at", "dependencies to look at"),
        default_line: None,
    };
    let notes = notes.iter().map(|n| CheckNote::new(&n.problem, n.failure));
    add_notes(verdict, notes, &section);
}

#[cfg(test)]
mod tests;
