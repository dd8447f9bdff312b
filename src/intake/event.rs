//! GitHub's webhook payloads, mapped into Roster's own [`WebhookEvent`].
//!
//! One small `parse_*` function per event type, in a file per event family,
//! reads only the fields Roster needs (unknown fields are ignored), so the
//! rest of the server never sees a raw payload. A payload that lacks a
//! needed field is an error, never a panic.

mod directory;
mod installation;
mod payload;
mod pull_request;
mod push;
mod repository;
#[cfg(test)]
mod tests;

use super::envelope::Envelope;
/// A `Roster` check run a payload asks for: on a pull request's head, or
/// (for a rerequest on a commit of no pull request) on the commit itself.
pub use crate::registry::check_records::check_requests::CheckRequest;
use crate::source::{InstallationId, RepoId, RepoInfo};
use directory::{parse_membership, parse_organization, parse_team};
use installation::{parse_installation, parse_installation_repositories};
use pull_request::{parse_pull_request, parse_rerequest};
pub use push::{parse_push, MAX_PUSH_COMMITS, MAX_PUSH_PATHS};
use repository::parse_repository;

/// The most repositories one delivery makes known or enqueues itself.
///
/// Making 300,000 repositories known and enqueued in the delivery's
/// transaction took longer than GitHub waits for an answer, so a delivery
/// naming more asks for a listing instead, which finds every repository of
/// every installation (removals included, under the deletion guard). An
/// uninstall or a suspension names repositories only to have them
/// reconciled; the ones Roster tracks are enqueued from the registry anyway,
/// so past the bound the named ones are left out.
///
/// An `installation` payload's list is read whole (every entry checked)
/// but kept only up to one past the bound: past it, the plan asks for a
/// listing and names none, so 100,000 entries are not held at once.
pub const MAX_NAMED_REPOS: usize = 1_000;

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

/// What a push to the default branch moved, when its payload alone tells
/// every path it touched: from `before` to `after`, not forced, not
/// creating the branch, with 1 to 2,047 commits, the last of which is
/// `after`, each listing its added, modified and removed paths (fewer than
/// 3,000 each, not all three empty). `None` otherwise: such a push is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushChange {
    pub before: String,
    pub after: String,
    /// Every path any commit touched, each once, sorted.
    pub paths: Vec<String>,
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

/// An organisation's teams or members changed (`team`, `membership`,
/// `organization` events): what the payload says about the one team or
/// member, or the organisation's new login.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirectoryChange {
    /// GitHub's id of the organisation, by which its directory is kept.
    pub org_id: i64,
    /// Its login, as the payload says (the new one after a rename).
    pub login: String,
    /// The team or member the payload describes.
    pub said: Option<crate::directory::change::Said>,
    /// The organisation was renamed to `login`.
    pub renamed: bool,
}

/// A delivery, as Roster understands it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WebhookEvent {
    /// GitHub checks that the hook works.
    Ping,
    /// A push to the default branch: the project file may have changed.
    /// `change` says which paths its commits touched, when the payload
    /// lists them all (see [`PushChange`]).
    DefaultBranchPush {
        repo: PayloadRepo,
        change: Option<PushChange>,
    },
    /// The repository appeared, went, moved or changed in a way that matters.
    Repository {
        action: RepositoryAction,
        repo: PayloadRepo,
    },
    /// The App was installed, uninstalled, suspended or given permissions.
    /// `repos` are the repositories the payload lists (often none).
    Installation {
        action: InstallationAction,
        installation_id: InstallationId,
        repos: Vec<PayloadRepo>,
        /// When GitHub created the installation (Unix seconds), when the
        /// payload says.
        created_at: Option<i64>,
    },
    /// Repositories were added to or removed from an installation.
    InstallationRepositories {
        installation_id: InstallationId,
        added: Vec<PayloadRepo>,
        removed: Vec<PayloadRepo>,
    },
    /// Nothing for Roster to do; `reason` says why, for the delivery log.
    Ignored { reason: String },
    /// Pull requests (or a commit) whose `Roster` check run is to be
    /// evaluated and posted.
    CheckRequested { requests: Vec<CheckRequest> },
    /// The organisation's directory changed.
    Directory(DirectoryChange),
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

/// A delivery to persist: signed, understood.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `X-GitHub-Delivery`, or a made-up id when it is missing.
    pub delivery_id: String,
    /// `X-GitHub-Event`, as sent.
    pub event: String,
    pub parsed: ParsedDelivery,
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
/// `serde_json::Value` of the whole payload (see [`Envelope`]). Pushes,
/// most of the deliveries, are read in one pass by [`parse_push`] first
/// (the webhook's verification, `verified::after_body`, calls it directly); one that does not parse there
/// is read here, so that its error is the same as any event's.
pub fn parse(event: &str, body: &[u8]) -> Result<ParsedDelivery, ParseError> {
    let Envelope { action, repo } = serde_json::from_slice(body).map_err(ParseError::NotJson)?;
    let event = match event {
        "ping" => Ok(WebhookEvent::Ping),
        "push" => parse_push(body).map(|parsed| parsed.event),
        "repository" => parse_repository(body),
        "installation" => parse_installation(body),
        "installation_repositories" => parse_installation_repositories(body),
        "pull_request" => parse_pull_request(body),
        "check_suite" | "check_run" => parse_rerequest(event, body),
        "team" => parse_team(body),
        "membership" => parse_membership(body),
        "organization" => parse_organization(body),
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
