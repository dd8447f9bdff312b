//! `push`: only a push to the default branch can change the project file.

use serde::Deserialize;

use super::payload::{ignored, read, Installation, Repository};
use super::WebhookEvent;
use crate::github::webhook::envelope::{Envelope, Text};

/// Reads a push, and in the same pass what the delivery log keeps of it
/// (pushes are most of the deliveries: a second pass for the log cost about
/// a tenth of the intake's throughput).
pub(super) fn parse_push(body: &[u8]) -> Result<(WebhookEvent, Envelope), serde_json::Error> {
    #[derive(Deserialize)]
    struct Push {
        #[serde(rename = "ref")]
        git_ref: String,
        #[serde(default)]
        deleted: bool,
        repository: Repository,
        installation: Option<Installation>,
        #[serde(default)]
        action: Text,
    }
    let mut push: Push = read(body)?;
    let envelope = Envelope {
        action: push.action.0,
        repo: push.repository.full_name.0.take(),
    };
    let default_ref = format!("refs/heads/{}", push.repository.default_branch);
    let event = if push.deleted {
        ignored(format!("{} was deleted", push.git_ref))
    } else if push.git_ref != default_ref {
        ignored(format!(
            "push to {}, not the default branch {}",
            push.git_ref, push.repository.default_branch
        ))
    } else {
        WebhookEvent::DefaultBranchPush {
            repo: push.repository.into_payload_repo(push.installation),
        }
    };
    Ok((event, envelope))
}
