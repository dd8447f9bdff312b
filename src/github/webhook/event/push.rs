//! `push`: only a push to the default branch can change the project file.

use serde::Deserialize;

use super::payload::{ignored, read, Installation, Repository};
use super::WebhookEvent;

pub(super) fn parse_push(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
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
