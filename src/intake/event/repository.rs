//! `repository`: the actions that can change what Roster registers for a
//! repository (created, deleted, archived, renamed, a new default branch…).

use serde::Deserialize;
use serde_json::Value;

use super::payload::{ignored, read, Installation, Repository};
use super::{RepositoryAction, WebhookEvent};

pub(super) fn parse_repository(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
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
