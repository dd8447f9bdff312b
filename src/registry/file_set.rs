//! What one reconcile decides for a repository with several project files
//! (docs/contract.md#several-project-files-per-repository): each file is
//! applied on its own, or kept as it was while it is invalid; the
//! repository's status is the worst of its files'.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::PgConnection;

use super::entries::{self, Changes, Desired};
use super::entry_owners::OwnerContext;
use super::entry_relations::{FileRules, RelationContext};
use super::outcome::{invalid, short, Decision};
use super::repos::RepoState;
use super::settled_pushes::blob_id;
use super::{RegistryError, Status};
use crate::project::ProjectFile;
use crate::source::{FileContent, InstallationId, PathFile, RepoId};

/// Entries one repository may hold across its files: a hostile monorepo
/// cannot make one reconcile write tens of thousands.
pub const MAX_REPO_ENTRIES: usize = 1_000;

/// What the files ask for, before anything is written.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// Entries of valid files, each name once (the first path keeps it).
    pub desired: Vec<Desired>,
    /// Names of entries kept as they were: their file is invalid.
    pub keep: Vec<String>,
    /// Problem lines of the invalid files, file after file.
    pub problems: Vec<String>,
    /// A name declared by a later file than the one that keeps it.
    pub twice: Vec<String>,
}

/// Decides what the files (sorted by path) at commit `sha` do to
/// repository `id`, whose state was `old`; entries are written on `conn`.
pub(super) async fn decide_file_set(
    conn: &mut PgConnection,
    id: RepoId,
    old: &RepoState,
    sha: &str,
    files: &[PathFile],
    owned: Option<BTreeSet<String>>,
    rules: (FileRules, Option<InstallationId>),
) -> Result<Decision, RegistryError> {
    let blob = Some(set_blob(files));
    super::file_blobs::write(conn, id, &super::file_blobs::of(files)).await?;
    let old_paths = entries::paths(conn, id).await?;
    let plan = plan_of(conn, id, files, &old_paths, rules).await?;
    if plan.desired.len() + plan.keep.len() > MAX_REPO_ENTRIES {
        let message = format!(
            "file: the project files declare more than {MAX_REPO_ENTRIES} projects, \
             the most one repository may have"
        );
        return Ok(invalid(
            old,
            format!("invalid {}: {message}", short(sha)),
            message,
            blob,
        ));
    }
    let changes = entries::apply(conn, id, sha, &plan.desired, &plan.keep, owned).await?;
    Ok(decision(old, sha, &plan, changes, blob))
}

/// Reads each file in path order: a valid one asks for its entries (a name
/// an earlier file declared stays there), an invalid one keeps the entries
/// that came from it.
#[cfg(test)]
fn plan(files: &[PathFile], old_paths: &[(String, String)]) -> Plan {
    let parsed: Vec<Result<ProjectFile, String>> = files.iter().map(parse).collect();
    let relations = RelationContext::unchecked();
    plan_with(
        files,
        &parsed,
        old_paths,
        &OwnerContext::unchecked(),
        &relations,
    )
}

/// [`plan_with`] the files read by the rules, their owners resolved in
/// the directory of repository `id`'s account and their dependencies in
/// the registry.
pub(super) async fn plan_of(
    conn: &mut PgConnection,
    id: RepoId,
    files: &[PathFile],
    old_paths: &[(String, String)],
    rules: (FileRules, Option<InstallationId>),
) -> Result<Plan, RegistryError> {
    let parsed: Vec<Result<ProjectFile, String>> = files.iter().map(parse).collect();
    let texts: Vec<&str> = parsed
        .iter()
        .flatten()
        .flat_map(ProjectFile::owner_texts)
        .collect();
    let (rules, installation) = rules;
    let context = OwnerContext::load(conn, id, installation, rules.owners, &texts).await?;
    let (valid, paths): (Vec<&ProjectFile>, Vec<String>) = files
        .iter()
        .zip(&parsed)
        .filter_map(|(file, parsed)| Some((parsed.as_ref().ok()?, file.path.clone())))
        .unzip();
    let relations = RelationContext::load(conn, id, &paths, &valid, rules.relations).await?;
    Ok(plan_with(files, &parsed, old_paths, &context, &relations))
}

/// A file read by the rules: its projects, or its problem lines.
fn parse(file: &PathFile) -> Result<ProjectFile, String> {
    match &file.content {
        FileContent::Bytes(bytes) => {
            crate::project::parse(&file.path, bytes).map_err(|p| p.to_string())
        }
        FileContent::Unreadable(message) => Err(message.clone()),
        FileContent::Binary { judged, .. } => Err(judged
            .clone()
            .unwrap_or_else(|| FileContent::binary_line(&file.path))),
    }
}

/// [`plan`] with each file's owners resolved in `owners` and its
/// dependencies checked in `relations`: a file whose owners or
/// dependencies break the rule (under `require`) is invalid like one that
/// breaks the file's own rules.
fn plan_with(
    files: &[PathFile],
    parsed: &[Result<ProjectFile, String>],
    old_paths: &[(String, String)],
    owners: &OwnerContext,
    relations: &RelationContext,
) -> Plan {
    let mut plan = Plan::default();
    let mut taken: BTreeMap<String, String> = BTreeMap::new();
    for (file, parsed) in files.iter().zip(parsed) {
        let parsed = parsed.as_ref().map_err(String::clone).and_then(|parsed| {
            let text = match &file.content {
                FileContent::Bytes(bytes) => String::from_utf8_lossy(bytes),
                FileContent::Unreadable(_) | FileContent::Binary { .. } => Default::default(),
            };
            let mut failures = owners.failures(&file.path, parsed, &text);
            failures.extend(relations.failures(&file.path, parsed, &text));
            if failures.is_empty() {
                Ok(parsed)
            } else {
                Err(failures.join("\n"))
            }
        });
        match parsed {
            Err(problems) => {
                plan.problems.push(problems.trim_end().to_owned());
                for (name, _) in old_paths.iter().filter(|(_, path)| *path == file.path) {
                    if !taken.contains_key(name) {
                        taken.insert(name.clone(), file.path.clone());
                        plan.keep.push(name.clone());
                    }
                }
            }
            Ok(parsed) => {
                let texts = parsed.owner_texts();
                let resolved = owners.resolve(&texts);
                for (project, owner) in parsed.projects.iter().zip(resolved) {
                    let name = project.name.as_str();
                    match taken.get(name) {
                        Some(first) => plan.twice.push(format!(
                            "{}: name \"{name}\" is also declared in {first}, which keeps it",
                            file.path
                        )),
                        None => {
                            taken.insert(name.to_owned(), file.path.clone());
                            plan.desired
                                .push(Desired::from_project(project, &file.path, owner));
                        }
                    }
                }
            }
        }
    }
    plan
}

/// The state and message after `changes` were applied: `invalid` when a
/// file breaks a rule, else `conflict` when a name was taken, else
/// `synced`. An invalid repository keeps the commit it recorded, as with
/// one file: its valid files were applied, its invalid ones kept.
pub(super) fn decision(
    old: &RepoState,
    sha: &str,
    plan: &Plan,
    changes: Changes,
    blob: Option<String>,
) -> Decision {
    let path_of: BTreeMap<&str, &str> = plan
        .desired
        .iter()
        .map(|d| (d.name.as_str(), d.path.as_str()))
        .collect();
    let mut conflicts: Vec<String> = plan.twice.clone();
    conflicts.extend(changes.conflicts.iter().map(|c| {
        let path = path_of.get(c.name.as_str()).copied().unwrap_or("");
        format!("{path}: name \"{}\" is owned by {}", c.name, c.owner_repo)
    }));
    let mut parts = changes.summary();
    let status = if !plan.problems.is_empty() {
        Status::Invalid
    } else if !conflicts.is_empty() {
        Status::Conflict
    } else {
        Status::Synced
    };
    let mut lines = plan.problems.clone();
    lines.extend(conflicts.iter().cloned());
    parts.extend(lines.iter().cloned());
    if parts.is_empty() {
        parts.push("unchanged".to_owned());
    }
    let entries_changed = changes.entries_changed();
    let synced = status != Status::Invalid;
    Decision {
        message: format!("{status} {}: {}", short(sha), parts.join("; ")),
        state: RepoState {
            status,
            error: (!lines.is_empty()).then(|| lines.join("\n")),
            synced_sha: if synced {
                Some(sha.to_owned())
            } else {
                old.synced_sha.clone()
            },
            attempts: 0,
            conflicts: changes.conflicts.into_iter().map(|c| c.name).collect(),
            file_blob: blob,
        },
        synced,
        entries_changed,
        released: changes.deleted,
        created: changes.created,
    }
}

/// One id for the whole set of files, as Git's blob id is for one: it
/// changes when any file's path or bytes do, so a default-branch check is
/// compared against what was read last.
pub(super) fn set_blob(files: &[PathFile]) -> String {
    set_blob_of(&super::file_blobs::of(files))
}

/// [`set_blob`] of the files' blob ids by path.
pub(super) fn set_blob_of(blobs: &super::file_blobs::FileBlobs) -> String {
    let mut listing = String::new();
    for (path, id) in blobs {
        listing.push_str(&format!("{id} {path}\n"));
    }
    blob_id(listing.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str, yaml: &str) -> PathFile {
        PathFile {
            path: path.into(),
            content: FileContent::Bytes(yaml.as_bytes().to_vec()),
        }
    }

    fn names(desired: &[Desired]) -> Vec<(String, String)> {
        desired
            .iter()
            .map(|d| (d.name.clone(), d.path.clone()))
            .collect()
    }

    #[test]
    fn each_file_should_give_its_entries_their_path() {
        let plan = plan(
            &[
                file("a/project.yaml", "name: api\nowner: x\n"),
                file("b/project.yaml", "projects:\n  - name: web\n    owner: x\n"),
            ],
            &[],
        );
        assert_eq!(
            names(&plan.desired),
            vec![
                ("api".into(), "a/project.yaml".into()),
                ("web".into(), "b/project.yaml".into())
            ]
        );
        assert!(plan.problems.is_empty() && plan.twice.is_empty() && plan.keep.is_empty());
    }

    #[test]
    fn a_name_in_two_files_should_stay_with_the_first_path() {
        let plan = plan(
            &[
                file("a/project.yaml", "name: api\nowner: x\n"),
                file("b/project.yaml", "name: api\nowner: y\n"),
            ],
            &[],
        );
        assert_eq!(
            names(&plan.desired),
            vec![("api".into(), "a/project.yaml".into())]
        );
        assert_eq!(
            plan.twice,
            vec!["b/project.yaml: name \"api\" is also declared in a/project.yaml, which keeps it"]
        );
    }

    #[test]
    fn an_invalid_file_should_keep_its_entries_and_report_with_its_path() {
        let old = vec![
            ("api".to_string(), "a/project.yaml".to_string()),
            ("web".to_string(), "b/project.yaml".to_string()),
        ];
        let plan = plan(
            &[
                file("a/project.yaml", "name: api\nowner: \"\"\n"),
                file("b/project.yaml", "name: web\nowner: z\n"),
            ],
            &old,
        );
        assert_eq!(plan.keep, vec!["api".to_string()]);
        assert_eq!(
            names(&plan.desired),
            vec![("web".into(), "b/project.yaml".into())]
        );
        assert_eq!(
            plan.problems,
            vec!["a/project.yaml:2:8: owner: must not be empty"]
        );
    }

    #[test]
    fn an_unreadable_file_should_keep_its_entries_too() {
        let old = vec![("api".to_string(), "a/project.yaml".to_string())];
        let files = [PathFile {
            path: "a/project.yaml".into(),
            content: FileContent::Unreadable("a/project.yaml: file: a link".into()),
        }];
        let plan = plan(&files, &old);
        assert_eq!(plan.keep, vec!["api".to_string()]);
        assert_eq!(plan.problems, vec!["a/project.yaml: file: a link"]);
    }

    fn old_state() -> RepoState {
        RepoState {
            status: Status::Synced,
            error: None,
            synced_sha: Some("old".into()),
            attempts: 0,
            conflicts: Vec::new(),
            file_blob: None,
        }
    }

    #[test]
    fn the_worst_file_should_decide_and_each_line_should_name_its_path() {
        let files = [
            file("a/project.yaml", "name: api\nowner: x\n"),
            file("b/project.yaml", "name: api\nowner: y\n"),
        ];
        let plan = plan(&files, &[]);
        let changes = Changes {
            conflicts: vec![entries::Conflict {
                name: "api".into(),
                owner_repo: "acme/other".into(),
            }],
            ..Changes::default()
        };
        let decided = decision(&old_state(), "0123456789", &plan, changes, None);
        assert_eq!(decided.state.status, Status::Conflict);
        assert_eq!(
            decided.state.error.as_deref(),
            Some(
                "b/project.yaml: name \"api\" is also declared in a/project.yaml, which keeps it\n\
                 a/project.yaml: name \"api\" is owned by acme/other"
            )
        );
        assert_eq!(decided.state.synced_sha.as_deref(), Some("0123456789"));

        let broken = [file("a/project.yaml", "name: [\n")];
        let plan = super::plan(&broken, &[]);
        let decided = decision(&old_state(), "0123456789", &plan, Changes::default(), None);
        assert_eq!(decided.state.status, Status::Invalid);
        assert_eq!(decided.state.synced_sha.as_deref(), Some("old"), "kept");
        assert!(!decided.synced);
    }

    #[test]
    fn the_set_blob_should_follow_paths_and_bytes() {
        let one = [file("a/project.yaml", "name: a\nowner: x\n")];
        let moved = [file("b/project.yaml", "name: a\nowner: x\n")];
        assert_ne!(set_blob(&one), set_blob(&moved));
        assert_eq!(set_blob(&one), set_blob(&one.clone()));
    }
}
