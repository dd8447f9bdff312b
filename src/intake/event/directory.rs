//! `team`, `membership` and `organization`: the organisation's directory
//! changed. Only which organisation, and which part of its directory, is
//! kept: the directory is read again from GitHub (the payload's team may
//! already be out of date when it arrives), except a new login after a
//! rename, which is the organisation's by id.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;

use super::payload::{ignored, read};
use super::{DirectoryChange, WebhookEvent};

#[derive(Deserialize)]
struct Organization {
    #[serde(deserialize_with = "organization_id")]
    id: i64,
    login: String,
}

fn organization_id<'de, D: Deserializer<'de>>(deserializer: D) -> Result<i64, D::Error> {
    let id = i64::deserialize(deserializer)?;
    if id > 0 {
        Ok(id)
    } else {
        Err(D::Error::custom(format_args!(
            "organization id must be a positive integer, not {id}"
        )))
    }
}

#[derive(Deserialize)]
struct Event {
    action: String,
    organization: Option<Organization>,
}

fn change(org: Organization, teams: bool, members: bool, renamed: bool) -> WebhookEvent {
    WebhookEvent::Directory(DirectoryChange {
        org_id: org.id,
        login: org.login,
        teams,
        members,
        renamed,
    })
}

/// `team`: created, deleted or edited (a rename among them) → the teams.
pub(super) fn parse_team(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    let event: Event = read(body)?;
    let Some(org) = event.organization else {
        return Ok(ignored("team event without an organization"));
    };
    Ok(match event.action.as_str() {
        "created" | "deleted" | "edited" => change(org, true, false, false),
        other => ignored(format!("team {other} does not change the directory")),
    })
}

/// `membership`: someone added to or removed from a team → the members.
pub(super) fn parse_membership(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    let event: Event = read(body)?;
    let Some(org) = event.organization else {
        return Ok(ignored("membership event without an organization"));
    };
    Ok(match event.action.as_str() {
        "added" | "removed" => change(org, false, true, false),
        other => ignored(format!("membership {other} does not change the directory")),
    })
}

/// `organization`: a member joined or left → the members; renamed → the
/// new login.
pub(super) fn parse_organization(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    let event: Event = read(body)?;
    let Some(org) = event.organization else {
        return Ok(ignored("organization event without an organization"));
    };
    Ok(match event.action.as_str() {
        "member_added" | "member_removed" => change(org, false, true, false),
        "renamed" => change(org, false, false, true),
        other => ignored(format!(
            "organization {other} does not change the directory"
        )),
    })
}
