use serde_json::Value;

use super::*;
use crate::testing;
use crate::testing::webhook_fixture as fixture;

fn event_of(name: &str) -> WebhookEvent {
    let kind = name.split('.').next().unwrap_or_default();
    match parse(kind, &fixture(name)) {
        Ok(parsed) => parsed.event,
        Err(e) => panic!("{name}: {e}"),
    }
}

fn hello_world(id: i64, owner: &str, installation_id: Option<i64>) -> PayloadRepo {
    PayloadRepo {
        id: RepoId(id),
        info: {
            let mut repo = testing::github_repo(owner, "Hello-World", 0);
            repo.installation_id = installation_id.map(InstallationId);
            testing::on_branch(repo, "master")
        },
        node_id: Some(legacy_node_id(id)),
    }
}

/// GitHub's older node ids: base64 of `010:Repository<id>`, as the
/// fixtures carry them.
fn legacy_node_id(id: i64) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(format!("010:Repository{id}"))
}

fn listed_repo(id: i64, owner: &str, name: &str, installation_id: i64) -> PayloadRepo {
    listed_with_node(id, owner, name, installation_id, &legacy_node_id(id))
}

fn listed_with_node(
    id: i64,
    owner: &str,
    name: &str,
    installation_id: i64,
    node_id: &str,
) -> PayloadRepo {
    PayloadRepo {
        id: RepoId(id),
        // A listing's entry names no default branch.
        info: testing::on_branch(testing::installed_repo(owner, name, installation_id), ""),
        node_id: Some(node_id.to_owned()),
    }
}

fn is_ignored(event: &WebhookEvent) -> bool {
    matches!(event, WebhookEvent::Ignored { .. })
}

#[test]
fn ping_fixtures_should_parse_as_ping() {
    assert_eq!(event_of("ping.json"), WebhookEvent::Ping);
    assert_eq!(event_of("ping.with-app_id.json"), WebhookEvent::Ping);
}

#[test]
fn push_to_the_default_branch_should_name_the_repository() {
    // The fixtures create the branch: such a push is read.
    let expected = WebhookEvent::DefaultBranchPush {
        repo: hello_world(186853002, "Codertocat", Some(1)),
        change: None,
    };
    assert_eq!(event_of("push.default-branch-created.json"), expected);
    assert_eq!(
        event_of("push.default-branch-no-username-committer.json"),
        expected
    );
}

#[test]
fn deleted_tag_push_should_be_ignored_with_or_without_installation() {
    assert!(is_ignored(&event_of("push.tag-deleted.json")));
    assert!(is_ignored(&event_of(
        "push.tag-deleted.with-installation.json"
    )));
}

#[test]
fn push_to_another_branch_should_be_ignored() {
    let mut value: Value =
        serde_json::from_slice(&fixture("push.default-branch-created.json")).unwrap_or_default();
    value["ref"] = Value::from("refs/heads/feature");
    let body = serde_json::to_vec(&value).unwrap_or_default();
    let parsed = parse("push", &body).map(|p| p.event);
    assert!(
        matches!(parsed, Ok(WebhookEvent::Ignored { reason }) if reason.contains("refs/heads/feature"))
    );
}

#[test]
fn deletion_of_the_default_branch_should_be_ignored() {
    let mut value: Value =
        serde_json::from_slice(&fixture("push.default-branch-created.json")).unwrap_or_default();
    value["deleted"] = Value::from(true);
    let body = serde_json::to_vec(&value).unwrap_or_default();
    assert!(matches!(
        parse("push", &body).map(|p| p.event),
        Ok(WebhookEvent::Ignored { .. })
    ));
}

#[test]
fn repository_fixtures_should_parse_into_their_actions() {
    let cases = [
        ("repository.created.json", RepositoryAction::Created, None),
        (
            "repository.created.with-installation.json",
            RepositoryAction::Created,
            Some(1),
        ),
        (
            "repository.renamed.json",
            RepositoryAction::Renamed,
            Some(1),
        ),
        (
            "repository.transferred.json",
            RepositoryAction::Transferred,
            None,
        ),
        (
            "repository.transferred.with-installation.json",
            RepositoryAction::Transferred,
            Some(1),
        ),
        (
            "repository.edited.with-default_branch-edit.json",
            RepositoryAction::DefaultBranchChanged,
            None,
        ),
    ];
    for (name, action, installation) in cases {
        assert_eq!(
            event_of(name),
            WebhookEvent::Repository {
                action,
                repo: hello_world(186853261, "Octocoders", installation),
            },
            "{name}"
        );
    }
}

#[test]
fn repository_deleted_should_name_the_deleted_repository() {
    match event_of("repository.deleted.json") {
        WebhookEvent::Repository { action, repo } => {
            assert_eq!(action, RepositoryAction::Deleted);
            assert_eq!(repo.id, RepoId(120));
            assert_eq!(repo.info.full_name(), "Octocoders/Hello-World");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn edit_that_keeps_the_default_branch_should_be_ignored() {
    assert!(is_ignored(&event_of("repository.edited.json")));
}

#[test]
fn installation_fixtures_should_parse_into_their_actions() {
    let hello = vec![listed_repo(186853002, "Codertocat", "Hello-World", 957387)];
    let cases = [
        (
            "installation.created.json",
            InstallationAction::Created,
            957387,
            hello.clone(),
        ),
        (
            "installation.created.with-requester.json",
            InstallationAction::Created,
            957387,
            hello.clone(),
        ),
        (
            "installation.deleted.json",
            InstallationAction::Deleted,
            2,
            vec![listed_with_node(
                1296269,
                "octocat",
                "Hello-World",
                2,
                "MDEwOlJlcG9zaXRvcnkxODY4NTMwMDc=",
            )],
        ),
        (
            "installation.new_permissions_accepted.json",
            InstallationAction::NewPermissionsAccepted,
            957387,
            hello,
        ),
        (
            "installation.suspend.json",
            InstallationAction::Suspend,
            16598467,
            vec![],
        ),
        (
            "installation.unsuspend.json",
            InstallationAction::Unsuspend,
            16598467,
            vec![],
        ),
    ];
    for (name, action, installation_id, repos) in cases {
        let payload: Value = serde_json::from_slice(&fixture(name)).unwrap_or_default();
        // Unix seconds, or an RFC 3339 time (as some fixtures give it).
        let given = &payload["installation"]["created_at"];
        let created_at = given.as_i64().or_else(|| {
            let text = given.as_str()?;
            Some(chrono::DateTime::parse_from_rfc3339(text).ok()?.timestamp())
        });
        assert!(created_at.is_some(), "{name}: the fixture says when");
        assert_eq!(
            event_of(name),
            WebhookEvent::Installation {
                action,
                installation_id: InstallationId(installation_id),
                repos,
                created_at,
            },
            "{name}"
        );
    }
}

#[test]
fn installation_repositories_fixtures_should_list_added_and_removed() {
    assert_eq!(
        event_of("installation_repositories.added.json"),
        WebhookEvent::InstallationRepositories {
            installation_id: InstallationId(957387),
            added: vec![listed_repo(186853007, "Codertocat", "Space", 957387)],
            removed: vec![],
        }
    );
    assert_eq!(
        event_of("installation_repositories.removed.json"),
        WebhookEvent::InstallationRepositories {
            installation_id: InstallationId(2),
            added: vec![],
            removed: vec![listed_with_node(
                1296269,
                "octocat",
                "Hello-World",
                2,
                "MDEwOlJlcG9zaXRvcnkxODY4NTMwMDI=",
            )],
        }
    );
}

#[test]
fn other_events_should_be_ignored_but_keep_action_and_repo() {
    for name in [
        "check_suite.requested.json",
        "check_suite.requested.with-organization.json",
    ] {
        let kind = name.split('.').next().unwrap_or_default();
        let parsed = parse(kind, &fixture(name)).map_err(|e| e.to_string());
        let parsed = parsed.unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(is_ignored(&parsed.event), "{name}");
        assert!(parsed.action.is_some(), "{name}");
        assert_eq!(parsed.repo.as_deref(), Some("Codertocat/Hello-World"));
    }
}

#[test]
fn delivery_should_carry_action_and_repo_for_the_log() {
    let parsed = parse("repository", &fixture("repository.renamed.json"));
    let parsed = parsed.unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(parsed.action.as_deref(), Some("renamed"));
    assert_eq!(parsed.repo.as_deref(), Some("Octocoders/Hello-World"));
}

#[test]
fn push_should_carry_the_same_log_fields_as_the_envelope_reads() {
    for name in [
        "push.default-branch-created.json",
        "push.tag-deleted.json",
        "push.tag-deleted.with-installation.json",
    ] {
        let body = fixture(name);
        let parsed = parse("push", &body).unwrap_or_else(|e| panic!("{name}: {e}"));
        let envelope: Envelope = serde_json::from_slice(&body).expect("JSON");
        assert!(parsed.repo.is_some(), "{name}");
        assert_eq!(
            (parsed.action, parsed.repo),
            (envelope.action, envelope.repo),
            "{name}"
        );
    }
}

#[test]
fn push_log_fields_of_another_type_should_stay_empty_as_in_the_envelope() {
    let body = br#"{"ref": "refs/heads/main", "action": 7,
        "repository": {"id": 1, "name": "r", "full_name": ["o/r"],
                       "owner": {"login": "o"}, "default_branch": "main"}}"#;
    let parsed = parse("push", body).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!((parsed.action, parsed.repo), (None, None));
    assert!(matches!(
        parsed.event,
        WebhookEvent::DefaultBranchPush { .. }
    ));
}

#[test]
fn push_with_a_repeated_field_it_reads_should_be_refused_naming_it() {
    let body = br#"{"ref": "refs/heads/main", "action": "a", "action": "b",
        "repository": {"id": 1, "name": "r", "owner": {"login": "o"}, "default_branch": "main"}}"#;
    let message = parse("push", body)
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(message.contains("push payload"), "{message}");
    assert!(message.contains("duplicate field `action`"), "{message}");
}

#[test]
fn body_that_is_not_json_should_be_refused() {
    assert!(matches!(
        parse("push", b"not json"),
        Err(ParseError::NotJson(_))
    ));
}

#[test]
fn payload_without_a_needed_field_should_say_which() {
    let err = parse("push", br#"{"ref": "refs/heads/main"}"#).err();
    let message = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(message.contains("push payload"), "{message}");
    assert!(message.contains("repository"), "{message}");
}

#[test]
fn payload_of_the_wrong_shape_should_be_an_error_not_a_panic() {
    assert!(parse(
        "installation",
        br#"{"action": "created", "installation": 5}"#
    )
    .is_err());
    assert!(parse("repository", br#"[]"#).is_err());
    assert!(parse("installation_repositories", br#"{"action": "added"}"#).is_err());
}

#[test]
fn zero_or_negative_ids_should_be_refused_naming_the_id() {
    let repository = |id: i64| {
        format!(
            r#"{{"ref": "refs/heads/main", "repository": {{"id": {id}, "name": "r",
            "owner": {{"login": "acme"}}, "default_branch": "main"}}}}"#
        )
    };
    let listed = |repo: i64, installation: i64| {
        format!(
            r#"{{"action": "added", "installation": {{"id": {installation}}},
            "repositories_added": [{{"id": {repo}, "name": "r", "full_name": "acme/r"}}]}}"#
        )
    };
    let cases = [
        (
            "push",
            repository(0),
            "repository id must be a positive integer, not 0",
        ),
        (
            "push",
            repository(-7),
            "repository id must be a positive integer, not -7",
        ),
        (
            "installation_repositories",
            listed(-1, 5),
            "repository id must be a positive integer, not -1",
        ),
        (
            "installation_repositories",
            listed(1, 0),
            "installation id must be a positive integer, not 0",
        ),
        (
            "installation",
            r#"{"action": "created", "installation": {"id": -3}}"#.to_owned(),
            "installation id must be a positive integer, not -3",
        ),
    ];
    for (event, body, expected) in cases {
        let message = parse(event, body.as_bytes())
            .err()
            .map(|e| e.to_string())
            .unwrap_or_default();
        assert!(message.contains(expected), "{event}: {message}");
    }
}

#[test]
fn unknown_event_with_odd_json_should_be_ignored() {
    let parsed = parse("star", br#"[1, 2, 3]"#).map(|p| p.event);
    assert!(matches!(parsed, Ok(WebhookEvent::Ignored { .. })));
}

/// A large organisation's installation lists every repository: each is
/// checked, but only one past the bound is kept, since past it the plan
/// names none and asks for a listing.
#[test]
fn an_installation_listing_past_the_bound_should_keep_one_past_it_and_check_all() {
    let mut payload: Value =
        serde_json::from_slice(&fixture("installation.created.json")).expect("the fixture");
    let repo = |id: i64| serde_json::json!({"id": id, "name": format!("r{id}"), "full_name": format!("acme/r{id}")});
    let many: Vec<Value> = (1..=MAX_NAMED_REPOS as i64 + 50).map(repo).collect();
    payload["repositories"] = Value::from(many.clone());
    let body = serde_json::to_vec(&payload).expect("a body");
    let parsed = parse("installation", &body).expect("parsed");
    let WebhookEvent::Installation { repos, .. } = parsed.event else {
        panic!("an installation event: {:?}", parsed.event);
    };
    assert_eq!(repos.len(), MAX_NAMED_REPOS + 1);
    let mut bad = many;
    bad.push(serde_json::json!({"id": -5, "name": "x"}));
    payload["repositories"] = Value::from(bad);
    let body = serde_json::to_vec(&payload).expect("a body");
    let refused = parse("installation", &body);
    assert!(refused.is_err(), "an id past the bound is checked too");
}
