use super::*;
use crate::directory::{KnownTeam, Team};
use crate::project::preview::Snapshot;
use crate::project::verdict::{evaluate, HeadFile, Parsed};

fn acme() -> Directory {
    let team = |id: i64, slug: &str, deleted: bool| KnownTeam {
        team: Team {
            id,
            slug: slug.to_owned(),
            name: slug.to_owned(),
            parent_id: None,
            secret: false,
        },
        deleted,
    };
    Directory {
        org_id: 1,
        login: "acme".to_owned(),
        teams: vec![
            team(10, "payments-core", false),
            team(11, "platform", false),
            team(12, "legacy", true),
        ],
        slugs: vec![
            ("payments".to_owned(), 10),
            ("payments-core".to_owned(), 10),
            ("platform".to_owned(), 11),
            ("legacy".to_owned(), 12),
        ],
        ..Directory::default()
    }
}

/// The check run for `text`, with its owners checked under `mode`.
fn check(text: &str, mode: OwnersMode, registered: &[RegisteredEntry]) -> Verdict {
    let parsed = Parsed::read("project.yaml", HeadFile::Found(text.as_bytes().to_vec()));
    let snapshot = Snapshot {
        entries: registered.to_vec(),
        taken: Vec::new(),
    };
    let mut verdict = evaluate("project.yaml", "0123456789", &parsed, &snapshot);
    let Parsed::Valid { file, text } = &parsed else {
        panic!("the file should be valid");
    };
    let notes = owner_notes("project.yaml", file, text, &acme(), mode, registered);
    annotate(&mut verdict, &notes, mode);
    verdict
}

fn entry(name: &str, owner: &str) -> RegisteredEntry {
    RegisteredEntry {
        path: "project.yaml".into(),
        name: name.to_owned(),
        fields: crate::project::Fields {
            owner: owner.to_owned(),
            ..Default::default()
        },
    }
}

#[test]
fn an_unknown_owner_should_be_a_warning_on_its_line_under_warn() {
    let verdict = check("name: a\nowner: platfrom\n", OwnersMode::Warn, &[]);
    assert_eq!(verdict.conclusion, "success");
    assert_eq!(
        verdict.title,
        "adds 1, changes 0, removes 0 · 1 owner to fix"
    );
    assert_eq!(verdict.annotations.len(), 1);
    let a = &verdict.annotations[0];
    assert_eq!(a["annotation_level"], "warning");
    assert_eq!(
        (a["start_line"].as_u64(), a["start_column"].as_u64()),
        (Some(2), Some(8))
    );
    assert_eq!(
        a["message"],
        "owner: no team or member \"platfrom\" in acme (did you mean platform?)"
    );
    assert!(
        verdict.summary.contains("ROSTER_OWNERS=warn"),
        "{}",
        verdict.summary
    );
}

#[test]
fn an_unknown_owner_should_fail_the_check_under_require() {
    let verdict = check(
        "projects:\n  - name: a\n    owner: platform\n  - name: b\n    owner: nobody\n",
        OwnersMode::Require,
        &[],
    );
    assert_eq!(verdict.conclusion, "failure");
    assert_eq!(verdict.title, "1 problem");
    let a = &verdict.annotations[0];
    assert_eq!(a["annotation_level"], "failure");
    assert_eq!(a["start_line"], 5);
    assert_eq!(
        a["message"],
        "projects[1].owner: no team or member \"nobody\" in acme"
    );
}

#[test]
fn a_renamed_team_should_be_named_with_its_new_slug() {
    let verdict = check("name: a\nowner: payments\n", OwnersMode::Require, &[]);
    assert_eq!(
        verdict.conclusion, "failure",
        "a file that newly names an old slug"
    );
    assert_eq!(
        verdict.annotations[0]["message"],
        "owner: \"payments\" was renamed to \"payments-core\"; update the file"
    );
    // An entry that already named it followed the team: a warning only.
    let kept = check(
        "name: a\nowner: payments\n",
        OwnersMode::Require,
        &[entry("a", "Payments")],
    );
    assert_eq!(kept.conclusion, "success");
    assert_eq!(kept.annotations[0]["annotation_level"], "warning");
}

#[test]
fn a_deleted_team_should_be_flagged() {
    let verdict = check("name: a\nowner: legacy\n", OwnersMode::Warn, &[]);
    assert_eq!(verdict.conclusion, "success");
    assert_eq!(
        verdict.annotations[0]["message"],
        "owner: team \"legacy\" was deleted in acme"
    );
}

#[test]
fn nothing_should_be_said_under_off_or_when_owners_resolve() {
    let off = check("name: a\nowner: nobody\n", OwnersMode::Off, &[]);
    assert!(off.annotations.is_empty());
    assert_eq!(off.title, "adds 1, changes 0, removes 0");
    let fine = check(
        "name: a\nowner: '@acme/platform'\n",
        OwnersMode::Require,
        &[],
    );
    assert_eq!(fine.conclusion, "success");
    assert!(fine.annotations.is_empty());
}
