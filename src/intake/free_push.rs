//! Which pushes of a group are decided without a read: those whose commits
//! touched no project file (the payload lists every path, see
//! [`PushChange`]). Pure: the registry's compare-and-set then decides
//! whether the repository's recorded commit was the push's `before`.

use std::collections::{BTreeMap, BTreeSet};

use super::event::{PayloadRepo, PushChange, WebhookEvent};
use crate::directory::OwnersMode;
use crate::project::relations::RelationsMode;
use crate::project::ProjectFiles;
use crate::registry::{Fingerprint, FreePush};
use crate::source::touched_push::{TouchedPush, MAX_TOUCHED_PATHS};
use crate::source::RepoId;

/// The settings a push is judged by: the project file's path, and the
/// fingerprint a repository's recorded state must carry to be moved.
#[derive(Debug, Clone)]
pub struct FreePushes {
    files: ProjectFiles,
    owners: OwnersMode,
    relations: RelationsMode,
    fingerprint: Fingerprint,
}

impl FreePushes {
    /// Pushes judged against `project_file`, the path of the project file,
    /// under the default owner setting.
    pub fn new(project_file: &str) -> Self {
        Self::with_files(ProjectFiles::path(project_file))
    }

    /// Pushes judged against `files`: a push touching any path they
    /// match is read.
    pub fn with_files(files: ProjectFiles) -> Self {
        let (owners, relations) = (OwnersMode::default(), RelationsMode::default());
        let fingerprint = fingerprint(&files, owners, relations);
        Self {
            files,
            owners,
            relations,
            fingerprint,
        }
    }

    /// The same under the owner setting `owners` (the reconciles' own).
    pub fn with_owners(mut self, owners: OwnersMode) -> Self {
        self.owners = owners;
        self.fingerprint = fingerprint(&self.files, owners, self.relations);
        self
    }

    /// The same under the relations setting `relations` (the reconciles' own).
    pub fn with_relations(mut self, relations: RelationsMode) -> Self {
        self.relations = relations;
        self.fingerprint = fingerprint(&self.files, self.owners, relations);
        self
    }

    pub fn fingerprint(&self) -> &Fingerprint {
        &self.fingerprint
    }

    /// The paths of `change` that are project files (none allocated when
    /// none is).
    fn touched<'a>(&self, change: &'a PushChange) -> Vec<&'a str> {
        change
            .paths
            .iter()
            .filter(|path| self.files.matches(path))
            .map(String::as_str)
            .collect()
    }

    /// The repositories of a group whose every event is a push that left
    /// the project file alone, the pushes following each other (each one's
    /// `before` the previous one's `after`): one move each, from the first
    /// `before` to the last `after`, with the names of the last push (the
    /// ones the group makes known). Any other event naming a repository
    /// leaves it to be read.
    #[cfg(test)]
    fn moves<'a>(&self, events: &[&'a WebhookEvent]) -> Vec<FreePush<'a>> {
        self.split(events, &named_by_others(events)).free
    }

    /// [`Self::moves`], and beside them, with patterns other than one
    /// fixed path, the repositories whose pushes (following each other,
    /// and no other event naming them) touched at most
    /// [`MAX_TOUCHED_PATHS`] project files: what they touched, as the
    /// queue stores it, so that their run reads only those files.
    /// `named` are the repositories the group's other events name (their
    /// plans' known and enqueued ids): those are read.
    pub fn split<'a>(&self, events: &[&'a WebhookEvent], named: &BTreeSet<RepoId>) -> Pushes<'a> {
        let mut chains: BTreeMap<RepoId, Option<Chain<'a>>> =
            named.iter().map(|id| (*id, None)).collect();
        for event in events {
            let WebhookEvent::DefaultBranchPush { repo, change } = event else {
                continue;
            };
            let Some(chain) = chains.get_mut(&repo.id) else {
                let opened = change.as_ref().map(|c| Chain {
                    before: &c.before,
                    after: &c.after,
                    repo,
                    touched: self.touched(c),
                });
                chains.insert(repo.id, opened);
                continue;
            };
            let Some(open) = chain.as_mut() else { continue };
            match change {
                Some(c) if c.before == open.after => {
                    open.after = &c.after;
                    open.repo = repo;
                    open.touched.extend(self.touched(c));
                }
                _ => *chain = None,
            }
        }
        let mut pushes = Pushes::default();
        for (id, chain) in chains {
            let Some(c) = chain else { continue };
            if c.touched.is_empty() {
                pushes.free.push(FreePush {
                    id,
                    info: &c.repo.info,
                    node_id: c.repo.node_id.as_deref(),
                    before: c.before,
                    after: c.after,
                });
                continue;
            }
            // One fixed path is read whole at the same cost.
            let paths: BTreeSet<&str> = c.touched.into_iter().collect();
            if paths.len() <= MAX_TOUCHED_PATHS && self.files.single_path().is_none() {
                let touched = TouchedPush {
                    before: c.before.to_owned(),
                    after: c.after.to_owned(),
                    paths: paths.into_iter().map(str::to_owned).collect(),
                };
                pushes.touched.insert(id, touched.encode());
            }
        }
        pushes
    }
}

/// What [`FreePushes::split`] found in a group.
#[derive(Debug, Default)]
pub struct Pushes<'a> {
    /// Pushes decided without a read.
    pub free: Vec<FreePush<'a>>,
    /// What pushes touched, by repository (JSON of a [`TouchedPush`]).
    pub touched: BTreeMap<RepoId, String>,
}

/// Pushes of one repository that follow each other.
struct Chain<'a> {
    before: &'a str,
    after: &'a str,
    repo: &'a PayloadRepo,
    /// The project files they touched (repeats possible).
    touched: Vec<&'a str>,
}

/// The repositories that events other than pushes to the default branch
/// name, as their plans say (what [`FreePushes::split`] leaves to be read).
#[cfg(test)]
fn named_by_others(events: &[&WebhookEvent]) -> BTreeSet<RepoId> {
    let mut named = BTreeSet::new();
    for event in events {
        if !matches!(event, WebhookEvent::DefaultBranchPush { .. }) {
            named.extend(super::plan::plan(event).named());
        }
    }
    named
}

/// The fingerprint of a state decided under `files`, `owners` and `relations`.
fn fingerprint(files: &ProjectFiles, owners: OwnersMode, relations: RelationsMode) -> Fingerprint {
    let patterns: Vec<&str> = files.patterns().collect();
    Fingerprint::new(&patterns)
        .with_owners(owners)
        .with_relations(relations)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intake::event::RepositoryAction;

    fn repo(id: i64, name: &str) -> PayloadRepo {
        PayloadRepo {
            id: RepoId(id),
            info: crate::testing::github_repo("acme", name, 1),
            node_id: None,
        }
    }

    fn push(id: i64, before: &str, after: &str, paths: &[&str]) -> WebhookEvent {
        WebhookEvent::DefaultBranchPush {
            repo: repo(id, "r"),
            change: Some(PushChange {
                before: before.to_owned(),
                after: after.to_owned(),
                paths: paths.iter().map(|p| (*p).to_owned()).collect(),
            }),
        }
    }

    fn moves(events: &[WebhookEvent]) -> Vec<(i64, String, String)> {
        let events: Vec<&WebhookEvent> = events.iter().collect();
        FreePushes::new("project.yaml")
            .moves(&events)
            .into_iter()
            .map(|m| (m.id.0, m.before.to_owned(), m.after.to_owned()))
            .collect()
    }

    #[test]
    fn a_push_that_leaves_the_file_alone_should_move_its_repository() {
        let m = moves(&[push(1, "a", "b", &["README.md", "docs/project.yaml"])]);
        assert_eq!(m, [(1, "a".to_owned(), "b".to_owned())]);
    }

    #[test]
    fn a_push_that_touches_the_file_should_be_read() {
        assert!(moves(&[push(1, "a", "b", &["README.md", "project.yaml"])]).is_empty());
        let unknown = WebhookEvent::DefaultBranchPush {
            repo: repo(1, "r"),
            change: None,
        };
        assert!(moves(&[unknown]).is_empty());
    }

    #[test]
    fn a_push_touching_any_path_the_patterns_match_should_be_read() {
        let files = ProjectFiles::parse("project.yaml,services/*/project.yaml").expect("patterns");
        let free = FreePushes::with_files(files);
        let judged = |paths: &[&str]| {
            let event = push(1, "a", "b", paths);
            free.moves(&[&event]).len()
        };
        assert_eq!(judged(&["services/api/project.yaml"]), 0);
        assert_eq!(
            judged(&["services/api/main.rs", "services/project.yaml"]),
            1
        );
        // One path: the same fingerprint as before patterns existed.
        assert_eq!(
            FreePushes::new("project.yaml").fingerprint(),
            FreePushes::with_files(ProjectFiles::default()).fingerprint()
        );
    }

    #[test]
    fn pushes_that_follow_each_other_should_make_one_move() {
        let m = moves(&[push(1, "a", "b", &["x"]), push(1, "b", "c", &["y"])]);
        assert_eq!(m, [(1, "a".to_owned(), "c".to_owned())]);
        // Out of order, or one touching the file: the repository is read.
        assert!(moves(&[push(1, "b", "c", &["y"]), push(1, "a", "b", &["x"])]).is_empty());
        assert!(moves(&[
            push(1, "a", "b", &["x"]),
            push(1, "b", "c", &["project.yaml"])
        ])
        .is_empty());
        assert!(moves(&[
            push(1, "a", "b", &["project.yaml"]),
            push(1, "b", "c", &["x"])
        ])
        .is_empty());
    }

    #[test]
    fn pushes_touching_project_files_should_tell_which_while_they_follow_each_other() {
        let files = ProjectFiles::parse("services/*/project.yaml").expect("patterns");
        let split = |events: &[WebhookEvent]| {
            let events: Vec<&WebhookEvent> = events.iter().collect();
            let pushes =
                FreePushes::with_files(files.clone()).split(&events, &named_by_others(&events));
            let touched: Vec<(i64, TouchedPush)> = pushes
                .touched
                .iter()
                .filter_map(|(id, json)| Some((id.0, TouchedPush::decode(json.as_bytes())?)))
                .collect();
            (pushes.free.len(), touched)
        };
        let a = "services/a/project.yaml";
        let b = "services/b/project.yaml";
        let (free, touched) = split(&[
            push(1, "a", "b", &["README.md", a]),
            push(1, "b", "c", &["main.go"]),
            push(1, "c", "d", &[b, a]),
        ]);
        assert_eq!(free, 0);
        let joined = TouchedPush {
            before: "a".into(),
            after: "d".into(),
            paths: vec![a.into(), b.into()],
        };
        assert_eq!(touched, [(1, joined)], "only the matching paths, once");
        // A gap, another event naming it, or too many paths: read whole.
        let renamed = WebhookEvent::Repository {
            action: RepositoryAction::Renamed,
            repo: repo(1, "renamed"),
        };
        let gap = [push(1, "a", "b", &[a]), push(1, "x", "y", &[b])];
        assert_eq!(split(&gap), (0, Vec::new()));
        assert_eq!(split(&[push(1, "a", "b", &[a]), renamed]), (0, Vec::new()));
        let many: Vec<String> = (0..=MAX_TOUCHED_PATHS)
            .map(|n| format!("services/s{n}/project.yaml"))
            .collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(split(&[push(1, "a", "b", &many)]), (0, Vec::new()));
        // One fixed path: read whole, at the same cost.
        let one = push(1, "a", "b", &["project.yaml"]);
        assert!(FreePushes::new("project.yaml")
            .split(&[&one], &BTreeSet::new())
            .touched
            .is_empty());
    }

    #[test]
    fn another_event_naming_the_repository_should_leave_it_to_be_read() {
        let renamed = WebhookEvent::Repository {
            action: RepositoryAction::Renamed,
            repo: repo(1, "renamed"),
        };
        let m = moves(&[
            push(1, "a", "b", &["x"]),
            renamed,
            push(2, "c", "d", &["x"]),
        ]);
        assert_eq!(m, [(2, "c".to_owned(), "d".to_owned())]);
    }
}
