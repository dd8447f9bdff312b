//! Which observations a walk of `**` patterns takes, and by which tree.

use super::*;

fn pending(file: FileState, tree: Option<&str>) -> Pending {
    let repo = crate::testing::installed_repo("acme", "deep", 1);
    Pending {
        id: RepoId(7),
        tree: tree.map(str::to_owned),
        observed: Ok(Observed::Present { repo, file }),
    }
}

#[test]
fn a_head_commit_should_be_walked_by_the_tree_its_own_answer_gave() {
    let item = pending(
        FileState::Absent {
            sha: Some("c1".into()),
        },
        Some("t1"),
    );
    assert!(matches!(walkable(&item), Walkable::Yes { tree: "t1", .. }));
}

#[test]
fn a_head_commit_without_its_tree_should_not_be_recorded_without_the_walk() {
    let item = pending(
        FileState::Absent {
            sha: Some("c1".into()),
        },
        None,
    );
    assert!(matches!(walkable(&item), Walkable::WithoutTree));
}

#[test]
fn an_empty_repository_should_have_nothing_to_walk() {
    let item = pending(FileState::Absent { sha: None }, None);
    assert!(matches!(walkable(&item), Walkable::No));
}

#[test]
fn a_repository_already_unreadable_should_not_be_walked() {
    let item = pending(
        FileState::Unreadable {
            sha: Some("c1".into()),
            message: "file: too many project files".into(),
        },
        Some("t1"),
    );
    assert!(matches!(walkable(&item), Walkable::No));
}

#[test]
fn files_found_by_the_fixed_prefixes_should_be_walked_for_the_rest() {
    let item = pending(
        FileState::Files {
            sha: "c1".into(),
            files: Vec::new(),
        },
        Some("t1"),
    );
    assert!(matches!(walkable(&item), Walkable::Yes { tree: "t1", .. }));
}
