//! The events that ask for a `Roster` check run: `pull_request` (opened,
//! synchronize, reopened, and edited when its base changed) into the
//! default branch, and `check_suite`/`check_run` `rerequested`.
//!
//! Each becomes a [`CheckRequest`] per pull request (or, for a rerequest
//! on a commit of no pull request, one for the commit itself). Like the
//! other parsers, only the needed fields are read, and a missing one is an
//! error, never a panic.

use serde::Deserialize;
use serde_json::Value;

use super::payload::ignored;
use super::{CheckRequest, WebhookEvent};
use crate::github::checks_api::CHECK_NAME;
use crate::source::{InstallationId, RepoId};

#[derive(Deserialize)]
struct Repository {
    #[serde(deserialize_with = "super::payload::repository_id")]
    id: RepoId,
    name: String,
    owner: Owner,
    default_branch: String,
    #[serde(default)]
    private: Option<bool>,
    #[serde(default)]
    visibility: Option<String>,
}

#[derive(Deserialize)]
struct Owner {
    login: String,
}

#[derive(Deserialize)]
struct Installation {
    #[serde(deserialize_with = "super::payload::installation_id")]
    id: InstallationId,
}

#[derive(Deserialize)]
struct Base {
    #[serde(rename = "ref")]
    git_ref: String,
}

/// A pull request as check payloads list it.
#[derive(Deserialize)]
struct LinkedPull {
    number: i32,
    base: Base,
}

impl Repository {
    /// Whether anyone may read the repository; a payload that says neither
    /// counts as public, so that its checks name no other repository.
    fn public(&self) -> bool {
        match &self.visibility {
            Some(visibility) => visibility == "public",
            None => self.private != Some(true),
        }
    }

    fn request(
        &self,
        installation: InstallationId,
        number: Option<i32>,
        sha: &str,
    ) -> CheckRequest {
        CheckRequest {
            repo_id: self.id,
            pull_request: number,
            head_sha: sha.to_owned(),
            installation_id: installation,
            owner: self.owner.login.clone(),
            name: self.name.clone(),
            public: self.public(),
        }
    }
}

/// `pull_request`.
pub fn parse_pull_request(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct Event {
        pull_request: Pull,
        repository: Repository,
        installation: Option<Installation>,
    }
    #[derive(Deserialize, Default)]
    struct Changes {
        base: Option<Value>,
    }
    #[derive(Deserialize)]
    struct Pull {
        number: i32,
        #[serde(default)]
        state: Option<String>,
        head: Head,
        base: Base,
    }
    #[derive(Deserialize)]
    struct Head {
        sha: String,
    }
    // The action first: the many actions that cannot change the file
    // (labeled, assigned, closed, …) are ignored whatever else they carry.
    #[derive(Deserialize)]
    struct Action {
        action: String,
        #[serde(default)]
        changes: Changes,
    }
    let Action { action, changes } = serde_json::from_slice(body)?;
    match action.as_str() {
        "opened" | "synchronize" | "reopened" => {}
        "edited" if changes.base.is_some() => {}
        "edited" => return Ok(ignored("the edit left the base branch as it was")),
        other => {
            return Ok(ignored(format!(
                "pull_request {other} does not change the file"
            )))
        }
    }
    let event: Event = serde_json::from_slice(body)?;
    let pull = event.pull_request;
    if pull.state.as_deref() == Some("closed") {
        return Ok(ignored("the pull request is closed"));
    }
    if pull.base.git_ref != event.repository.default_branch {
        return Ok(ignored(format!(
            "pull request into {}, not the default branch {}",
            pull.base.git_ref, event.repository.default_branch
        )));
    }
    let Some(installation) = event.installation else {
        return Ok(ignored("no installation in the payload"));
    };
    Ok(WebhookEvent::CheckRequested {
        requests: vec![event.repository.request(
            installation.id,
            Some(pull.number),
            &pull.head.sha,
        )],
    })
}

/// `check_suite` and `check_run`: only `rerequested` matters.
pub fn parse_rerequest(event_name: &str, body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct Event {
        action: String,
        check_suite: Option<Suite>,
        check_run: Option<Run>,
        repository: Repository,
        installation: Option<Installation>,
    }
    #[derive(Deserialize)]
    struct Suite {
        head_sha: String,
        head_branch: Option<String>,
        #[serde(default)]
        pull_requests: Vec<LinkedPull>,
    }
    #[derive(Deserialize)]
    struct Run {
        name: String,
        head_sha: String,
        #[serde(default)]
        pull_requests: Vec<LinkedPull>,
        check_suite: Option<RunSuite>,
    }
    #[derive(Deserialize)]
    struct RunSuite {
        head_branch: Option<String>,
    }
    let event: Event = serde_json::from_slice(body)?;
    if event.action != "rerequested" {
        return Ok(ignored(format!(
            "{event_name} {} asks for no run",
            event.action
        )));
    }
    let (sha, branch, pulls) = match (event.check_suite, event.check_run) {
        (Some(suite), _) => (suite.head_sha, suite.head_branch, suite.pull_requests),
        (None, Some(run)) if run.name != CHECK_NAME => {
            return Ok(ignored(format!("the run {} is not Roster's", run.name)))
        }
        (None, Some(run)) => (
            run.head_sha,
            run.check_suite.and_then(|s| s.head_branch),
            run.pull_requests,
        ),
        (None, None) => return Err(serde::de::Error::missing_field("check_suite")),
    };
    let Some(installation) = event.installation else {
        return Ok(ignored("no installation in the payload"));
    };
    let repo = &event.repository;
    let mut requests: Vec<CheckRequest> = pulls
        .iter()
        .filter(|p| p.base.git_ref == repo.default_branch)
        .map(|p| repo.request(installation.id, Some(p.number), &sha))
        .collect();
    if requests.is_empty() && pulls.is_empty() {
        // A commit of no pull request: the default branch's own run.
        if branch.as_deref() == Some(repo.default_branch.as_str()) {
            requests.push(repo.request(installation.id, None, &sha));
        }
    }
    if requests.is_empty() {
        return Ok(ignored("no pull request into the default branch"));
    }
    Ok(WebhookEvent::CheckRequested { requests })
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::webhook_fixture as fixture;

    fn requests(event: WebhookEvent) -> Vec<CheckRequest> {
        match event {
            WebhookEvent::CheckRequested { requests } => requests,
            other => panic!("not a check request: {other:?}"),
        }
    }

    #[test]
    fn an_opened_pull_request_into_the_default_branch_should_ask_for_a_run() {
        let asked = requests(parse_pull_request(&fixture("pull_request.opened.json")).unwrap());
        assert_eq!(
            asked,
            vec![CheckRequest {
                repo_id: RepoId(186_853_002),
                pull_request: Some(2),
                head_sha: "ec26c3e57ca3a959ca5aad62de7213c562f8c821".into(),
                installation_id: InstallationId(1),
                owner: "Codertocat".into(),
                name: "Hello-World".into(),
                public: true,
            }]
        );
        for name in [
            "pull_request.synchronize.json",
            "pull_request.reopened.json",
        ] {
            let asked = requests(parse_pull_request(&fixture(name)).unwrap());
            assert_eq!(asked.len(), 1, "{name}");
        }
    }

    #[test]
    fn a_pull_request_from_a_fork_should_be_checked_in_the_base_repository() {
        let mut fork: Value = serde_json::from_slice(&fixture("pull_request.opened.json")).unwrap();
        fork["pull_request"]["head"]["repo"]["id"] = 999.into();
        fork["pull_request"]["head"]["repo"]["full_name"] = "someone/Hello-World".into();
        fork["pull_request"]["head"]["repo"]["owner"]["login"] = "someone".into();
        let body = serde_json::to_vec(&fork).unwrap();
        let asked = requests(parse_pull_request(&body).unwrap());
        assert_eq!(asked[0].repo_id, RepoId(186_853_002));
        assert_eq!(asked[0].owner, "Codertocat");
        assert_eq!(
            asked[0].head_sha,
            "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
        );
    }

    #[test]
    fn an_edit_should_ask_only_when_the_base_changed() {
        let edited = fixture("pull_request.edited.base-changed.json");
        assert_eq!(requests(parse_pull_request(&edited).unwrap()).len(), 1);
        let mut title_only: Value = serde_json::from_slice(&edited).unwrap();
        title_only["changes"] = serde_json::json!({"title": {"from": "old"}});
        let body = serde_json::to_vec(&title_only).unwrap();
        assert!(matches!(
            parse_pull_request(&body).unwrap(),
            WebhookEvent::Ignored { .. }
        ));
    }

    #[test]
    fn a_pull_request_into_another_branch_should_be_ignored() {
        let mut other: Value =
            serde_json::from_slice(&fixture("pull_request.opened.json")).unwrap();
        other["pull_request"]["base"]["ref"] = "release".into();
        let body = serde_json::to_vec(&other).unwrap();
        assert!(matches!(
            parse_pull_request(&body).unwrap(),
            WebhookEvent::Ignored { .. }
        ));
    }

    #[test]
    fn a_rerequested_suite_should_ask_for_each_pull_request_into_the_default_branch() {
        let mut suite: Value =
            serde_json::from_slice(&fixture("check_suite.rerequested.json")).unwrap();
        suite["repository"]["default_branch"] = "master".into();
        let body = serde_json::to_vec(&suite).unwrap();
        let asked = requests(parse_rerequest("check_suite", &body).unwrap());
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].pull_request, Some(2));
        assert_eq!(
            asked[0].head_sha,
            "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
        );
    }

    #[test]
    fn a_rerequested_run_of_no_pull_request_should_ask_for_its_commit() {
        let mut run: Value =
            serde_json::from_slice(&fixture("check_run.rerequested.json")).unwrap();
        run["check_run"]["name"] = CHECK_NAME.into();
        let branch = run["repository"]["default_branch"].clone();
        run["check_run"]["check_suite"]["head_branch"] = branch;
        let body = serde_json::to_vec(&run).unwrap();
        let asked = requests(parse_rerequest("check_run", &body).unwrap());
        assert_eq!(asked.len(), 1);
        assert_eq!(asked[0].pull_request, None);
        // Another App's run is not ours to redo.
        let theirs = fixture("check_run.rerequested.json");
        assert!(matches!(
            parse_rerequest("check_run", &theirs).unwrap(),
            WebhookEvent::Ignored { .. }
        ));
    }

    #[test]
    fn a_payload_without_its_fields_should_be_an_error_not_a_panic() {
        assert!(parse_pull_request(br#"{"action": "opened"}"#).is_err());
        assert!(matches!(
            parse_pull_request(br#"{"action": "labeled"}"#),
            Ok(WebhookEvent::Ignored { .. })
        ));
        assert!(parse_rerequest("check_run", br#"{"action": "rerequested", "repository": {"id": 1, "name": "a", "owner": {"login": "o"}, "default_branch": "main"}}"#).is_err());
    }
}
