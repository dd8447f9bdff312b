//! GitHub's webhook payloads, mapped into Roster's own [`WebhookEvent`].
//!
//! One small `parse_*` function per event type reads only the fields Roster
//! needs (unknown fields are ignored), so the rest of the server never sees a
//! raw payload. A payload that lacks a needed field is an error, never a panic.

use serde::de::{DeserializeOwned, Deserializer, Error as _};
use serde::Deserialize;
use serde_json::Value;

use super::envelope::Envelope;

use crate::source::{RepoId, RepoInfo};

/// A repository named in a payload, with what the payload says about it.
///
/// Installation payloads list repositories without their default branch or
/// URL: `default_branch` is then empty and `html_url` `None`, until the
/// repository's own reconcile reads them from GitHub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PayloadRepo {
    pub id: RepoId,
    pub info: RepoInfo,
    /// GitHub's GraphQL node id, by which a batch reads the repository.
    pub node_id: Option<String>,
}

/// What happened to a repository, among the `repository` actions that can
/// change what Roster registers for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RepositoryAction {
    Created,
    Deleted,
    Archived,
    Unarchived,
    Renamed,
    Transferred,
    /// Only when the default branch changed: the file is read from it.
    DefaultBranchChanged,
    Privatized,
    Publicized,
}

/// What happened to an installation of the App.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InstallationAction {
    Created,
    Deleted,
    Suspend,
    Unsuspend,
    NewPermissionsAccepted,
}

/// A delivery, as Roster understands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookEvent {
    /// GitHub checks that the hook works.
    Ping,
    /// A push to the default branch: the project file may have changed.
    DefaultBranchPush { repo: PayloadRepo },
    /// The repository appeared, went, moved or changed in a way that matters.
    Repository {
        action: RepositoryAction,
        repo: PayloadRepo,
    },
    /// The App was installed, uninstalled, suspended or given permissions.
    /// `repos` are the repositories the payload lists (often none).
    Installation {
        action: InstallationAction,
        installation_id: i64,
        repos: Vec<PayloadRepo>,
    },
    /// Repositories were added to or removed from an installation.
    InstallationRepositories {
        installation_id: i64,
        added: Vec<PayloadRepo>,
        removed: Vec<PayloadRepo>,
    },
    /// Pull requests (or a commit) whose `Roster` check run is to be
    /// evaluated and posted.
    CheckRequested {
        requests: Vec<crate::registry::check_requests::CheckRequest>,
    },
    /// Nothing for Roster to do; `reason` says why, for the delivery log.
    Ignored { reason: String },
}

/// A parsed delivery: the event plus what the delivery log shows about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedDelivery {
    /// The payload's `action`, when it has one.
    pub action: Option<String>,
    /// `owner/name` of the payload's `repository`, when it has one.
    pub repo: Option<String>,
    pub event: WebhookEvent,
}

/// Why a (correctly signed) body could not be understood; answers 400.
#[derive(Debug, thiserror::Error)]
pub enum ParseError {
    #[error("body is not JSON: {0}")]
    NotJson(#[source] serde_json::Error),
    #[error("{event} payload: {source}")]
    Payload {
        event: String,
        #[source]
        source: serde_json::Error,
    },
}

/// Parses a verified body of event type `event` (the `X-GitHub-Event` header).
///
/// The body is read into typed structs only, never into a
/// `serde_json::Value` of the whole payload (see [`Envelope`]).
pub fn parse(event: &str, body: &[u8]) -> Result<ParsedDelivery, ParseError> {
    let Envelope { action, repo } = serde_json::from_slice(body).map_err(ParseError::NotJson)?;
    let event = match event {
        "ping" => Ok(WebhookEvent::Ping),
        "push" => parse_push(body),
        "repository" => parse_repository(body),
        "installation" => parse_installation(body),
        "installation_repositories" => parse_installation_repositories(body),
        "pull_request" => super::pull_request::parse_pull_request(body),
        "check_suite" | "check_run" => super::pull_request::parse_rerequest(event, body),
        other => Ok(WebhookEvent::Ignored {
            reason: format!("{other} events do not change project files"),
        }),
    }
    .map_err(|source| ParseError::Payload {
        event: event.to_owned(),
        source,
    })?;
    Ok(ParsedDelivery {
        action,
        repo,
        event,
    })
}

fn parse_push(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct Push {
        #[serde(rename = "ref")]
        git_ref: String,
        #[serde(default)]
        deleted: bool,
        repository: Repository,
        installation: Option<Installation>,
    }
    let push: Push = read(body)?;
    let default_ref = format!("refs/heads/{}", push.repository.default_branch);
    if push.deleted {
        return Ok(ignored(format!("{} was deleted", push.git_ref)));
    }
    if push.git_ref != default_ref {
        return Ok(ignored(format!(
            "push to {}, not the default branch {}",
            push.git_ref, push.repository.default_branch
        )));
    }
    Ok(WebhookEvent::DefaultBranchPush {
        repo: push.repository.into_payload_repo(push.installation),
    })
}

fn parse_repository(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct RepositoryEvent {
        action: String,
        #[serde(default)]
        changes: Changes,
        repository: Repository,
        installation: Option<Installation>,
    }
    #[derive(Deserialize, Default)]
    struct Changes {
        default_branch: Option<Value>,
    }
    let event: RepositoryEvent = read(body)?;
    let action = match event.action.as_str() {
        "created" => RepositoryAction::Created,
        "deleted" => RepositoryAction::Deleted,
        "archived" => RepositoryAction::Archived,
        "unarchived" => RepositoryAction::Unarchived,
        "renamed" => RepositoryAction::Renamed,
        "transferred" => RepositoryAction::Transferred,
        "edited" if event.changes.default_branch.is_some() => {
            RepositoryAction::DefaultBranchChanged
        }
        "edited" => return Ok(ignored("edit left the default branch as it was")),
        "privatized" => RepositoryAction::Privatized,
        "publicized" => RepositoryAction::Publicized,
        other => return Ok(ignored(format!("repository {other} does not matter"))),
    };
    Ok(WebhookEvent::Repository {
        action,
        repo: event.repository.into_payload_repo(event.installation),
    })
}

fn parse_installation(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct InstallationEvent {
        action: String,
        installation: InstallationWithAccount,
        #[serde(default)]
        repositories: Vec<ListedRepository>,
    }
    let event: InstallationEvent = read(body)?;
    let action = match event.action.as_str() {
        "created" => InstallationAction::Created,
        "deleted" => InstallationAction::Deleted,
        "suspend" => InstallationAction::Suspend,
        "unsuspend" => InstallationAction::Unsuspend,
        "new_permissions_accepted" => InstallationAction::NewPermissionsAccepted,
        other => return Ok(ignored(format!("installation {other} does not matter"))),
    };
    let installation = &event.installation;
    Ok(WebhookEvent::Installation {
        action,
        installation_id: installation.id,
        repos: listed(event.repositories, installation),
    })
}

fn parse_installation_repositories(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct InstallationRepositoriesEvent {
        action: String,
        installation: InstallationWithAccount,
        #[serde(default)]
        repositories_added: Vec<ListedRepository>,
        #[serde(default)]
        repositories_removed: Vec<ListedRepository>,
    }
    let event: InstallationRepositoriesEvent = read(body)?;
    if !matches!(event.action.as_str(), "added" | "removed") {
        return Ok(ignored(format!(
            "installation_repositories {} does not matter",
            event.action
        )));
    }
    let installation = &event.installation;
    Ok(WebhookEvent::InstallationRepositories {
        installation_id: installation.id,
        added: listed(event.repositories_added, installation),
        removed: listed(event.repositories_removed, installation),
    })
}

fn read<T: DeserializeOwned>(body: &[u8]) -> Result<T, serde_json::Error> {
    serde_json::from_slice(body)
}

/// GitHub's ids are positive. A zero or negative one is not from GitHub: it
/// would register a repository that no listing ever finds, so the payload
/// is refused (400) before anything is written.
fn positive<'de, D: Deserializer<'de>>(what: &str, deserializer: D) -> Result<i64, D::Error> {
    let id = i64::deserialize(deserializer)?;
    if id > 0 {
        Ok(id)
    } else {
        Err(D::Error::custom(format_args!(
            "{what} id must be a positive integer, not {id}"
        )))
    }
}

pub(super) fn repository_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    positive("repository", deserializer)
}

pub(super) fn installation_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    positive("installation", deserializer)
}

pub(super) fn ignored(reason: impl Into<String>) -> WebhookEvent {
    WebhookEvent::Ignored {
        reason: reason.into(),
    }
}

/// `repository` as push and repository events carry it.
#[derive(Deserialize)]
struct Repository {
    #[serde(deserialize_with = "repository_id")]
    id: i64,
    node_id: Option<String>,
    name: String,
    owner: Account,
    default_branch: String,
    html_url: Option<String>,
}

impl Repository {
    fn into_payload_repo(self, installation: Option<Installation>) -> PayloadRepo {
        PayloadRepo {
            id: RepoId(self.id),
            info: RepoInfo {
                owner: self.owner.login,
                name: self.name,
                installation_id: installation.map(|i| i.id),
                default_branch: self.default_branch,
                html_url: self.html_url,
            },
            node_id: self.node_id,
        }
    }
}

#[derive(Deserialize)]
struct Account {
    login: String,
}

#[derive(Deserialize)]
struct Installation {
    #[serde(deserialize_with = "installation_id")]
    id: i64,
}

#[derive(Deserialize)]
struct InstallationWithAccount {
    #[serde(deserialize_with = "installation_id")]
    id: i64,
    account: Option<Account>,
}

/// A repository as installation payloads list it: id, name, `owner/name`.
#[derive(Deserialize)]
struct ListedRepository {
    #[serde(deserialize_with = "repository_id")]
    id: i64,
    node_id: Option<String>,
    name: String,
    full_name: Option<String>,
}

fn listed(
    repos: Vec<ListedRepository>,
    installation: &InstallationWithAccount,
) -> Vec<PayloadRepo> {
    repos
        .into_iter()
        .map(|repo| {
            let owner = repo
                .full_name
                .as_deref()
                .and_then(|full| full.split_once('/'))
                .map(|(owner, _)| owner.to_owned())
                .or_else(|| installation.account.as_ref().map(|a| a.login.clone()))
                .unwrap_or_default();
            PayloadRepo {
                id: RepoId(repo.id),
                info: RepoInfo {
                    owner,
                    name: repo.name,
                    installation_id: Some(installation.id),
                    default_branch: String::new(),
                    html_url: None,
                },
                node_id: repo.node_id,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn fixture(name: &str) -> Vec<u8> {
        let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/github/webhooks")
            .join(name);
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

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
            info: RepoInfo {
                owner: owner.to_owned(),
                name: "Hello-World".to_owned(),
                installation_id,
                default_branch: "master".to_owned(),
                html_url: Some(format!("https://github.com/{owner}/Hello-World")),
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
            info: RepoInfo {
                owner: owner.to_owned(),
                name: name.to_owned(),
                installation_id: Some(installation_id),
                default_branch: String::new(),
                html_url: None,
            },
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
        let expected = WebhookEvent::DefaultBranchPush {
            repo: hello_world(186853002, "Codertocat", Some(1)),
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
        let mut value: Value = serde_json::from_slice(&fixture("push.default-branch-created.json"))
            .unwrap_or_default();
        value["ref"] = Value::from("refs/heads/feature");
        let body = serde_json::to_vec(&value).unwrap_or_default();
        let parsed = parse("push", &body).map(|p| p.event);
        assert!(
            matches!(parsed, Ok(WebhookEvent::Ignored { reason }) if reason.contains("refs/heads/feature"))
        );
    }

    #[test]
    fn deletion_of_the_default_branch_should_be_ignored() {
        let mut value: Value = serde_json::from_slice(&fixture("push.default-branch-created.json"))
            .unwrap_or_default();
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
            assert_eq!(
                event_of(name),
                WebhookEvent::Installation {
                    action,
                    installation_id,
                    repos,
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
                installation_id: 957387,
                added: vec![listed_repo(186853007, "Codertocat", "Space", 957387)],
                removed: vec![],
            }
        );
        assert_eq!(
            event_of("installation_repositories.removed.json"),
            WebhookEvent::InstallationRepositories {
                installation_id: 2,
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
}
