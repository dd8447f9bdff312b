//! `installation` and `installation_repositories`: the App installed,
//! uninstalled, suspended, or given repositories, which those payloads list
//! without their default branch or URL.

use std::fmt;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use super::payload::{ignored, installation_id, read, repository_id, Account};
use super::{InstallationAction, PayloadRepo, WebhookEvent, MAX_NAMED_REPOS};
use crate::source::{InstallationId, RepoId, RepoInfo};

pub(super) fn parse_installation(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    #[derive(Deserialize)]
    struct InstallationEvent {
        action: String,
        installation: InstallationWithAccount,
        #[serde(default, deserialize_with = "bounded")]
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
        created_at: installation.created_at.as_ref().and_then(unix_seconds),
        repos: listed(event.repositories, installation),
    })
}

pub(super) fn parse_installation_repositories(
    body: &[u8],
) -> Result<WebhookEvent, serde_json::Error> {
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

#[derive(Deserialize)]
struct InstallationWithAccount {
    #[serde(deserialize_with = "installation_id")]
    id: InstallationId,
    account: Option<Account>,
    /// Unix seconds in webhooks, an RFC 3339 time in REST answers; another
    /// shape only leaves it unknown.
    #[serde(default)]
    created_at: Option<serde_json::Value>,
}

/// A time given as Unix seconds or as an RFC 3339 text, in Unix seconds.
fn unix_seconds(value: &serde_json::Value) -> Option<i64> {
    match value {
        serde_json::Value::Number(n) => n.as_i64(),
        serde_json::Value::String(text) => chrono::DateTime::parse_from_rfc3339(text)
            .ok()
            .map(|t| t.timestamp()),
        _ => None,
    }
}

/// A repository as installation payloads list it: id, name, `owner/name`.
#[derive(Deserialize)]
struct ListedRepository {
    #[serde(deserialize_with = "repository_id")]
    id: RepoId,
    node_id: Option<String>,
    name: String,
    full_name: Option<String>,
}

/// The repositories of a list, each checked, kept up to one past
/// [`MAX_NAMED_REPOS`] (enough to tell the plan the bound was passed).
fn bounded<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<ListedRepository>, D::Error> {
    struct Bounded;
    impl<'de> Visitor<'de> for Bounded {
        type Value = Vec<ListedRepository>;
        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("a list of repositories")
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
            let mut kept = Vec::new();
            while let Some(repo) = seq.next_element::<ListedRepository>()? {
                if kept.len() <= MAX_NAMED_REPOS {
                    kept.push(repo);
                }
            }
            Ok(kept)
        }
    }
    deserializer.deserialize_seq(Bounded)
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
                id: repo.id,
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
