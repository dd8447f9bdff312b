//! `team`, `membership` and `organization`: the organisation's directory
//! changed. What the payload says about the one team or member is kept
//! (the directory writes it without reading the organisation again, and
//! reads that one team when the payload is not enough), and a new login
//! after a rename, which is the organisation's by id.

use serde::de::{Deserializer, Error as _};
use serde::Deserialize;

use super::payload::{ignored, positive_id, read};
use super::{DirectoryChange, WebhookEvent};
use crate::directory::change::{MemberSaid, Said, TeamSaid};

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

/// A team as payloads carry it; `membership` may carry a deleted team
/// with its id and name only.
#[derive(Deserialize)]
struct TeamPayload {
    #[serde(deserialize_with = "positive_id")]
    id: i64,
    node_id: Option<String>,
    slug: Option<String>,
    name: Option<String>,
    privacy: Option<String>,
    /// Absent: the payload does not say; `null`: a top-level team.
    #[serde(default, deserialize_with = "present")]
    parent: Option<Option<ParentPayload>>,
}

#[derive(Deserialize)]
struct ParentPayload {
    #[serde(deserialize_with = "positive_id")]
    id: i64,
}

/// A field that is there (even as `null`) is `Some`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

#[derive(Deserialize)]
struct User {
    #[serde(deserialize_with = "positive_id")]
    id: i64,
    login: String,
}

#[derive(Deserialize)]
struct Membership {
    user: Option<User>,
}

#[derive(Deserialize)]
struct Event {
    action: String,
    organization: Option<Organization>,
    team: Option<TeamPayload>,
    member: Option<User>,
    membership: Option<Membership>,
}

fn change(org: Organization, said: Option<Said>, renamed: bool) -> WebhookEvent {
    let change = DirectoryChange {
        org_id: org.id,
        login: org.login,
        said,
        renamed,
    };
    if let Some(text) = change.said.as_ref().and_then(Said::unstorable) {
        tracing::warn!(org = change.org_id, name = %text.escape_debug(),
            "a webhook names a team or member with a NUL, which cannot be stored: skipped");
        return ignored(format!(
            "the name {:?} holds a NUL, which cannot be stored: skipped",
            text
        ));
    }
    WebhookEvent::Directory(change)
}

fn team_said(team: TeamPayload, deleted: bool) -> Said {
    Said::Team(TeamSaid {
        id: team.id,
        node_id: team.node_id,
        slug: team.slug,
        name: team.name,
        // GitHub's REST names: `secret` or `closed` (visible).
        secret: team.privacy.map(|p| !p.eq_ignore_ascii_case("closed")),
        parent: team.parent.map(|p| p.map(|p| p.id)),
        deleted,
    })
}

fn member_said(user: User, gone: bool) -> Said {
    Said::Member(MemberSaid {
        id: user.id,
        login: user.login,
        gone,
    })
}

/// `team`: created, deleted or edited (a rename among them) → that team.
pub(super) fn parse_team(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    let event: Event = read(body)?;
    let Some(org) = event.organization else {
        return Ok(ignored("team event without an organization"));
    };
    let deleted = match event.action.as_str() {
        "created" | "edited" => false,
        "deleted" => true,
        other => {
            return Ok(ignored(format!(
                "team {other} does not change the directory"
            )))
        }
    };
    Ok(match event.team {
        Some(team) => change(org, Some(team_said(team, deleted)), false),
        None => ignored("team event without a team"),
    })
}

/// `membership`: someone added to a team is a member of the organisation;
/// leaving a team leaves them one (the directory keeps no team's members).
pub(super) fn parse_membership(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    let event: Event = read(body)?;
    let Some(org) = event.organization else {
        return Ok(ignored("membership event without an organization"));
    };
    Ok(match (event.action.as_str(), event.member) {
        ("added", Some(member)) => change(org, Some(member_said(member, false)), false),
        ("added", None) => ignored("membership event without a member"),
        ("removed", _) => ignored("leaving a team does not change the organisation's members"),
        (other, _) => ignored(format!("membership {other} does not change the directory")),
    })
}

/// `organization`: a member joined or left → that member; renamed → the
/// new login.
pub(super) fn parse_organization(body: &[u8]) -> Result<WebhookEvent, serde_json::Error> {
    let event: Event = read(body)?;
    let Some(org) = event.organization else {
        return Ok(ignored("organization event without an organization"));
    };
    let user = event.membership.and_then(|m| m.user);
    Ok(match (event.action.as_str(), user) {
        ("member_added", Some(user)) => change(org, Some(member_said(user, false)), false),
        ("member_removed", Some(user)) => change(org, Some(member_said(user, true)), false),
        ("member_added" | "member_removed", None) => ignored("organization event without a member"),
        ("renamed", _) => change(org, None, true),
        (other, _) => ignored(format!(
            "organization {other} does not change the directory"
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::super::parse;
    use super::*;

    fn event_of(name: &str) -> WebhookEvent {
        let body = crate::testing::webhook_fixture(name);
        let kind = name.split('.').next().unwrap_or_default();
        parse(kind, &body)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .event
    }

    fn said(name: &str) -> Option<Said> {
        match event_of(name) {
            WebhookEvent::Directory(change) => change.said,
            other => panic!("{name}: {other:?}"),
        }
    }

    #[test]
    fn a_team_payload_should_say_the_team_with_its_privacy_and_node_id() {
        let Some(Said::Team(team)) = said("team.edited.json") else {
            panic!("a team");
        };
        assert_eq!(team.id, 3_253_328);
        assert_eq!(team.node_id.as_deref(), Some("MDQ6VGVhbTMyNTMzMjg="));
        assert_eq!(team.slug.as_deref(), Some("github"));
        assert_eq!(team.secret, Some(true), "privacy: secret");
        assert_eq!(team.parent, None, "the fixture does not name a parent");
        assert!(!team.deleted && team.is_enough());
        let Some(Said::Team(gone)) = said("team.deleted.json") else {
            panic!("a team");
        };
        assert!(gone.deleted);
    }

    #[test]
    fn membership_and_organization_payloads_should_say_the_member() {
        for (name, gone) in [
            ("membership.added.json", false),
            ("organization.member_added.with-installation.json", false),
        ] {
            let Some(Said::Member(member)) = said(name) else {
                panic!("{name}: a member");
            };
            assert_eq!(member.gone, gone, "{name}");
            assert!(!member.login.is_empty(), "{name}");
        }
        assert_eq!(said("organization.renamed.json"), None);
        for name in [
            "membership.removed.json",
            "membership.removed.with-deleted-team.json",
        ] {
            assert!(
                matches!(event_of(name), WebhookEvent::Ignored { .. }),
                "{name}"
            );
        }
    }

    #[test]
    fn a_parent_named_in_the_payload_should_be_kept_and_a_null_one_too() {
        let body = |parent: &str| {
            format!(
                r#"{{"action":"edited","team":{{"id":5,"slug":"a","name":"A","privacy":"closed","parent":{parent}}},
                    "organization":{{"id":7,"login":"acme"}}}}"#
            )
        };
        let team = |parent: &str| match parse_team(body(parent).as_bytes()) {
            Ok(WebhookEvent::Directory(DirectoryChange {
                said: Some(Said::Team(team)),
                ..
            })) => team,
            other => panic!("{other:?}"),
        };
        assert_eq!(team(r#"{"id":3}"#).parent, Some(Some(3)));
        assert_eq!(team("null").parent, Some(None));
        assert_eq!(team("null").secret, Some(false), "privacy: closed");
        let negative = body(r#"{"id":-3}"#);
        assert!(parse_team(negative.as_bytes()).is_err());
    }
}
