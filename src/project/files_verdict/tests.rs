use super::*;
use crate::project::preview::OwnedElsewhere;
use crate::project::verdict::HeadFile;

fn touched(path: &str, text: Option<&str>) -> TouchedFile {
    let head = match text {
        Some(text) => HeadFile::Found(text.as_bytes().to_vec()),
        None => HeadFile::Absent,
    };
    TouchedFile {
        path: path.into(),
        parsed: Parsed::read(path, head),
    }
}

fn entry(name: &str, path: &str) -> RegisteredEntry {
    RegisteredEntry {
        name: name.into(),
        path: path.into(),
        fields: crate::project::Fields {
            owner: "t".into(),
            ..Default::default()
        },
    }
}

fn registry(entries: &[(&str, &str)]) -> Snapshot {
    Snapshot {
        entries: entries.iter().map(|(n, p)| entry(n, p)).collect(),
        taken: Vec::new(),
    }
}

#[test]
fn two_touched_files_should_be_previewed_each_under_its_path() {
    let files = [
        touched("services/a/project.yaml", Some("name: a\nowner: t\n")),
        touched("services/b/project.yaml", Some("name: b2\nowner: t\n")),
    ];
    let registry = registry(&[
        ("a", "services/a/project.yaml"),
        ("b", "services/b/project.yaml"),
        ("c", "services/c/project.yaml"),
    ]);
    let verdict = evaluate_files("0123456789", &files, &registry, 0);
    assert_eq!(verdict.conclusion, "success");
    assert_eq!(verdict.title, "adds 1, changes 0, removes 1");
    assert!(verdict
        .summary
        .contains("- `services/a/project.yaml`: 1 entry"));
    assert!(verdict
        .summary
        .contains("- `services/b/project.yaml`: 1 entry"));
    assert!(
        !verdict.summary.contains("services/c"),
        "{}",
        verdict.summary
    );
}

#[test]
fn a_name_declared_in_two_touched_files_should_fail_at_the_second() {
    let files = [
        touched("services/a/project.yaml", Some("name: api\nowner: t\n")),
        touched("services/b/project.yaml", Some("owner: t\nname: api\n")),
    ];
    let verdict = evaluate_files("0123456789", &files, &Snapshot::default(), 0);
    assert_eq!(verdict.conclusion, "failure");
    assert_eq!(verdict.title, "1 problem");
    assert_eq!(verdict.annotations.len(), 1);
    assert_eq!(verdict.annotations[0]["path"], "services/b/project.yaml");
    assert_eq!(verdict.annotations[0]["start_line"], 2);
    assert_eq!(
        verdict.annotations[0]["message"],
        "name: \"api\" is also declared in services/a/project.yaml"
    );
}

#[test]
fn a_name_an_untouched_file_or_another_repository_holds_should_fail() {
    let files = [touched(
        "services/a/project.yaml",
        Some("projects:\n  - name: c\n    owner: t\n  - name: theirs\n    owner: t\n"),
    )];
    let mut registry = registry(&[("c", "services/c/project.yaml")]);
    registry.taken.push(OwnedElsewhere {
        name: "theirs".into(),
        owner_repo: "acme/other".into(),
    });
    let verdict = evaluate_files("0123456789", &files, &registry, 0);
    assert_eq!(verdict.conclusion, "failure");
    let messages: Vec<&str> = verdict
        .annotations
        .iter()
        .filter_map(|a| a["message"].as_str())
        .collect();
    assert_eq!(
        messages,
        [
            "projects[0].name: \"c\" is also declared in services/c/project.yaml",
            "projects[1].name: \"theirs\" is owned by acme/other"
        ]
    );
}

#[test]
fn a_removed_file_should_remove_its_entries_only() {
    let files = [touched("services/b/project.yaml", None)];
    let registry = registry(&[
        ("a", "services/a/project.yaml"),
        ("b", "services/b/project.yaml"),
    ]);
    let verdict = evaluate_files("0123456789", &files, &registry, 0);
    assert_eq!(verdict.conclusion, "success");
    assert_eq!(verdict.title, "adds 0, changes 0, removes 1");
    assert!(verdict
        .summary
        .contains("- `services/b/project.yaml`: removed"));
    assert!(verdict
        .summary
        .contains("**Merging removes 1 entry from the registry: b.**"));
}

#[test]
fn a_moved_entry_should_be_changed_with_its_path() {
    let files = [
        touched("old/project.yaml", None),
        touched("new/project.yaml", Some("name: a\nowner: t\n")),
    ];
    let registry = registry(&[("a", "old/project.yaml")]);
    let verdict = evaluate_files("0123456789", &files, &registry, 0);
    assert_eq!(verdict.title, "adds 0, changes 1, removes 0");
    assert!(
        verdict
            .summary
            .contains("  - path: `old/project.yaml` → `new/project.yaml`"),
        "{}",
        verdict.summary
    );
}

#[test]
fn an_invalid_file_should_keep_its_entries_and_fail_at_its_path() {
    let files = [touched("b/project.yaml", Some("name: b\nowner: ''\n"))];
    let registry = registry(&[("b", "b/project.yaml")]);
    let verdict = evaluate_files("0123456789", &files, &registry, 0);
    assert_eq!(verdict.conclusion, "failure");
    assert_eq!(verdict.annotations[0]["path"], "b/project.yaml");
    assert!(verdict
        .summary
        .contains("b/project.yaml:2:8: owner: must not be empty"));
    assert!(
        !verdict.summary.contains("Merging removes"),
        "{}",
        verdict.summary
    );
}

#[test]
fn no_touched_file_should_be_what_an_untouched_file_gets() {
    let none = evaluate_files("0123456789", &[], &Snapshot::default(), 0);
    assert_eq!(none.conclusion, "neutral");
    let some = evaluate_files("0123456789", &[], &registry(&[("a", "a/project.yaml")]), 0);
    assert_eq!(
        (some.conclusion, some.title.as_str()),
        ("success", "adds 0, changes 0, removes 0")
    );
}
